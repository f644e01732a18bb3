//! The static answers outside the pipeline (the dashboard, the agent script, the API reference):
//! a page with its CSP, and a cacheable asset with its entity tag, each built in one place.

use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use sha2::{Digest, Sha256};

use crate::message::{Request, Response};

/// An entity tag for a static text: its SHA-256, shortened.
pub fn etag(text: &str) -> String {
    format!(
        "\"{}\"",
        hex::encode(&Sha256::digest(text.as_bytes())[..12])
    )
}

/// The CSP source (`'sha256-...'`) allowing a page's one inline `<script>`.
pub fn inline_script_source(html: &str) -> String {
    use base64::Engine;
    let script = html
        .split_once("<script>")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .map_or("", |(s, _)| s);
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script.as_bytes()))
    )
}

/// Whether the request's `If-None-Match` names `etag` (or `*`).
pub fn not_modified(req: &Request, etag: &str) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            let t = t.trim();
            t == "*" || t.trim_start_matches("W/") == etag
        })
}

fn body(req: &Request, text: &str) -> Bytes {
    if req.method() == Method::HEAD {
        Bytes::new()
    } else {
        Bytes::copy_from_slice(text.as_bytes())
    }
}

/// GET (and HEAD) of a page: the same for everyone, revalidated each time, under `csp`.
pub fn page(req: &Request, html: &str, csp: &str) -> Response {
    let mut res = Response::new(body(req, html));
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if let Ok(v) = HeaderValue::from_str(csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    res
}

/// GET (and HEAD) of a public asset: cached an hour and revalidated by `etag` (304 when the
/// client has it), so a deploy's new version is fetched cheaply.
pub fn asset(req: &Request, text: &str, etag: &str, kind: &'static str) -> Response {
    let fresh = not_modified(req, etag);
    let mut res = Response::new(if fresh { Bytes::new() } else { body(req, text) });
    if fresh {
        *res.status_mut() = StatusCode::NOT_MODIFIED;
    }
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600, stale-while-revalidate=86400"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    res
}
