//! Session tokens: how a customer's backend vouches for a session before its page may report
//! visits of it. A token is `{expiry}.{signature}`: the expiry in Unix seconds, and the lowercase
//! hex HMAC-SHA256 of `{projectId}:{sessionId}:{expiry}` under the project's `apiKeyPrivate`.
//! The page holds only the token; without the private key nobody can mint one for another
//! session, another project or a later time.
//!
//! A token may also sign `vigil/{sessionId}:{expiry}`, without the project's id: what the SDKs'
//! `sessionToken(projectSecret, sessionId, ttlSeconds)` mints, since a backend holds the key but
//! not always the id beside it. The key is the project's own, so it binds the project as the id
//! did; the `vigil/` prefix, which no project id can start with (`/` is outside the id
//! alphabet), keeps the two messages apart, so no token of one form is a token of the other.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::ids::{ProjectId, SessionId};
use super::time::Timestamp;

/// Longest lifetime a token may have: a token is for a visit, not for good.
pub const MAX_LIFETIME_SECS: i64 = 24 * 3600;
/// Clock difference tolerated between the minting backend and Vigil, on the lifetime bound.
const SKEW_SECS: i64 = 300;
/// `{expiry}.{64 hex digits}`: anything longer is not a token.
const MAX_TOKEN_LEN: usize = 20 + 1 + 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the session token is malformed")]
    Malformed,
    #[error("the session token has expired")]
    Expired,
    #[error("the session token is valid for longer than 24 hours")]
    TooLong,
    #[error("the session token is not for this project and session")]
    BadSignature,
}

/// What a token signs: the project's id, or the SDKs' prefix, then the session and the expiry.
fn mac(key: &str, project: Option<&ProjectId>, session: &SessionId, expiry: i64) -> Hmac<Sha256> {
    // HMAC takes keys of any length: new_from_slice cannot fail for it.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    match project {
        Some(project) => mac.update(format!("{project}:{session}:{expiry}").as_bytes()),
        None => mac.update(format!("{UNBOUND_PREFIX}{session}:{expiry}").as_bytes()),
    }
    mac
}

/// The prefix of the message of a token minted without the project's id.
pub const UNBOUND_PREFIX: &str = "vigil/";

/// A token as the SDKs mint it, from the project's private key alone.
pub fn mint_unbound(private_key: &str, session: &SessionId, expiry: i64) -> String {
    let sig = mac(private_key, None, session, expiry)
        .finalize()
        .into_bytes();
    format!("{expiry}.{}", hex::encode(sig))
}

/// A token for `session` of `project`, valid until `expiry` (Unix seconds).
pub fn mint(private_key: &str, project: &ProjectId, session: &SessionId, expiry: i64) -> String {
    let sig = mac(private_key, Some(project), session, expiry)
        .finalize()
        .into_bytes();
    format!("{expiry}.{}", hex::encode(sig))
}

