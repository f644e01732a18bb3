//! Extractors: the typed inputs a handler declares (path ids, a bounded JSON body), each turning a
//! bad request into its one `{"message"}` error before the handler runs.

use http::header;
use serde_json::{Map, Value};

use super::message::{PathParams, Request};
use super::paths::{BASE, PathParam};
use super::reply::Reply;
use crate::error::ApiError;
use vigil_core::domain::idempotency::{IdempotencyKey, KeyError, Once};
use vigil_core::domain::{
    AccountId, DeliveryId, DeviceKey, EventId, IdError, ProjectId, ResultPosition, SessionId,
    Timestamp, WebhookId, cursor,
};

macro_rules! path_param {
    ($($ty:ty => $name:literal),* $(,)?) => {$(
        impl PathParam for $ty {
            const NAME: &'static str = $name;
            fn parse(raw: &str) -> Result<Self, IdError> {
                <$ty>::parse(raw)
            }
        }
        impl FromPath for $ty {
            fn from_path(req: &Request) -> Result<Self, ApiError> {
                param(req)
            }
        }
    )*};
}

/// The validated path ids of a route: one id, a tuple of them, or `()`.
pub trait FromPath: Sized {
    fn from_path(req: &Request) -> Result<Self, ApiError>;
}

path_param! {
    ProjectId => "projectId",
    SessionId => "sessionId",
    WebhookId => "webhookId",
    EventId => "eventId",
    DeviceKey => "device",
    DeliveryId => "deliveryId",
}

fn param<T: PathParam>(req: &Request) -> Result<T, ApiError> {
    let name = T::NAME;
    let raw = req
        .extensions()
        .get::<PathParams>()
        .and_then(|p| p.get(name))
        .ok_or_else(|| ApiError::bad_request(format!("{name} is required")))?;
    T::parse(raw).map_err(|e| ApiError::bad_request(format!("{name} {e}")))
}

impl FromPath for () {
    fn from_path(_: &Request) -> Result<Self, ApiError> {
        Ok(())
    }
}

impl<A: PathParam, B: PathParam> FromPath for (A, B) {
    fn from_path(req: &Request) -> Result<Self, ApiError> {
        Ok((param(req)?, param(req)?))
    }
}

impl<A: PathParam, B: PathParam, C: PathParam> FromPath for (A, B, C) {
    fn from_path(req: &Request) -> Result<Self, ApiError> {
        Ok((param(req)?, param(req)?, param(req)?))
    }
}

/// The body of a route: `()` ignores it, [`Json`] requires a bounded JSON document.
pub trait FromBody: Sized {
    fn from_body(req: &Request) -> Result<Self, ApiError>;
}

impl FromBody for () {
    fn from_body(_: &Request) -> Result<Self, ApiError> {
        Ok(())
    }
}

/// Set by `vigil serve` on a request whose body it could not read (too large for the server, or
/// not received in time); the pipeline's body step answers with it.
#[derive(Debug, Clone)]
pub struct UnreadableBody(pub ApiError);

/// A request document: its size bound and how it is read from parsed JSON.
pub trait JsonBody: Sized {
    /// Largest body accepted, in bytes.
    const MAX_BYTES: usize;
    fn from_json(value: Value) -> Result<Self, ApiError>;
}

/// A JSON body: 415 without `Content-Type: application/json`, 413 over `T::MAX_BYTES`, 400 when it
/// is not valid JSON or not a valid `T`.
pub struct Json<T>(pub T);

impl<T: JsonBody> FromBody for Json<T> {
    fn from_body(req: &Request) -> Result<Self, ApiError> {
        if !has_media_type(req, &["application/json"]) {
            return Err(ApiError::UnsupportedMediaType(
                "Content-Type must be application/json",
            ));
        }
        T::from_json(json_value(req, T::MAX_BYTES)?).map(Json)
    }
}

/// The body's bytes: the server's error when it could not read them, 413 over `max` bytes.
pub fn bounded_body(req: &Request, max: usize) -> Result<&[u8], ApiError> {
    if let Some(UnreadableBody(e)) = req.extensions().get::<UnreadableBody>() {
        return Err(e.clone());
    }
    let body = req.body().as_ref();
    if body.len() > max {
        return Err(ApiError::PayloadTooLarge);
    }
    Ok(body)
}

/// The body as a JSON value: as [`bounded_body`], and 400 when it is not JSON.
pub fn json_value(req: &Request, max: usize) -> Result<Value, ApiError> {
    serde_json::from_slice(bounded_body(req, max)?)
        .map_err(|_| ApiError::bad_request("Request body must be valid JSON"))
}

/// Whether the request's `Content-Type` is one of `types` (parameters such as charset aside).
pub fn has_media_type(req: &Request, types: &[&str]) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| types.iter().any(|t| m.trim().eq_ignore_ascii_case(t)))
}

