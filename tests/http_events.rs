//! Black-box tests of ingestion against the real `vigil serve` process: the server-side events
//! route and its readers, the browser's collect route (public key, origin, CORS), and the agent
//! script. Every bad input is a clear error that writes nothing.

mod common;

use common::api::*;
use reqwest::Method;
use serde_json::{Value, json};

const EVENTS: &str = "/v1/projects/prj_1/sessions/s1/events";
const SHOP: &str = "https://shop.example";

fn codes(event: &Value) -> Vec<&str> {
    event["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect()
}

/// The session's listed events (asserting the 200).
async fn events(srv: &Server, path: &str) -> Vec<Value> {
    let r = srv.get(KEY1, path).await;
    assert_eq!(r.status, 200, "{}: {}", r.what, r.body);
    r.json()["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn an_event_is_evaluated_stored_and_read_back_as_event_and_result() {
    let srv = Server::seeded(&fixture(vec![]));
    let body = json!({
        "ipAddress": "185.220.101.1",
        "userAgent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36",
        "headers": {"Accept-Language": "en-US"},
        "signals": {"webdriver": true, "aSignalFromTheFuture": [1, 2, 3]}
    });
    let r = srv.post(KEY1, EVENTS, &body.to_string()).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let event = r.json()["data"].clone();
    let id = event["id"].as_str().unwrap();
    assert_eq!(
        r.header("location"),
        Some(format!("{EVENTS}/{id}").as_str())
    );
    let keys: Vec<&str> = event
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys.len(),
        8,
        "id, sessionId, createdAt, ipAddress, scores, reasons, engineVersion: {keys:?}"
    );
    assert_eq!(event["sessionId"], "s1");
    assert_eq!(event["ipAddress"], "185.220.101.1");
    assert!(is_api_timestamp(event["createdAt"].as_str().unwrap()));
    assert!(event["scoreBot"].as_f64().unwrap() >= 0.99, "{event}");
    assert!(event["scoreProxyVpn"].as_f64().unwrap() >= 0.9, "{event}");
    let c = codes(&event);
    for code in ["headless_browser", "webdriver", "tor_exit"] {
        assert!(c.contains(&code), "{code} in {c:?}");
    }
    assert!(
        event["engineVersion"]
            .as_str()
            .unwrap()
            .starts_with("vigil-detect/")
    );

    // Read back one by one, in the list, as a v1 result and in the session's summary.
    srv.get(KEY1, &format!("{EVENTS}/{id}"))
        .await
        .expect(200, json!({"data": event}));
    assert_eq!(events(&srv, EVENTS).await, vec![event.clone()]);
    srv.get(KEY1, "/v1/results/prj_1/s1").await.expect(
        200,
        json!({"data": [{"scoreBot": event["scoreBot"], "scoreProxyVpn": event["scoreProxyVpn"],
                         "ipAddress": "185.220.101.1", "createdAt": event["createdAt"]}]}),
    );
    srv.get(KEY1, "/v1/results/prj_1/s1/general").await.expect(
        200,
        json!({"data": {"scoreBot": event["scoreBot"], "scoreProxyVpn": event["scoreProxyVpn"]}}),
    );

    // A clean visit scores low, with no reasons.
    let clean = json!({"ipAddress": "81.2.69.142",
        "userAgent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"});
    let r = srv
        .post(
            KEY1,
            "/v1/projects/prj_1/sessions/s2/events",
            &clean.to_string(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(r.json()["data"]["scoreBot"].as_f64().unwrap() < 0.5);
}

#[tokio::test]
async fn seeded_results_are_events_without_reasons_and_lists_page() {
    let results: Vec<Value> = (0..5)
        .map(|i| {
            in_session(
                "prj_1",
                "s1",
                &res(
                    0.1,
                    0.2,
                    "203.0.113.7",
                    &format!("2026-11-21T10:00:0{i}.000Z"),
                ),
            )
        })
        .collect();
    let srv = Server::seeded(&fixture(results));
    let all = events(&srv, EVENTS).await;
    assert_eq!(all.len(), 5);
    assert_eq!(
        all[0]["createdAt"], "2026-11-21T10:00:04.000Z",
        "newest first"
    );
    assert_eq!(all[0]["reasons"], json!([]));
    assert_eq!(all[0]["engineVersion"], Value::Null);
    let id = all[2]["id"].as_str().unwrap();
    srv.get(KEY1, &format!("{EVENTS}/{id}"))
        .await
        .expect(200, json!({"data": all[2]}));

    let (paged, sizes) = srv.all_pages(&format!("{EVENTS}?limit=2"), Some(2)).await;
    assert_eq!(paged, all);
    assert_eq!(sizes, [2, 2, 1]);

    // No events: an empty list, not null (unlike the v1 results route).
    srv.get(KEY1, "/v1/projects/prj_1/sessions/none/events")
        .await
        .expect(200, json!({"data": []}));
}

#[tokio::test]
async fn bad_events_are_clear_errors_and_write_nothing() {
    let srv = Server::seeded(&fixture(vec![]));
    let ok = json!({"ipAddress": "203.0.113.7"});
    #[rustfmt::skip]
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "`ipAddress` is required"),
        (json!({"ipAddress": null}), "`ipAddress` is required"),
        (json!({"ipAddress": "999.1.1.1"}), "`ipAddress`: invalid IP address syntax"),
        (json!({"ipAddress": 7}), "`ipAddress`: invalid type: integer `7`, expected IP address"),
        (json!({"ipAddress": "203.0.113.7", "userAgent": 1}), "`userAgent`: invalid type: integer `1`, expected a string"),
        (json!({"ipAddress": "203.0.113.7", "headers": {"via": 1}}), "`headers.via`: invalid type: integer `1`, expected a string"),
        (json!({"ipAddress": "203.0.113.7", "headers": []}), "`headers`: invalid type: sequence, expected a map"),
        (json!({"ipAddress": "203.0.113.7", "signals": {"plugins": "five"}}), "`signals.plugins`: invalid type: string \"five\", expected a JSON number"),
        (json!({"ipAddress": "203.0.113.7", "signals": {"webdriver": "yes"}}), "`signals.webdriver`: invalid type: string \"yes\", expected a boolean"),
        (json!({"ipAddress": "203.0.113.7", "scoreBot": 1}), "Unknown field `scoreBot`: only `ipAddress`, `userAgent`, `headers` and `signals` are allowed"),
        (json!([ok]), "Request body must be a JSON object"),
    ];
    for (body, message) in cases {
        srv.post(KEY1, EVENTS, &body.to_string())
            .await
            .expect_error(400, message);
    }
    srv.post(KEY1, EVENTS, "{not json")
        .await
        .expect_error(400, "Request body must be valid JSON");
    let auth = bearer(KEY1);
    srv.call(
        Method::POST,
        EVENTS,
        Some(&auth),
        Some("text/plain"),
        Some(ok.to_string()),
    )
    .await
    .expect_error(415, "Content-Type must be application/json");
    let big = json!({"ipAddress": "203.0.113.7", "userAgent": "x".repeat(17 * 1024)});
    srv.post(KEY1, EVENTS, &big.to_string())
        .await
        .expect_error(413, "Request body is too large");
    // Ids outside the grammar, foreign and missing projects, a wrong key.
    srv.post(
        KEY1,
        "/v1/projects/prj_1/sessions/a%20b/events",
        &ok.to_string(),
    )
    .await
    .expect_error(
        400,
        "sessionId may only contain letters, digits and _ . : -",
    );
    srv.post(
        KEY1,
        "/v1/projects/prj_2/sessions/s1/events",
        &ok.to_string(),
    )
    .await
    .expect_error(404, "Project not found");
    srv.post(
        KEY1,
        "/v1/projects/nope/sessions/s1/events",
        &ok.to_string(),
    )
    .await
    .expect_error(404, "Project not found");
    srv.post("vgl_wrong", EVENTS, &ok.to_string())
        .await
        .expect_error(401, "Unauthorized");
    srv.get(KEY1, &format!("{EVENTS}/not-an-event"))
        .await
        .expect_error(
            400,
            "eventId must be an event id such as evt_1763900000000_1",
        );
    srv.get(KEY1, &format!("{EVENTS}/evt_1763900000000_1"))
        .await
        .expect_error(404, "Event not found");
    // A disabled project takes no events (prj_2 of KEY2 is disabled).
    srv.post(
        KEY2,
        "/v1/projects/prj_2/sessions/s1/events",
        &ok.to_string(),
    )
    .await
    .expect_error(403, "Project is disabled");

    // Nothing was written anywhere.
    assert_eq!(events(&srv, EVENTS).await, Vec::<Value>::new());
    srv.get(KEY2, "/v1/projects/prj_2/sessions/s1/events")
        .await
        .expect(200, json!({"data": []}));
}

async fn collect(srv: &Server, origin: Option<&str>, ct: &str, body: Value) -> Resp {
    let mut headers = vec![("content-type", ct), ("user-agent", "curl/8.5.0")];
    if let Some(o) = origin {
        headers.push(("origin", o));
    }
    srv.anonymous(
        Method::POST,
        "/v1/collect",
        &headers,
        Some(body.to_string()),
    )
    .await
}

#[tokio::test]
async fn the_browser_route_checks_key_and_origin_and_answers_only_an_id() {
    let srv = Server::seeded(&fixture(vec![]));
    let visit = json!({"publicKey": "pk_shop", "sessionId": "b1",
                       "signals": {"webdriver": true, "newSignal": {"x": 1}}});
    for origin in [SHOP, "https://www.shop.example"] {
        let r = collect(
            &srv,
            Some(origin),
            "text/plain;charset=UTF-8",
            visit.clone(),
        )
        .await;
        assert_eq!(r.status, 202, "{}", r.body);
        assert_eq!(r.header("access-control-allow-origin"), Some(origin));
        assert_eq!(r.header("vary"), Some("Origin"));
        let data = r.json()["data"].clone();
        assert_eq!(data.as_object().unwrap().len(), 1, "only the id: {data}");
        assert!(data["id"].as_str().unwrap().starts_with("evt_"));
    }
    let stored = events(&srv, "/v1/projects/prj_1/sessions/b1/events").await;
    assert_eq!(stored.len(), 2);
    // The address is the connection's, the user agent the request's.
    assert_eq!(stored[0]["ipAddress"], "127.0.0.1");
    assert!(codes(&stored[0]).contains(&"webdriver"), "{stored:?}");
    assert!(
        codes(&stored[0]).contains(&"bot_user_agent"),
        "the request's user agent: {stored:?}"
    );

    // JSON is accepted too; a body's address or a forwarded header never replaces the peer's.
    let r = srv
        .anonymous(
            Method::POST,
            "/v1/collect",
            &[
                ("content-type", "application/json"),
                ("origin", SHOP),
                ("x-forwarded-for", "8.8.8.8"),
            ],
            Some(json!({"publicKey": "pk_shop", "sessionId": "b2"}).to_string()),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let b2 = events(&srv, "/v1/projects/prj_1/sessions/b2/events").await;
    assert_eq!(b2[0]["ipAddress"], "127.0.0.1");

    // Refusals: nothing is written and no CORS grant is given.
    #[rustfmt::skip]
    let refusals: Vec<(Option<&str>, &str, Value, u16, &str)> = vec![
        (Some("https://evil.example"), "text/plain", visit.clone(), 403, "Origin is not allowed for this project"),
        (Some("http://shop.example"), "text/plain", visit.clone(), 403, "Origin is not allowed for this project"),
        (Some("https://shop.example.evil"), "text/plain", visit.clone(), 403, "Origin is not allowed for this project"),
        (None, "text/plain", visit.clone(), 403, "Origin is not allowed for this project"),
        (Some(SHOP), "text/plain", json!({"publicKey": "pk_nope", "sessionId": "b1"}), 401, "Unauthorized"),
        (Some(SHOP), "text/plain", json!({"publicKey": "sk_shop", "sessionId": "b1"}), 401, "Unauthorized"),
        (Some(SHOP), "text/plain", json!({"sessionId": "b1"}), 400, "`publicKey` is required"),
        (Some(SHOP), "text/plain", json!({"publicKey": 5, "sessionId": "b1"}), 400, "Request body must be a JSON object with a string `publicKey`"),
        (Some(SHOP), "text/plain", json!({"publicKey": "pk_shop"}), 400, "`sessionId` is required"),
        (Some(SHOP), "text/plain", json!({"publicKey": "pk_shop", "sessionId": "a b"}), 400, "sessionId may only contain letters, digits and _ . : -"),
        (Some(SHOP), "text/plain", json!({"publicKey": "pk_shop", "sessionId": "b1", "ipAddress": "8.8.8.8"}), 400, "Unknown field `ipAddress`: only `publicKey`, `sessionId`, `sessionToken` and `signals` are allowed"),
        (Some(SHOP), "text/plain", json!({"publicKey": "pk_shop", "sessionId": "b1", "signals": {"plugins": -1}}), 400, "`signals.plugins`: invalid value: -1, expected an integer in range"),
        (Some(SHOP), "application/xml", visit.clone(), 415, "Content-Type must be text/plain or application/json"),
        (Some("https://other.example"), "text/plain", json!({"publicKey": "pk_other", "sessionId": "b1"}), 403, "Project is disabled"),
    ];
    for (origin, ct, body, status, message) in refusals {
        let r = collect(&srv, origin, ct, body.clone()).await;
        r.expect_error(status, message);
        if status != 400 {
            assert_eq!(r.header("access-control-allow-origin"), None, "{body}");
        }
    }
    let big = json!({"publicKey": "pk_shop", "sessionId": "b1", "signals": {"userAgent": "x".repeat(17 * 1024)}});
    collect(&srv, Some(SHOP), "text/plain", big)
        .await
        .expect_error(413, "Request body is too large");
    srv.anonymous(
        Method::POST,
        "/v1/collect",
        &[("content-type", "text/plain"), ("origin", SHOP)],
        Some("{oops".into()),
    )
    .await
    .expect_error(
        400,
        "Request body must be a JSON object with a string `publicKey`",
    );
    assert_eq!(
        events(&srv, "/v1/projects/prj_1/sessions/b1/events")
            .await
            .len(),
        2
    );
    srv.anonymous(Method::GET, "/v1/collect", &[], None)
        .await
        .expect_error(405, "Method not allowed");
}

#[tokio::test]
async fn the_agent_is_served_cacheable_and_small() {
    let srv = Server::seeded(&fixture(vec![]));
    let r = srv.anonymous(Method::GET, "/v1/agent.js", &[], None).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert!(r.header("cache-control").unwrap().contains("max-age="));
    assert!(r.body.contains("Vigil"));
    let etag = r.header("etag").unwrap().to_owned();
    let again = srv
        .anonymous(
            Method::GET,
            "/v1/agent.js",
            &[("if-none-match", &etag)],
            None,
        )
        .await;
    assert_eq!(again.status, 304);
    assert_eq!(again.body, "");
    assert_eq!(again.header("etag"), Some(etag.as_str()));

    // At most 6 KB gzipped (issue 14: the browser-integrity probes fit in 2 KB more).
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(r.body.as_bytes()).unwrap();
    let size = gz.finish().unwrap().len();
    assert!(size <= 6144, "agent.js is {size} bytes gzipped");
}

#[tokio::test]
async fn an_idempotency_key_makes_a_creation_happen_once() {
    let srv = Server::seeded(&fixture(vec![]));
    let post = |key: &'static str, path: &'static str, body: Value, idem: &'static str| {
        let srv = &srv;
        async move {
            srv.anonymous(
                Method::POST,
                path,
                &[
                    ("authorization", &bearer(key)),
                    ("content-type", "application/json"),
                    ("idempotency-key", idem),
                ],
                Some(body.to_string()),
            )
            .await
        }
    };
    let visit = json!({"ipAddress": "185.220.101.1", "userAgent": "curl/8.5.0"});
    let first = post(KEY1, EVENTS, visit.clone(), "k-1").await;
    assert_eq!(first.status, 201, "{}", first.body);
    // A retry: the first answer, nothing new written.
    let again = post(KEY1, EVENTS, visit.clone(), "k-1").await;
    assert_eq!(again.status, 201);
    assert_eq!(again.body, first.body);
    assert_eq!(again.header("location"), first.header("location"));
    assert_eq!(events(&srv, EVENTS).await.len(), 1);
    // The same key with another request is refused, and writes nothing.
    let other = json!({"ipAddress": "203.0.113.9"});
    post(KEY1, EVENTS, other.clone(), "k-1")
        .await
        .expect_error(422, "Idempotency-Key was already used with another request");
    post(
        KEY1,
        "/v1/projects/prj_1/sessions/s9/events",
        visit.clone(),
        "k-1",
    )
    .await
    .expect_error(422, "Idempotency-Key was already used with another request");
    // Another key, or the same key of another account, is another creation.
    assert_eq!(post(KEY1, EVENTS, visit.clone(), "k-2").await.status, 201);
    assert_eq!(events(&srv, EVENTS).await.len(), 2);
    let r = post(
        KEY2,
        "/v1/projects/prj_2/sessions/s1/events",
        visit.clone(),
        "k-1",
    )
    .await;
    assert_eq!(
        r.status, 403,
        "prj_2 is disabled: the key was not taken: {}",
        r.body
    );
    post(KEY1, EVENTS, visit.clone(), "bad key")
        .await
        .expect_error(
            400,
            "Idempotency-Key must be 1 to 255 visible ASCII characters",
        );

    // Projects too.
    let project = json!({"name": "Blog", "domain": "blog.example"});
    let created = post(KEY1, "/v1/projects", project.clone(), "p-1").await;
    assert_eq!(created.status, 201, "{}", created.body);
    let retried = post(KEY1, "/v1/projects", project.clone(), "p-1").await;
    assert_eq!((retried.status, &retried.body), (201, &created.body));
    let listed = srv.get(KEY1, "/v1/projects").await.json()["data"].clone();
    assert_eq!(
        listed.as_array().unwrap().len(),
        3,
        "prj_1, prj_1b and one new: {listed}"
    );
    post(
        KEY1,
        "/v1/projects",
        json!({"name": "Other", "domain": "o.example"}),
        "p-1",
    )
    .await
    .expect_error(422, "Idempotency-Key was already used with another request");
}
