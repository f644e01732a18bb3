//! The public surface under attack, black-box against `vigil serve`: each attack that holding a
//! page's public key once allowed, replayed, refused as the README's security model says, with
//! legitimate use (an allowed origin, a valid session token, the demo page) still working.
//! The visit budget is proved on both stores by the conformance suite
//! (`visits_have_their_own_budget`); here it is proved through the whole service.

mod common;

use std::time::{SystemTime, UNIX_EPOCH};

use common::api::*;
use hmac::{Hmac, Mac};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::Sha256;

const SHOP: &str = "https://shop.example";

/// The fixture with its plan's limits set, prj_1 requiring tokens when `tokens`.
fn seed(max_rps: u64, max_requests: u64, tokens: bool) -> Value {
    let mut f = fixture(vec![]);
    f["accounts"][0]["plan"]["maxRps"] = json!(max_rps);
    f["accounts"][0]["plan"]["maxRequests"] = json!(max_requests);
    f["projects"][0]["requireSessionToken"] = json!(tokens);
    f
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The README's recipe, written here independently of Vigil's code.
fn token(private_key: &str, project: &str, session: &str, expiry: i64) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(private_key.as_bytes()).unwrap();
    mac.update(format!("{project}:{session}:{expiry}").as_bytes());
    format!("{expiry}.{}", hex::encode(mac.finalize().into_bytes()))
}

async fn collect_with(srv: &Server, headers: &[(&str, &str)], body: Value) -> Resp {
    let mut h = vec![("content-type", "text/plain;charset=UTF-8")];
    h.extend_from_slice(headers);
    srv.anonymous(Method::POST, "/v1/collect", &h, Some(body.to_string()))
        .await
}

async fn collect(srv: &Server, body: Value) -> Resp {
    collect_with(srv, &[("origin", SHOP)], body).await
}

fn visit(session: &str) -> Value {
    json!({"publicKey": "pk_shop", "sessionId": session, "signals": {"webdriver": false}})
}

