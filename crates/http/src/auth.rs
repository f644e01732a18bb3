//! Authentication: the bearer header, and the TOKEN authorizer's answer to API Gateway.

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerPolicy, ApiGatewayCustomAuthorizerResponse,
};
use aws_lambda_events::iam::{IamPolicyEffect, IamPolicyStatement};

use std::collections::HashMap;

use serde_json::{Value, json};

use super::ACCOUNT_CONTEXT_KEY;
use crate::domain::AccountId;
use crate::domain::plan::{Principal, Terms};
use crate::domain::token::ApiKey;
use crate::service::{ServiceError, ServiceResult, Vigil};
use crate::store::{AccountStore, KeyStore};

/// The key of an `Authorization: Bearer <key>` header, if it has the key format. The scheme word is
/// case-insensitive.
pub fn bearer_key(header: Option<&str>) -> Option<&str> {
    let (scheme, key) = header?.trim().split_once(' ')?;
    let key = key.trim();
    (scheme.eq_ignore_ascii_case("bearer") && ApiKey::validate(key).is_ok()).then_some(key)
}

/// The account behind an `Authorization` header value, with its plan's terms.
pub async fn authorize<S: KeyStore + AccountStore>(
    app: &Vigil<S>,
    header: Option<&str>,
) -> ServiceResult<Principal> {
    let key = bearer_key(header)
        .and_then(|k| ApiKey::parse(k).ok())
        .ok_or(ServiceError::Unauthorized)?;
    app.authenticate(&key).await
}

/// The policy returned to API Gateway. It allows every method and path of the stage, because
/// API Gateway caches the answer per token: a policy for only the first route would deny the next.
pub fn allow_policy(method_arn: &str, principal: &Principal) -> ApiGatewayCustomAuthorizerResponse {
    let account = &principal.account;
    // arn:aws:execute-api:{region}:{account}:{apiId}/{stage}/{method}/{path...}
    let mut parts = method_arn.splitn(3, '/');
    let resource = match (parts.next(), parts.next()) {
        (Some(api), Some(stage)) => format!("{api}/{stage}/*"),
        _ => method_arn.to_owned(),
    };
    let mut statement = IamPolicyStatement::default();
    statement.action = vec!["execute-api:Invoke".to_owned()];
    statement.effect = IamPolicyEffect::Allow;
    statement.resource = vec![resource];
    let mut policy = ApiGatewayCustomAuthorizerPolicy::default();
    policy.version = Some("2012-10-17".to_owned());
    policy.statement = vec![statement];
    let mut res = ApiGatewayCustomAuthorizerResponse::default();
    res.principal_id = Some(account.to_string());
    res.policy_document = policy;
    res.context = context(principal);
    res
}

// The authorizer context: the account and its plan's terms, as the strings API Gateway passes on
// to the functions (cached with the policy; a plan change applies within the cache's 300 s).
const PLAN_STATUS: &str = "planStatus";
const PLAN_EXPIRES_AT: &str = "planExpiresAt";
const PLAN_SUBSCRIBED_AT: &str = "planSubscribedAt";
const MAX_RPS: &str = "maxRps";
const MAX_REQUESTS: &str = "maxRequests";
const MAX_PROJECTS: &str = "maxProjects";

/// The context the authorizer returns (and `vigil serve` builds) for `principal`.
pub fn context(principal: &Principal) -> Value {
    let t = &principal.terms;
    let status = serde_json::to_value(t.status).unwrap_or(Value::Null);
    json!({
        ACCOUNT_CONTEXT_KEY: principal.account.as_str(),
        PLAN_STATUS: status,
        PLAN_EXPIRES_AT: t.expires_at.map_or(String::new(), |e| e.to_string()),
        PLAN_SUBSCRIBED_AT: t.subscribed_at.to_string(),
        MAX_RPS: t.max_rps.to_string(),
        MAX_REQUESTS: t.max_requests.to_string(),
        MAX_PROJECTS: t.max_projects.to_string(),
    })
}

