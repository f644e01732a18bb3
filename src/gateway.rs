//! The API Gateway seam: the TOKEN authorizer's answer (its policy and the context that carries
//! the account and its plan's terms as strings) and, on the functions' side, API Gateway's event
//! adapted to the pipeline: its context read back into the typed [`Context`], its request into a
//! plain [`vigil_http::Request`] and the answer back into the response Lambda returns. The
//! authorizer-context JSON and `lambda_http`'s types exist only here and in `lambda.rs`.

use std::collections::HashMap;
use std::net::IpAddr;

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerPolicy, ApiGatewayCustomAuthorizerResponse,
};
use aws_lambda_events::iam::{IamPolicyEffect, IamPolicyStatement};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use vigil_core::domain::AccountId;
use vigil_core::domain::plan::{Principal, Terms};
use vigil_core::service::error::ServiceResult;
use vigil_core::service::vigil::Vigil;
use vigil_core::store::AccountStore;
use vigil_http::{Context, PathParams, forwarded};

/// The typed context of a request API Gateway passed to a function: the principal from the
/// authorizer's context (its terms read from the account when a policy cached before they were
/// added lacks them), and the source address. API Gateway never makes the client direct: its
/// own edge adds headers.
pub async fn request_context<S: AccountStore, D>(
    app: &Vigil<S, D>,
    req: &Request,
) -> ServiceResult<Context> {
    let Some(RequestContext::ApiGatewayV1(ctx)) = req.request_context_ref() else {
        return Ok(Context::default());
    };
    let principal = match from_context(&ctx.authorizer.fields) {
        Some((account, Some(terms))) => Some(Principal {
            account,
            terms,
            plan: None,
        }),
        Some((account, None)) => {
            let plan = app.plans().plan(&account).await?;
            Some(Principal {
                account,
                terms: plan.terms(),
                plan: Some(plan),
            })
        }
        None => None,
    };
    let client = ctx
        .identity
        .source_ip
        .as_deref()
        .and_then(|s| s.parse::<IpAddr>().ok());
    Ok(Context {
        principal,
        client,
        direct: false,
        wire: None,
    })
}

/// The header CloudFront adds to every origin request with the deployment's origin-verify
/// secret (template.yaml): only a request that carries it came through our distribution, so only
/// then are its `CloudFront-Viewer-*` headers CloudFront's and not the client's own.
pub const ORIGIN_VERIFY_HEADER: &str = "x-vigil-origin-verify";

/// What the functions know of the edge in front of API Gateway: the origin-verify secret's
/// digest (compared by digest, so the comparison's time says nothing of the secret).
#[derive(Debug, Clone, Default)]
pub struct Edge {
    origin_verify: Option<[u8; 32]>,
}

impl Edge {
    /// The edge whose requests carry `secret`; with None (or an empty secret), no request's
    /// viewer headers are believed.
    pub fn new(secret: Option<&str>) -> Self {
        Self {
            origin_verify: secret
                .filter(|s| !s.is_empty())
                .map(|s| Sha256::digest(s.as_bytes()).into()),
        }
    }

    /// Whether the request carries the deployment's origin-verify secret.
    fn verified(&self, headers: &http::HeaderMap) -> bool {
        match (self.origin_verify, headers.get(ORIGIN_VERIFY_HEADER)) {
            (Some(secret), Some(given)) => {
                <[u8; 32]>::from(Sha256::digest(given.as_bytes())) == secret
            }
            _ => false,
        }
    }

    /// `ctx` with what CloudFront saw of the viewer, when the request proves it came through
    /// the distribution: the viewer's address (`CloudFront-Viewer-Address`; behind CloudFront,
    /// API Gateway's source address is CloudFront's own) and the wire. Otherwise `ctx` as it is.
    pub fn viewer(&self, mut ctx: Context, headers: &http::HeaderMap) -> Context {
        if !self.verified(headers) {
            return ctx;
        }
        if let Some(ip) = forwarded::address(headers) {
            ctx.client = Some(ip);
        }
        ctx.wire = forwarded::wire(headers);
        ctx
    }
}

