//! Which URLs webhooks (and hooks) may target. At registration: absolute
//! `https` (or `http` outside production), no user info, at most 2048
//! characters; for production applications the host must not be a loopback,
//! private, link-local or otherwise non-public address, in any spelling the
//! URL parser accepts (`2130706433`, `0x7f000001`, `127.1`, `[::ffff:127.0.0.1]`
//! all parse to the address they mean). At delivery the same rule is applied
//! to every address the name resolves to, and only those are dialled.
//!
//! The same table decides every outbound connection made for an
//! application: webhooks, hooks and the SMTP messaging provider. Whether a
//! development application may reach private addresses is the operator's
//! decision (`security.allow_private_destinations`); a production one never
//! may. [`Reach`] carries that decision.
use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::Arc,
};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use url::{Host, Url};

pub const MAX_URL: usize = 2048;

/// Which addresses an application's outbound connections may reach.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reach {
    /// Public addresses only, checked on every address a name resolves to.
    #[default]
    PublicOnly,
    /// Loopback and private addresses too: a development application, on a
    /// deployment whose operator allows private destinations.
    PrivateToo,
}

impl Reach {
    /// Production applications reach public addresses only; development
    /// ones reach private addresses too when the operator allows it.
    pub fn of(production: bool, operator_allows_private: bool) -> Reach {
        if !production && operator_allows_private {
            Reach::PrivateToo
        } else {
            Reach::PublicOnly
        }
    }

    /// Whether a resolved address may be dialled.
    pub fn allows(self, ip: IpAddr) -> bool {
        self == Reach::PrivateToo || is_public(ip)
    }
}

/// The resolver of every client that may reach public addresses only
/// (webhooks, hooks, SSO connections).
pub struct PublicOnly;

/// A resolver that answers a name's public addresses only (none: the
/// request fails as `blocked_destination`, nothing dialled). An address
/// literal is not resolved: [`check`] refuses a private one
/// when the URL is stored.
pub fn public_only_resolver() -> Arc<PublicOnly> {
    Arc::new(PublicOnly)
}

/// A name resolved to no public address: nothing was dialled.
#[derive(Debug, thiserror::Error)]
#[error("the name resolves to no public address")]
pub struct BlockedDestination;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = found.into_iter().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                return Err(Box::new(BlockedDestination) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

/// Whether a host as configured (a name, or an address in any spelling the
/// URL parser and `getaddrinfo` accept: `2130706433`, `127.1`, `0`) may be
/// public: an address literal must be public; a name must have a dot and
/// not be `localhost` or under `.localhost` or `.internal`. A name's
/// addresses are checked again when it is resolved, at send time.
pub fn host_may_be_public(host: &str) -> bool {
    match Host::parse(host) {
        Ok(Host::Ipv4(ip)) => is_public(IpAddr::V4(ip)),
        Ok(Host::Ipv6(ip)) => is_public(IpAddr::V6(ip)),
        Ok(Host::Domain(name)) => public_name(&name),
        Err(_) => false,
    }
}

fn public_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name.contains('.') && name != "localhost" && !name.ends_with(".localhost") && !name.ends_with(".internal")
}

/// Parses and checks a webhook URL; `Err` says why it is refused.
/// `production` requires `https`; `reach` decides which hosts are allowed.
pub fn check(raw: &str, production: bool, reach: Reach) -> Result<Url, String> {
    if raw.is_empty() || raw.len() > MAX_URL {
        return Err(format!("must be 1 to {MAX_URL} characters"));
    }
    // The parser would quietly drop, encode or turn them; the stored URL is the one given.
    if raw.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    if raw.chars().any(|c| c.is_whitespace() || c == '\\') {
        return Err("must not contain whitespace or backslashes".into());
    }
    if let Some(issue) = authority_issue(raw) {
        return Err(issue.into());
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
    if reach == Reach::PublicOnly {
        let public = match host {
            Host::Ipv4(ip) => is_public(IpAddr::V4(ip)),
            Host::Ipv6(ip) => is_public(IpAddr::V6(ip)),
            Host::Domain(name) => public_name(name),
        };
        if !public {
            return Err("must not point at a loopback, private or otherwise non-public address".into());
        }
    }
    Ok(url)
}

/// The authority (`host[:port]`) in the strict form the OpenAPI document
/// states: an ASCII host name whose last label starts with a letter
/// (punycode for an international name), a dotted IPv4 address or a
/// bracketed IPv6 one; a port of 1 to 65535 without leading zeros. The URL
/// parser would take much more (`*` in a name, `127.1`, an empty port) and
/// rewrite it; none of that can be a webhook's host.
pub fn authority_issue(raw: &str) -> Option<&'static str> {
    let (_, rest) = raw.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Some("must not carry user info");
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(bracketed) => {
            let (v6, after) = bracketed.split_once(']')?;
            if v6.parse::<Ipv6Addr>().is_err() {
                return Some("has an invalid IPv6 address");
            }
            (None, (!after.is_empty()).then(|| after.strip_prefix(':').unwrap_or(after)))
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(authority), None),
        },
    };
    if host.is_some_and(|h| h.parse::<Ipv4Addr>().is_err() && !is_host_name(h)) {
        return Some("must have a host name, an IPv4 or a bracketed IPv6 address");
    }
    let valid_port = |p: &str| p.parse::<u16>().is_ok_and(|n| n > 0 && n.to_string() == p);
    if port.is_some_and(|p| !valid_port(p)) {
        return Some("must have a port of 1 to 65535");
    }
    None
}

