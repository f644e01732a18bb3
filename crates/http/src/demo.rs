//! `vigil serve --demo`'s demo shop: a home page (`/demo`) and a few product pages
//! (`/demo/products/{slug}`), linked to each other. Each page loads the browser agent, sends the
//! visit to the collect route as a customer's page would (with a session token that this server
//! mints, as a customer's backend would), then shows the visitor's own latest scores and reasons,
//! which the local server reads through the service for the demo project (the page holds no
//! developer key). `/demo` starts a session; the product pages go on with the browser's (its
//! cookie), so a visitor browsing the shop is one session of several pages.
//!
//! The page and its read route answer loopback peers only, and the read route only the session
//! that the page itself created for this browser (a cookie it set): it is no score oracle.

use std::net::IpAddr;

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};

use crate::error::ApiError;
use crate::message::Response;
use vigil_core::domain::token::random_base62;
use vigil_core::domain::{AccountId, ProjectId, SessionId};
use vigil_core::seed::{DEMO_ACCOUNT, DEMO_PROJECT};
use vigil_core::service::error::ServiceError;
use vigil_core::service::vigil::Vigil;
use vigil_core::store::Store;

/// The cookie that names the session this browser's demo page created.
const COOKIE: &str = "vigil_demo_session";
/// How long the page's session token is valid.
const TOKEN_TTL_SECS: i64 = 3600;

/// The shop's products: slug, name and a line about it.
const PRODUCTS: &[(&str, &str, &str)] = &[
    (
        "lamp",
        "Desk lamp",
        "Warm light, a heavy base and a cloth cable.",
    ),
    (
        "kettle",
        "Kettle",
        "1.2 litres, boils in three minutes, switches itself off.",
    ),
    (
        "chair",
        "Oak chair",
        "Solid oak, oiled, made to be sat on for decades.",
    ),
    (
        "rug",
        "Wool rug",
        "Hand-woven, 170 by 240 cm, in undyed wool.",
    ),
    (
        "clock",
        "Wall clock",
        "Silent sweep movement, 30 cm across.",
    ),
];

/// Which page of the shop a request is for.
#[derive(Clone, Copy)]
enum Shelf {
    /// `/demo`: a new session unless `?session=` names one.
    Home,
    /// `/demo/products/{slug}`: the browser's session goes on.
    Product(usize),
}

/// Answers `GET /demo`, `GET /demo/products/{slug}` and `GET /demo/events/{sessionId}`; None
/// for any other path.
pub async fn answer<S: Store, D, B>(
    app: &Vigil<S, D>,
    req: &http::Request<B>,
    peer: IpAddr,
) -> Option<Response> {
    let rest = req.uri().path().strip_prefix("/demo")?;
    if !(rest.is_empty() || rest.starts_with("/events/") || rest.starts_with("/products/")) {
        return None;
    }
    if req.method() != http::Method::GET {
        return Some(ApiError::MethodNotAllowed("GET".into()).into_response());
    }
    if !peer.is_loopback() && !is_mapped_loopback(peer) {
        return Some(ApiError::NotFound("Not found").into_response());
    }
    let (account, project) = match (
        AccountId::parse(DEMO_ACCOUNT),
        ProjectId::parse(DEMO_PROJECT),
    ) {
        (Ok(a), Ok(p)) => (a, p),
        _ => return Some(ApiError::Internal.into_response()),
    };
    if rest.is_empty() {
        return Some(render(app, req, &account, &project, Shelf::Home).await);
    }
    if let Some(slug) = rest.strip_prefix("/products/") {
        return Some(match PRODUCTS.iter().position(|(s, ..)| *s == slug) {
            Some(i) => render(app, req, &account, &project, Shelf::Product(i)).await,
            None => ApiError::NotFound("No such product in the demo shop").into_response(),
        });
    }
    let session = rest.strip_prefix("/events/")?;
    let session = match SessionId::parse(session) {
        Ok(s) => s,
        Err(e) => return Some(ApiError::bad_request(format!("sessionId {e}")).into_response()),
    };
    if cookie_session(req).as_deref() != Some(session.as_str()) {
        return Some(
            ApiError::Forbidden("The demo page shows only the session it created").into_response(),
        );
    }
    Some(
        match app.events(&account, &project, &session, 1, None).await {
            Ok(page) => {
                let latest = page.results.into_iter().next().map(|(_, e)| e);
                let body = serde_json::json!({ "data": latest }).to_string();
                crate::response::json_response(StatusCode::OK, body)
            }
            Err(e) => ApiError::from(e).into_response(),
        },
    )
}

