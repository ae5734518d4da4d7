//! Generated credentials: `<kind>_<test|live>_<32 base62><6 base62 checksum>`.
//! The checksum (CRC-32/IEEE of the 32 random characters, base62, most
//! significant digit first, zero-padded) lets a look-alike key be refused
//! without touching the database.
use rand::{rngs::OsRng, Rng};

const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const RANDOM_LEN: usize = 32;
const CHECKSUM_LEN: usize = 6;
/// How many leading characters are kept for display.
pub const DISPLAY_PREFIX_LEN: usize = 12;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Secret,
    User,
    ServiceAccount,
    Enrollment,
    /// A confidential OAuth client's secret.
    OAuthClient,
    /// A SCIM directory's bearer token.
    ScimDirectory,
}

impl KeyKind {
    fn prefix(self) -> &'static str {
        match self {
            KeyKind::Secret => "sk",
            KeyKind::User => "uk",
            KeyKind::ServiceAccount => "sak",
            KeyKind::Enrollment => "het",
            KeyKind::OAuthClient => "ocs",
            KeyKind::ScimDirectory => "scim",
        }
    }
}

/// Generates a new credential of `kind`; `live` for production applications.
pub fn generate(kind: KeyKind, live: bool) -> String {
    let random: String = (0..RANDOM_LEN).map(|_| ALPHABET[OsRng.gen_range(0..ALPHABET.len())] as char).collect();
    let mode = if live { "live" } else { "test" };
    let sum = checksum(&random);
    format!("{}_{mode}_{random}{}", kind.prefix(), std::str::from_utf8(&sum).expect("base62 is ASCII"))
}

/// Checks the shape and checksum of a presented credential. Returns whether
/// it is a `live` key, or `None` when it cannot be one of ours.
pub fn parse(kind: KeyKind, presented: &str) -> Option<bool> {
    let rest = presented.strip_prefix(kind.prefix())?.strip_prefix('_')?;
    let (live, body) =
        if let Some(body) = rest.strip_prefix("live_") { (true, body) } else { (false, rest.strip_prefix("test_")?) };
    if body.len() != RANDOM_LEN + CHECKSUM_LEN || !body.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let (random, sum) = body.split_at(RANDOM_LEN);
    (checksum(random) == sum.as_bytes()).then_some(live)
}

pub fn display_prefix(secret: &str) -> String {
    secret.chars().take(DISPLAY_PREFIX_LEN).collect()
}

/// `presented`, when it is one of our credentials, with its random part
/// spelt `EXAMPLE0…` and the checksum to match: well-formed, and held by no
/// one (the documentation's examples show these).
#[cfg(test)]
pub fn example_of(presented: &str) -> Option<String> {
    use KeyKind::*;
    let ours = [Secret, User, ServiceAccount, Enrollment, OAuthClient, ScimDirectory];
    ours.iter().find(|kind| parse(**kind, presented).is_some())?;
    let random = "EXAMPLE0".repeat(RANDOM_LEN / 8);
    let head = &presented[..presented.len() - RANDOM_LEN - CHECKSUM_LEN];
    Some(format!("{head}{random}{}", std::str::from_utf8(&checksum(&random)).expect("base62 is ASCII")))
}

fn checksum(random: &str) -> [u8; CHECKSUM_LEN] {
    let mut value = crc32fast::hash(random.as_bytes());
    let mut digits = [b'0'; CHECKSUM_LEN];
    for slot in digits.iter_mut().rev() {
        *slot = ALPHABET[(value % 62) as usize];
        value /= 62;
    }
    digits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_parses_and_a_changed_character_does_not() {
        let key = generate(KeyKind::Secret, false);
        assert_eq!(key.len(), "sk_test_".len() + 38);
        assert_eq!(parse(KeyKind::Secret, &key), Some(false));
        let mut broken = key.clone().into_bytes();
        broken[10] = if broken[10] == b'a' { b'b' } else { b'a' };
        assert_eq!(parse(KeyKind::Secret, &String::from_utf8(broken).unwrap()), None);
        assert_eq!(parse(KeyKind::User, &key), None);
    }

    #[test]
    fn an_example_credential_is_well_formed_and_not_the_one_it_replaces() {
        let key = generate(KeyKind::OAuthClient, true);
        let example = example_of(&key).expect("one of ours");
        assert_eq!(parse(KeyKind::OAuthClient, &example), Some(true));
        assert!(example.starts_with("ocs_live_EXAMPLE0EXAMPLE0"), "{example}");
        assert_eq!(example_of("sk_test_not-one-of-ours"), None);
    }

    #[test]
    fn the_checksum_is_crc32_in_padded_base62() {
        // CRC-32 of "a" is 0xE8B7BE43 = 3904355907 = "4GEHKN" in base62.
        assert_eq!(&checksum("a"), b"4GEHKN");
        // CRC-32 of "" is 0: padded with zeros.
        assert_eq!(&checksum(""), b"000000");
    }
}
