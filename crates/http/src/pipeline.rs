//! The one place where a request becomes an answer, for the Lambda functions and `vigil serve`
//! alike: a plain `http` request ([`crate::message`]) and the door's typed [`Context`] in, a plain
//! `http` response out. Every route passes the same steps in the same order:
//!
//! 1. route: API Gateway (or the local router) picked the endpoint; unknown paths are 404 and known
//!    paths with another method 405, before anything here runs;
//! 2. the caller: the principal of the door's typed [`Context`], else 401;
//! 3. the plan: 403 when it is not in force (but for reading the plan), 429 over `maxRps` or
//!    `maxRequests`; otherwise the request is counted. Every answer from here on carries the
//!    `RateLimit-Policy` and `RateLimit` headers;
//! 4. path ids: the endpoint's [`FromPath`] type, else 400;
//! 5. body: the endpoint's [`FromBody`] type, else 415, 413 or 400;
//! 6. query: the endpoint's [`FromQuery`] type (paging, filters, ranges), else 400;
//! 7. the `Idempotency-Key`, for endpoints that honour it, else 400;
//! 8. the endpoint's handler, given only these typed inputs; its [`Reply`] or [`ApiError`] is
//!    turned into a response here.
//!
//! A step that must run for every authenticated request belongs in [`respond`], once. The public
//! routes have their own short paths: the collect route and the agent script (`ingest.rs`).

use std::future::Future;

use http::HeaderName;
use serde::Serialize;

use super::context::Context;
use super::extract::{
    FromBody, FromPath, FromQuery, Query, QueryParams, UnreadableBody, idempotency,
};
use super::message::{Request, Response};
use super::reply::Reply;
use crate::error::ApiError;
use crate::response::set_header;
use vigil_core::domain::idempotency::Once;
use vigil_core::domain::plan::{Period, Principal, Refusal, Standing, Terms, seconds_until};
use vigil_core::domain::{AccountId, Plan, Timestamp};
use vigil_core::service::error::ServiceError;
use vigil_core::service::vigil::Vigil;
use vigil_core::store::{AccountStore, ProjectStore, UsageStore};

/// One route: what it extracts from the request, and its handler. `D` is the service's engine:
/// the routes that evaluate visits implement `Endpoint<S, Detecting>` only.
pub trait Endpoint<S, D = ()>: 'static {
    /// Whether the endpoint answers while the plan is not in force (reading the plan itself, so
    /// a client can learn why it is refused).
    const WITHOUT_PLAN_IN_FORCE: bool = false;
    /// Whether the endpoint honours `Idempotency-Key` (the creations that a retry must not
    /// repeat): the pipeline reads it into [`Call::once`].
    const IDEMPOTENT: bool = false;
    type Path: FromPath + Send + Sync;
    type Body: FromBody + Send + Sync;
    type Query: FromQuery<Self::Path> + Send + Sync;
    type Data: Serialize;

    fn handle(
        app: &Vigil<S, D>,
        call: Call<Self::Path, Self::Body, Self::Query>,
    ) -> impl Future<Output = Result<Reply<Self::Data>, ApiError>> + Send;
}