/// API Gateway's request as the pipeline reads it: the same method, URI (query included) and
/// headers, the body read whole (`lambda_http` has decoded base64), and the path ids API Gateway
/// matched as [`PathParams`].
pub fn request(req: Request) -> vigil_http::Request {
    let params: PathParams = req
        .path_parameters_ref()
        .map(|p| {
            p.iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let (mut parts, body) = req.into_parts();
    // API Gateway's own extensions stay behind: the pipeline reads only what this seam made.
    parts.extensions.clear();
    parts.extensions.insert(params);
    let body = match body {
        Body::Empty => bytes::Bytes::new(),
        Body::Text(s) => s.into(),
        Body::Binary(v) => v.into(),
        // The enum is non-exhaustive: a kind added later carries bytes too.
        other => bytes::Bytes::copy_from_slice(other.as_ref()),
    };
    vigil_http::Request::from_parts(parts, body)
}

/// The pipeline's answer as the function returns it: UTF-8 as text (every answer is text or
/// empty), anything else as binary, which `lambda_http` sends base64-encoded.
pub fn response(res: vigil_http::Response) -> Response<Body> {
    res.map(|bytes| {
        if bytes.is_empty() {
            Body::Empty
        } else {
            match String::from_utf8(bytes.into()) {
                Ok(text) => Body::Text(text),
                Err(e) => Body::Binary(e.into_bytes()),
            }
        }
    })
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

/// The authorizer context key that carries the authenticated account.
const ACCOUNT_CONTEXT_KEY: &str = "accountId";

// The authorizer context: the account and its plan's terms, as the strings API Gateway passes on
// to the functions (cached with the policy; a plan change applies within the cache's 300 s).
const PLAN_STATUS: &str = "planStatus";
const PLAN_EXPIRES_AT: &str = "planExpiresAt";
const PLAN_SUBSCRIBED_AT: &str = "planSubscribedAt";
const MAX_RPS: &str = "maxRps";
const MAX_REQUESTS: &str = "maxRequests";
const MAX_PROJECTS: &str = "maxProjects";

/// The context the authorizer returns for `principal`.
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
fn from_context(fields: &HashMap<String, Value>) -> Option<(AccountId, Option<Terms>)> {
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

    fn principal() -> Principal {
        Principal {
            account: AccountId::parse("acc_1").unwrap(),
            terms: Terms {
                status: vigil_core::domain::PlanStatus::PastDue,
                expires_at: Some("2027-01-01T00:00:00Z".parse().unwrap()),
                subscribed_at: "2026-01-31T00:00:00Z".parse().unwrap(),
                max_rps: 7,
                max_requests: 5_000_000_000,
                max_projects: 3,
            },
            plan: None,
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

    #[test]
    fn a_request_crosses_with_its_query_path_ids_and_body() {
        // A sample event, with a query and a path id that need decoding, and a body.
        let mut event: Value =
            serde_json::from_str(include_str!("../events/list-results-paged.json")).unwrap();
        event["queryStringParameters"] = json!({"limit": "5", "cursor": "a+b/c="});
        event["multiValueQueryStringParameters"] = json!({"limit": ["5"], "cursor": ["a+b/c="]});
        event["pathParameters"] = json!({"projectId": "prj_1", "sessionId": "s 1"});
        event["headers"]["Content-Type"] = json!("application/json");
        event["multiValueHeaders"]["Content-Type"] = json!(["application/json"]);
        event["body"] = json!(r#"{"n":1}"#);
        let req = request(lambda_http::request::from_str(&event.to_string()).unwrap());
        let params = req.extensions().get::<PathParams>().unwrap();
        assert_eq!(params.get("sessionId"), Some("s 1"));
        let query = vigil_http::extract::QueryParams::of(&req);
        let query = vigil_http::extract::Query::of(&query);
        assert_eq!(query.first("cursor"), Some("a+b/c="));
        assert_eq!(query.first("limit"), Some("5"));
        assert_eq!(&req.body()[..], br#"{"n":1}"#);
        assert_eq!(req.headers()["content-type"], "application/json");
    }

    #[test]
    fn an_answer_crosses_as_text_or_empty() {
        let text = response(vigil_http::Response::new("{}".into()));
        assert!(matches!(text.body(), Body::Text(t) if t == "{}"));
        let empty = response(vigil_http::Response::new(bytes::Bytes::new()));
        assert!(matches!(empty.body(), Body::Empty));
        let binary = response(vigil_http::Response::new(vec![0xff, 0].into()));
        assert!(matches!(binary.body(), Body::Binary(b) if b == &[0xff, 0]));
    }

    proptest::proptest! {
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
