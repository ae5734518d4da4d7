//! Redis for the cache tests: the shared one from `GATEHOUSE_TEST_REDIS_URL`
//! (tests skip without it), a closed port, a port that never answers, and a
//! private `redis-server` a test may kill without disturbing the others.
use std::{
    net::{TcpListener, TcpStream},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use super::SharedRedis;

pub fn redis_url() -> Option<String> {
    let url = std::env::var("GATEHOUSE_TEST_REDIS_URL").ok();
    if url.is_none() {
        eprintln!("skipped: GATEHOUSE_TEST_REDIS_URL is not set");
    }
    url
}

/// Redis as the `default` deployment uses it.
pub fn shared(url: &str) -> SharedRedis {
    shared_in(url, "default")
}

/// Redis as the deployment `deployment` uses it.
pub fn shared_in(url: &str, deployment: &str) -> SharedRedis {
    let deployment = crate::config::DeploymentName::parse(deployment).expect("a deployment name");
    SharedRedis::new(redis::Client::open(url).expect("a Redis URL"), &deployment)
}

/// A loopback port nobody listens on: connections are refused.
pub fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A loopback listener that accepts (the kernel does) and never answers.
pub fn silent_listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").unwrap()
}

/// Polls `check` every 10 ms until it holds or `within` has passed.
pub async fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    check()
}

/// A `redis-server` of the test's own on a free loopback port.
pub struct PrivateRedis {
    port: u16,
    child: Option<Child>,
}

impl PrivateRedis {
    /// `None` (and a note) when `redis-server` is not installed.
    pub fn start() -> Option<Self> {
        let mut server = Self { port: closed_port(), child: None };
        match server.spawn() {
            Ok(()) => Some(server),
            Err(err) => {
                eprintln!("skipped: cannot run redis-server ({err})");
                None
            }
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGSTOP or SIGCONT: a Redis that keeps its connections and answers nothing.
    pub fn signal(&self, signal: libc::c_int) {
        let child = self.child.as_ref().expect("a running redis-server");
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    }

    /// On the same port, as an operator's restart would.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn().expect("redis-server restarts");
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        let port = self.port.to_string();
        let child = Command::new("redis-server")
            .args(["--port", &port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() > deadline {
                self.kill();
                return Err(std::io::Error::other("redis-server did not start listening"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.kill();
    }
}
