//! Events and ingestion, through every door: the events route and its readers, the browser's
//! collect route and the agent script, by their handlers through their Lambda events, and
//! black-box against `vigil serve` (including the public surface under attack).

mod common;

mod lambda {
    //! The handlers through the Lambda events `create-event.json`, `list-events.json`,
    //! `get-event.json`, `collect.json` and `agent-script.json`.

    use crate::common::lambda::*;
    use http::{StatusCode, header};
    use serde_json::{Value, json};
    use vigil_http::ingest;

    /// The seeded result of sess_1, as an event: no reasons, no engine.
    fn sess_1_event() -> Value {
        let mut e = sess_1_result();
        e["id"] = json!("evt_1795255200000_1");
        e["sessionId"] = json!("sess_1");
        e["reasons"] = json!([]);
        e["engineVersion"] = Value::Null;
        e["model"] = Value::Null;
        e["ja4"] = Value::Null;
        e["transport"] = Value::Null;
        e["device"] = Value::Null;
        e["agent"] = Value::Null;
        e["allowed"] = json!(false);
        e
    }

    #[tokio::test]
    async fn create_event_evaluates_stores_and_locates_the_event() {
        let f = fixture().await;
        let a = call::<ingest::CreateEvent>(&f.app, request("create-event.json")).await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
        let event = &a.body["data"];
        let id = event["id"].as_str().unwrap();
        assert_eq!(
            a.header(header::LOCATION),
            Some(format!("/v1/projects/prj_1/sessions/sess_2/events/{id}").as_str())
        );
        assert_eq!(event["ipAddress"], "185.220.101.1");
        assert_eq!(event["sessionId"], "sess_2");
        assert!(event["scoreBot"].as_f64().unwrap() > 0.99, "{event}");
        assert!(event["scoreProxyVpn"].as_f64().unwrap() > 0.99, "{event}");
        let codes: Vec<&str> = event["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["code"].as_str().unwrap())
            .collect();
        for code in ["headless_browser", "webdriver", "tor_exit"] {
            assert!(codes.contains(&code), "{code}: {codes:?}");
        }
        // The same event through get-event, as its Location names it.
        let mut get = event_json("get-event.json");
        get["path"] = json!(format!("/projects/prj_1/sessions/sess_2/events/{id}"));
        get["pathParameters"]["sessionId"] = json!("sess_2");
        get["pathParameters"]["eventId"] = json!(id);
        let read = call::<ingest::GetEvent>(&f.app, request_from(&get)).await;
        assert_eq!(read.status, StatusCode::OK);
        assert_eq!(&read.body["data"], event);

        // Nothing is written for a body the route refuses.
        let mut bad = event_json("create-event.json");
        bad["body"] = json!(r#"{"ipAddress":"203.0.113.7","scoreBot":1}"#);
        bad["pathParameters"]["sessionId"] = json!("sess_9");
        let refused = call::<ingest::CreateEvent>(&f.app, request_from(&bad)).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        let mut list = event_json("list-events.json");
        list["pathParameters"]["sessionId"] = json!("sess_9");
        let listed = call::<ingest::ListEvents>(&f.app, request_from(&list)).await;
        assert_eq!(listed.body, json!({"data": []}));
    }

    #[tokio::test]
    async fn list_and_get_event_show_a_seeded_result_as_an_event() {
        let f = fixture().await;
        let listed = call::<ingest::ListEvents>(&f.app, request("list-events.json")).await;
        assert_eq!(listed.status, StatusCode::OK);
        assert_eq!(listed.body, json!({"data": [sess_1_event()]}));
        let one = call::<ingest::GetEvent>(&f.app, request("get-event.json")).await;
        assert_eq!(one.status, StatusCode::OK);
        assert_eq!(one.body, json!({"data": sess_1_event()}));
    }

    #[tokio::test]
    async fn collect_takes_the_visit_from_the_request_and_answers_only_the_id() {
        let f = fixture().await;
        let a = answer(
            vigil::lambda::collect(&f.app, &Default::default(), request("collect.json")).await,
        );
        assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
        assert_eq!(
            a.header(header::ACCESS_CONTROL_ALLOW_ORIGIN),
            Some("https://www.shop.example")
        );
        let id = a.body["data"]["id"].as_str().unwrap().to_owned();
        assert_eq!(a.body, json!({"data": {"id": id}}));

        // Stored under the project of the public key, from requestContext.identity.sourceIp; the
        // edge's own headers (Via, X-Forwarded-For) are not evidence, so a clean browser scores low.
        let mut list = event_json("list-events.json");
        list["pathParameters"]["sessionId"] = json!("sess_3");
        let listed = call::<ingest::ListEvents>(&f.app, request_from(&list)).await;
        let event = &listed.body["data"][0];
        // The page's id is a receipt: random, not the event's position in its session.
        assert_ne!(event["id"], json!(id));
        assert!(id.starts_with("evt_") && !id[4..].contains('_'), "{id}");
        assert!(
            a.header(header::HeaderName::from_static("ratelimit"))
                .is_none()
        );
        assert_eq!(event["ipAddress"], "81.2.69.142");
        assert!(event["scoreBot"].as_f64().unwrap() < 0.5, "{event}");
        assert!(event["scoreProxyVpn"].as_f64().unwrap() < 0.5, "{event}");

        // A foreign origin and an unknown key are refused, without a CORS grant.
        let mut foreign = event_json("collect.json");
        foreign["headers"]["Origin"] = json!("https://evil.example");
        foreign["multiValueHeaders"]["Origin"] = json!(["https://evil.example"]);
        let r = answer(
            vigil::lambda::collect(&f.app, &Default::default(), request_from(&foreign)).await,
        );
        assert_eq!(r.status, StatusCode::FORBIDDEN);
        assert_eq!(r.header(header::ACCESS_CONTROL_ALLOW_ORIGIN), None);
        let mut unknown = event_json("collect.json");
        unknown["body"] = json!(r#"{"publicKey":"pk_nope","sessionId":"sess_3"}"#);
        let r = answer(
            vigil::lambda::collect(&f.app, &Default::default(), request_from(&unknown)).await,
        );
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
        assert_eq!(r.body, message("Unauthorized"));
    }

    /// The same kind of visit through CloudFront (`collect-cloudfront.json`): a recorded Chrome
    /// body posted by Python requests. With the deployment's origin-verify secret, the viewer's
    /// address and wire are CloudFront's word and the TLS gives the script away; without it (no
    /// secret configured, or another one), the same headers are the client's own and believed
    /// in nothing.
    #[tokio::test]
    async fn collect_believes_cloudfront_viewer_headers_only_behind_the_origin_secret() {
        use vigil::gateway::Edge;
        const SECRET: &str = "test-origin-verify-secret-0123456789";
        let visit = |session: &str| {
            let mut e = event_json("collect-cloudfront.json");
            let mut body: Value = serde_json::from_str(e["body"].as_str().unwrap()).unwrap();
            body["sessionId"] = json!(session);
            e["body"] = json!(body.to_string());
            request_from(&e)
        };
        async fn latest(f: &Fixture, session: &str) -> Value {
            let mut list = event_json("list-events.json");
            list["pathParameters"]["sessionId"] = json!(session);
            let listed = call::<ingest::ListEvents>(&f.app, request_from(&list)).await;
            listed.body["data"][0].clone()
        }
        let codes = |e: &Value| -> Vec<String> {
            e["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["code"].as_str().unwrap().to_owned())
                .collect()
        };
        let f = fixture().await;

        let edge = Edge::new(Some(SECRET));
        let a = answer(vigil::lambda::collect(&f.app, &edge, visit("sess_cf")).await);
        assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
        let event = latest(&f, "sess_cf").await;
        assert_eq!(
            event["ipAddress"], "81.2.69.142",
            "the viewer, not CloudFront"
        );
        assert_eq!(event["ja4"], "t13i1811h1_85036bcba153_b26ce05bbdd6");
        assert!(event["scoreBot"].as_f64().unwrap() >= 0.9, "{event}");
        let tls = event["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["code"] == "tls_fingerprint_mismatch")
            .expect("the TLS gives the script away");
        assert!(
            tls["detail"]
                .as_str()
                .unwrap()
                .starts_with("TLS of Python requests"),
            "{tls}"
        );
        assert!(codes(&event).contains(&"http_fingerprint_mismatch".to_owned()));

        for (edge, session) in [
            (Edge::default(), "sess_cf_no_secret"),
            (
                Edge::new(Some("another-secret-of-this-deployment")),
                "sess_cf_wrong",
            ),
        ] {
            let a = answer(vigil::lambda::collect(&f.app, &edge, visit(session)).await);
            assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
            let event = latest(&f, session).await;
            assert_eq!(event["ja4"], Value::Null, "{session}");
            assert_eq!(event["ipAddress"], "130.176.12.34", "{session}");
            assert!(
                !codes(&event)
                    .iter()
                    .any(|c| c.ends_with("_fingerprint_mismatch")),
                "{session}: {event}"
            );
        }
    }

    #[test]
    fn agent_script_is_served_with_its_etag() {
        let res = vigil::lambda::agent_script(request("agent-script.json"));
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(
            res.headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        let etag = res.headers()[header::ETAG].to_str().unwrap().to_owned();
        assert!(
            std::str::from_utf8(res.body().as_ref())
                .unwrap()
                .contains("collect:")
        );
        let mut again = event_json("agent-script.json");
        again["headers"]["If-None-Match"] = json!(etag);
        again["multiValueHeaders"]["If-None-Match"] = json!([etag]);
        let res = vigil::lambda::agent_script(request_from(&again));
        assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
        assert!(res.body().as_ref().is_empty());
    }
}

mod black_box {
    //! Black-box tests of ingestion against the real `vigil serve` process: the server-side events
    //! route and its readers, the browser's collect route (public key, origin, CORS), and the agent
    //! script. Every bad input is a clear error that writes nothing.

    use crate::common;

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

    /// A backend behind its own JA4-aware edge passes what it saw as `wire`: a script's TLS
    /// under a browser's user agent is named, and the event shows its JA4.
    #[tokio::test]
    async fn the_events_route_judges_the_wire_a_backend_passes() {
        let srv = Server::seeded(&fixture(vec![]));
        let chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36";
        let body = |ja4: &str| {
            json!({
                "ipAddress": "84.128.0.1",
                "userAgent": chrome,
                "wire": {"ja4": ja4, "httpVersion": "2", "headerOrder": ["user-agent", "accept"]}
            })
            .to_string()
        };
        let r = srv
            .post(KEY1, EVENTS, &body("t13d3112h2_e8f1e7e78f70_b26ce05bbdd6"))
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        let event = r.json()["data"].clone();
        assert_eq!(event["ja4"], "t13d3112h2_e8f1e7e78f70_b26ce05bbdd6");
        assert!(event["scoreBot"].as_f64().unwrap() >= 0.9, "{event}");
        assert!(
            codes(&event).contains(&"tls_fingerprint_mismatch"),
            "{event}"
        );
        // Chromium's own ClientHello under Chrome's user agent: nothing.
        let r = srv
            .post(KEY1, EVENTS, &body("t13d1517h2_8daaf6152771_cb7bf5808d99"))
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        let event = r.json()["data"].clone();
        assert!(
            !codes(&event).contains(&"tls_fingerprint_mismatch"),
            "{event}"
        );
        assert!(event["scoreBot"].as_f64().unwrap() < 0.5, "{event}");
    }

    /// An edge that ends the visitor's TCP passes the connection's physics as `wire.transport`:
    /// an end-to-end round trip far beyond the TCP one is a relay, the event shows what was
    /// measured, and a measurement that cannot be one is refused with the field named.
    #[tokio::test]
    async fn the_events_route_judges_the_transport_a_backend_passes() {
        let srv = Server::seeded(&fixture(vec![]));
        let body = |transport: serde_json::Value| {
            json!({"ipAddress": "84.128.0.1", "userAgent": "curl/8.5.0",
                   "wire": {"transport": transport}})
            .to_string()
        };
        let relayed = json!({"tcpRttMs": 21.0, "endToEndRttMs": 96.5, "endToEndSamples": 3,
            "syn": {"ttl": 49, "window": 64240, "mss": 1460, "windowScale": 7,
                    "options": ["mss", "sackPermitted", "timestamp", "nop", "windowScale"]}});
        let r = srv.post(KEY1, EVENTS, &body(relayed.clone())).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let event = r.json()["data"].clone();
        assert!(codes(&event).contains(&"relay_latency"), "{event}");
        assert!(event["scoreProxyVpn"].as_f64().unwrap() >= 0.9, "{event}");
        assert_eq!(event["transport"], relayed);
        // A slow line is slow end to end and over TCP alike: no relay.
        let r = srv
            .post(
                KEY1,
                EVENTS,
                &body(json!({"tcpRttMs": 580.0, "endToEndRttMs": 640.0})),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        let event = r.json()["data"].clone();
        assert!(!codes(&event).contains(&"relay_latency"), "{event}");
        for bad in [
            json!({"tcpRttMs": -3}),
            json!({"syn": {"ttl": 64}}),
            json!({"rttMs": 5}),
        ] {
            let r = srv.post(KEY1, EVENTS, &body(bad.clone())).await;
            assert_eq!(r.status, 400, "{bad}: {}", r.body);
            assert!(r.body.contains("wire"), "{bad}: {}", r.body);
        }
    }

    /// A rotating residential pool: one browser (one device key) relayed through six exits in a
    /// few minutes. Each visit is a relay by physics, and the device's address churn counts
    /// across them: both scores high, both reasons named.
    #[tokio::test]
    async fn a_relayed_device_rotating_exits_is_both_relayed_and_churning() {
        let srv = Server::seeded(&fixture(vec![]));
        let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
        let mut last = serde_json::Value::Null;
        for i in 1..=6 {
            let body = json!({"ipAddress": format!("84.128.{i}.7"), "userAgent": chrome, "signals": {
                "userAgent": chrome, "webglRenderer": "ANGLE (Intel)", "screenWidth": 1920,
                "screenHeight": 1080, "hardwareConcurrency": 8, "maxTouchPoints": 0,
                "timeZone": "Europe/Berlin", "languages": ["de-DE"], "evalLength": 33,
                "productSub": "20030107"},
                "wire": {"transport": {"tcpRttMs": 18.0, "endToEndRttMs": 140.0, "endToEndSamples": 4}}});
            let path = format!("/v1/projects/prj_1/sessions/pool{i}/events");
            let r = srv.post(KEY1, &path, &body.to_string()).await;
            assert_eq!(r.status, 201, "{}", r.body);
            last = r.json()["data"].clone();
        }
        let c = codes(&last);
        assert!(
            c.contains(&"relay_latency") && c.contains(&"address_churn"),
            "{last}"
        );
        assert!(last["scoreProxyVpn"].as_f64().unwrap() >= 0.9, "{last}");
        assert!(last["scoreBot"].as_f64().unwrap() >= 0.5, "{last}");
    }

    /// A browser's sessions share the project's key for it; another browser gets another.
    #[tokio::test]
    async fn a_browsers_sessions_share_its_device_key() {
        let srv = Server::seeded(&fixture(vec![]));
        let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
        let visit = |session: &str, zone: &str| {
            let body = json!({"ipAddress": "84.128.0.1", "userAgent": chrome, "signals": {
                "userAgent": chrome, "webglRenderer": "ANGLE (Intel)", "screenWidth": 1920,
                "screenHeight": 1080, "hardwareConcurrency": 8, "maxTouchPoints": 0,
                "timeZone": zone, "languages": ["de-DE"], "evalLength": 33, "productSub": "20030107"}});
            (
                format!("/v1/projects/prj_1/sessions/{session}/events"),
                body.to_string(),
            )
        };
        let mut devices = Vec::new();
        for (session, zone) in [
            ("d1", "Europe/Berlin"),
            ("d2", "Europe/Berlin"),
            ("d3", "Asia/Tokyo"),
        ] {
            let (path, body) = visit(session, zone);
            let r = srv.post(KEY1, &path, &body).await;
            assert_eq!(r.status, 201, "{}", r.body);
            devices.push(
                r.json()["data"]["device"]
                    .as_str()
                    .expect("a device key")
                    .to_owned(),
            );
        }
        assert!(
            devices[0].starts_with("dev_") && devices[0].len() == 24,
            "{devices:?}"
        );
        assert_eq!(devices[0], devices[1], "one browser, two sessions");
        assert_ne!(
            devices[0], devices[2],
            "another time zone is another browser"
        );
    }

    #[tokio::test]
    async fn an_event_is_evaluated_stored_and_read_back_as_event_and_result() {
        let srv = Server::seeded(&fixture(vec![]));
        let body = json!({
            "ipAddress": "185.220.101.1",
            "userAgent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36",
            "headers": {"Accept-Language": "en-US"},
            "signals": {"webdriver": true}
        });
        // Issue 52: a member the engine does not know is a backend's mistake, named in a 400
        // (a misspelt `screen` for `screenWidth` would otherwise be lost without a word).
        let mut misspelt = body.clone();
        misspelt["signals"]["screen"] = json!(1920);
        misspelt["signals"]["activity"] = json!({"keys": 3, "taps": 2});
        let r = srv.post(KEY1, EVENTS, &misspelt.to_string()).await;
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(
            r.message(),
            "`signals` has members this API does not know: `screen`"
        );
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
            14,
            "id, sessionId, createdAt, ipAddress, scores, reasons, engineVersion, model, ja4, transport, device, agent, allowed: {keys:?}"
        );
        assert_eq!(event["ja4"], Value::Null, "no wire in the evidence");
        assert_eq!(
            event["device"],
            Value::Null,
            "too few signals for a device key"
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
        (json!({"ipAddress": "203.0.113.7", "scoreBot": 1}), "Unknown field `scoreBot`: only `ipAddress`, `userAgent`, `headers`, `signals`, `wire` and `request` are allowed"),
        (json!({"ipAddress": "203.0.113.7", "wire": {"ja4": "chrome"}}), "`wire.ja4`: expected a JA4 fingerprint such as t13d1516h2_8daaf6152771_d8a2da3f94cd"),
        (json!({"ipAddress": "203.0.113.7", "wire": {"httpVersion": "9"}}), "`wire.httpVersion`: expected an HTTP version: 1.0, 1.1, 2 or 3"),
        (json!({"ipAddress": "203.0.113.7", "wire": {"headerOrder": ["user agent"]}}), "`wire.headerOrder`: expected header names (HTTP tokens)"),
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

    /// `vigil serve --tls-self-signed`: HTTPS whose every connection is fingerprinted. A Rust
    /// client (rustls) posting under Chrome's user agent is not Chromium by its ClientHello; the
    /// event shows the JA4 it was judged on. The same request over plain HTTP has no wire.
    #[tokio::test]
    async fn collect_over_https_is_judged_on_the_connection_s_tls() {
        let chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36";
        let dir = tempfile::tempdir().unwrap();
        let seed = dir.path().join("seed.json");
        std::fs::write(&seed, fixture(vec![]).to_string()).unwrap();
        let tls = Server::start_with(
            &dir.path().join("tls.db"),
            Some(&seed),
            &["--tls-self-signed"],
        );
        assert!(
            tls.origin.starts_with("https://127.0.0.1:"),
            "{}",
            tls.origin
        );
        let plain = Server::start(&dir.path().join("plain.db"), Some(&seed));
        for (srv, session) in [(&tls, "w1"), (&plain, "w2")] {
            let visit = json!({"publicKey": "pk_shop", "sessionId": session});
            let r = srv
                .anonymous(
                    Method::POST,
                    "/v1/collect",
                    &[
                        ("content-type", "text/plain;charset=UTF-8"),
                        ("origin", SHOP),
                        ("user-agent", chrome),
                    ],
                    Some(visit.to_string()),
                )
                .await;
            assert_eq!(r.status, 202, "{}", r.body);
        }
        let over_tls = &events(&tls, "/v1/projects/prj_1/sessions/w1/events").await[0];
        let ja4 = over_tls["ja4"].as_str().expect("the connection's JA4");
        assert!(ja4.starts_with("t13i") && ja4.len() == 36, "{ja4}");
        assert!(
            codes(over_tls).contains(&"tls_fingerprint_mismatch"),
            "{over_tls}"
        );
        assert!(over_tls["scoreBot"].as_f64().unwrap() >= 0.9, "{over_tls}");
        let over_http = &events(&plain, "/v1/projects/prj_1/sessions/w2/events").await[0];
        assert_eq!(over_http["ja4"], Value::Null);
        assert!(!codes(over_http).contains(&"tls_fingerprint_mismatch"));
        // The printed certificate digest, for a person to compare before trusting it.
        let lines = tls.stop();
        assert!(
            lines.iter().any(|l| l
                .strip_prefix("certificate SHA-256: ")
                .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))),
            "{lines:?}"
        );
    }

    /// Issue 59: behind a `--trust-proxy` peer speaking TLS, the proxy's own connection (a
    /// rustls ClientHello, Linux's SYN, its round trips) is never judged as the Windows Chrome
    /// visitor's; what the proxy forwards of its client is. The same fields from a peer that is
    /// not trusted are the client's own word and not read.
    #[tokio::test]
    async fn behind_a_trusted_proxy_the_visitor_is_judged_on_what_it_forwards() {
        const CHROMIUM_JA4: &str = "t13d1517h2_8daaf6152771_cb7bf5808d99";
        let dir = tempfile::tempdir().unwrap();
        let seed = dir.path().join("seed.json");
        std::fs::write(&seed, fixture(vec![]).to_string()).unwrap();
        let start = |db: &str, trusted: &str| {
            Server::start_with(
                &dir.path().join(db),
                Some(&seed),
                &["--tls-self-signed", "--trust-proxy", trusted],
            )
        };
        let behind = start("behind.db", "127.0.0.0/8,::1/128");
        async fn post(srv: &Server, session: &str, forwarded: bool) {
            let chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36";
            let mut headers = vec![
                ("content-type", "text/plain;charset=UTF-8"),
                ("origin", SHOP),
                ("user-agent", chrome),
                ("x-forwarded-for", "81.2.69.160"),
            ];
            if forwarded {
                headers.extend([
                    ("cloudfront-viewer-ja4-fingerprint", CHROMIUM_JA4),
                    ("cloudfront-viewer-http-version", "2.0"),
                ]);
            }
            let body = json!({"publicKey": "pk_shop", "sessionId": session}).to_string();
            let r = srv
                .anonymous(Method::POST, "/v1/collect", &headers, Some(body))
                .await;
            assert_eq!(r.status, 202, "{}", r.body);
        }
        let connection_reasons = [
            "tls_fingerprint_mismatch",
            "http_fingerprint_mismatch",
            "tcp_os_mismatch",
            "relay_latency",
        ];
        // Forwarding nothing of its client: no wire at all, not the proxy's.
        post(&behind, "p1", false).await;
        let bare = &events(&behind, "/v1/projects/prj_1/sessions/p1/events").await[0];
        assert_eq!(bare["ipAddress"], "81.2.69.160");
        assert_eq!(bare["ja4"], Value::Null, "{bare}");
        assert_eq!(bare["transport"], Value::Null, "{bare}");
        for code in connection_reasons {
            assert!(!codes(bare).contains(&code), "{code}: {bare}");
        }
        assert!(bare["scoreBot"].as_f64().unwrap() < 0.5, "{bare}");
        assert!(bare["scoreProxyVpn"].as_f64().unwrap() < 0.5, "{bare}");
        // Forwarding its client's JA4: judged on that one.
        post(&behind, "p2", true).await;
        let told = &events(&behind, "/v1/projects/prj_1/sessions/p2/events").await[0];
        assert_eq!(told["ja4"], CHROMIUM_JA4, "{told}");
        for code in connection_reasons {
            assert!(!codes(told).contains(&code), "{code}: {told}");
        }
        // A peer that is not trusted: its own connection, whatever it claims to forward.
        let direct = start("direct.db", "10.0.0.0/8");
        post(&direct, "d1", true).await;
        let own = &events(&direct, "/v1/projects/prj_1/sessions/d1/events").await[0];
        assert_eq!(own["ipAddress"], "127.0.0.1");
        let ja4 = own["ja4"].as_str().expect("the connection's JA4");
        assert_ne!(ja4, CHROMIUM_JA4);
        assert!(codes(own).contains(&"tls_fingerprint_mismatch"), "{own}");
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
}

mod abuse {
    //! The public surface under attack, black-box against `vigil serve`: each attack that holding a
    //! page's public key once allowed, replayed, refused as docs/security.md says, with
    //! legitimate use (an allowed origin, a valid session token, the demo page) still working.
    //! The visit budget is proved on both stores by the conformance suite
    //! (`visits_have_their_own_budget`); here it is proved through the whole service.

    use crate::common;

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

    /// docs/integrate.md's recipe, written here independently of Vigil's code.
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

    /// Issue 52: visits refused with 429 count nothing in their address's velocity, so a flood
    /// over the budget cannot make the people behind that address look like a bot farm.
    #[tokio::test]
    async fn visits_refused_over_the_budget_count_nothing_in_velocity() {
        let srv = Server::seeded(&seed(5, 1_000_000, false));
        let flood = (0..120).map(|i| {
            let srv = &srv;
            async move { collect(srv, visit(&format!("spray-{i}"))).await }
        });
        let answers = futures_util::future::join_all(flood).await;
        let accepted = answers.iter().filter(|r| r.status == 202).count() as u64;
        assert!(accepted < 120, "the flood met the budget");
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        assert_eq!(collect(&srv, visit("after")).await.status, 202);
        let event = events(&srv, "after").await[0].clone();
        let churn = event["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["code"] == "session_churn");
        match churn {
            // The address's sessions are at most the accepted ones and this one (the store's
            // counters may not have caught up with all of them), never the 121 sent. Sessions
            // are counted by a linear-counting sketch, whose estimate of n members in m buckets
            // has a standard error of sqrt(m (e^(n/m) - n/m - 1)) (Whang et al.), and reads
            // over the true count when few buckets collided: allowed four of those and rounding.
            Some(r) => {
                let detail = r["detail"].as_str().unwrap();
                let n: u64 = detail.split(' ').next().unwrap().parse().unwrap();
                let members = (accepted + 1) as f64;
                let m = vigil_core::domain::velocity::SKETCH_BUCKETS as f64;
                let t = members / m;
                let error = (m * (t.exp() - t - 1.0)).sqrt();
                let bound = (members + 4.0 * error).ceil() as u64 + 1;
                assert!(n <= bound, "{accepted} accepted (bound {bound}): {detail}");
            }
            None => assert!(accepted + 1 < 30, "{accepted} accepted: {event}"),
        }
    }

    /// Issue 52: a page is answered as for an unknown key when its customer's plan is not in
    /// force (no word of billing, no Retry-After to the period's end).
    #[tokio::test]
    async fn a_page_is_not_told_that_its_customers_plan_is_not_in_force() {
        let mut f = seed(1000, 100_000, false);
        f["accounts"][0]["plan"]["status"] = json!("canceled");
        let srv = Server::seeded(&f);
        let refused = collect(&srv, visit("s")).await;
        let mut stranger = visit("s");
        stranger["publicKey"] = json!("pk_nobody");
        let unknown = collect(&srv, stranger).await;
        assert_eq!(
            (refused.status, refused.message()),
            (unknown.status, unknown.message())
        );
        refused
            .expect_no("retry-after")
            .expect_no("access-control-allow-origin");
        unknown.expect_no("access-control-allow-origin");
    }

    /// Issue 52: ids made of dots alone (`.`, `..`) are path segments of their own: refused
    /// wherever an id is read.
    #[tokio::test]
    async fn session_ids_of_dots_alone_are_refused() {
        let srv = Server::seeded(&seed(1000, 100_000, false));
        for id in [".", "..", "..."] {
            let r = collect(&srv, visit(id)).await;
            assert_eq!(r.status, 400, "{id}: {}", r.body);
            assert!(r.message().contains("sessionId"), "{}", r.message());
        }
        assert_eq!(collect(&srv, visit("..a")).await.status, 202);
    }

    /// Issue 52: every answer of the API is one account's data, and some carry secrets: none may
    /// be kept by a cache.
    #[tokio::test]
    async fn answers_that_carry_secrets_are_never_cached() {
        let srv = Server::seeded(&seed(1000, 100_000, false));
        let project = srv.get(KEY1, "/v1/projects/prj_1").await;
        assert_eq!(project.status, 200);
        assert!(project.json()["data"]["apiKeyPrivate"].is_string());
        assert_eq!(project.header_value("cache-control"), "no-store");
        assert_eq!(
            srv.get(KEY1, "/v1/projects")
                .await
                .header_value("cache-control"),
            "no-store"
        );
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

        // The backend's token, from docs/integrate.md's recipe and from `vigil sessions token`, works.
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
        // The shop: product pages go on with the browser's session, link to each other (the next
        // product first), and an unknown product is a 404; /demo itself starts a new session.
        let lamp = read("/demo/products/lamp", Some(pair)).await;
        assert_eq!(lamp.status, 200);
        assert!(
            lamp.header_value("set-cookie")
                .starts_with("vigil_demo_session=mine;")
        );
        let links: Vec<&str> = lamp
            .body
            .match_indices("href=\"/demo/products/")
            .map(|(i, m)| {
                let rest = &lamp.body[i + m.len()..];
                &rest[..rest.find('"').unwrap()]
            })
            .collect();
        // The bar along the window's bottom, then the catalogue's cards, each the next first.
        assert_eq!(links.len(), 8);
        assert_eq!(links[..4], ["kettle", "chair", "rug", "clock"]);
        assert_eq!(links[..4], links[4..]);
        assert!(lamp.body.contains("<h2>Desk lamp</h2>"));
        let fresh = read("/demo/products/kettle", None).await;
        assert!(
            fresh
                .header_value("set-cookie")
                .starts_with("vigil_demo_session=demo-")
        );
        let home = read("/demo", Some(pair)).await;
        assert!(
            !home
                .header_value("set-cookie")
                .starts_with("vigil_demo_session=mine;")
        );
        read("/demo/products/nothing", Some(pair))
            .await
            .expect_error(404, "No such product in the demo shop");
    }

    /// Issue 52: behind a trusted proxy on loopback, the demo answers the clients it forwards
    /// only when they are loopback clients themselves.
    #[tokio::test]
    async fn the_demo_is_for_loopback_clients_behind_a_trusted_proxy_too() {
        let dir = tempfile::tempdir().unwrap();
        let demo = Server::start_with(
            &dir.path().join("vigil.db"),
            None,
            &["--demo", "--trust-proxy", "127.0.0.0/8"],
        );
        let remote = demo
            .anonymous(
                Method::GET,
                "/demo",
                &[("x-forwarded-for", "203.0.113.9")],
                None,
            )
            .await;
        remote.expect_error(404, "Not found");
        assert!(remote.header("set-cookie").is_none());
        let local = demo
            .anonymous(
                Method::GET,
                "/demo",
                &[("x-forwarded-for", "127.0.0.1")],
                None,
            )
            .await;
        assert_eq!(local.status, 200);
    }

    /// Issue 49: a project that seals hands the page, beside its receipt, the visit's verdict as a
    /// JWE that the backend opens offline (here with Python's jwcrypto, given the keys exactly as
    /// the API lists them) and the page cannot read; a project that does not seal answers the
    /// receipt alone, as before; another account cannot read the keys.
    #[tokio::test]
    async fn a_sealing_project_hands_the_page_a_verdict_only_its_backend_opens() {
        let srv = Server::seeded(&seed(1000, 100_000, false));
        let plain = collect(&srv, visit("s_plain")).await;
        assert_eq!(plain.status, 202, "{}", plain.body);
        assert_eq!(
            plain.json()["data"].as_object().unwrap().len(),
            1,
            "{}",
            plain.body
        );
        let r = srv
            .call(
                Method::PATCH,
                "/v1/projects/prj_1",
                Some(&format!("Bearer {KEY1}")),
                Some("application/json"),
                Some(r#"{"sealedResults": true}"#.to_owned()),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["data"]["sealedResults"], true);
        let sealed = collect(&srv, visit("s_sealed")).await;
        assert_eq!(sealed.status, 202, "{}", sealed.body);
        let data = sealed.json()["data"].clone();
        let jwe = data["sealed"]
            .as_str()
            .expect("a sealed verdict")
            .to_owned();
        assert!(data["id"].as_str().unwrap().starts_with("evt_"));
        // Nothing of the verdict is readable without the key.
        let header = jwe.split('.').next().unwrap();
        assert!(!jwe.contains("s_sealed") && !jwe.contains("score"), "{jwe}");
        assert!(header.starts_with("eyJ"), "{jwe}");

        let keys = srv.get(KEY1, "/v1/projects/prj_1/sealing-key").await;
        assert_eq!(keys.status, 200, "{}", keys.body);
        assert_eq!(keys.header_value("cache-control"), "no-store");
        let keys = keys.json()["data"]["keys"].clone();
        let root = env!("CARGO_MANIFEST_DIR");
        let mut python = std::process::Command::new(format!("{root}/.cache/venv-test/bin/python"));
        python
            .arg(format!("{root}/tests/open_sealed.py"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = python.spawn().expect("make test installs jwcrypto");
        let input = json!({"keys": keys, "sealed": jwe,
                           "expect": {"sessionId": "s_sealed", "origin": SHOP, "projectId": "prj_1"}});
        std::io::Write::write_all(
            &mut child.stdin.take().unwrap(),
            input.to_string().as_bytes(),
        )
        .unwrap();
        let out = child.wait_with_output().unwrap();
        let claims: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stdout)));
        let events = srv
            .get(KEY1, "/v1/projects/prj_1/sessions/s_sealed/events")
            .await
            .json()["data"]
            .clone();
        assert_eq!(claims["eventId"], events[0]["id"]);
        assert_eq!(claims["scoreBot"], events[0]["scoreBot"]);
        let codes: Vec<&Value> = events[0]["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["code"])
            .collect();
        assert_eq!(claims["reasons"], json!(codes));

        srv.get(KEY2, "/v1/projects/prj_1/sealing-key")
            .await
            .expect_error(404, "Project not found");
    }
}
