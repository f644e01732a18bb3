//! `vigil serve`'s demo page: it loads the browser agent, sends the visit to the collect route as
//! a customer's page would, then shows the visitor's own latest scores and reasons, which the
//! local server reads through the service for the demo project (the page holds no developer key).

use http::{HeaderValue, StatusCode, header};
use lambda_http::{Body, Response};

use crate::domain::{AccountId, ProjectId, SessionId};
use crate::http::ApiError;
use crate::seed::{DEMO_ACCOUNT, DEMO_PROJECT};
use crate::service::{ServiceError, Vigil};
use crate::store::Store;

/// Answers `GET /demo` and `GET /demo/events/{sessionId}`; None for any other path.
pub async fn answer<S: Store>(
    app: &Vigil<S>,
    method: &http::Method,
    path: &str,
) -> Option<Response<Body>> {
    let rest = path.strip_prefix("/demo")?;
    if method != http::Method::GET {
        return match rest {
            "" => Some(ApiError::MethodNotAllowed("GET".into()).into_response()),
            r if r.starts_with("/events/") => {
                Some(ApiError::MethodNotAllowed("GET".into()).into_response())
            }
            _ => None,
        };
    }
    let (account, project) = match (
        AccountId::parse(DEMO_ACCOUNT),
        ProjectId::parse(DEMO_PROJECT),
    ) {
        (Ok(a), Ok(p)) => (a, p),
        _ => return Some(ApiError::Internal.into_response()),
    };
    if rest.is_empty() {
        return Some(match app.project(&account, &project).await {
            Ok(p) => page(&p.api_key_public),
            Err(ServiceError::ProjectNotFound) => ApiError::NotFound(
                "This store has no demo project (vigil serve creates it on an empty store)",
            )
            .into_response(),
            Err(e) => ApiError::from(e).into_response(),
        });
    }
    let session = rest.strip_prefix("/events/")?;
    let session = match SessionId::parse(session) {
        Ok(s) => s,
        Err(e) => return Some(ApiError::bad_request(format!("sessionId {e}")).into_response()),
    };
    Some(
        match app.events(&account, &project, &session, 1, None).await {
            Ok(page) => {
                let latest = page.results.into_iter().next().map(|(_, e)| e);
                let body = serde_json::json!({ "data": latest }).to_string();
                crate::http::json_response(StatusCode::OK, body)
            }
            Err(e) => ApiError::from(e).into_response(),
        },
    )
}

fn page(public_key: &str) -> Response<Body> {
    // The key is the project's public one, meant to be in pages; quoting it as JSON keeps it a
    // string whatever a seed put in it.
    let key = serde_json::to_string(public_key).unwrap_or_else(|_| "\"\"".into());
    let html = PAGE.replace("__PUBLIC_KEY__", &key.replace('<', "\\u003c"));
    let mut res = Response::new(Body::Text(html));
    *res.status_mut() = StatusCode::OK;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Vigil demo</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; color: #1d2330; }
  h1 { font-size: 1.5rem; margin-bottom: .25rem; }
  .muted { color: #5b6475; }
  .scores { display: flex; gap: 1rem; margin: 1.5rem 0; }
  .score { flex: 1; border: 1px solid #d5dae3; border-radius: .5rem; padding: 1rem; }
  .score b { display: block; font-size: 2.25rem; }
  table { border-collapse: collapse; width: 100%; }
  td, th { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid #e6e9ef; vertical-align: top; }
  code { font-size: .9em; }
  .error { color: #a4161a; }
</style>
</head>
<body data-state="collecting">
<h1>Vigil: what the engine sees of this visit</h1>
<p class="muted">This page sends your browser's signals with the Vigil agent, then shows the scores and reasons stored for session <code id="session"></code>.</p>
<div class="scores">
  <div class="score">Bot<b id="scoreBot">…</b></div>
  <div class="score">Proxy / VPN<b id="scoreProxyVpn">…</b></div>
</div>
<h2>Reasons</h2>
<table><thead><tr><th>code</th><th>score</th><th>weight</th><th>detail</th></tr></thead><tbody id="reasons"></tbody></table>
<p class="muted" id="meta"></p>
<script src="/v1/agent.js"></script>
<script>
(function () {
  var params = new URLSearchParams(location.search);
  var session = params.get("session") || "demo-" + Math.random().toString(36).slice(2, 12);
  var $ = function (id) { return document.getElementById(id); };
  $("session").textContent = session;
  function fail(e) {
    document.body.dataset.state = "failed";
    $("meta").className = "error";
    $("meta").textContent = String(e && e.message || e);
  }
  Vigil.collect({ publicKey: __PUBLIC_KEY__, sessionId: session }).then(function (id) {
    return fetch("/demo/events/" + encodeURIComponent(session)).then(function (r) { return r.json(); }).then(function (j) {
      var e = j.data;
      if (!e) throw new Error("no event stored for this session");
      $("scoreBot").textContent = e.scoreBot.toFixed(2);
      $("scoreProxyVpn").textContent = e.scoreProxyVpn.toFixed(2);
      e.reasons.forEach(function (r) {
        var tr = document.createElement("tr");
        [r.code, r.score, String(r.weight), r.detail].forEach(function (t) {
          var td = document.createElement("td"); td.textContent = t; tr.appendChild(td);
        });
        $("reasons").appendChild(tr);
      });
      if (!e.reasons.length) $("reasons").innerHTML = "<tr><td colspan=4>none: nothing suspicious</td></tr>";
      $("meta").textContent = "event " + id + " from " + e.ipAddress + " · " + e.engineVersion;
      document.body.dataset.state = "done";
    });
  }).catch(fail);
})();
</script>
</body>
</html>
"#;
