//! Authentication: a developer key in the `Authorization` header, and the account it names. The
//! authorizer function (API Gateway) and `vigil serve` both call [`authorize`].

use vigil_core::domain::plan::Principal;
use vigil_core::domain::token::ApiKey;
use vigil_core::service::error::{ServiceError, ServiceResult};
use vigil_core::service::vigil::Vigil;
use vigil_core::store::{AccountStore, KeyStore};

/// The key of an `Authorization: Bearer <key>` header, if it has the key format. The scheme word is
/// case-insensitive.
pub fn bearer_key(header: Option<&str>) -> Option<&str> {
    let (scheme, key) = header?.trim().split_once(' ')?;
    let key = key.trim();
    (scheme.eq_ignore_ascii_case("bearer") && ApiKey::validate(key).is_ok()).then_some(key)
}

/// The account behind an `Authorization` header value, with its plan's terms.
pub async fn authorize<S: KeyStore + AccountStore, D>(
    app: &Vigil<S, D>,
    header: Option<&str>,
) -> ServiceResult<Principal> {
    let key = bearer_key(header)
        .and_then(|k| ApiKey::parse(k).ok())
        .ok_or(ServiceError::Unauthorized)?;
    app.authenticate(&key).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bearer_case_insensitively() {
        assert_eq!(bearer_key(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer_key(Some("bearer abc")), Some("abc"));
        assert_eq!(bearer_key(Some("BEARER  abc ")), Some("abc"));
    }

    #[test]
    fn rejects_other_schemes_and_empty_keys() {
        for h in [
            "",
            "Bearer",
            "Bearer ",
            "Basic abc",
            "Token abc",
            "abc",
            "Bearer a b",
            "Bearerabc",
        ] {
            assert_eq!(bearer_key(Some(h)), None, "{h:?}");
        }
        assert_eq!(bearer_key(None), None);
        let long = format!("Bearer {}", "a".repeat(ApiKey::MAX_LEN + 1));
        assert_eq!(bearer_key(Some(&long)), None);
    }

    proptest::proptest! {
        #[test]
        fn any_header_is_a_key_or_none(h in ".{0,300}") {
            if let Some(k) = bearer_key(Some(&h)) {
                proptest::prop_assert!(ApiKey::parse(k).is_ok());
            }
        }
    }
}
