//! Idempotent creation, as payment APIs do it: a client sends `Idempotency-Key` with a creation;
//! a retry with the same key and the same request gets the first answer and writes nothing new, the
//! same key with another request is refused, and keys are forgotten after [`KEY_LIFETIME_SECONDS`].
//!
//! The key is recorded in the same transaction as what it created, so a creation and its key are
//! written together or not at all: a retry after any failure either replays or creates, never both.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ids::{AccountId, ProjectId, SessionId};
use super::model::ResultPosition;
use super::time::Timestamp;

/// How long a key is remembered.
pub const KEY_LIFETIME_SECONDS: i64 = 24 * 3600;
/// Longest key accepted.
pub const MAX_KEY_LEN: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Idempotency-Key must be 1 to {MAX_KEY_LEN} visible ASCII characters")]
pub struct KeyError;

/// A client's idempotency key: 1 to 255 visible ASCII characters (a UUID is typical).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn parse(s: &str) -> Result<Self, KeyError> {
        if s.is_empty() || s.len() > MAX_KEY_LEN || !s.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(KeyError);
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A creation made once per key: whose key it is, the key, and the request's fingerprint (so
/// that the same key with another request can be told apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Once {
    pub account: AccountId,
    pub key: IdempotencyKey,
    pub fingerprint: String,
    /// When the request was made: a key used before `at - 24 h` is forgotten.
    pub at: Timestamp,
}

impl Once {
    /// The fingerprint of a request: its method, path and body.
    pub fn new(account: AccountId, key: IdempotencyKey, request: &[&[u8]], now: Timestamp) -> Self {
        let mut h = Sha256::new();
        for part in request {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part);
        }
        Self {
            account,
            key,
            fingerprint: hex::encode(h.finalize()),
            at: now,
        }
    }

    /// When a key recorded now is forgotten (epoch seconds, the table's TTL attribute).
    pub fn expires(&self) -> i64 {
        self.at.unix_seconds().saturating_add(KEY_LIFETIME_SECONDS)
    }
}

/// What a key created, as remembered: enough to answer a retry with the first answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Created {
    #[serde(rename_all = "camelCase")]
    Event {
        project_id: ProjectId,
        session_id: SessionId,
        created_at: Timestamp,
        seq: u64,
    },
    #[serde(rename_all = "camelCase")]
    Project { project_id: ProjectId },
}

impl Created {
    pub fn event(project: &ProjectId, session: &SessionId, at: ResultPosition) -> Self {
        Self::Event {
            project_id: project.clone(),
            session_id: session.clone(),
            created_at: at.created_at,
            seq: at.seq,
        }
    }
}

/// A key already used: the request it was used for and what that created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Used {
    pub fingerprint: String,
    pub created: Created,
}

/// The outcome of a creation under a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written<T> {
    /// Written now.
    New(T),
    /// The key was used before: nothing was written.
    Before(Used),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert!(IdempotencyKey::parse("3f1c2b7e-9f0a-4c55-8f0e-2a1b3c4d5e6f").is_ok());
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
        for bad in ["", " ", "a b", "é", &"k".repeat(256), "a\nb"] {
            assert_eq!(IdempotencyKey::parse(bad), Err(KeyError), "{bad:?}");
        }
    }

    #[test]
    fn fingerprints_tell_requests_apart() {
        let now = Timestamp::now();
        let once = |parts: &[&[u8]]| {
            let acc = AccountId::parse("a").unwrap();
            Once::new(acc, IdempotencyKey::parse("k").unwrap(), parts, now).fingerprint
        };
        assert_eq!(
            once(&[b"POST", b"/p", b"{}"]),
            once(&[b"POST", b"/p", b"{}"])
        );
        assert_ne!(
            once(&[b"POST", b"/p", b"{}"]),
            once(&[b"POST", b"/q", b"{}"])
        );
        // Lengths are hashed, so moving bytes between parts is another request.
        assert_ne!(
            once(&[b"POST", b"/p{", b"}"]),
            once(&[b"POST", b"/p", b"{}"])
        );
    }
}
