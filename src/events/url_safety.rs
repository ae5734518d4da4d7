//! Which URLs webhooks (and hooks) may target. At registration: absolute
//! `https` (or `http` outside production), no user info, at most 2048
//! characters; for production applications the host must not be a loopback,
//! private, link-local or otherwise non-public address, in any spelling the
//! URL parser accepts (`2130706433`, `0x7f000001`, `127.1`, `[::ffff:127.0.0.1]`
//! all parse to the address they mean). At delivery the same rule is applied
//! to every address the name resolves to, and only those are dialled.
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

pub const MAX_URL: usize = 2048;

/// Parses and checks a webhook URL; `Err` says why it is refused.
pub fn check(raw: &str, production: bool) -> Result<Url, String> {
    if raw.is_empty() || raw.len() > MAX_URL {
        return Err(format!("must be 1 to {MAX_URL} characters"));
    }
    // The parser would quietly drop or encode them; the stored URL is the one given.
    if raw.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    let url = Url::parse(raw).map_err(|_| "is not an absolute URL".to_string())?;
    match url.scheme() {
        "https" => {}
        "http" if !production => {}
        "http" => return Err("must use https for a production application".into()),
        _ => return Err("must be an http(s) URL".into()),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry user info".into());
    }
    let host = url.host().ok_or_else(|| "has no host".to_string())?;
    if production {
        let public = match host {
            Host::Ipv4(ip) => is_public(IpAddr::V4(ip)),
            Host::Ipv6(ip) => is_public(IpAddr::V6(ip)),
            Host::Domain(name) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                name.contains('.')
                    && name != "localhost"
                    && !name.ends_with(".localhost")
                    && !name.ends_with(".internal")
            }
        };
        if !public {
            return Err("must not point at a loopback, private or otherwise non-public address".into());
        }
    }
    Ok(url)
}

/// Whether an address is reachable on the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            // IPv4-compatible (::a.b.c.d, deprecated) and IPv4-translated (::ffff:0:a.b.c.d).
            if s[..6] == [0, 0, 0, 0, 0, 0] || s[..6] == [0, 0, 0, 0, 0xffff, 0] {
                return false;
            }
            // Teredo (2001::/32) and local-use NAT64 (64:ff9b:1::/48) tunnel to addresses we cannot check.
            if (s[0] == 0x2001 && s[1] == 0) || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1) {
                return false;
            }
            // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) embed an IPv4 address.
            if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
                return is_public_v4(Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8));
            }
            if s[0] == 0x2002 {
                return is_public_v4(Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8));
            }
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link local
                || (s[0] & 0xffc0) == 0xfec0 // site local (deprecated)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || v6 == Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1))
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..=127).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..=19).contains(&b)) // benchmarking
        || a >= 240) // reserved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_an_internal_address_is_refused_in_production() {
        for url in [
            "https://127.0.0.1/",
            "https://[::1]/",
            "https://0.0.0.0/",
            "https://[::]/",
            "https://10.0.0.1/",
            "https://172.16.0.1/",
            "https://192.168.1.1/",
            "https://169.254.169.254/latest",
            "https://100.64.0.1/",
            "https://198.18.0.1/",
            "https://[fd00::1]/",
            "https://[fe80::1]/",
            "https://240.0.0.1/",
            "https://255.255.255.255/",
            "https://2130706433/",
            "https://0x7f000001/",
            "https://0177.0.0.1/",
            "https://127.1/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:169.254.169.254]/",
            "https://[64:ff9b::a9fe:a9fe]/",
            "https://[2002:7f00:1::]/",
            "https://[::127.0.0.1]/",
            "https://[::ffff:0:7f00:1]/",
            "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            "https://[64:ff9b:1::a9fe:a9fe]/",
            "https://localhost/",
            "https://LOCALHOST./",
            "https://metadata.google.internal/",
            "https://user:pw@hooks.example.com/",
            "http://hooks.example.com/",
            "ftp://hooks.example.com/",
            "file:///etc/passwd",
            "gopher://hooks.example.com/",
            "",
        ] {
            assert!(check(url, true).is_err(), "{url} was allowed");
        }
        assert!(check(&format!("https://example.com/{}", "a".repeat(2048)), true).is_err());
    }

    #[test]
    fn public_https_urls_are_allowed_and_development_may_use_local_http() {
        assert!(check("https://hooks.example.com/gatehouse", true).is_ok());
        assert!(check("https://93.184.216.34:8443/x", true).is_ok());
        assert!(check("http://127.0.0.1:9000/hook", false).is_ok());
        assert!(check("http://user@127.0.0.1:9000/hook", false).is_err());
        assert!(check("http://127.0.0.1:9000/a\0b", false).is_err());
        assert!(check("http://127.0.0.1:9000/\r\nX-Injected: 1", false).is_err());
    }
}