fn is_mapped_loopback(peer: IpAddr) -> bool {
    matches!(peer, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()))
}

/// The session named by the page's cookie.
fn cookie_session<B>(req: &http::Request<B>) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
}

/// A page of the shop for `?session=NAME`, else (product pages) the browser's session, else a
/// new one; with a token for it and the cookie that lets this browser read it back.
async fn render<S: Store, D, B>(
    app: &Vigil<S, D>,
    req: &http::Request<B>,
    account: &AccountId,
    project: &ProjectId,
    shelf: Shelf,
) -> Response {
    let asked = url::form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
        .find(|(k, _)| k == "session")
        .map(|(_, v)| v.into_owned())
        .or_else(|| match shelf {
            Shelf::Home => None,
            Shelf::Product(_) => cookie_session(req),
        });
    let session = match asked.map(SessionId::parse) {
        Some(Ok(s)) => s,
        Some(Err(e)) => return ApiError::bad_request(format!("session {e}")).into_response(),
        None => match SessionId::parse(format!("demo-{}", random_base62(10).to_lowercase())) {
            Ok(s) => s,
            Err(_) => return ApiError::Internal.into_response(),
        },
    };
    let p = match app.projects().get(account, project).await {
        Ok(p) => p,
        Err(ServiceError::ProjectNotFound) => {
            return ApiError::NotFound(
                "This store has no demo project (vigil serve creates it on an empty store)",
            )
            .into_response();
        }
        Err(e) => return ApiError::from(e).into_response(),
    };
    let token = match app
        .projects()
        .session_token(project, &session, TOKEN_TTL_SECS)
        .await
    {
        Ok(t) => t,
        Err(e) => return ApiError::from(e).into_response(),
    };
    page(&p.api_key_public, session.as_str(), &token, shelf)
}

/// The shop's links, first the next product (the first a keyboard's Tab reaches), then the
/// others; and the page's own product with the catalogue's cards (every other product, the
/// next first), so that most of the page under a pointer is a link to follow.
fn shelf_html(shelf: Shelf) -> (String, String) {
    let current = match shelf {
        Shelf::Home => None,
        Shelf::Product(i) => Some(i),
    };
    let next = current.map_or(0, |i| (i + 1) % PRODUCTS.len());
    let link = |i: usize, label: &str| {
        let (slug, name, _) = PRODUCTS[i];
        format!("<a href=\"/demo/products/{slug}\" data-product=\"{slug}\">{label}{name}</a>")
    };
    let others: Vec<usize> = std::iter::once(next)
        .chain((0..PRODUCTS.len()).filter(|i| *i != next && Some(*i) != current))
        .collect();
    let mut nav = link(next, "Next: ");
    for i in &others[1..] {
        nav.push_str(&link(*i, ""));
    }
    let cards: String = others
        .iter()
        .map(|i| {
            let (slug, name, blurb) = PRODUCTS[*i];
            format!(
                "<a class=\"card\" href=\"/demo/products/{slug}\"><b>{name}</b><span>{blurb}</span></a>"
            )
        })
        .collect();
    let product = match current {
        Some(i) => {
            let (slug, name, blurb) = PRODUCTS[i];
            format!("<section id=\"product\" data-product=\"{slug}\"><h2>{name}</h2><p>{blurb}</p></section>")
        }
        None => "<section id=\"product\"><h2>The demo shop</h2><p>Browse the products: each page is a visit of this session.</p></section>".into(),
    };
    (nav, format!("{product}<div id=\"catalogue\">{cards}</div>"))
}

fn page(public_key: &str, session: &str, token: &str, shelf: Shelf) -> Response {
    // Quoting as JSON keeps each value a string whatever a seed put in it.
    let js = |v: &str| {
        serde_json::to_string(v)
            .unwrap_or_else(|_| "\"\"".into())
            .replace('<', "\\u003c")
    };
    let (nav, product) = shelf_html(shelf);
    let html = PAGE
        .replace("__SHOP__", &nav)
        .replace("__PRODUCT__", &product)
        .replace("__PUBLIC_KEY__", &js(public_key))
        .replace("__SESSION__", &js(session))
        .replace("__SESSION_TOKEN__", &js(token));
    let mut res = Response::new(Bytes::from(html));
    *res.status_mut() = StatusCode::OK;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Session ids are letters, digits and `_ . : -`: a valid cookie value as they are.
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{COOKIE}={session}; Path=/demo; HttpOnly; SameSite=Strict"
    )) {
        h.insert(header::SET_COOKIE, v);
    }
    res
}

