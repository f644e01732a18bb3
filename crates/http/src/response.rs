//! The two ways every answer is put together: a JSON body with its status, and a header built
//! from validated parts.

use http::{HeaderValue, StatusCode, header};

use crate::message::Response;

pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    let mut res = Response::new(body.into());
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// Sets a header whose value we built from validated parts (ids, cursors, method names), which
/// are always valid header text; anything else is left out rather than failing the response.
pub(crate) fn set_header(res: &mut Response, name: http::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        res.headers_mut().insert(name, v);
    }
}
