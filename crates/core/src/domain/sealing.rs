//! Sealed verdicts: a visit's verdict handed to the page encrypted and authenticated under its
//! project's sealing key, for the customer's backend to open offline (no call to the API on the
//! checkout path), while the page can neither read nor forge it.
//!
//! The format is JWE compact serialisation (RFC 7516) with `alg: dir` and `enc: A256GCM`
//! (RFC 7518): a 256-bit key shared by Vigil and the backend, a fresh 96-bit IV per verdict, the
//! protected header as the additional data. Every JOSE library opens it (`jose` for Node,
//! `jwcrypto` or `joserfc` for Python) with the key as a JWK (`kty: oct`), which is how
//! `GET /projects/{id}/sealing-key` answers it. One algorithm pair is assembled here over ring's
//! AES-GCM in a few lines: the crates that implement all of JOSE's encryption pull in OpenSSL.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use serde::{Deserialize, Serialize};

use super::time::Timestamp;

/// The longest a sealed verdict is valid: long enough for a page to post it with its form, short
/// enough that a verdict copied from one visit is of no use for long.
pub const MAX_SEALED_LIFETIME_SECS: i64 = 600;
/// The claims are padded with spaces (which every JSON parser skips) to a multiple of this many
/// bytes, so that a sealed verdict's length says nothing of the verdict: a person's, a bot's
/// and a proxy's are all one size (a verdict naming more reasons than fit takes the next).
pub const SEALED_BUCKET: usize = 1024;
/// Earlier keys kept during their overlap beside the current one (as webhook secrets are).
pub const MAX_EARLIER_KEYS: usize = 2;

/// One sealing key: its id (the JWE header's `kid`) and its 32 bytes.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealingKey {
    pub kid: String,
    /// The key's bytes, base64url without padding (a JWK's `k`).
    k: String,
}

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key itself is never logged.
        f.debug_struct("SealingKey")
            .field("kid", &self.kid)
            .finish()
    }
}

impl SealingKey {
    pub fn generate() -> Self {
        Self {
            kid: format!("seal_{}", super::token::random_base62(12)),
            k: B64.encode(rand::random::<[u8; 32]>()),
        }
    }

    /// The key's bytes; None for a stored key that is not 32 bytes of base64url.
    fn bytes(&self) -> Option<[u8; 32]> {
        B64.decode(&self.k).ok()?.try_into().ok()
    }

    /// The key as a JWK, which JOSE libraries import as it is.
    pub fn jwk(&self, until: Option<Timestamp>) -> SealingJwk {
        SealingJwk {
            kty: "oct",
            kid: self.kid.clone(),
            k: self.k.clone(),
            alg: "dir",
            enc: "A256GCM",
            use_: "enc",
            expires_at: until,
        }
    }
}

/// A sealing key as the API shows it: a JWK (RFC 7517) of type `oct`, plus when it stops being
/// returned (for a key rotated out, the end of its overlap).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SealingJwk {
    pub kty: &'static str,
    pub kid: String,
    pub k: String,
    pub alg: &'static str,
    pub enc: &'static str,
    #[serde(rename = "use")]
    pub use_: &'static str,
    pub expires_at: Option<Timestamp>,
}

/// A key rotated out, kept until `until` so that backends can open verdicts sealed just before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EarlierKey {
    pub key: SealingKey,
    pub until: Timestamp,
}

/// A project's sealing keys: the one that seals, and those rotated out still in their overlap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SealingKeys {
    pub current: SealingKey,
    #[serde(default)]
    pub earlier: Vec<EarlierKey>,
}

impl SealingKeys {
    pub fn new() -> Self {
        Self {
            current: SealingKey::generate(),
            earlier: Vec::new(),
        }
    }

    /// A new key seals from `now`; the replaced one stays listed until `now + overlap`, and
    /// earlier ones until their own overlaps end (at most [`MAX_EARLIER_KEYS`]).
    pub fn rotated(&self, now: Timestamp, overlap: std::time::Duration) -> Self {
        let mut earlier = vec![EarlierKey {
            key: self.current.clone(),
            until: now.plus(overlap),
        }];
        earlier.extend(self.earlier.iter().filter(|e| now < e.until).cloned());
        earlier.truncate(MAX_EARLIER_KEYS + 1);
        Self {
            current: SealingKey::generate(),
            earlier,
        }
    }

