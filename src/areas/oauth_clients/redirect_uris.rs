//! Which redirect URIs a client may register (RFC 9700 section 4.1, OAuth
//! 2.1, RFC 8252 for native apps). A URI is matched exactly, character for
//! character, so what is registered is what a request must name:
//! - `https://` with a host, for any client;
//! - `http://` only on a loopback host (`127.0.0.1`, `[::1]`, `localhost`),
//!   for development and native apps (RFC 8252 section 7.3);
//! - a private-use scheme in reverse-domain form (`com.example.app:/cb`,
//!   RFC 8252 section 7.1), for public clients only.
//!
//! Never a wildcard, a fragment or credentials in the authority.
use url::{Host, Url};

/// Most URIs of one list.
pub const MAX_URIS: usize = 20;
/// Longest URI.
pub const MAX_URI_LEN: usize = 2000;

/// Why a URI cannot be registered; `None` when it can.
pub fn issue(uri: &str, public: bool) -> Option<String> {
    if uri.len() > MAX_URI_LEN {
        return Some(format!("must be at most {MAX_URI_LEN} characters"));
    }
    if uri.contains('*') {
        return Some("must not hold a wildcard: URIs are matched exactly".into());
    }
    let Ok(url) = Url::parse(uri) else {
        return Some("must be an absolute URI".into());
    };
    if url.fragment().is_some() {
        return Some("must not have a fragment".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Some("must not hold credentials".into());
    }
    // The parsed form is what a request is compared with: a URI that the
    // parser would rewrite (`HTTPS://A.com` → `https://a.com/`) is refused,
    // so the registered text and the matched text are the same.
    if url.as_str() != uri {
        return Some(format!("must be written in its normal form, `{url}`"));
    }
    match url.scheme() {
        "https" if url.host().is_some() => None,
        "http" if is_loopback(url.host()) => None,
        "http" => Some("may use `http` only on a loopback host; use `https`".into()),
        scheme if scheme.contains('.') && public => None,
        scheme if scheme.contains('.') => Some("a private-use scheme is for public (native) clients".into()),
        _ => Some("must use `https`, `http` on a loopback host, or a reverse-domain private-use scheme".into()),
    }
}

fn is_loopback(host: Option<Host<&str>>) -> bool {
    match host {
        Some(Host::Domain(name)) => name == "localhost",
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::issue;

    #[test]
    fn only_exact_safe_uris_are_registered() {
        for ok in ["https://app.example.com/callback", "http://127.0.0.1:8080/cb", "http://localhost/cb"] {
            assert_eq!(issue(ok, false), None, "{ok}");
        }
        assert_eq!(issue("com.example.app:/oauth", true), None);
        for bad in [
            "https://*.example.com/cb",
            "https://app.example.com/cb#x",
            "https://user:pw@app.example.com/cb",
            "http://app.example.com/cb",
            "HTTPS://App.example.com/cb",
            "https://app.example.com",
            "javascript:alert(1)",
            "data:text/html,x",
            "/relative",
            "com.example.app:/oauth",
        ] {
            assert!(issue(bad, false).is_some(), "{bad} was accepted");
        }
    }
}
