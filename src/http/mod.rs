//! HTTP: request parsing, the handlers (one per route, shared by the Lambda functions and the local
//! server) and response building.

use http::{HeaderValue, StatusCode, header};
use lambda_http::{Body, Response};
use serde::Serialize;

pub mod auth;
pub mod error;
pub mod handlers;
pub mod routes;

pub use error::ApiError;
pub use routes::{Resolved, Route, Router};

/// The authorizer context key that carries the authenticated account.
pub const ACCOUNT_CONTEXT_KEY: &str = "accountId";

pub(crate) fn json_response(status: StatusCode, body: String) -> Response<Body> {
    let mut res = Response::new(Body::Text(body));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// Sets a header whose value we built from validated parts (ids, cursors, method names), which
/// are always valid header text; anything else is left out rather than failing the response.
pub(crate) fn set_header(res: &mut Response<Body>, name: http::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        res.headers_mut().insert(name, v);
    }
}

/// `{"data": ...}` with the given status.
pub fn data_response<T: Serialize>(status: StatusCode, data: &T) -> Response<Body> {
    #[derive(Serialize)]
    struct Envelope<'a, T> {
        data: &'a T,
    }
    match serde_json::to_string(&Envelope { data }) {
        Ok(body) => json_response(status, body),
        Err(e) => {
            tracing::error!(error = %e, "serialising a response failed");
            ApiError::Internal.into_response()
        }
    }
}
