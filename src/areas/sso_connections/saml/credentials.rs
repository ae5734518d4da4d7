//! A SAML connection's own key: RSA-2048, made with the connection, its
//! private half sealed to the master key, its public half in a self-signed
//! certificate that our SP metadata publishes. One key per connection, so
//! that an organization's IdP never holds a key that opens another's
//! assertions.
use chrono::{Datelike, Utc};
use entity::sso_connection;
use rsa::{pkcs8::EncodePrivateKey, RsaPrivateKey};
use uuid::Uuid;

use super::ServiceProvider;
use crate::crypto::{master_key::MasterKey, seal};

const RSA_BITS: usize = 2048;
/// How long the self-signed certificate is valid: identity providers
/// check the key, and a connection's key changes only with the connection.
const CERTIFICATE_YEARS: i32 = 20;

/// A connection's key and its certificate, both PEM.
#[derive(Clone)]
pub struct SpKey {
    pub private_pem: String,
    pub certificate_pem: String,
}

/// Makes a key and its certificate (seconds at worst: call it off the
/// async threads).
pub fn generate() -> Result<SpKey, String> {
    let failed = |err: &dyn std::fmt::Display| format!("the connection's key could not be made: {err}");
    let private = RsaPrivateKey::new(&mut rand::rngs::OsRng, RSA_BITS).map_err(|err| failed(&err))?;
    let private_pem = private.to_pkcs8_pem(rsa::pkcs8::LineEnding::LF).map_err(|err| failed(&err))?.to_string();
    let key_pair =
        rcgen::KeyPair::from_pem_and_sign_algo(&private_pem, &rcgen::PKCS_RSA_SHA256).map_err(|err| failed(&err))?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|err| failed(&err))?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(rcgen::DnType::CommonName, "Gatehouse SAML service provider");
    let today = Utc::now().date_naive();
    let (month, day) = (today.month() as u8, today.day().min(28) as u8);
    params.not_before = rcgen::date_time_ymd(today.year() - 1, month, day);
    params.not_after = rcgen::date_time_ymd(today.year() + CERTIFICATE_YEARS, month, day);
    let certificate = params.self_signed(&key_pair).map_err(|err| failed(&err))?;
    Ok(SpKey { private_pem, certificate_pem: certificate.pem() })
}

/// Where a connection's key is sealed to.
pub fn key_context(application_id: Uuid, connection_id: Uuid) -> String {
    format!("{application_id}/sso_connection/{connection_id}/sp_key")
}

pub fn seal_key(key: &MasterKey, application_id: Uuid, connection_id: Uuid, sp_key: &SpKey) -> Vec<u8> {
    seal::seal(key, &key_context(application_id, connection_id), sp_key.private_pem.as_bytes())
}

/// The service provider of a SAML connection, with its key when it has
/// one and the master key opens it.
pub fn service_provider(key: &MasterKey, public_url: &str, row: &sso_connection::Model) -> ServiceProvider {
    let sp = ServiceProvider::of(public_url, row.application_id, row.id);
    let opened = row
        .sp_key_sealed
        .as_deref()
        .and_then(|sealed| seal::open(key, &key_context(row.application_id, row.id), sealed).ok())
        .and_then(|pem| String::from_utf8(pem).ok());
    match (opened, &row.sp_certificate) {
        (Some(private_pem), Some(certificate_pem)) => {
            sp.with_key(SpKey { private_pem, certificate_pem: certificate_pem.clone() }, row.encrypt_assertions)
        }
        _ => sp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_comes_with_its_self_signed_certificate() {
        let made = generate().unwrap();
        assert!(made.private_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        assert!(made.certificate_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        let sp = ServiceProvider::of("https://auth.example.com", Uuid::from_u128(1), Uuid::from_u128(7));
        let xml = sp.with_key(made, true).metadata_xml().unwrap();
        assert!(xml.contains("use=\"signing\"") && xml.contains("use=\"encryption\""), "{xml}");
    }
}