/// Checks `token` for `session` of `project` at `now`: well formed, signed with the project's
/// private key for exactly this session, not expired, and not valid for more than 24 hours.
pub fn verify(
    token: &str,
    private_key: &str,
    project: &ProjectId,
    session: &SessionId,
    now: Timestamp,
) -> Result<(), TokenError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(TokenError::Malformed);
    }
    let (expiry, sig) = token.split_once('.').ok_or(TokenError::Malformed)?;
    if expiry.is_empty() || !expiry.bytes().all(|b| b.is_ascii_digit()) || sig.len() != 64 {
        return Err(TokenError::Malformed);
    }
    let expiry: i64 = expiry.parse().map_err(|_| TokenError::Malformed)?;
    let sig = hex::decode(sig).map_err(|_| TokenError::Malformed)?;
    // The signature first: an attacker learns nothing about expiry rules from a forged token.
    let signed = |project| mac(private_key, project, session, expiry).verify_slice(&sig);
    signed(Some(project))
        .or_else(|_| signed(None))
        .map_err(|_| TokenError::BadSignature)?;
    let now = now.unix_seconds();
    if expiry <= now {
        return Err(TokenError::Expired);
    }
    if expiry - now > MAX_LIFETIME_SECS + SKEW_SECS {
        return Err(TokenError::TooLong);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(p: &str, s: &str) -> (ProjectId, SessionId) {
        (ProjectId::parse(p).unwrap(), SessionId::parse(s).unwrap())
    }

    const NOW: i64 = 1_800_000_000;

    fn now() -> Timestamp {
        Timestamp::from_unix_millis(NOW * 1000).unwrap()
    }

    #[test]
    fn a_minted_token_verifies_for_its_session_only() {
        let (p, s) = ids("prj_1", "sess_1");
        let t = mint("sk_secret", &p, &s, NOW + 3600);
        assert_eq!(verify(&t, "sk_secret", &p, &s, now()), Ok(()));
        let (p2, s2) = ids("prj_2", "sess_2");
        assert_eq!(
            verify(&t, "sk_secret", &p, &s2, now()),
            Err(TokenError::BadSignature)
        );
        assert_eq!(
            verify(&t, "sk_secret", &p2, &s, now()),
            Err(TokenError::BadSignature)
        );
        assert_eq!(
            verify(&t, "sk_other", &p, &s, now()),
            Err(TokenError::BadSignature)
        );
        // A later expiry with the old signature is a forgery.
        let moved = t.replacen(&(NOW + 3600).to_string(), &(NOW + 7200).to_string(), 1);
        assert_eq!(
            verify(&moved, "sk_secret", &p, &s, now()),
            Err(TokenError::BadSignature)
        );
    }

    /// The recipe in the README, computed by hand: HMAC-SHA256 over `prj:sess:exp`, hex.
    #[test]
    fn the_documented_recipe() {
        let (p, s) = ids("prj_demo", "sess_1");
        let t = mint("sk_test", &p, &s, 1_800_003_600);
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(b"sk_test").unwrap();
        m.update(b"prj_demo:sess_1:1800003600");
        assert_eq!(
            t,
            format!("1800003600.{}", hex::encode(m.finalize().into_bytes()))
        );
    }

    /// The SDKs' form: `vigil/{session}:{expiry}` under the project's key, for its session only,
    /// and never the same bytes as a token of the other form.
    #[test]
    fn a_token_minted_without_the_project_id_verifies_under_its_key() {
        let (p, s) = ids("prj_demo", "sess_1");
        let t = mint_unbound("sk_test", &s, 1_800_003_600);
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(b"sk_test").unwrap();
        m.update(b"vigil/sess_1:1800003600");
        assert_eq!(
            t,
            format!("1800003600.{}", hex::encode(m.finalize().into_bytes()))
        );
        assert_eq!(verify(&t, "sk_test", &p, &s, now()), Ok(()));
        let (_, other) = ids("prj_demo", "sess_2");
        assert_eq!(
            verify(&t, "sk_test", &p, &other, now()),
            Err(TokenError::BadSignature)
        );
        assert_eq!(
            verify(&t, "sk_other", &p, &s, now()),
            Err(TokenError::BadSignature)
        );
        // A bound token for session `sess_1` of project `vigil` is not an unbound one for
        // `sess_1` (no project id holds `/`), nor is an unbound token for `prj_demo:sess_1` a
        // bound one for `sess_1`.
        let (_, joined) = ids("prj_demo", "prj_demo:sess_1");
        let unbound_joined = mint_unbound("sk_test", &joined, 1_800_003_600);
        assert_ne!(unbound_joined, mint("sk_test", &p, &s, 1_800_003_600));
        assert!(ProjectId::parse("vigil/").is_err());
    }

    #[test]
    fn expiry_and_lifetime_bounds() {
        let (p, s) = ids("prj_1", "sess_1");
        let v = |exp: i64| verify(&mint("k", &p, &s, exp), "k", &p, &s, now());
        assert_eq!(v(NOW), Err(TokenError::Expired));
        assert_eq!(v(NOW - 1), Err(TokenError::Expired));
        assert_eq!(v(NOW + 1), Ok(()));
        assert_eq!(v(NOW + MAX_LIFETIME_SECS), Ok(()));
        assert_eq!(v(NOW + MAX_LIFETIME_SECS + 3600), Err(TokenError::TooLong));
    }

    #[test]
    fn malformed_tokens() {
        let (p, s) = ids("prj_1", "sess_1");
        for bad in [
            "",
            ".",
            "123",
            "abc.def",
            &format!("{}.{}", NOW + 60, "z".repeat(64)),
            &format!("-5.{}", "a".repeat(64)),
            &format!("{}.{}", NOW + 60, "a".repeat(63)),
            &"9".repeat(200),
            &format!("99999999999999999999999.{}", "a".repeat(64)),
        ] {
            assert_eq!(
                verify(bad, "k", &p, &s, now()),
                Err(TokenError::Malformed),
                "{bad}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_refused_or_verified_never_a_panic(t in ".{0,120}") {
            let (p, s) = ids("prj_1", "sess_1");
            let _ = verify(&t, "k", &p, &s, now());
        }
    }
}
