//! Authentication: the bearer header, and the TOKEN authorizer's answer to API Gateway.

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerPolicy, ApiGatewayCustomAuthorizerResponse,
};
use aws_lambda_events::iam::{IamPolicyEffect, IamPolicyStatement};

use crate::domain::AccountId;
use crate::domain::token::ApiKey;
use crate::service::{ServiceError, ServiceResult, Vigil};
use crate::store::KeyStore;

/// The key of an `Authorization: Bearer <key>` header, if it has the key format. The scheme word is
/// case-insensitive.
pub fn bearer_key(header: Option<&str>) -> Option<&str> {
    let (scheme, key) = header?.trim().split_once(' ')?;
    let key = key.trim();
    (scheme.eq_ignore_ascii_case("bearer") && ApiKey::validate(key).is_ok()).then_some(key)
}

/// The account behind an `Authorization` header value.
pub async fn authorize<S: KeyStore>(
    app: &Vigil<S>,
    header: Option<&str>,
) -> ServiceResult<AccountId> {
    let key = bearer_key(header)
        .and_then(|k| ApiKey::parse(k).ok())
        .ok_or(ServiceError::Unauthorized)?;
    app.authenticate(&key).await
}

/// The policy returned to API Gateway. It allows every method and path of the stage, because
/// API Gateway caches the answer per token: a policy for only the first route would deny the next.
pub fn allow_policy(method_arn: &str, account: &AccountId) -> ApiGatewayCustomAuthorizerResponse {
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
    res.context = serde_json::json!({ super::ACCOUNT_CONTEXT_KEY: account.as_str() });
    res
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

    #[test]
    fn policy_covers_the_whole_stage() {
        let acc = AccountId::parse("acc_1").unwrap();
        let p = allow_policy(
            "arn:aws:execute-api:eu-west-1:123456789012:abcdef123/v1/GET/results/p/s",
            &acc,
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
}