/// Reads a JSON value as `T`, naming the member that is wrong: "`signals.plugins`: invalid
/// type: string \"five\", expected u32".
pub fn typed<T: serde::de::DeserializeOwned>(value: Value, name: &str) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| at_path(e, name))
}

/// A deserialisation error as a 400 that names where in `name` it is.
fn at_path(e: serde_path_to_error::Error<serde_json::Error>, name: &str) -> ApiError {
    let path = e.path().to_string();
    let at = if path == "." {
        name.to_owned()
    } else {
        format!("{name}.{path}")
    };
    let inner: String = e.into_inner().to_string().chars().take(160).collect();
    ApiError::bad_request(format!("`{at}`: {inner}"))
}

/// As [`typed`], and refusing the top-level members `T` does not know, all of them named:
/// "`signals` has members this API does not know: `screen`". For a backend's evidence, where a
/// misspelt field would otherwise be lost without a word. (Members of nested objects are let be,
/// as `openapi.yaml` says.)
pub fn typed_strictly<T: serde::de::DeserializeOwned>(
    value: Value,
    name: &str,
) -> Result<T, ApiError> {
    let mut unknown = Vec::new();
    let mut note = |path: serde_ignored::Path<'_>| {
        if let serde_ignored::Path::Map { parent, key } = path
            && matches!(parent, serde_ignored::Path::Root)
        {
            unknown.push(format!("`{key}`"));
        }
    };
    let read = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(value, &mut note));
    let t = read.map_err(|e| at_path(e, name))?;
    if unknown.is_empty() {
        return Ok(t);
    }
    unknown.truncate(10);
    Err(ApiError::bad_request(format!(
        "`{name}` has members this API does not know: {}",
        unknown.join(", ")
    )))
}

/// The members of a JSON object body, read with messages that name the member.
pub struct Members(Map<String, Value>);

impl Members {
    /// The object's members, refusing any member not in `allowed`.
    pub fn only(value: Value, allowed: &[&str]) -> Result<Self, ApiError> {
        let Value::Object(fields) = value else {
            return Err(ApiError::bad_request("Request body must be a JSON object"));
        };
        if let Some(extra) = fields.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(ApiError::bad_request(format!(
                "Unknown field `{}`: only {} are allowed",
                extra.chars().take(64).collect::<String>(),
                list(allowed)
            )));
        }
        Ok(Self(fields))
    }

    /// An optional string member (absent or null: None).
    pub fn optional_string(&self, name: &str) -> Result<Option<&str>, ApiError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ApiError::bad_request(format!("`{name}` must be a string"))),
        }
    }

    /// An optional boolean member (absent or null: None).
    pub fn optional_bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(ApiError::bad_request(format!(
                "`{name}` must be true or false"
            ))),
        }
    }

    /// Refuses members that are null.
    pub fn no_nulls(&self) -> Result<(), ApiError> {
        match self.0.iter().find(|(_, v)| v.is_null()) {
            Some((name, _)) => Err(ApiError::bad_request(format!("`{name}` must not be null"))),
            None => Ok(()),
        }
    }

    /// Takes a member out (absent or null: None).
    pub fn take(&mut self, name: &str) -> Option<Value> {
        self.0.remove(name).filter(|v| !v.is_null())
    }

    /// A required string member.
    pub fn string(&self, name: &str) -> Result<&str, ApiError> {
        self.optional_string(name)?
            .ok_or_else(|| ApiError::bad_request(format!("`{name}` is required")))
    }
}

/// "`a`", "`a` and `b`", "`a`, `b` and `c`".
fn list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// Most items per page, and the default page size.
pub const MAX_PAGE: usize = 100;

/// A request's query parameters, parsed once from its URI (`application/x-www-form-urlencoded`,
/// as both doors pass the URI on).
#[derive(Debug, Clone, Default)]
pub struct QueryParams(Vec<(String, String)>);

impl QueryParams {
    /// The parameters of `req`'s URI, in their order.
    pub fn of<B>(req: &http::Request<B>) -> Self {
        Self::parse(req.uri().query().unwrap_or(""))
    }

    /// The parameters of a query string (without its `?`).
    pub fn parse(query: &str) -> Self {
        Self(
            url::form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }
}

/// What the endpoints read of a request's query: each parameter's first value.
#[derive(Clone, Copy)]
pub struct Query<'a>(&'a QueryParams);

impl<'a> Query<'a> {
    pub fn of(params: &'a QueryParams) -> Self {
        Self(params)
    }

    /// A parameter's first value.
    pub fn first(&self, name: &str) -> Option<&'a str> {
        super::message::first(&self.0.0, name)
    }
}

