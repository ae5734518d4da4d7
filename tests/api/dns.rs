//! A real DNS server for the SSO domain tests: dnsmasq (Debian's
//! `dnsmasq-base`) on loopback, answering the TXT records it is given and
//! NXDOMAIN for every other name under `.test`. Skipped with a message when
//! dnsmasq is missing, unless `GATEHOUSE_TEST_REQUIRE_DNS` is set (CI).
use std::{
    net::{SocketAddr, UdpSocket},
    process::{Child, Command, Stdio},
    time::Duration,
};

const DNSMASQ: &str = "/usr/sbin/dnsmasq";

pub struct Dnsmasq {
    child: Child,
}

/// A loopback address with a UDP port free now.
pub fn free_address() -> SocketAddr {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

pub fn available() -> bool {
    let found = std::path::Path::new(DNSMASQ).exists();
    if !found {
        assert!(
            std::env::var_os("GATEHOUSE_TEST_REQUIRE_DNS").is_none(),
            "GATEHOUSE_TEST_REQUIRE_DNS is set but {DNSMASQ} is missing (apt-get install dnsmasq-base)"
        );
        eprintln!("SKIPPED: the SSO domain test needs dnsmasq (apt-get install dnsmasq-base)");
    }
    found
}

impl Dnsmasq {
    /// Serves `records` (`name`, TXT value) on `address` until dropped.
    pub fn start(address: SocketAddr, records: &[(&str, &str)]) -> Dnsmasq {
        let mut command = Command::new(DNSMASQ);
        command.args([
            "--keep-in-foreground",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
            "--listen-address=127.0.0.1",
            "--pid-file=",
            "--user=root",
            "--local=/test/",
        ]);
        command.arg(format!("--port={}", address.port()));
        for (name, value) in records {
            // No shell: the value goes as it is (a comma would split it into strings).
            command.arg(format!("--txt-record={name},{value}"));
        }
        let server =
            Dnsmasq { child: command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("dnsmasq starts") };
        // Listening once a query gets an answer.
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let query = [
            0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4, b'p', b'i', b'n', b'g', 4, b't', b'e', b's', b't', 0, 0, 16,
            0, 1,
        ];
        for _ in 0..100 {
            socket.send_to(&query, address).unwrap();
            if socket.recv_from(&mut [0u8; 512]).is_ok() {
                return server;
            }
        }
        panic!("dnsmasq did not answer on {address}");
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
