//! The one place where a request becomes an answer, for the Lambda functions and `vigil serve`
//! alike. Every route passes the same steps in the same order:
//!
//! 1. route: API Gateway (or the local router) picked the endpoint; unknown paths are 404 and known
//!    paths with another method 405, before anything here runs;
//! 2. the caller: the account the authorizer put in the request context, else 401;
//! 3. the plan: 403 when it is not in force (but for reading the plan), 429 over `maxRps` or
//!    `maxRequests`; otherwise the request is counted. Every answer from here on carries the
//!    `RateLimit-Policy` and `RateLimit` headers;
//! 4. path ids: the endpoint's [`FromPath`] type, else 400;
//! 5. body: the endpoint's [`FromBody`] type, else 415, 413 or 400;
//! 6. the endpoint's handler, whose [`Reply`] or [`ApiError`] is turned into a response here.
//!
//! A step that must run for every authenticated request belongs in [`answer`], once. The public
//! routes have their own short paths: the collect route and the agent script (`ingest.rs`).

use std::future::Future;

use http::{HeaderName, StatusCode, header};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;

use super::extract::{FromBody, FromPath, UnreadableBody};
use super::{ApiError, auth, json_response, set_header};
use crate::domain::plan::{Refusal, Standing, Terms, seconds_until};
use crate::domain::{AccountId, Timestamp};
use crate::service::{ServiceError, Vigil};
use crate::store::{AccountStore, ProjectStore, UsageStore};

/// One route: what it extracts from the request, and its handler.
pub trait Endpoint<S>: 'static {
    /// Whether the endpoint answers while the plan is not in force (reading the plan itself, so
    /// a client can learn why it is refused).
    const WITHOUT_PLAN_IN_FORCE: bool = false;
    type Path: FromPath + Send + Sync;
    type Body: FromBody + Send + Sync;
    type Data: Serialize;

    fn handle(
        app: &Vigil<S>,
        call: Call<'_, Self::Path, Self::Body>,
    ) -> impl Future<Output = Result<Reply<Self::Data>, ApiError>> + Send;
}

/// Who a request acts for, and under which plan.
pub struct Caller {
    pub account: AccountId,
    pub terms: Terms,
}

/// A request that passed every step before the handler.
pub struct Call<'a, P, B> {
    pub account: AccountId,
    pub terms: Terms,
    pub path: P,
    pub body: B,
    pub req: &'a Request,
}

/// A successful answer: `{"data": ...}` with its status and headers.
pub struct Reply<T> {
    status: StatusCode,
    data: T,
    headers: Vec<(HeaderName, String)>,
}

impl<T: Serialize> Reply<T> {
    /// 200 with `data`.
    pub fn ok(data: T) -> Self {
        Self {
            status: StatusCode::OK,
            data,
            headers: Vec::new(),
        }
    }

    /// 201 with `data` and the new resource's `Location`.
    pub fn created(data: T, location: String) -> Self {
        Self {
            status: StatusCode::CREATED,
            data,
            headers: vec![(header::LOCATION, location)],
        }
    }

    /// 202 with `data`: taken in, nothing more to say.
    pub fn accepted(data: T) -> Self {
        Self {
            status: StatusCode::ACCEPTED,
            data,
            headers: Vec::new(),
        }
    }

    pub fn with_header(mut self, name: HeaderName, value: String) -> Self {
        self.headers.push((name, value));
        self
    }

    fn into_response(self) -> Result<Response<Body>, ApiError> {
        #[derive(Serialize)]
        struct Envelope<T> {
            data: T,
        }
        let body = serde_json::to_string(&Envelope { data: self.data }).map_err(|e| {
            tracing::error!(error = %e, "serialising a response failed");
            ApiError::Internal
        })?;
        let mut res = json_response(self.status, body);
        for (name, value) in self.headers {
            set_header(&mut res, name, &value);
        }
        Ok(res)
    }
}

