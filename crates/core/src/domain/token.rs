//! Random tokens and developer API keys: their format, generation and stored hash.

use rand::RngCore;
use sha2::{Digest, Sha256};

const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Base62 of `n` random bytes from the OS generator.
pub fn random_base62(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    rand::rng().fill_bytes(&mut bytes);
    // Rejection-free mapping is slightly biased for 256 % 62; irrelevant at 190+ bits of entropy.
    bytes
        .iter()
        .map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char)
        .collect()
}

/// Milliseconds since the epoch as 12 fixed-width hex digits, a per-process counter, then
/// randomness: sorts by creation time (within one process, strictly, even inside one
/// millisecond) and never collides in practice.
pub fn time_ordered_token() -> String {
    use std::sync::atomic::{AtomicU16, Ordering};
    static COUNTER: AtomicU16 = AtomicU16::new(0);
    let ms = chrono::Utc::now().timestamp_millis().max(0) as u64;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{ms:012x}{n:04x}{}", random_base62(10))
}

/// Prefix every developer key carries, so leaked keys are recognisable by secret scanners.
pub const API_KEY_PREFIX: &str = "vgl_";

/// A developer key as presented by a client or a seed file: 1 to 256 printable ASCII characters
/// without spaces. Anything else cannot be a key, and is refused without a lookup.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be 1 to {} printable characters without spaces", ApiKey::MAX_LEN)]
pub struct ApiKeyError;

impl ApiKey {
    pub const MAX_LEN: usize = 256;

    /// Checks the key format without allocating.
    pub fn validate(s: &str) -> Result<(), ApiKeyError> {
        let ok =
            !s.is_empty() && s.len() <= Self::MAX_LEN && s.bytes().all(|b| b.is_ascii_graphic());
        if ok { Ok(()) } else { Err(ApiKeyError) }
    }

    pub fn parse(s: &str) -> Result<Self, ApiKeyError> {
        Self::validate(s)?;
        Ok(Self(s.to_owned()))
    }

    /// A new developer key: prefix plus 32 base62 characters (about 190 bits).
    pub fn generate() -> Self {
        Self(format!("{API_KEY_PREFIX}live_{}", random_base62(32)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// What is stored for a key: its SHA-256 in lowercase hex. The key itself is never stored.
    pub fn hash(&self) -> String {
        hash_api_key(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for ApiKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

// Keys are secrets: never in logs or panics.
impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(..)")
    }
}

fn hash_api_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_keys_are_prefixed_and_random() {
        let a = ApiKey::generate();
        assert!(a.as_str().starts_with("vgl_live_"));
        assert_eq!(a.as_str().len(), "vgl_live_".len() + 32);
        assert_ne!(a, ApiKey::generate());
        assert!(ApiKey::parse(a.as_str()).is_ok());
    }

    #[test]
    fn key_format() {
        for bad in ["", "a b", "é", "a\tb"] {
            assert_eq!(ApiKey::parse(bad), Err(ApiKeyError), "{bad:?}");
        }
        assert!(ApiKey::parse(&"a".repeat(256)).is_ok());
        assert!(ApiKey::parse(&"a".repeat(257)).is_err());
        assert_eq!(
            format!("{:?}", ApiKey::parse("secret").unwrap()),
            "ApiKey(..)"
        );
    }

    #[test]
    fn hash_is_sha256_hex() {
        assert_eq!(
            hash_api_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn tokens_of_one_millisecond_keep_their_order() {
        let tokens: Vec<String> = (0..50).map(|_| time_ordered_token()).collect();
        let mut sorted = tokens.clone();
        sorted.sort();
        // A counter wrap inside one run would reorder; 50 from a fresh start cannot wrap twice.
        assert!(tokens.windows(2).filter(|w| w[0] > w[1]).count() <= 1);
        assert_eq!(sorted.len(), 50);
    }

    #[test]
    fn time_ordered_tokens_sort_by_time() {
        let a = time_ordered_token();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = time_ordered_token();
        assert!(a < b);
    }
}
