//! HTTP: the route table, the one request pipeline (authentication, extractors, the handler, the
//! answer), and one endpoint per route, shared by the Lambda functions and the local server.

use http::{HeaderValue, StatusCode, header};
use lambda_http::{Body, Response};

pub mod auth;
pub mod context;
pub mod demo;
pub mod error;
pub mod extract;
pub mod gateway;
pub mod handlers;
pub mod ingest;
pub mod insight;
pub mod paths;
pub mod ping;
pub mod pipeline;
pub mod reference;
pub mod reply;
pub mod routes;
pub mod server;
pub mod statics;
pub mod stun;
pub mod tcp;
pub mod tls;

pub use context::Context;
pub use error::ApiError;
pub use pipeline::{Endpoint, answer, respond};
pub use routes::{Resolved, Route, Router};

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
