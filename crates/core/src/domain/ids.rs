//! Identifier newtypes. Every id that crosses the edge is validated here, so an invalid id cannot
//! exist past parsing.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

/// Longest identifier the contract allows.
pub const MAX_ID_LEN: usize = 128;

/// Why a string is not an identifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {MAX_ID_LEN} characters")]
    TooLong,
    #[error("may only contain letters, digits and _ . : -")]
    BadChar,
    /// `.` and `..` name the path's own segments wherever an id becomes one (a URL, a file).
    #[error("must hold a character other than .")]
    OnlyDots,
    /// The id has the characters of an id but not the form of its kind.
    #[error("must be {0}")]
    Malformed(&'static str),
}

fn check(s: &str) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty);
    }
    if s.len() > MAX_ID_LEN {
        return Err(IdError::TooLong);
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
    {
        return Err(IdError::BadChar);
    }
    if s.bytes().all(|b| b == b'.') {
        return Err(IdError::OnlyDots);
    }
    Ok(())
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn parse(s: impl Into<String>) -> Result<Self, IdError> {
                let s = s.into();
                check(&s)?;
                Ok(Self(s))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::parse(s)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::parse(s).map_err(serde::de::Error::custom)
            }
        }
    };
}

id_type!(
    /// A customer account (owner of API keys, projects and a plan).
    AccountId
);
id_type!(
    /// A project of an account.
    ProjectId
);
id_type!(
    /// A visitor session within a project.
    SessionId
);
id_type!(
    /// A webhook of a project.
    WebhookId
);
id_type!(
    /// A plan identifier.
    PlanId
);

id_type!(
    /// A webhook delivery: the Standard Webhooks `webhook-id`, stable across retries.
    DeliveryId
);

impl DeliveryId {
    /// The id of the delivery of one session's crossing to one webhook. Deterministic, so a
    /// replayed stream record finds the delivery it already created instead of making another.
    pub fn for_crossing(project: &ProjectId, session: &SessionId, webhook: &WebhookId) -> Self {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for part in [project.as_str(), session.as_str(), webhook.as_str()] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        Self(format!("msg_{}", &hex::encode(h.finalize())[..32]))
    }

    /// A fresh id, for a delivery that is no crossing (a test event).
    pub fn generate() -> Self {
        Self(format!("msg_{}", super::token::time_ordered_token()))
    }
}

impl SessionId {
    /// FNV-1a of the id, stable across processes: what spreads a session's counts over shards
    /// (the statistics' items, the velocity project counters).
    pub fn stable_hash(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.as_str().bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h
    }
}

impl ProjectId {
    /// A fresh, unique, opaque project id, time-ordered like webhook ids.
    pub fn generate() -> Self {
        Self(format!("prj_{}", super::token::time_ordered_token()))
    }
}

impl WebhookId {
    /// A fresh, unique, opaque webhook id: time-ordered so that ids sort by creation.
    pub fn generate() -> Self {
        Self(format!("wh_{}", super::token::time_ordered_token()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_allowed_alphabet() {
        assert!(ProjectId::parse("prj_1.a:b-C").is_ok());
        assert!(SessionId::parse("x".repeat(128)).is_ok());
    }

    #[test]
    fn rejects_empty_long_and_odd_characters() {
        assert_eq!(ProjectId::parse(""), Err(IdError::Empty));
        assert_eq!(ProjectId::parse("x".repeat(129)), Err(IdError::TooLong));
        for bad in ["a/b", "a b", "a%2F", "é", "a#b", "a\0"] {
            assert_eq!(ProjectId::parse(bad), Err(IdError::BadChar), "{bad}");
        }
        // Path segments of their own wherever an id becomes one; dots beside anything else are
        // fine.
        for bad in [".", "..", "..."] {
            assert_eq!(SessionId::parse(bad), Err(IdError::OnlyDots), "{bad}");
        }
        assert!(SessionId::parse("..a").is_ok() && SessionId::parse("a.").is_ok());
    }

    #[test]
    fn deserialize_validates() {
        assert!(serde_json::from_str::<ProjectId>("\"ok\"").is_ok());
        assert!(serde_json::from_str::<ProjectId>("\"no/slash\"").is_err());
    }

    #[test]
    fn delivery_ids_are_deterministic_per_crossing() {
        let (p, s, w) = (
            ProjectId::parse("p").unwrap(),
            SessionId::parse("s").unwrap(),
            WebhookId::parse("w").unwrap(),
        );
        let a = DeliveryId::for_crossing(&p, &s, &w);
        assert_eq!(a, DeliveryId::for_crossing(&p, &s, &w));
        assert_ne!(
            a,
            DeliveryId::for_crossing(&p, &s, &WebhookId::parse("w2").unwrap())
        );
        // Parts cannot run into each other: ("ab","c") differs from ("a","bc").
        let b = DeliveryId::for_crossing(&ProjectId::parse("pa").unwrap(), &s, &w);
        let c = DeliveryId::for_crossing(&p, &SessionId::parse("as").unwrap(), &w);
        assert_ne!(b, c);
        assert!(DeliveryId::parse(a.as_str()).is_ok());
    }

    #[test]
    fn generated_webhook_ids_are_valid_and_unique() {
        let a = WebhookId::generate();
        let b = WebhookId::generate();
        assert_ne!(a, b);
        assert!(WebhookId::parse(a.as_str()).is_ok());
    }

    proptest::proptest! {
        // Outside input never panics; what is accepted is kept exactly and survives JSON.
        #[test]
        fn any_text_is_an_id_or_a_refusal(s in ".{0,200}") {
            if let Ok(id) = ProjectId::parse(s.clone()) {
                proptest::prop_assert_eq!(id.as_str(), s.as_str());
                let json = serde_json::to_string(&id).unwrap();
                proptest::prop_assert_eq!(serde_json::from_str::<ProjectId>(&json).unwrap(), id);
            }
        }

        // The grammar: letters, digits and `_ . : -`, at most 128, not dots alone (openapi.yaml).
        #[test]
        fn every_id_of_the_grammar_is_accepted(s in "[A-Za-z0-9_.:-]{0,63}[A-Za-z0-9_:-][A-Za-z0-9_.:-]{0,64}") {
            let id = SessionId::parse(s.clone()).unwrap();
            proptest::prop_assert_eq!(id.as_str(), s.as_str());
        }
    }
}