/// Declares one route's endpoint in one place: its name, the stores it needs, its typed inputs
/// (path, body, query), what it answers, and its handler. The route table
/// ([`crate::routes`]) names it; everything else about the route is checked against that table.
///
/// ```ignore
/// endpoint! {
///     /// GET /projects/{projectId}/sessions/{sessionId}/label: the session's label.
///     GetLabel: ProjectStore + ResultStore + LabelStore;
///     (app, call: (ProjectId, SessionId), (), ()) -> Label {
///         let (project, session) = &call.path;
///         Ok(Reply::ok(app.label(&call.account, project, session).await?))
///     }
/// }
/// ```
///
/// `const IDEMPOTENT;` or `const WITHOUT_PLAN_IN_FORCE;` after the stores turns that on;
/// `engine Detecting` before the `;` makes it an endpoint of the evaluating service only.
macro_rules! endpoint {
    (
        $(#[$doc:meta])*
        $name:ident: $first:ident $(+ $bound:ident)* $(, engine $engine:ty)?;
        $(const $flag:ident;)*
        ($app:ident, $call:ident: $path:ty, $body:ty, $query:ty) -> $data:ty $handler:block
    ) => {
        $(#[$doc])*
        pub struct $name;

        endpoint!(@impl $name [$first $($bound)*] [$($flag)*] [$($engine)?]
            ($app, $call: $path, $body, $query) -> $data $handler);
    };
    // Without an engine the endpoint serves every service (`D`); with one, only that service.
    (@impl $name:ident [$($b:ident)+] [$($f:ident)*] []
        ($($rest:tt)*) -> $data:ty $handler:block) => {
        endpoint!(@emit $name [$($b)+] [$($f)*] [D: Sync] [D] ($($rest)*) -> $data $handler);
    };
    (@impl $name:ident [$($b:ident)+] [$($f:ident)*] [$engine:ty]
        ($($rest:tt)*) -> $data:ty $handler:block) => {
        endpoint!(@emit $name [$($b)+] [$($f)*] [] [$engine] ($($rest)*) -> $data $handler);
    };
    (@emit $name:ident [$($bound:ident)+] [$($flag:ident)*] [$($generic:tt)*] [$engine:ty]
        ($app:ident, $call:ident: $path:ty, $body:ty, $query:ty) -> $data:ty $handler:block) => {
        impl<S: $($bound +)+ Send + Sync, $($generic)*> $crate::pipeline::Endpoint<S, $engine>
            for $name
        {
            $(const $flag: bool = true;)*
            type Path = $path;
            type Body = $body;
            type Query = $query;
            type Data = $data;

            async fn handle(
                $app: &vigil_core::service::vigil::Vigil<S, $engine>,
                $call: $crate::pipeline::Call<$path, $body, $query>,
            ) -> Result<$crate::reply::Reply<$data>, $crate::error::ApiError> $handler
        }
    };
}
pub(crate) use endpoint;

/// A request that passed every step before the handler: its typed inputs, and nothing raw.
pub struct Call<P, B = (), Q = ()> {
    pub account: AccountId,
    pub terms: Terms,
    /// The account's plan, when authenticating read it ([`Principal::plan`]).
    pub plan: Option<Plan>,
    pub path: P,
    pub body: B,
    pub query: Q,
    /// The request's idempotency key and fingerprint, for an [`Endpoint::IDEMPOTENT`] endpoint
    /// whose client sent one.
    pub once: Option<Once>,
}

/// The [`Call`] of endpoint `E`.
pub type CallOf<E, S, D> =
    Call<<E as Endpoint<S, D>>::Path, <E as Endpoint<S, D>>::Body, <E as Endpoint<S, D>>::Query>;

/// Answers one request of endpoint `E` with the door's typed context (steps 2 to 8 above).
pub async fn respond<E, S, D>(app: &Vigil<S, D>, ctx: Context, req: Request) -> Response
where
    E: Endpoint<S, D>,
    S: AccountStore + ProjectStore + UsageStore + Sync,
    D: Sync,
{
    let Some(Principal {
        account,
        terms,
        plan,
    }) = ctx.principal
    else {
        return ApiError::Unauthorized.into_response();
    };
    // The clock is read once a request: the plan's admission, the inputs and the headers agree.
    let now = app.now();
    let period = terms.period(now);
    match app
        .plans()
        .admit_at(&account, &terms, E::WITHOUT_PLAN_IN_FORCE, now)
        .await
    {
        Ok(standing) => {
            let reply = async {
                let call = inputs::<E, S, D>(&req, account, terms, plan, now)?;
                E::handle(app, call).await?.into_response()
            };
            let mut res = reply.await.unwrap_or_else(ApiError::into_response);
            rate_limit_headers(&mut res, &terms, &period, Some(standing.into()));
            res
        }
        Err(e) => {
            let refused = refused_remaining(&e, &period, now);
            let mut res = ApiError::from(e).into_response();
            rate_limit_headers(&mut res, &terms, &period, refused);
            res
        }
    }
}

/// Steps 4 to 7: the endpoint's typed inputs, read from the request once.
fn inputs<E, S, D>(
    req: &Request,
    account: AccountId,
    terms: Terms,
    plan: Option<Plan>,
    now: Timestamp,
) -> Result<CallOf<E, S, D>, ApiError>
where
    E: Endpoint<S, D>,
{
    let path = E::Path::from_path(req)?;
    if let Some(UnreadableBody(e)) = req.extensions().get::<UnreadableBody>() {
        return Err(e.clone());
    }
    let body = E::Body::from_body(req)?;
    let query = E::Query::from_query(Query::of(&QueryParams::of(req)), &path, now)?;
    let once = if E::IDEMPOTENT {
        idempotency(req, &account, now)?
    } else {
        None
    };
    Ok(Call {
        account,
        terms,
        plan,
        path,
        body,
        query,
        once,
    })
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
fn refused_remaining(e: &ServiceError, period: &Period, now: Timestamp) -> Option<Remaining> {
    let ServiceError::Refused(refusal) = e else {
        return None;
    };
    let reset = seconds_until(now, period.end);
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
    res: &mut Response,
    terms: &Terms,
    period: &Period,
    remaining: Option<Remaining>,
) {
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

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;
    use crate::extract::{Json, Paging};

    /// A body of the probe's own: `{"n": number}`.
    struct Probed(u64);

    impl crate::extract::JsonBody for Probed {
        const MAX_BYTES: usize = 8 * 1024;
        fn from_json(value: serde_json::Value) -> Result<Self, ApiError> {
            value["n"]
                .as_u64()
                .map(Probed)
                .ok_or_else(|| ApiError::bad_request("`n` must be a number"))
        }
    }
    use vigil_core::domain::{ProjectId, SessionId};

    /// An endpoint with every kind of input, over no store: only its inputs are read here.
    struct Probe<const IDEMPOTENT: bool>;

    impl<const I: bool> Endpoint<()> for Probe<I> {
        const IDEMPOTENT: bool = I;
        type Path = (ProjectId, SessionId);
        type Body = Json<Probed>;
        type Query = Paging;
        type Data = ();

        async fn handle(_: &Vigil<()>, _: CallOf<Self, (), ()>) -> Result<Reply<()>, ApiError> {
            Ok(Reply::ok(()))
        }
    }

    fn request(path: &[(&str, &str)], query: &[(&str, &str)], headers: &[(&str, &str)]) -> Request {
        let body = r#"{"n":7}"#;
        let mut req = crate::message::request(body, path.iter().copied().collect());
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .finish();
        *req.uri_mut() = format!("/v1/probe?{query}").parse().unwrap();
        for (name, value) in headers {
            req.headers_mut().insert(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        req
    }

    const IDS: &[(&str, &str)] = &[("projectId", "prj_1"), ("sessionId", "s1")];
    const JSON: (&str, &str) = ("content-type", "application/json");

    fn read<const I: bool>(req: &Request) -> Result<CallOf<Probe<I>, (), ()>, ApiError> {
        let now = "2026-11-24T00:00:00Z".parse().unwrap();
        let account = AccountId::parse("acc_1").unwrap();
        let terms = Terms {
            status: vigil_core::domain::PlanStatus::Active,
            expires_at: None,
            subscribed_at: now,
            max_rps: 10,
            max_requests: 1000,
            max_projects: 3,
        };
        inputs::<Probe<I>, (), ()>(req, account, terms, None, now)
    }

    #[test]
    fn every_input_is_typed_before_the_handler() {
        let req = request(IDS, &[("limit", "5")], &[JSON, ("idempotency-key", "k-1")]);
        let call = read::<true>(&req).unwrap();
        assert_eq!(call.path.0.as_str(), "prj_1");
        assert_eq!(call.body.0.0, 7);
        assert_eq!((call.query.limit, call.query.after), (5, None));
        assert!(call.once.is_some());
        // An endpoint that does not honour the header ignores it, even a bad one.
        let req = request(IDS, &[], &[JSON, ("idempotency-key", "")]);
        assert!(read::<false>(&req).unwrap().once.is_none());
    }

    #[test]
    fn inputs_are_judged_in_order_path_body_query_key() {
        let message = |req: &Request| read::<true>(req).err().map(|e| e.status().as_u16());
        let bad_key = ("idempotency-key", "");
        let bad_limit = [("limit", "0")];
        // Everything wrong: the path is judged first.
        let req = request(&[("projectId", "a b")], &bad_limit, &[bad_key]);
        assert_eq!(message(&req), Some(400));
        assert_eq!(
            read::<true>(&req).err().unwrap().message(),
            "projectId may only contain letters, digits and _ . : -"
        );
        // Then the body (415 without JSON), then the query, then the key.
        let req = request(IDS, &bad_limit, &[bad_key]);
        assert_eq!(message(&req), Some(415));
        let req = request(IDS, &bad_limit, &[JSON, bad_key]);
        assert_eq!(
            read::<true>(&req).err().unwrap().message(),
            "limit must be an integer from 1 to 100"
        );
        let req = request(IDS, &[], &[JSON, bad_key]);
        assert_eq!(message(&req), Some(400));
        assert_ne!(
            read::<true>(&req).err().unwrap().message(),
            "limit must be an integer from 1 to 100"
        );
    }
}
