//! A slow SMTP server on a free loopback port: it answers the dialogue a
//! sender needs (no TLS, no AUTH) and takes `delay` to accept each
//! message, so a test can hold sends in flight. It keeps each message's
//! recipients and subject, in the order they were accepted.
use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::{TcpListener, TcpStream},
};

#[derive(Clone, Debug)]
pub struct Accepted {
    pub to: Vec<String>,
    pub subject: String,
}

pub struct SlowSmtp {
    pub port: u16,
    accepted: Arc<Mutex<Vec<Accepted>>>,
    server: tokio::task::JoinHandle<()>,
}

impl SlowSmtp {
    pub async fn start(delay: Duration) -> SlowSmtp {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(Mutex::new(Vec::new()));
        let kept = accepted.clone();
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(converse(stream, delay, kept.clone()));
            }
        });
        SlowSmtp { port, accepted, server }
    }

    pub fn accepted(&self) -> Vec<Accepted> {
        self.accepted.lock().unwrap().clone()
    }
}

impl Drop for SlowSmtp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn converse(stream: TcpStream, delay: Duration, accepted: Arc<Mutex<Vec<Accepted>>>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let _ = write.write_all(b"220 slow.test ESMTP\r\n").await;
    let mut to = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        let verb = line.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
        let answer: &[u8] = match verb.as_str() {
            "EHLO" | "HELO" => b"250 slow.test\r\n",
            "RCPT" => {
                to.push(line.split(['<', '>']).nth(1).unwrap_or("").to_string());
                b"250 OK\r\n"
            }
            "DATA" => {
                let _ = write.write_all(b"354 go on\r\n").await;
                let mut subject = String::new();
                while let Ok(Some(body)) = lines.next_line().await {
                    if body == "." {
                        break;
                    }
                    if let Some(s) = body.strip_prefix("Subject: ") {
                        subject = s.to_string();
                    }
                }
                tokio::time::sleep(delay).await;
                accepted.lock().unwrap().push(Accepted { to: std::mem::take(&mut to), subject });
                b"250 accepted\r\n"
            }
            "QUIT" => {
                let _ = write.write_all(b"221 bye\r\n").await;
                return;
            }
            _ => b"250 OK\r\n",
        };
        if write.write_all(answer).await.is_err() {
            return;
        }
    }
}
