//! The ingestion endpoints: the server-side events route and its readers, the browser's collect
//! route, and the agent script that calls it.

use std::sync::LazyLock;

use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use serde::Serialize;
use serde_json::Value;

use super::context::Context;
use super::extract::{
    Json, JsonBody, Members, Paging, bounded_body, has_media_type, typed, typed_strictly,
};
use super::paths::BASE;
use super::pipeline::endpoint;
use super::reply::Reply;
use crate::error::ApiError;
use crate::message::{Request, Response};
use vigil_core::domain::project::Origin;
use vigil_core::domain::{AddressedEvidence, Event, EventId, ProjectId, SessionId};
use vigil_core::service::error::ServiceError;
use vigil_core::service::events::Visited;
use vigil_core::service::vigil::{Detecting, Vigil};
use vigil_core::store::{
    AccountStore, AgentStore, IdempotencyStore, ProjectStore, ResultStore, UsageStore,
    VelocityStore,
};
use vigil_detect::{Evidence, Headers, RequestLine, Signals};

/// Largest evidence document accepted, by either door.
pub const MAX_EVIDENCE_BODY: usize = 16 * 1024;

/// The events route's body: the engine's evidence, `ipAddress` required.
pub struct NewEvent(pub AddressedEvidence);

impl JsonBody for NewEvent {
    const MAX_BYTES: usize = MAX_EVIDENCE_BODY;

    fn from_json(value: Value) -> Result<Self, ApiError> {
        let mut m = Members::only(
            value,
            &[
                "ipAddress",
                "userAgent",
                "headers",
                "signals",
                "wire",
                "request",
            ],
        )?;
        let ip = m
            .take("ipAddress")
            .ok_or_else(|| ApiError::bad_request("`ipAddress` is required"))?;
        let address = typed(ip, "ipAddress")?;
        let evidence = Evidence {
            ip_address: None,
            user_agent: m
                .take("userAgent")
                .map(|v| typed(v, "userAgent"))
                .transpose()?,
            headers: m.take("headers").map(|v| typed(v, "headers")).transpose()?,
            // A backend's misspelt member is a 400 naming it; the browser agent's collect
            // ignores members it does not know (an agent may be newer than the server).
            signals: m
                .take("signals")
                .map(|v| typed_strictly(v, "signals"))
                .transpose()?,
            wire: m.take("wire").map(|v| typed(v, "wire")).transpose()?,
            request: m.take("request").map(|v| typed(v, "request")).transpose()?,
        };
        Ok(Self(AddressedEvidence::new(address, evidence)))
    }
}

fn event_location(project: &ProjectId, session: &SessionId, id: EventId) -> String {
    format!("{BASE}/projects/{project}/sessions/{session}/events/{id}")
}

endpoint! {
    /// POST /projects/{projectId}/sessions/{sessionId}/events: evaluates a visit and stores it.
    CreateEvent: ProjectStore + ResultStore + IdempotencyStore + VelocityStore + AgentStore, engine Detecting;
    const IDEMPOTENT;
    (app, call: (ProjectId, SessionId), Json<NewEvent>, ()) -> Event {
        let (project, session) = &call.path;
        let Json(NewEvent(evidence)) = &call.body;
        let event = app
            .ingestion().record_event(
                &call.account,
                project,
                session,
                evidence,
                call.once.as_ref(),
            )
            .await?;
        let location = event_location(project, session, event.id);
        Ok(Reply::created(event, location))
    }
}

endpoint! {
    /// GET /projects/{projectId}/sessions/{sessionId}/events: the session's events, newest first.
    ListEvents: ProjectStore + ResultStore;
    (app, call: (ProjectId, SessionId), (), Paging) -> Vec<Event> {
        let ((project, session), paging) = (&call.path, &call.query);
        let page = app
            .events(&call.account, project, session, paging.limit, paging.after)
            .await?;
        let next = page.next();
        let events: Vec<Event> = page.results.into_iter().map(|(_, e)| e).collect();
        let path = format!("/projects/{project}/sessions/{session}/events");
        Ok(paging.reply(events, next, &path))
    }
}

endpoint! {
    /// GET /projects/{projectId}/sessions/{sessionId}/events/{eventId}
    GetEvent: ProjectStore + ResultStore;
    (app, call: (ProjectId, SessionId, EventId), (), ()) -> Event {
        let (project, session, id) = &call.path;
        Ok(Reply::ok(
            app.event(&call.account, project, session, *id).await?,
        ))
    }
}

/// The media types the collect route reads: the agent sends `text/plain`, which keeps its
/// cross-origin request "simple" (no preflight round trip); JSON is accepted too.
const COLLECT_TYPES: &[&str] = &["text/plain", "application/json"];
const COLLECT_415: &str = "Content-Type must be text/plain or application/json";
const NOT_A_VISIT: &str = "Request body must be a JSON object with a string `publicKey`";
const ORIGIN_REFUSED: &str = "Origin is not allowed for this project";