    /// The keys a backend should hold at `now`: the current one, then those in their overlap.
    pub fn listed(&self, now: Timestamp) -> Vec<SealingJwk> {
        std::iter::once(self.current.jwk(None))
            .chain(
                self.earlier
                    .iter()
                    .filter(|e| now < e.until)
                    .map(|e| e.key.jwk(Some(e.until))),
            )
            .collect()
    }
}

impl Default for SealingKeys {
    fn default() -> Self {
        Self::new()
    }
}

/// What a sealed verdict says: the event's verdict and what a backend checks before trusting it
/// (the session it expects, its project, the page's origin, the expiry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub event_id: String,
    pub session_id: String,
    pub project_id: String,
    pub score_bot: f64,
    pub score_proxy_vpn: f64,
    /// The reasons' codes.
    pub reasons: Vec<String>,
    pub device: Option<String>,
    /// The agent's status (`verified`, `signed_unknown`, `spoofed`, `unsigned`).
    pub agent: Option<String>,
    pub created_at: Timestamp,
    /// The page's origin, as the collect route admitted it.
    pub origin: String,
    /// Issued and expires, in Unix seconds (as JWT's `iat` and `exp`).
    pub iat: i64,
    pub exp: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("the sealing key is not 32 bytes")]
    BadKey,
    #[error("encryption failed")]
    Crypto,
}

/// The JWE compact serialisation of `verdict` under `key`.
pub fn seal(key: &SealingKey, verdict: &Verdict) -> Result<String, SealError> {
    let bytes = key.bytes().ok_or(SealError::BadKey)?;
    let header = serde_json::json!({"alg": "dir", "enc": "A256GCM", "kid": key.kid});
    let header = B64.encode(header.to_string());
    let iv: [u8; 12] = rand::random();
    let mut data = serde_json::to_vec(verdict).map_err(|_| SealError::Crypto)?;
    data.resize(
        data.len().div_ceil(SEALED_BUCKET).max(1) * SEALED_BUCKET,
        b' ',
    );
    let aead =
        LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| SealError::BadKey)?);
    // RFC 7516 5.1: the additional data is the ASCII of the encoded protected header.
    let tag = aead
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(iv),
            Aad::from(header.as_bytes()),
            &mut data,
        )
        .map_err(|_| SealError::Crypto)?;
    // An empty encrypted key: with `dir`, the key is the shared one itself.
    Ok(format!(
        "{header}..{}.{}.{}",
        B64.encode(iv),
        B64.encode(&data),
        B64.encode(tag.as_ref())
    ))
}