/// LDH labels of 1 to 63 characters, the last one starting with a letter.
fn is_host_name(host: &str) -> bool {
    let label = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    host.split('.').all(label)
        && host.rsplit('.').next().is_some_and(|last| last.starts_with(|c: char| c.is_ascii_alphabetic()))
}

/// Whether an address is reachable on the public internet: it matches no
/// entry of [`SPECIAL_V4`] or [`SPECIAL_V6`] that is not globally reachable
/// (the most specific entry decides), and IPv6 lies in global unicast
/// (`2000::/3`, so IPv4-mapped addresses are refused however public the
/// IPv4 address they carry). A NAT64 address is judged by the IPv4 address
/// the translator would dial.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = nat64_embedded(v6) {
                return is_public_v4(v4);
            }
            let bits = u128::from(v6);
            // Global unicast is 2000::/3; the rest (IPv4-mapped included) is
            // unassigned, local or multicast.
            if bits >> 125 != 0b001 {
                return false;
            }
            most_specific(SPECIAL_V6.iter().map(|e| (u128::from(e.prefix), e.len, e.global)), bits, 128).unwrap_or(true)
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let bits = u128::from(u32::from(ip));
    most_specific(SPECIAL_V4.iter().map(|e| (u128::from(u32::from(e.prefix)), e.len, e.global)), bits, 32)
        .unwrap_or(true)
}

/// The well-known NAT64 prefix (`64:ff9b::/96`, RFC 6052) carries an IPv4
/// address the translator will dial. (It lies outside `2000::/3`, so it is
/// read before that rule would refuse it.)
fn nat64_embedded(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0]).then(|| Ipv4Addr::from(((s[6] as u32) << 16) | s[7] as u32))
}

/// The `global` flag of the longest prefix among `entries` that holds `bits`.
fn most_specific(entries: impl Iterator<Item = (u128, u8, bool)>, bits: u128, width: u8) -> Option<bool> {
    entries
        .filter(|&(prefix, len, _)| {
            let shift = width - len;
            len == 0 || (bits >> shift) == (prefix >> shift)
        })
        .max_by_key(|&(_, len, _)| len)
        .map(|(_, _, global)| global)
}

/// One row of an IANA special-purpose address registry.
pub struct Special<A> {
    pub prefix: A,
    pub len: u8,
    /// The registry's "Globally Reachable"; `N/A` rows count as false.
    pub global: bool,
    pub name: &'static str,
}

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8, global: bool, name: &'static str) -> Special<Ipv4Addr> {
    Special { prefix: Ipv4Addr::new(a, b, c, d), len, global, name }
}

#[allow(clippy::too_many_arguments)]
const fn v6(s: [u16; 8], len: u8, global: bool, name: &'static str) -> Special<Ipv6Addr> {
    Special { prefix: Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]), len, global, name }
}

/// The IANA IPv4 Special-Purpose Address Registry (RFC 6890 and updates),
/// plus multicast (224.0.0.0/4), which no webhook can be.
pub const SPECIAL_V4: &[Special<Ipv4Addr>] = &[
    v4(0, 0, 0, 0, 8, false, "this network"),
    v4(10, 0, 0, 0, 8, false, "private use"),
    v4(100, 64, 0, 0, 10, false, "shared address space (CGNAT)"),
    v4(127, 0, 0, 0, 8, false, "loopback"),
    v4(169, 254, 0, 0, 16, false, "link local"),
    v4(172, 16, 0, 0, 12, false, "private use"),
    v4(192, 0, 0, 0, 24, false, "IETF protocol assignments"),
    v4(192, 0, 0, 0, 29, false, "IPv4 service continuity prefix"),
    v4(192, 0, 0, 8, 32, false, "IPv4 dummy address"),
    v4(192, 0, 0, 9, 32, true, "port control protocol anycast"),
    v4(192, 0, 0, 10, 32, true, "traversal using relays around NAT anycast"),
    v4(192, 0, 0, 170, 32, false, "NAT64/DNS64 discovery"),
    v4(192, 0, 0, 171, 32, false, "NAT64/DNS64 discovery"),
    v4(192, 0, 2, 0, 24, false, "documentation (TEST-NET-1)"),
    v4(192, 31, 196, 0, 24, true, "AS112-v4"),
    v4(192, 52, 193, 0, 24, true, "AMT"),
    v4(192, 88, 99, 0, 24, false, "deprecated 6to4 relay anycast"),
    v4(192, 88, 99, 2, 32, true, "6a44-relay anycast"),
    v4(192, 168, 0, 0, 16, false, "private use"),
    v4(192, 175, 48, 0, 24, true, "direct delegation AS112 service"),
    v4(198, 18, 0, 0, 15, false, "benchmarking"),
    v4(198, 51, 100, 0, 24, false, "documentation (TEST-NET-2)"),
    v4(203, 0, 113, 0, 24, false, "documentation (TEST-NET-3)"),
    v4(224, 0, 0, 0, 4, false, "multicast"),
    v4(240, 0, 0, 0, 4, false, "reserved"),
    v4(255, 255, 255, 255, 32, false, "limited broadcast"),
];