/// The account the authorizer put into the request context (401 without it), and its plan's
/// terms, read from the store when the context predates them.
pub async fn developer<S: AccountStore>(app: &Vigil<S>, req: &Request) -> Result<Caller, ApiError> {
    let Some(RequestContext::ApiGatewayV1(ctx)) = req.request_context_ref() else {
        return Err(ApiError::Unauthorized);
    };
    let (account, terms) = match auth::from_context(&ctx.authorizer.fields) {
        Some((account, Some(terms))) => (account, terms),
        Some((account, None)) => {
            let terms = app.terms(&account).await?;
            (account, terms)
        }
        None => return Err(ApiError::Unauthorized),
    };
    Ok(Caller { account, terms })
}

/// Answers one request of endpoint `E` (steps 2 to 6 above).
pub async fn answer<E, S>(app: &Vigil<S>, req: Request) -> Response<Body>
where
    E: Endpoint<S>,
    S: AccountStore + ProjectStore + UsageStore + Sync,
{
    let Caller { account, terms } = match developer(app, &req).await {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    let now = app.now();
    match app.admit(&account, &terms, E::WITHOUT_PLAN_IN_FORCE).await {
        Ok(standing) => {
            let reply = async {
                let path = E::Path::from_path(&req)?;
                if let Some(UnreadableBody(e)) = req.extensions().get::<UnreadableBody>() {
                    return Err(e.clone());
                }
                let body = E::Body::from_body(&req)?;
                let call = Call {
                    account,
                    terms,
                    path,
                    body,
                    req: &req,
                };
                E::handle(app, call).await?.into_response()
            };
            let mut res = reply.await.unwrap_or_else(ApiError::into_response);
            rate_limit_headers(&mut res, &terms, now, Some(standing.into()));
            res
        }
        Err(e) => {
            let refused = refused_remaining(&e, &terms, now);
            let mut res = ApiError::from(e).into_response();
            rate_limit_headers(&mut res, &terms, now, refused);
            res
        }
    }
}

/// What the `RateLimit` field says: the requests left under each limit, where known.
struct Remaining {
    burst: Option<u32>,
    monthly: Option<u64>,
    /// Seconds until the period ends.
    reset: u64,
}

impl From<Standing> for Remaining {
    fn from(s: Standing) -> Self {
        Self {
            burst: Some(s.rps_remaining),
            monthly: Some(s.period_remaining),
            reset: s.period_reset,
        }
    }
}

/// What the headers of a refusal can say: nothing remains of the limit that refused it, and the
/// other limit was not counted.
fn refused_remaining(e: &ServiceError, terms: &Terms, now: Timestamp) -> Option<Remaining> {
    let ServiceError::Refused(refusal) = e else {
        return None;
    };
    let reset = seconds_until(now, terms.period(now).end);
    match refusal {
        Refusal::PlanInactive => None,
        Refusal::RateLimited(_) => Some(Remaining {
            burst: Some(0),
            monthly: None,
            reset,
        }),
        Refusal::QuotaExceeded(_) => Some(Remaining {
            burst: None,
            monthly: Some(0),
            reset,
        }),
    }
}

/// `RateLimit-Policy` and `RateLimit` (IETF httpapi rate-limit header fields): a "burst" policy of
/// `maxRps` per second and a "monthly" one of `maxRequests` per billing period.
fn rate_limit_headers(
    res: &mut Response<Body>,
    terms: &Terms,
    now: Timestamp,
    remaining: Option<Remaining>,
) {
    let period = terms.period(now);
    let window = (period.end.unix_seconds() - period.start.unix_seconds()).max(1);
    let policy = format!(
        "\"burst\";q={};w=1, \"monthly\";q={};w={window}",
        terms.max_rps, terms.max_requests
    );
    set_header(res, RATELIMIT_POLICY.clone(), &policy);
    let Some(r) = remaining else {
        return;
    };
    let burst = r.burst.map(|n| format!("\"burst\";r={n};t=1"));
    let monthly = r
        .monthly
        .map(|n| format!("\"monthly\";r={n};t={}", r.reset));
    let items: Vec<String> = burst.into_iter().chain(monthly).collect();
    set_header(res, RATELIMIT.clone(), &items.join(", "));
}

static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