/// The validated query of a route whose path ids are `P`: `()` ignores it.
pub trait FromQuery<P>: Sized {
    fn from_query(query: Query<'_>, path: &P, now: Timestamp) -> Result<Self, ApiError>;
}

impl<P> FromQuery<P> for () {
    fn from_query(_: Query<'_>, _: &P, _: Timestamp) -> Result<Self, ApiError> {
        Ok(())
    }
}

/// A list's `?limit=`: 1 to [`MAX_PAGE`], [`MAX_PAGE`] when absent.
/// The query parameter `name` as an RFC 3339 date-time, if present.
pub fn query_time(q: Query<'_>, name: &str) -> Result<Option<Timestamp>, ApiError> {
    q.first(name)
        .map(|s| {
            s.parse::<Timestamp>().map_err(|_| {
                ApiError::bad_request(format!(
                    "{name} must be an RFC 3339 date-time, such as 2026-11-23T00:00:00Z"
                ))
            })
        })
        .transpose()
}

pub fn page_limit(query: Query<'_>) -> Result<usize, ApiError> {
    match query.first("limit") {
        None => Ok(MAX_PAGE),
        Some(s) => s
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .ok_or_else(|| ApiError::bad_request("limit must be an integer from 1 to 100")),
    }
}

/// `limit` and `cursor` of a session's paged list (results, events), the cursor bound to the
/// project and session it was issued for: the one paging path of both lists.
pub struct Paging {
    pub limit: usize,
    pub after: Option<ResultPosition>,
    project: ProjectId,
    session: SessionId,
    /// Whether the client chose the limit, so that the next page's link keeps it.
    explicit_limit: bool,
}

impl FromQuery<(ProjectId, SessionId)> for Paging {
    fn from_query(
        query: Query<'_>,
        (project, session): &(ProjectId, SessionId),
        _: Timestamp,
    ) -> Result<Self, ApiError> {
        let limit = page_limit(query)?;
        let after = query
            .first("cursor")
            .map(|c| cursor::decode(c, project, session))
            .transpose()
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(Self {
            limit,
            after,
            project: project.clone(),
            session: session.clone(),
            explicit_limit: query.first("limit").is_some(),
        })
    }
}

impl Paging {
    /// 200 with a page of the list at `path` (under the base) and, when `next` says more
    /// exist, the `Link` to the page after it.
    pub fn reply<T: serde::Serialize>(
        &self,
        data: T,
        next: Option<ResultPosition>,
        path: &str,
    ) -> Reply<T> {
        let reply = Reply::ok(data);
        let Some(last) = next else {
            return reply;
        };
        let c = cursor::encode(&self.project, &self.session, last);
        let limit = if self.explicit_limit {
            format!("&limit={}", self.limit)
        } else {
            String::new()
        };
        with_next_link(reply, path, &c, &limit)
    }
}

/// `reply` with the `Link` to the next page of the list at `path` (under the base): its cursor,
/// then the client's own parameters (`&name=value...`) that the next page keeps. Every paged list
/// links its pages here.
pub fn with_next_link<T: serde::Serialize>(
    reply: Reply<T>,
    path: &str,
    cursor: &str,
    kept: &str,
) -> Reply<T> {
    reply.with_header(
        header::LINK,
        format!("<{BASE}{path}?cursor={cursor}{kept}>; rel=\"next\""),
    )
}

/// The request's `Idempotency-Key`, if any, with the request's fingerprint (method, path and
/// body): 400 when the header is not a key.
pub fn idempotency(
    req: &Request,
    account: &AccountId,
    now: Timestamp,
) -> Result<Option<Once>, ApiError> {
    let Some(raw) = req.headers().get("idempotency-key") else {
        return Ok(None);
    };
    let key = raw
        .to_str()
        .ok()
        .and_then(|s| IdempotencyKey::parse(s).ok())
        .ok_or_else(|| ApiError::bad_request(KeyError.to_string()))?;
    let parts: [&[u8]; 3] = [
        req.method().as_str().as_bytes(),
        req.uri().path().as_bytes(),
        req.body().as_ref(),
    ];
    Ok(Some(Once::new(account.clone(), key, &parts, now)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_members_are_listed_in_prose() {
        assert_eq!(list(&["type"]), "`type`");
        assert_eq!(list(&["type", "url"]), "`type` and `url`");
        assert_eq!(list(&["a", "b", "c"]), "`a`, `b` and `c`");
    }

    #[test]
    fn path_params_are_validated_by_name() {
        let req = |p: &[(&str, &str)]| {
            crate::message::request(bytes::Bytes::new(), p.iter().copied().collect())
        };
        let ok = req(&[("projectId", "prj_1"), ("sessionId", "s")]);
        let (p, s) = <(ProjectId, SessionId)>::from_path(&ok).unwrap();
        assert_eq!((p.as_str(), s.as_str()), ("prj_1", "s"));
        let missing = ProjectId::from_path(&req(&[])).unwrap_err();
        assert_eq!(missing.message(), "projectId is required");
        let bad = WebhookId::from_path(&req(&[("webhookId", "a b")])).unwrap_err();
        assert_eq!(
            bad.message(),
            "webhookId may only contain letters, digits and _ . : -"
        );
    }
}