/// The collect route's body, read once and whole before anything is read or counted: exactly
/// `publicKey`, `sessionId`, and optionally `sessionToken` and `signals`.
pub struct VisitBody {
    pub public_key: String,
    pub session: SessionId,
    pub session_token: Option<String>,
    pub signals: Option<Signals>,
}

impl VisitBody {
    fn read(req: &Request) -> Result<Self, ApiError> {
        if !has_media_type(req, COLLECT_TYPES) {
            return Err(ApiError::UnsupportedMediaType(COLLECT_415));
        }
        let value: Value = serde_json::from_slice(bounded_body(req, MAX_EVIDENCE_BODY)?)
            .map_err(|_| ApiError::bad_request(NOT_A_VISIT))?;
        if !value.is_object() || value.get("publicKey").is_some_and(|k| !k.is_string()) {
            return Err(ApiError::bad_request(NOT_A_VISIT));
        }
        let mut m = Members::only(
            value,
            &["publicKey", "sessionId", "sessionToken", "signals"],
        )?;
        let public_key = m.string("publicKey")?.to_owned();
        let session = SessionId::parse(m.string("sessionId")?)
            .map_err(|e| ApiError::bad_request(format!("sessionId {e}")))?;
        let session_token = m.optional_string("sessionToken")?.map(str::to_owned);
        let signals = m.take("signals").map(|v| typed(v, "signals")).transpose()?;
        Ok(Self {
            public_key,
            session,
            session_token,
            signals,
        })
    }
}

/// Headers that the serving infrastructure (API Gateway and CloudFront, or the proxy that
/// `vigil serve --trust-proxy` trusts) adds to every request: evidence of our edge, not of the
/// visitor's route, so the engine is not shown them.
fn added_by_edge(name: &str) -> bool {
    matches!(name, "via" | "forwarded" | "x-forwarded-for")
        || name.starts_with("x-forwarded-")
        || name.starts_with("cloudfront-")
        || name.starts_with("x-amz")
}

/// What the request itself says of the visit: the client's address as the door saw it (never
/// the body's), the user agent and headers as received. Headers our edge adds are left out
/// unless the client reached us directly.
fn request_evidence(ctx: &Context, req: &Request) -> Result<AddressedEvidence, ApiError> {
    let Some(ip) = ctx.client else {
        // API Gateway and vigil serve always know it: its absence is a deployment fault.
        tracing::error!("collect request without a client address in its context");
        return Err(ApiError::Internal);
    };
    let headers = Headers::from_pairs(req.headers().iter().filter_map(|(k, v)| {
        let name = k.as_str();
        let skip =
            matches!(name, "cookie" | "authorization") || (!ctx.direct && added_by_edge(name));
        if skip {
            return None;
        }
        Some((name.to_owned(), v.to_str().ok()?.to_owned()))
    }));
    let evidence = Evidence {
        ip_address: None,
        user_agent: req
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        signals: None,
        wire: ctx.wire.clone(),
        // A request to Vigil itself that carries a Web Bot Auth signature is checked as signed
        // for this very request: its method, host and path.
        request: headers.get("signature-input").map(|_| RequestLine {
            method: Some(req.method().as_str().to_owned()),
            authority: req
                .headers()
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
                .or_else(|| req.uri().authority().map(|a| a.to_string())),
            path: Some(req.uri().path().to_owned()),
        }),
        headers: Some(headers),
    };
    Ok(AddressedEvidence::new(ip, evidence))
}

/// What the page is told of its visit: a receipt id, never the scores; and, when its project
/// seals them, the verdict sealed for its backend (which the page can neither read nor forge).
#[derive(Serialize)]
struct Collected {
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    sealed: Option<String>,
}

/// POST /collect, a visit reported by the browser agent on a customer's page, and its CORS
/// preflight. Its own pipeline, in this order: the body is read whole (415, 413, 400: nothing
/// read or counted yet); the page's origin must be a canonical one (403); the public key must
/// name a project (401) whose domain the origin is (403) and that is enabled (403); then the plan
/// (403), the session token (401) and the route's own budget (429, `Retry-After`). Answers carry
/// no rate-limit headers, and CORS only for an origin the project allows.
pub async fn collect<S>(app: &Vigil<S, Detecting>, ctx: &Context, req: &Request) -> Response
where
    S: ProjectStore + ResultStore + AccountStore + UsageStore + VelocityStore + AgentStore,
{
    if req.method() == Method::OPTIONS {
        return preflight(req);
    }
    let mut allowed = None;
    let mut res = match record(app, ctx, req, &mut allowed).await {
        Ok(Visited { receipt, sealed }) => {
            let data = Collected {
                id: receipt,
                sealed,
            };
            let body = serde_json::json!({ "data": data }).to_string();
            crate::response::json_response(StatusCode::ACCEPTED, body)
        }
        Err(e) => e.into_response(),
    };
    if let Some(origin) = allowed {
        allow_origin(&mut res, origin);
    }
    res
}

