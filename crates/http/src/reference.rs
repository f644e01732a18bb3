//! The API reference: `GET /docs` renders `openapi.yaml` in the browser with Redoc, vendored from
//! npm at a pinned version (`reference/vendor`, `scripts/vendor-redoc.sh`); no CDN, nothing built
//! at run time. Three static answers, public like the dashboard: the page, the renderer, the
//! document.

use std::sync::LazyLock;

use crate::message::{Request, Response};
use crate::statics::{asset, etag, inline_script_source, page};

const PAGE: &str = include_str!("../../../reference/index.html");
const RENDERER: &str = include_str!("../../../reference/vendor/redoc.standalone.js");
/// The document the service is tested against, as committed.
pub const OPENAPI: &str = include_str!("../../../openapi.yaml");

/// The renderer's path, relative to the base; the page names it relatively.
pub const RENDERER_PATH: &str = "/docs/redoc.standalone.js";
/// The document's path, relative to the base.
pub const OPENAPI_PATH: &str = "/openapi.yaml";

/// The page's Content-Security-Policy, as strict as the dashboard's: its one inline script by
/// hash and the renderer from this origin; styles inline (the renderer injects them); the
/// document fetched from this origin; search runs in a worker the renderer makes from a blob.
static PAGE_CSP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "default-src 'none'; script-src 'self' {}; style-src 'unsafe-inline'; \
         connect-src 'self'; img-src 'self' data:; font-src 'self' data:; worker-src blob:; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        inline_script_source(PAGE)
    )
});

static RENDERER_ETAG: LazyLock<String> = LazyLock::new(|| etag(RENDERER));
static OPENAPI_ETAG: LazyLock<String> = LazyLock::new(|| etag(OPENAPI));

/// GET (and HEAD) /docs, /docs/redoc.standalone.js and /openapi.yaml, told apart by the path's
/// end (the router sends only these three here).
pub fn reference(req: &Request) -> Response {
    let path = req.uri().path();
    if path.ends_with(RENDERER_PATH) {
        asset(
            req,
            RENDERER,
            &RENDERER_ETAG,
            "text/javascript; charset=utf-8",
        )
    } else if path.ends_with(OPENAPI_PATH) {
        asset(req, OPENAPI, &OPENAPI_ETAG, "text/yaml; charset=utf-8")
    } else {
        page(req, PAGE, &PAGE_CSP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header;

    fn get(path: &str, headers: &[(&str, &str)]) -> Response {
        let mut b = http::Request::builder().method("GET").uri(path);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        reference(&b.body(bytes::Bytes::new()).unwrap())
    }

    #[test]
    fn the_page_allows_its_own_script_and_renderer_only() {
        let r = get("/v1/docs", &[]);
        assert_eq!(r.status(), 200);
        let csp = r.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert!(csp.starts_with("default-src 'none'; script-src 'self' 'sha256-"));
        assert!(
            !csp.contains("unsafe-eval") && !csp.contains("http"),
            "{csp}"
        );
        let html = std::str::from_utf8(r.body()).unwrap();
        assert!(html.contains(r#"<script src="docs/redoc.standalone.js">"#));
        // One inline script: the CSP's hash covers it all.
        assert_eq!(html.matches("<script>").count(), 1);
    }

    #[test]
    fn the_renderer_and_the_document_are_cached_by_etag() {
        for (path, kind) in [
            ("/v1/docs/redoc.standalone.js", "text/javascript"),
            ("/openapi.yaml", "text/yaml"),
        ] {
            let r = get(path, &[]);
            assert_eq!(r.status(), 200);
            assert!(
                r.headers()[header::CONTENT_TYPE]
                    .to_str()
                    .unwrap()
                    .starts_with(kind)
            );
            let tag = r.headers()[header::ETAG].to_str().unwrap().to_owned();
            let again = get(path, &[("if-none-match", &tag)]);
            assert_eq!(again.status(), 304);
            assert!(again.body().is_empty());
        }
        let yaml = get("/v1/openapi.yaml", &[]).into_body();
        assert!(yaml.starts_with(b"openapi: 3.1"));
    }
}