const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Vigil demo</title>
<script src="/v1/agent.js"></script>
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
  /* A shop's checkout step: large, so that a test's operating-system clicks land on it. */
  #checkout { display: flex; gap: 1rem; margin: 0 0 1.5rem; height: 9rem; }
  #checkout input, #checkout button { flex: 1; font-size: 1.25rem; padding: 0 1rem; }
  /* The shop's links: a bar at the bottom of the window, five tiles wide, so that a test's
     operating-system clicks find them whatever the window's chrome. */
  #shop { position: fixed; left: 0; right: 0; bottom: 0; display: flex; height: 5rem; background: #f3f5f9; border-top: 1px solid #d5dae3; }
  #shop a { flex: 1; display: flex; align-items: center; justify-content: center; color: #1d4ed8; font-size: 1.1rem; }
  body { padding-bottom: 6rem; }
  #catalogue { display: grid; grid-template-columns: repeat(2, 1fr); gap: 1rem; margin: 1rem 0 2rem; }
  #catalogue .card { display: block; min-height: 7rem; padding: 1rem; border: 1px solid #d5dae3; border-radius: .5rem; color: #1d2330; text-decoration: none; }
  #catalogue .card b { display: block; color: #1d4ed8; font-size: 1.2rem; }
</style>
</head>
<body data-state="collecting">
<nav id="shop">__SHOP__</nav>
<form id="checkout"><input id="name" name="name" placeholder="Your name" autocomplete="off"><button type="button" id="continue" data-vigil-action="checkout">Continue</button></form>
__PRODUCT__
<h1>Vigil: what the engine sees of this visit</h1>
<p class="muted">This page sends your browser's signals with the Vigil agent, then shows the scores and reasons stored for session <code id="session"></code>.</p>
<div class="scores">
  <div class="score">Bot<b id="scoreBot">…</b></div>
  <div class="score">Proxy / VPN<b id="scoreProxyVpn">…</b></div>
</div>
<h2>Reasons</h2>
<table><thead><tr><th>code</th><th>score</th><th>weight</th><th>detail</th></tr></thead><tbody id="reasons"></tbody></table>
<p class="muted" id="meta"></p>
<script>
(function () {
  var session = __SESSION__;
  var $ = function (id) { return document.getElementById(id); };
  $("session").textContent = session;
  function fail(e) {
    document.body.dataset.state = "failed";
    $("meta").className = "error";
    $("meta").textContent = String(e && e.message || e);
  }
  // As a shop would: once the page has loaded.
  function visit() { return Vigil.collect({ publicKey: __PUBLIC_KEY__, sessionId: session, sessionToken: __SESSION_TOKEN__ }); }
  var loaded = document.readyState === "complete" ? Promise.resolve() : new Promise(function (r) { addEventListener("load", r); });
  // The agent sends a second look at the click on the marked button (data-vigil-action);
  // the page then shows the session's latest event, that action's.
  $("checkout").addEventListener("submit", function (e) { e.preventDefault(); });
  $("continue").addEventListener("click", function () {
    Vigil.action("checkout").then(function (id) { return show(id); }).then(function () {
      document.body.dataset.action = "sent";
    }).catch(fail);
  });
  function show(id) {
    return fetch("/demo/events/" + encodeURIComponent(session), { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (j) {
      var e = j.data;
      if (!e) throw new Error("no event stored for this session");
      $("reasons").innerHTML = "";
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
      $("meta").textContent = "receipt " + id + " from " + e.ipAddress + " · " + e.engineVersion +
        " · signals collected in " + Vigil.collectMs + " ms" + (e.ja4 ? " · TLS " + e.ja4 : "");
    });
  }
  loaded.then(visit).then(show).then(function () {
      document.body.dataset.collectMs = String(Vigil.collectMs);
      document.body.dataset.state = "done";
  }).catch(fail);
})();
</script>
</body>
</html>
"#;