/// The account of a request context, and its plan's terms when the context carries them (a
/// policy cached before they were added does not: the caller reads them instead).
pub fn from_context(fields: &HashMap<String, Value>) -> Option<(AccountId, Option<Terms>)> {
    let account = AccountId::parse(fields.get(ACCOUNT_CONTEXT_KEY)?.as_str()?).ok()?;
    Some((account, terms_from_context(fields)))
}

fn terms_from_context(fields: &HashMap<String, Value>) -> Option<Terms> {
    // API Gateway passes context values as strings; a number is accepted too.
    let text = |name: &str| match fields.get(name)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let number = |name: &str| text(name)?.parse::<u64>().ok();
    let expires_at = match text(PLAN_EXPIRES_AT)?.as_str() {
        "" => None,
        s => Some(s.parse().ok()?),
    };
    Some(Terms {
        status: serde_json::from_value(Value::String(text(PLAN_STATUS)?)).ok()?,
        expires_at,
        subscribed_at: text(PLAN_SUBSCRIBED_AT)?.parse().ok()?,
        max_rps: u32::try_from(number(MAX_RPS)?).ok()?,
        max_requests: number(MAX_REQUESTS)?,
        max_projects: u32::try_from(number(MAX_PROJECTS)?).ok()?,
    })
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

    fn principal() -> Principal {
        Principal {
            account: AccountId::parse("acc_1").unwrap(),
            terms: Terms {
                status: crate::domain::PlanStatus::PastDue,
                expires_at: Some("2027-01-01T00:00:00Z".parse().unwrap()),
                subscribed_at: "2026-01-31T00:00:00Z".parse().unwrap(),
                max_rps: 7,
                max_requests: 5_000_000_000,
                max_projects: 3,
            },
        }
    }

    #[test]
    fn the_context_carries_the_terms_as_strings() {
        let p = principal();
        let Value::Object(map) = context(&p) else {
            panic!("not an object")
        };
        assert!(map.values().all(Value::is_string), "{map:?}");
        let fields: HashMap<String, Value> = map.into_iter().collect();
        assert_eq!(
            from_context(&fields),
            Some((p.account.clone(), Some(p.terms)))
        );
        let mut no_expiry = p.clone();
        no_expiry.terms.expires_at = None;
        let Value::Object(map) = context(&no_expiry) else {
            panic!("not an object")
        };
        let fields: HashMap<String, Value> = map.into_iter().collect();
        assert_eq!(
            from_context(&fields).and_then(|(_, t)| t),
            Some(no_expiry.terms)
        );
        // An older policy with the account only.
        let old = HashMap::from([("accountId".to_owned(), json!("acc_1"))]);
        assert_eq!(from_context(&old), Some((p.account, None)));
        let bad = HashMap::from([("accountId".to_owned(), json!("a/b"))]);
        assert_eq!(from_context(&bad), None);
    }

    #[test]
    fn policy_covers_the_whole_stage() {
        let p = allow_policy(
            "arn:aws:execute-api:eu-west-1:123456789012:abcdef123/v1/GET/results/p/s",
            &principal(),
        );
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(
            v["policyDocument"]["Statement"][0]["Resource"][0],
            "arn:aws:execute-api:eu-west-1:123456789012:abcdef123/v1/*"
        );
        assert_eq!(v["policyDocument"]["Statement"][0]["Effect"], "Allow");
        assert_eq!(v["context"]["accountId"], "acc_1");
        assert_eq!(v["principalId"], "acc_1");
    }

    proptest::proptest! {
        #[test]
        fn any_header_is_a_key_or_none(h in ".{0,300}") {
            if let Some(k) = bearer_key(Some(&h)) {
                proptest::prop_assert!(ApiKey::parse(k).is_ok());
            }
        }

        #[test]
        fn any_context_is_a_caller_or_none(
            fields in proptest::collection::hash_map("[a-zA-Z]{1,16}", "[a-z0-9_:.-]{0,24}", 0..8)
        ) {
            let fields: HashMap<String, Value> =
                fields.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            let _ = from_context(&fields);
        }
    }
}
