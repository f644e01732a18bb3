//! Standard Webhooks signatures: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, one per
//! key, space-separated: the webhook's secret (its decoded bytes), the secret before a rotation
//! during its overlap, and the project's `apiKeyPrivate` (its UTF-8 bytes) for webhooks without a
//! secret or while the project keeps the legacy signature. A receiver verifies if any matches.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The `webhook-signature` header under every key.
pub fn signatures(keys: &[Vec<u8>], msg_id: &str, timestamp: i64, body: &str) -> String {
    keys.iter()
        .map(|k| sign(k, msg_id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn sign(key: &[u8], msg_id: &str, timestamp: i64, body: &str) -> String {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC takes keys of any length"),
    };
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_by_the_standard_webhooks_reference_implementation() {
        let key = "sk_example";
        let body = r#"{"type":"proxy_vpn_detect"}"#;
        let now = chrono::Utc::now().timestamp();
        let sig = sign(key.as_bytes(), "msg_1", now, body);
        let wh = standardwebhooks::Webhook::from_bytes(key.as_bytes().to_vec()).unwrap();
        let mut headers = http::HeaderMap::new();
        headers.insert("webhook-id", "msg_1".parse().unwrap());
        headers.insert("webhook-timestamp", now.to_string().parse().unwrap());
        headers.insert("webhook-signature", sig.parse().unwrap());
        assert!(wh.verify(body.as_bytes(), &headers).is_ok());
        // A changed body, id or key does not verify.
        assert!(wh.verify(b"{}", &headers).is_err());
        headers.insert("webhook-id", "msg_2".parse().unwrap());
        assert!(wh.verify(body.as_bytes(), &headers).is_err());
        let other = standardwebhooks::Webhook::from_bytes(b"sk_other".to_vec()).unwrap();
        headers.insert("webhook-id", "msg_1".parse().unwrap());
        assert!(other.verify(body.as_bytes(), &headers).is_err());
    }
}