async fn events(srv: &Server, session: &str) -> Vec<Value> {
    let r = srv
        .get(
            KEY1,
            &format!("/v1/projects/prj_1/sessions/{session}/events"),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_collect_flood_never_makes_a_developer_request_fail() {
    // A developer rate of 5 per second; visits may reach 50 per second per project.
    let srv = Server::seeded(&seed(5, 1_000_000, false));
    let flood = (0..120).map(|i| {
        let srv = &srv;
        async move { collect(srv, visit(&format!("flood-{}", i % 7))).await }
    });
    let developer = async {
        let mut statuses = Vec::new();
        for _ in 0..4 {
            statuses.push(srv.get(KEY1, "/v1/results/prj_1/none").await.status);
        }
        statuses
    };
    let (answers, statuses) = tokio::join!(futures_util::future::join_all(flood), developer);
    // Every developer request of the flood's second was answered by its handler (an empty list),
    // none refused by a limit.
    assert_eq!(statuses, vec![200; 4]);
    let refused: Vec<&Resp> = answers.iter().filter(|r| r.status == 429).collect();
    assert!(
        !refused.is_empty(),
        "120 visits from one address in a moment"
    );
    for r in &refused {
        assert_eq!(r.message(), "Rate limit exceeded");
        let retry: u64 = r.header_value("retry-after").parse().unwrap();
        assert!((1..=2).contains(&retry), "{retry}");
        r.expect_no("ratelimit").expect_no("ratelimit-policy");
    }
    assert!(answers.iter().all(|r| matches!(r.status, 202 | 429)));
}

#[tokio::test]
async fn a_spent_quota_refuses_only_visits() {
    let srv = Server::seeded(&seed(1000, 6, false));
    let mut accepted = 0;
    let mut refusal = None;
    for i in 0..10 {
        let r = collect(&srv, visit(&format!("q{i}"))).await;
        match r.status {
            202 => accepted += 1,
            _ => {
                refusal = Some(r);
                break;
            }
        }
    }
    assert_eq!(accepted, 6, "visits count toward maxRequests");
    let r = refusal.expect("a refusal once the quota is spent");
    r.expect_error(429, "Monthly request quota exceeded");
    assert!(r.header("retry-after").is_some());
    // The developer API stays readable, and usage shows the visits.
    let usage = srv.get(KEY1, "/v1/usage").await;
    assert_eq!(usage.status, 200, "{}", usage.body);
    assert!(usage.json()["data"]["requests"].as_u64().unwrap() >= 6);
    assert_eq!(srv.get(KEY1, "/v1/projects/prj_1").await.status, 200);
    // Refused calls, malformed or not, were not counted against anyone.
    collect(&srv, json!({"publicKey": 5})).await.expect_error(
        400,
        "Request body must be a JSON object with a string `publicKey`",
    );
}

#[tokio::test]
async fn a_session_can_be_poisoned_only_with_its_backends_token() {
    let srv = Server::seeded(&seed(1000, 100_000, true));
    let bot = |session: &str, token: Option<String>| {
        let mut v = json!({"publicKey": "pk_shop", "sessionId": session,
                           "signals": {"webdriver": true}});
        if let Some(t) = token {
            v["sessionToken"] = json!(t);
        }
        v
    };
    let later = now() + 600;
    #[rustfmt::skip]
    let refused: Vec<(Option<String>, &str)> = vec![
        (None, "`sessionToken` is required for this project"),
        (Some(token("sk_shop", "prj_1", "other-session", later)), "`sessionToken` is invalid or expired"),
        (Some(token("sk_blog", "prj_1", "victim", later)), "`sessionToken` is invalid or expired"),
        (Some(token("sk_shop", "prj_1b", "victim", later)), "`sessionToken` is invalid or expired"),
        (Some(token("sk_shop", "prj_1", "victim", now() - 1)), "`sessionToken` is invalid or expired"),
        (Some(token("sk_shop", "prj_1", "victim", now() + 3 * 86_400)), "`sessionToken` is invalid or expired"),
        (Some("not-a-token".into()), "`sessionToken` is invalid or expired"),
    ];
    for (t, message) in refused {
        collect(&srv, bot("victim", t))
            .await
            .expect_error(401, message);
    }
    // Nothing was written: the session does not exist.
    assert_eq!(events(&srv, "victim").await, Vec::<Value>::new());
    srv.get(KEY1, "/v1/results/prj_1/victim/general")
        .await
        .expect_error(404, "Session not found");

    // The backend's token, from the README's recipe and from `vigil sessions token`, works.
    let r = collect(
        &srv,
        bot("victim", Some(token("sk_shop", "prj_1", "victim", later))),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let out = srv.cli(&[
        "sessions",
        "token",
        "--project",
        "prj_1",
        "--session",
        "minted",
        "--ttl",
        "10m",
    ]);
    assert_ok(&out);
    let minted = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let r = collect(&srv, bot("minted", Some(minted))).await;
    assert_eq!(r.status, 202, "{}", r.body);

    // The setting is the project's, readable and changeable; new projects require tokens.
    let p = srv.get(KEY1, "/v1/projects/prj_1").await;
    assert_eq!(p.json()["data"]["requireSessionToken"], true);
    let created = srv
        .post(
            KEY1,
            "/v1/projects",
            r#"{"name":"New","domain":"new.example"}"#,
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.json()["data"]["requireSessionToken"], true);
    let patched = srv
        .call(
            Method::PATCH,
            "/v1/projects/prj_1",
            Some(&bearer(KEY1)),
            Some("application/json"),
            Some(r#"{"requireSessionToken":false}"#.into()),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    // At once on this server: the cached project is forgotten when it changes.
    assert_eq!(collect(&srv, bot("open", None)).await.status, 202);
}

#[tokio::test]
async fn the_page_learns_nothing_it_did_not_send() {
    let srv = Server::seeded(&seed(1000, 100_000, false));
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = collect(&srv, visit("counted")).await;
        assert_eq!(r.status, 202, "{}", r.body);
        // No plan, no quota, no scores: only an opaque receipt.
        r.expect_no("ratelimit").expect_no("ratelimit-policy");
        let exposed = r.header("access-control-expose-headers").unwrap_or("");
        assert!(!exposed.to_lowercase().contains("ratelimit"), "{exposed}");
        let data = r.json()["data"].clone();
        assert_eq!(data.as_object().unwrap().len(), 1, "{data}");
        let id = data["id"].as_str().unwrap().to_owned();
        assert!(
            id.starts_with("evt_")
                && id.len() == 28
                && id[4..].chars().all(|c| c.is_ascii_alphanumeric()),
            "{id}"
        );
        ids.push(id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    // The stored events have ids of their own that the page never saw.
    let stored = events(&srv, "counted").await;
    assert_eq!(stored.len(), 3);
    for e in &stored {
        assert!(!ids.contains(&e["id"].as_str().unwrap().to_owned()));
    }
}

#[tokio::test]
async fn origins_are_judged_first_and_only_canonical_ones_echoed() {
    let srv = Server::seeded(&seed(1000, 100_000, false));
    let refused = "Origin is not allowed for this project";
    for origin in [
        "https://shop.example:443",
        "HTTPS://SHOP.EXAMPLE",
        "https://example%2Ecom",
        "https://shop.example/",
        "null",
        "https://evil.example",
    ] {
        let r = collect_with(&srv, &[("origin", origin)], visit("o")).await;
        r.expect_error(403, refused);
        assert_eq!(r.header("access-control-allow-origin"), None, "{origin}");
    }
    // The disabled project says so only to its own origin.
    let other = json!({"publicKey": "pk_other", "sessionId": "o"});
    collect_with(&srv, &[("origin", "https://evil.example")], other.clone())
        .await
        .expect_error(403, refused);
    collect_with(&srv, &[("origin", "https://other.example")], other)
        .await
        .expect_error(403, "Project is disabled");
    // Unknown and malformed keys: 401, the same either way.
    for key in ["pk_unknown", "sk_shop", "pk_<script>", &"pk_x".repeat(100)] {
        collect(&srv, json!({"publicKey": key, "sessionId": "o"}))
            .await
            .expect_error(401, "Unauthorized");
    }
    // The canonical origin is echoed; the preflight of a page that posts JSON passes.
    let r = collect_with(&srv, &[("origin", "https://www.shop.example")], visit("o")).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://www.shop.example")
    );
    let pre = srv
        .anonymous(
            Method::OPTIONS,
            "/v1/collect",
            &[
                ("origin", SHOP),
                ("access-control-request-method", "POST"),
                ("access-control-request-headers", "content-type"),
            ],
            None,
        )
        .await;
    assert_eq!(pre.status, 204, "{}", pre.body);
    assert_eq!(pre.header("access-control-allow-origin"), Some(SHOP));
    assert!(
        pre.header_value("access-control-allow-methods")
            .contains("POST")
    );
    assert!(
        pre.header_value("access-control-allow-headers")
            .to_lowercase()
            .contains("content-type")
    );
    let json_visit = srv
        .anonymous(
            Method::POST,
            "/v1/collect",
            &[("origin", SHOP), ("content-type", "application/json")],
            Some(visit("o").to_string()),
        )
        .await;
    assert_eq!(json_visit.status, 202, "{}", json_visit.body);
    // 415 names every accepted type; HEAD of the agent works.
    srv.anonymous(
        Method::POST,
        "/v1/collect",
        &[("origin", SHOP), ("content-type", "application/xml")],
        Some(visit("o").to_string()),
    )
    .await
    .expect_error(415, "Content-Type must be text/plain or application/json");
    let head = srv.anonymous(Method::HEAD, "/v1/agent.js", &[], None).await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert!(head.header("etag").is_some());
}

#[tokio::test]
async fn domains_are_registrable_and_webhooks_use_safe_ports() {
    let srv = Server::seeded(&seed(1000, 100_000, false));
    for domain in ["com", "co.uk", "github.io", "203.0.113.7", "127.0.0.1"] {
        let r = srv
            .post(
                KEY1,
                "/v1/projects",
                &json!({"name": "X", "domain": domain}).to_string(),
            )
            .await;
        assert_eq!(r.status, 400, "{domain}: {}", r.body);
        assert!(r.message().starts_with("`domain` must be"), "{}", r.body);
    }
    let r = srv
        .call(
            Method::PATCH,
            "/v1/projects/prj_1",
            Some(&bearer(KEY1)),
            Some("application/json"),
            Some(r#"{"domain":"com"}"#.into()),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    for url in [
        "https://hooks.example.com:22/x",
        "https://hooks.example.com:80/x",
        "https://hooks.example.com:1023/x",
    ] {
        let r = srv
            .post(
                KEY1,
                "/v1/projects/prj_1/webhooks",
                &json!({"type": "proxy_vpn_detect", "url": url}).to_string(),
            )
            .await;
        r.expect_error(400, "url must use port 443 or a port from 1024 up");
    }
    let ok = srv
        .post(
            KEY1,
            "/v1/projects/prj_1/webhooks",
            r#"{"type":"proxy_vpn_detect","url":"https://hooks.example.com:8443/x"}"#,
        )
        .await;
    assert_eq!(ok.status, 201, "{}", ok.body);
}

#[tokio::test]
async fn visitor_text_in_reasons_is_inert() {
    let srv = Server::seeded(&seed(1000, 100_000, false));
    let hostile = "<img src=x onerror=alert(document.cookie)>";
    let r = collect(
        &srv,
        json!({"publicKey": "pk_shop", "sessionId": "xss",
               "signals": {"automationGlobals": [hostile, "\"'`\\"],
                           "webglRenderer": format!("SwiftShader {hostile}")}}),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let stored = events(&srv, "xss").await;
    let reasons = stored[0]["reasons"].as_array().unwrap();
    assert!(reasons.len() >= 2, "{reasons:?}");
    for reason in reasons {
        let detail = reason["detail"].as_str().unwrap();
        assert!(
            !detail.contains(['<', '>', '"', '`', '\\']),
            "{}: {detail}",
            reason["code"]
        );
    }
}

/// `vigil serve` with further options, on the fixture.
fn serve_with(seed: &Value, options: &[&str]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let seed_file = dir.path().join("seed.json");
    std::fs::write(&seed_file, seed.to_string()).unwrap();
    let srv = Server::start_with(&dir.path().join("vigil.db"), Some(&seed_file), options);
    (srv, dir)
}

#[tokio::test]
async fn only_a_trusted_proxys_last_entry_names_the_visitor() {
    let seed = seed(1000, 100_000, false);
    let ip_of = |stored: &[Value]| stored[0]["ipAddress"].as_str().unwrap().to_owned();
    let (trusting, _d1) = serve_with(&seed, &["--trust-proxy", "127.0.0.0/8,::1/128"]);
    #[rustfmt::skip]
    let cases = [
        ("185.220.101.1, 10.0.0.1:5555", "10.0.0.1"),
        ("185.220.101.1, 203.0.113.9", "203.0.113.9"),
        ("185.220.101.1, [2001:db8::7]:443", "2001:db8::7"),
        ("185.220.101.1, not-an-address", "127.0.0.1"),
        ("185.220.101.1, 10.0.0.1:5555:junk", "127.0.0.1"),
    ];
    for (i, (xff, want)) in cases.iter().enumerate() {
        let session = format!("xff{i}");
        let r = collect_with(
            &trusting,
            &[("origin", SHOP), ("x-forwarded-for", xff)],
            visit(&session),
        )
        .await;
        assert_eq!(r.status, 202, "{}", r.body);
        assert_eq!(ip_of(&events(&trusting, &session).await), *want, "{xff}");
    }
    // A proxy outside the trusted ranges is not believed.
    let (strict, _d2) = serve_with(&seed, &["--trust-proxy", "10.0.0.0/8"]);
    let r = collect_with(
        &strict,
        &[("origin", SHOP), ("x-forwarded-for", "203.0.113.9")],
        visit("s"),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(ip_of(&events(&strict, "s").await), "127.0.0.1");
}

#[tokio::test]
async fn the_demo_is_opt_in_and_shows_only_its_own_session() {
    // Without --demo there is no demo.
    let srv = Server::seeded(&seed(1000, 100_000, false));
    assert_eq!(
        srv.anonymous(Method::GET, "/demo", &[], None).await.status,
        404
    );
    assert_eq!(
        srv.anonymous(Method::GET, "/demo/events/sess_bot", &[], None)
            .await
            .status,
        404
    );
    // With it (on a fresh store, which gets the demo project): the page sets the cookie of the
    // session it created and carries a token for it; the read route answers that session only.
    let dir = tempfile::tempdir().unwrap();
    let demo = Server::start_with(&dir.path().join("vigil.db"), None, &["--demo"]);
    let page = demo
        .anonymous(Method::GET, "/demo?session=mine", &[], None)
        .await;
    assert_eq!(page.status, 200);
    let cookie = page.header_value("set-cookie").to_owned();
    assert!(cookie.starts_with("vigil_demo_session=mine;"), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(page.body.contains("sessionToken"));
    let pair = cookie.split(';').next().unwrap();
    let read = |path: &'static str, cookie: Option<&str>| {
        let demo = &demo;
        let cookie = cookie.map(str::to_owned);
        async move {
            let mut headers = Vec::new();
            if let Some(c) = cookie.as_deref() {
                headers.push(("cookie", c));
            }
            demo.anonymous(Method::GET, path, &headers, None).await
        }
    };
    assert_eq!(read("/demo/events/mine", Some(pair)).await.status, 200);
    for (path, cookie) in [
        ("/demo/events/mine", None),
        ("/demo/events/sess_bot", Some(pair)),
        ("/demo/events/sess_bot", None),
    ] {
        read(path, cookie)
            .await
            .expect_error(403, "The demo page shows only the session it created");
    }
}