/// Opens a sealed verdict with `keys` (by its `kid`), as a backend would; for tests and the CLI.
/// None when it is not one of these keys' verdicts or was changed.
pub fn open(keys: &[SealingKey], sealed: &str) -> Option<Verdict> {
    let parts: Vec<&str> = sealed.split('.').collect();
    let [header, "", iv, data, tag] = parts[..] else {
        return None;
    };
    let h: serde_json::Value = serde_json::from_slice(&B64.decode(header).ok()?).ok()?;
    if h["alg"] != "dir" || h["enc"] != "A256GCM" {
        return None;
    }
    let key = keys.iter().find(|k| h["kid"] == k.kid.as_str())?;
    let aead = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &key.bytes()?).ok()?);
    let iv: [u8; 12] = B64.decode(iv).ok()?.try_into().ok()?;
    let mut buf = B64.decode(data).ok()?;
    buf.extend(B64.decode(tag).ok()?);
    let plain = aead
        .open_in_place(
            Nonce::assume_unique_for_key(iv),
            Aad::from(header.as_bytes()),
            &mut buf,
        )
        .ok()?;
    serde_json::from_slice(plain).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict() -> Verdict {
        Verdict {
            event_id: "evt_1".into(),
            session_id: "sess_1".into(),
            project_id: "prj_1".into(),
            score_bot: 0.97,
            score_proxy_vpn: 0.02,
            reasons: vec!["webdriver".into()],
            device: None,
            agent: Some("unsigned".into()),
            created_at: Timestamp::from_unix_millis(1_800_000_000_000).unwrap(),
            origin: "https://shop.example".into(),
            iat: 1_800_000_000,
            exp: 1_800_000_600,
        }
    }

    #[test]
    fn a_person_a_webdriver_and_a_proxy_are_sealed_to_one_length() {
        let key = SealingKey::generate();
        let person = Verdict {
            score_bot: 0.018,
            reasons: vec![],
            agent: Some("unsigned".into()),
            ..verdict()
        };
        let webdriver = Verdict {
            score_bot: 1.0,
            reasons: [
                "webdriver",
                "automation_framework",
                "cdp_automation",
                "synthetic_pointer",
            ]
            .map(String::from)
            .to_vec(),
            device: Some("dev_0123456789abcdefghij".into()),
            ..verdict()
        };
        let proxy = Verdict {
            score_proxy_vpn: 0.9997,
            reasons: ["vpn_range", "timezone_mismatch", "webrtc_ip_mismatch"]
                .map(String::from)
                .to_vec(),
            ..verdict()
        };
        let lengths: Vec<usize> = [&person, &webdriver, &proxy]
            .iter()
            .map(|v| seal(&key, v).unwrap().len())
            .collect();
        assert!(lengths.iter().all(|l| *l == lengths[0]), "{lengths:?}");
        // The padding is whitespace: the verdict opens as it was.
        let sealed = seal(&key, &webdriver).unwrap();
        assert_eq!(open(std::slice::from_ref(&key), &sealed), Some(webdriver));
    }

    #[test]
    fn a_sealed_verdict_opens_with_its_key_only_and_not_once_changed() {
        let keys = SealingKeys::new();
        let sealed = seal(&keys.current, &verdict()).unwrap();
        assert_eq!(sealed.split('.').count(), 5);
        assert_eq!(sealed.split('.').nth(1), Some(""), "dir: no encrypted key");
        assert_eq!(
            open(std::slice::from_ref(&keys.current), &sealed),
            Some(verdict())
        );
        assert_eq!(
            open(&[SealingKey::generate()], &sealed),
            None,
            "another key"
        );
        let mut other = SealingKey::generate();
        other.kid = keys.current.kid.clone();
        assert_eq!(
            open(&[other], &sealed),
            None,
            "another key under the same kid"
        );
        // Any changed part (header, IV, ciphertext, tag) fails authentication.
        let parts: Vec<&str> = sealed.split('.').collect();
        for i in [0, 2, 3, 4] {
            let mut p: Vec<String> = parts.iter().map(|s| s.to_string()).collect();
            let mut bytes = B64.decode(&p[i]).unwrap();
            bytes[0] ^= 1;
            p[i] = B64.encode(bytes);
            assert_eq!(
                open(std::slice::from_ref(&keys.current), &p.join(".")),
                None,
                "part {i}"
            );
        }
        // Two seals of one verdict differ (a fresh IV each).
        assert_ne!(sealed, seal(&keys.current, &verdict()).unwrap());
    }

    #[test]
    fn rotation_keeps_the_replaced_key_listed_for_its_overlap() {
        let t = |s: i64| Timestamp::from_unix_millis(s * 1000).unwrap();
        let hour = std::time::Duration::from_secs(3600);
        let first = SealingKeys::new();
        let second = first.rotated(t(1_000), hour);
        assert_ne!(second.current.kid, first.current.kid);
        let listed = second.listed(t(2_000));
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[1].kid, first.current.kid);
        assert_eq!(listed[1].expires_at, Some(t(4_600)));
        assert_eq!(second.listed(t(4_600)).len(), 1, "the overlap has ended");
        let json = serde_json::to_value(&listed[0]).unwrap();
        assert_eq!(json["kty"], "oct");
        assert_eq!(json["use"], "enc");
        assert!(json["k"].as_str().unwrap().len() == 43, "{json}");
    }
}