async fn record<S>(
    app: &Vigil<S, Detecting>,
    ctx: &Context,
    req: &Request,
    allowed: &mut Option<HeaderValue>,
) -> Result<Visited, ApiError>
where
    S: ProjectStore + ResultStore + AccountStore + UsageStore + VelocityStore + AgentStore,
{
    let visit = VisitBody::read(req)?;
    let origin = page_origin(req).ok_or(ApiError::Forbidden(ORIGIN_REFUSED))?;
    let site = app.ingestion().site(&visit.public_key, &origin).await?;
    *allowed = HeaderValue::from_str(origin.as_str()).ok();
    let evidence = request_evidence(ctx, req)?.with_signals(visit.signals);
    let recorded = app
        .ingestion()
        .record_visit(
            &site,
            &origin,
            &visit.session,
            visit.session_token.as_deref(),
            &evidence,
        )
        .await;
    // The service answers a lapsed plan's page as an unknown key; as for any unknown key, no
    // CORS header either.
    if let Err(ServiceError::UnknownPublicKey) = recorded {
        *allowed = None;
    }
    Ok(recorded?)
}

/// The request's `Origin`, if it is one a browser sends.
fn page_origin(req: &Request) -> Option<Origin> {
    req.headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .and_then(Origin::parse)
}

/// CORS for an answer to a page whose origin the project allows: this origin only, and of the
/// headers only `Retry-After` readable (nothing about the customer's plan).
fn allow_origin(res: &mut Response, origin: HeaderValue) {
    let h = res.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    h.insert(header::VARY, HeaderValue::from_static("Origin"));
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("Retry-After"),
    );
}

/// OPTIONS /collect: a page that posts JSON asks first. A preflight carries no body, so no public
/// key: it is granted to any origin a browser sends (POST with `Content-Type`, for 10 minutes),
/// which grants nothing by itself: the POST that follows is judged in full.
fn preflight(req: &Request) -> Response {
    let Some(origin) = page_origin(req).and_then(|o| HeaderValue::from_str(o.as_str()).ok()) else {
        return ApiError::Forbidden(ORIGIN_REFUSED).into_response();
    };
    let mut res = Response::new(Bytes::new());
    *res.status_mut() = StatusCode::NO_CONTENT;
    allow_origin(&mut res, origin);
    let h = res.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    res
}

/// The browser agent as served: `agent/vigil.js` (commented, for whoever reads it) minified by
/// terser (`make agent`; `make lint` checks the committed copy is terser's output of the source).
/// Every page that loads it pays for its bytes.
const AGENT_SOURCE: &str = include_str!("../../../agent/vigil.min.js");

/// The agent and its entity tag (its content's hash, so a new build is fetched at once).
static AGENT: LazyLock<(String, String)> = LazyLock::new(|| {
    let body = AGENT_SOURCE.to_owned();
    let etag = crate::statics::etag(&body);
    (body, etag)
});

/// GET /agent.js: the agent script, public and cacheable (no key, no plan: it carries no data).
pub fn agent_script(req: &Request) -> Response {
    crate::statics::asset(req, &AGENT.0, &AGENT.1, "text/javascript; charset=utf-8")
}

/// The agent as `vigil serve` serves it beside its own STUN server ([`crate::server::stun`]): told the
/// port, it asks that server, on the host it was loaded from, for the browser's public address
/// (unless the page passes `stun` itself, or `stun: false`).
#[derive(Debug, Clone)]
pub struct StunAgent {
    body: String,
    etag: String,
}

impl StunAgent {
    pub fn new(stun_port: u16) -> Self {
        let body = format!("{AGENT_SOURCE}\n;Vigil.stunPort={stun_port};\n");
        let etag = crate::statics::etag(&body);
        Self { body, etag }
    }

    pub fn answer(&self, req: &Request) -> Response {
        crate::statics::asset(
            req,
            &self.body,
            &self.etag,
            "text/javascript; charset=utf-8",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_served_agent_is_the_minified_source_with_its_header() {
        let served = &AGENT.0;
        assert!(served.starts_with("/*! Vigil agent */"));
        let source = include_str!("../../../agent/vigil.js");
        assert!(
            served.len() * 4 < source.len() * 3,
            "{} bytes",
            served.len()
        );
        // The public surface keeps its names through the minifier.
        for name in [
            "collect:",
            "action:",
            "signals:",
            "sessionStorage",
            "vigil.page",
        ] {
            assert!(served.contains(name), "{name}");
        }
    }
}