/// The IANA IPv6 Special-Purpose Address Registry (RFC 6890 and updates).
/// Addresses outside `2000::/3` are refused before this table is read;
/// their rows (`::1`, `fc00::/7`, `fe80::/10`, `100::/64`, `5f00::/16`…)
/// stay here so the table reads as the registry does. Two rows the registry
/// marks global are refused: ORCHIDv2 and drone entity tags are identifiers
/// (RFC 7343, RFC 9374), never routed, so no receiver can be there.
pub const SPECIAL_V6: &[Special<Ipv6Addr>] = &[
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, false, "loopback"),
    v6([0, 0, 0, 0, 0, 0, 0, 0], 128, false, "unspecified"),
    v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96, false, "IPv4-mapped"),
    v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, true, "IPv4-IPv6 translation (judged by its IPv4 address)"),
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, false, "IPv4-IPv6 local-use translation"),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, false, "discard-only"),
    v6([0x100, 0, 0, 1, 0, 0, 0, 0], 64, false, "dummy IPv6 prefix"),
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, false, "IETF protocol assignments"),
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, false, "TEREDO"),
    v6([0x2001, 1, 0, 0, 0, 0, 0, 1], 128, true, "port control protocol anycast"),
    v6([0x2001, 1, 0, 0, 0, 0, 0, 2], 128, true, "traversal using relays around NAT anycast"),
    v6([0x2001, 1, 0, 0, 0, 0, 0, 3], 128, true, "DNS-SD service registration protocol anycast"),
    v6([0x2001, 2, 0, 0, 0, 0, 0, 0], 48, false, "benchmarking"),
    v6([0x2001, 3, 0, 0, 0, 0, 0, 0], 32, true, "AMT"),
    v6([0x2001, 4, 0x112, 0, 0, 0, 0, 0], 48, true, "AS112-v6"),
    v6([0x2001, 0x10, 0, 0, 0, 0, 0, 0], 28, false, "deprecated ORCHID"),
    v6([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28, false, "ORCHIDv2 (identifiers, not routed)"),
    v6([0x2001, 0x30, 0, 0, 0, 0, 0, 0], 28, false, "drone remote ID entity tags (identifiers, not routed)"),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, false, "documentation"),
    v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, false, "6to4"),
    v6([0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0], 48, true, "direct delegation AS112 service"),
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, false, "documentation"),
    v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, false, "segment routing SIDs"),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, false, "unique local"),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, false, "link local"),
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, false, "site local (deprecated)"),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, false, "multicast"),
];

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
            assert!(check(url, true, Reach::PublicOnly).is_err(), "{url} was allowed");
        }
        assert!(check(&format!("https://example.com/{}", "a".repeat(2048)), true, Reach::PublicOnly).is_err());
    }

    /// Every registry row: its first and last address are refused when the
    /// row is not globally reachable and allowed when it is (unless a more
    /// specific row, or the rule for the space outside `2000::/3`, says otherwise).
    #[test]
    fn every_special_purpose_entry_is_judged_by_its_global_flag() {
        fn ends(prefix: u128, len: u8, width: u8) -> [u128; 2] {
            let host = if len == width { 0 } else { (1u128 << (width - len)) - 1 };
            [prefix + u128::from(host > 0), prefix | host]
        }
        for entry in SPECIAL_V4 {
            let more_specific = |bits: u128| {
                SPECIAL_V4.iter().any(|o| {
                    o.len > entry.len && (bits >> (32 - o.len)) == (u128::from(u32::from(o.prefix)) >> (32 - o.len))
                })
            };
            for bits in ends(u128::from(u32::from(entry.prefix)), entry.len, 32) {
                if more_specific(bits) {
                    continue;
                }
                let ip = IpAddr::V4(Ipv4Addr::from(bits as u32));
                assert_eq!(is_public(ip), entry.global, "{ip} ({})", entry.name);
            }
        }
        for entry in SPECIAL_V6 {
            let prefix = u128::from(entry.prefix);
            let more_specific = |bits: u128| {
                SPECIAL_V6
                    .iter()
                    .any(|o| o.len > entry.len && (bits >> (128 - o.len)) == (u128::from(o.prefix) >> (128 - o.len)))
            };
            for bits in ends(prefix, entry.len, 128) {
                if more_specific(bits) || entry.name.starts_with("IPv4-IPv6 translation") {
                    continue;
                }
                let ip = IpAddr::V6(Ipv6Addr::from(bits));
                let expected = entry.global && bits >> 125 == 0b001;
                assert_eq!(is_public(ip), expected, "{ip} ({})", entry.name);
            }
        }
    }

    #[test]
    fn the_addresses_an_attack_run_got_through_are_refused() {
        for url in [
            "https://[2001:2::1]/",
            "https://[100::1]/",
            "https://[2001:10::1]/",
            "https://[2001:20::1]/",
            "https://[3fff::1]/",
            "https://[5f00::1]/",
            "https://192.88.99.1/",
            "https://[::ffff:8.8.8.8]/",
            "https://[64:ff9b::7f00:1]/",
            "https://[4000::1]/",
        ] {
            assert!(check(url, true, Reach::PublicOnly).is_err(), "{url} was allowed");
        }
        assert!(check("https://[2606:4700::1111]/", true, Reach::PublicOnly).is_ok());
        assert!(check("https://[64:ff9b::808:808]/", true, Reach::PublicOnly).is_ok(), "NAT64 of a public address");
        assert!(check("https://192.0.0.9/", true, Reach::PublicOnly).is_ok(), "a globally reachable anycast row");
    }

    #[test]
    fn public_https_urls_are_allowed_and_development_may_use_local_http() {
        assert!(check("https://hooks.example.com/gatehouse", true, Reach::PublicOnly).is_ok());
        assert!(check("https://93.184.216.34:8443/x", true, Reach::PublicOnly).is_ok());
        assert!(check("http://127.0.0.1:9000/hook", false, Reach::PrivateToo).is_ok());
        assert!(check("http://user@127.0.0.1:9000/hook", false, Reach::PrivateToo).is_err());
        assert!(check("http://127.0.0.1:9000/a\0b", false, Reach::PrivateToo).is_err());
        assert!(check("http://127.0.0.1:9000/\r\nX-Injected: 1", false, Reach::PrivateToo).is_err());
    }

    #[test]
    fn the_authority_is_a_host_name_or_an_address_and_a_real_port() {
        for url in
            ["http://localhost:9000/x", "https://Hooks.Example.com/a?b#c", "http://[::1]:80/", "https://a-1.b2.io"]
        {
            assert!(check(url, false, Reach::PrivateToo).is_ok(), "{url} was refused");
        }
        for url in [
            "https://yt.3kh.org*",
            "https://a.com:",
            "https://a.com:0/",
            "https://a.com:08080/",
            "https://a.com:65536/",
            "https://-a.com/",
            "https://a.123/",
            "https://a..com/",
            "https://a.com./",
            "https://[::g]/",
            "https://a.com/ x",
            "https://a.com\\x",
            "http://127.1/",
        ] {
            assert!(check(url, false, Reach::PrivateToo).is_err(), "{url} was allowed");
        }
    }

    #[test]
    fn a_development_application_reaches_private_hosts_only_when_the_operator_allows_it() {
        assert_eq!(Reach::of(true, true), Reach::PublicOnly, "production never does");
        assert_eq!(Reach::of(false, false), Reach::PublicOnly);
        assert_eq!(Reach::of(false, true), Reach::PrivateToo);
        assert!(check("http://127.0.0.1:9000/hook", false, Reach::PublicOnly).is_err());
        assert!(check("http://localhost:9000/hook", false, Reach::PublicOnly).is_err());
        assert!(check("http://hooks.example.com/hook", false, Reach::PublicOnly).is_ok(), "http outside production");
        assert!(!Reach::PublicOnly.allows(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert!(Reach::PrivateToo.allows(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    }

    #[test]
    fn every_spelling_of_an_internal_smtp_host_is_refused() {
        for host in [
            "127.0.0.1",
            "localhost",
            "2130706433",
            "127.1",
            "0",
            "0x7f000001",
            "0177.0.0.1",
            "169.254.169.254",
            "10.255.255.1",
            "192.168.1.1",
            "metadata.google.internal",
            "mail.localhost",
            "mailhog",
        ] {
            assert!(!host_may_be_public(host), "{host} was allowed");
        }
        for host in ["smtp.example.com", "93.184.216.34", "SMTP.Example.COM."] {
            assert!(host_may_be_public(host), "{host} was refused");
        }
    }
}
