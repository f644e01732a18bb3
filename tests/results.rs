//! Results, the session score, and a project's sessions and statistics, through every door: the
//! handlers through their Lambda events (`events/*.json`), and black-box against `vigil serve`.

mod common;

mod lambda {
    //! The handlers through the Lambda events `list-results*.json`, `session-score.json`,
    //! `list-sessions.json`, `list-device-sessions.json`, `get-stats.json` and `dashboard.json`.

    use crate::common::lambda::*;
    use http::{StatusCode, header};
    use serde_json::json;
    use vigil_core::seed;
    use vigil_http::{handlers, insight};

    #[tokio::test]
    async fn list_results_returns_the_seeded_result() {
        let f = fixture().await;
        let a = call::<handlers::ListResults>(&f.app, request("list-results.json")).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.body, json!({ "data": [sess_1_result()] }));
        assert_eq!(a.header(header::LINK), None, "one page only");
    }

    #[tokio::test]
    async fn list_results_of_a_session_without_results_is_data_null() {
        let f = fixture().await;
        let mut event = event_json("list-results.json");
        event["pathParameters"]["sessionId"] = json!("sess_unknown");
        event["path"] = json!("/results/prj_1/sess_unknown");
        let a = call::<handlers::ListResults>(&f.app, request_from(&event)).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.body, json!({ "data": null }));
    }

    #[tokio::test]
    async fn list_results_pages_with_link_and_cursor() {
        let f = fixture().await;
        // Two later results for sess_1, through the normal write path.
        let more = json!({ "results": [
            { "projectId": "prj_1", "sessionId": "sess_1", "scoreBot": 0.1, "scoreProxyVpn": 0.2,
              "ipAddress": "198.51.100.1", "createdAt": "2026-11-21T10:01:00.000Z" },
            { "projectId": "prj_1", "sessionId": "sess_1", "scoreBot": 0.3, "scoreProxyVpn": 0.4,
              "ipAddress": "2001:db8::1", "createdAt": "2026-11-21T10:02:00.000Z" }
        ]});
        seed::load(&f.app, &more.to_string())
            .await
            .expect("results load");

        let expected_pages = [
            json!({ "scoreBot": 0.3, "scoreProxyVpn": 0.4, "ipAddress": "2001:db8::1",
                "createdAt": "2026-11-21T10:02:00.000Z" }),
            json!({ "scoreBot": 0.1, "scoreProxyVpn": 0.2, "ipAddress": "198.51.100.1",
                "createdAt": "2026-11-21T10:01:00.000Z" }),
            sess_1_result(),
        ];
        let mut event = event_json("list-results-paged.json");
        assert_eq!(event["queryStringParameters"], json!({ "limit": "1" }));
        for (i, expected) in expected_pages.iter().enumerate() {
            let a = call::<handlers::ListResults>(&f.app, request_from(&event)).await;
            assert_eq!(a.status, StatusCode::OK, "page {i}");
            assert_eq!(a.body, json!({ "data": [expected] }), "page {i}");
            let link = a.header(header::LINK);
            if i == expected_pages.len() - 1 {
                assert_eq!(link, None, "last page has no Link");
                break;
            }
            let link = link.unwrap_or_else(|| panic!("page {i}: no Link header"));
            let cursor = link
                .strip_prefix("</v1/results/prj_1/sess_1?cursor=")
                .and_then(|rest| rest.strip_suffix("&limit=1>; rel=\"next\""))
                .unwrap_or_else(|| panic!("page {i}: unexpected Link {link}"));
            assert!(
                !cursor.is_empty()
                    && cursor
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "cursor must be URL-safe: {cursor}"
            );
            // The next request, as API Gateway would send it for the Link target.
            event["queryStringParameters"] = json!({ "limit": "1", "cursor": cursor });
            event["multiValueQueryStringParameters"] =
                json!({ "limit": ["1"], "cursor": [cursor] });
        }
    }

    #[tokio::test]
    async fn list_results_refuses_a_bad_limit_and_a_bad_cursor() {
        let f = fixture().await;
        let a = call::<handlers::ListResults>(&f.app, request("list-results-bad-limit.json")).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST);
        assert_eq!(a.body, message("limit must be an integer from 1 to 100"));

        let mut event = event_json("list-results.json");
        event["queryStringParameters"] = json!({ "cursor": "not-a-cursor" });
        event["multiValueQueryStringParameters"] = json!({ "cursor": ["not-a-cursor"] });
        let a = call::<handlers::ListResults>(&f.app, request_from(&event)).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST);
        assert_eq!(a.body, message("cursor is not valid for this session"));
    }

    #[tokio::test]
    async fn session_score_is_the_maximum_of_the_session() {
        let f = fixture().await;
        let a = call::<handlers::SessionScore>(&f.app, request("session-score.json")).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(
            a.body,
            json!({ "data": { "scoreBot": 0.02, "scoreProxyVpn": 0.91 } })
        );

        // A later, lower proxy score and a higher bot score: each field is its own maximum.
        let more = json!({ "results": [
            { "projectId": "prj_1", "sessionId": "sess_1", "scoreBot": 0.6, "scoreProxyVpn": 0.1,
              "ipAddress": "203.0.113.7", "createdAt": "2026-11-21T10:03:00.000Z" }
        ]});
        seed::load(&f.app, &more.to_string())
            .await
            .expect("result loads");
        let a = call::<handlers::SessionScore>(&f.app, request("session-score.json")).await;
        assert_eq!(
            a.body,
            json!({ "data": { "scoreBot": 0.6, "scoreProxyVpn": 0.91 } })
        );
    }

    #[tokio::test]
    async fn session_score_of_a_session_without_results_is_404() {
        let f = fixture().await;
        let mut event = event_json("session-score.json");
        event["pathParameters"]["sessionId"] = json!("sess_unknown");
        event["path"] = json!("/results/prj_1/sess_unknown/general");
        let a = call::<handlers::SessionScore>(&f.app, request_from(&event)).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND);
        assert_eq!(a.body, message("Session not found"));
    }

    #[tokio::test]
    async fn list_sessions_filters_the_seeded_session_by_score() {
        let f = fixture().await;
        // The sample asks for sessions with scoreBot >= 0.5: the seeded one has 0.02.
        let none = call::<insight::ListSessions>(&f.app, request("list-sessions.json")).await;
        assert_eq!(none.status, StatusCode::OK, "{}", none.body);
        assert_eq!(none.body, json!({"data": []}));
        let mut all = event_json("list-sessions.json");
        all["queryStringParameters"] = json!({"minScoreProxyVpn": "0.9"});
        all["multiValueQueryStringParameters"] = json!({"minScoreProxyVpn": ["0.9"]});
        let listed = call::<insight::ListSessions>(&f.app, request_from(&all)).await;
        assert_eq!(
            listed.body,
            json!({"data": [{
                "sessionId": "sess_1",
                "scoreBot": 0.02,
                "scoreProxyVpn": 0.91,
                "lastSeenAt": "2026-11-21T10:00:00.000Z",
                "events": 1,
                "lastReasons": [],
                "agent": null
            }]})
        );
        assert_eq!(listed.header(header::LINK), None);
    }

    /// `list-device-sessions.json`: the seeded session has no device key, so a key's list is
    /// empty; a key that is not one is a 400.
    #[tokio::test]
    async fn list_device_sessions_reads_the_devices_index() {
        let f = fixture().await;
        let a =
            call::<insight::ListDeviceSessions>(&f.app, request("list-device-sessions.json")).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        assert_eq!(a.body, json!({"data": []}));
        let mut bad = event_json("list-device-sessions.json");
        bad["pathParameters"]["device"] = json!("dev_XYZ");
        let a = call::<insight::ListDeviceSessions>(&f.app, request_from(&bad)).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    }

    #[tokio::test]
    async fn get_stats_counts_the_seeded_result_in_its_hour() {
        let f = fixture().await;
        let a = call::<insight::GetStats>(&f.app, request("get-stats.json")).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        let buckets = a.body["data"].as_array().unwrap();
        assert_eq!(buckets.len(), 24);
        assert_eq!(buckets[0]["start"], "2026-11-21T00:00:00.000Z");
        let ten = &buckets[10];
        assert_eq!(
            ten,
            &json!({"start": "2026-11-21T10:00:00.000Z", "visits": 1, "bots": 0, "proxies": 0, "reasons": {}})
        );
        let total: u64 = buckets.iter().map(|b| b["visits"].as_u64().unwrap()).sum();
        assert_eq!(total, 1);
        let mut long = event_json("get-stats.json");
        long["queryStringParameters"]["to"] = json!("2026-12-31T00:00:00Z");
        long["multiValueQueryStringParameters"]["to"] = json!(["2026-12-31T00:00:00Z"]);
        let refused = call::<insight::GetStats>(&f.app, request_from(&long)).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert_eq!(
            refused.body["message"],
            "the range may span at most 744 hours for granularity=hour"
        );
    }

    #[tokio::test]
    async fn the_dashboard_is_a_static_page_with_a_strict_policy() {
        let res = vigil::lambda::dashboard(request("dashboard.json"));
        assert_eq!(res.status(), StatusCode::OK);
        let h = res.headers();
        assert_eq!(h[header::CONTENT_TYPE], "text/html; charset=utf-8");
        let csp = h[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.contains("connect-src 'self'") && csp.contains("frame-ancestors 'none'"));
        let body = std::str::from_utf8(res.body().as_ref()).unwrap();
        assert!(
            body.contains("<title>Vigil dashboard</title>"),
            "{body:.200}"
        );
    }
}

mod black_box {
    //! Black-box HTTP tests against the real `vigil serve` process (results, the session score, the plan, projects and paging). The answers checked are
    //! those of CONTRACT.md: status, the exact JSON body and the headers that matter.

    use crate::common;
    use common::api::*;
    use common::at;
    use serde_json::{Value, json};
    #[tokio::test]
    async fn results_are_newest_first_with_exactly_four_fields() {
        let a = res(0.02, 0.91, "203.0.113.7", "2026-11-21T10:00:00.000Z");
        // Written with a non-canonical address and a time zone offset; shown canonical, in UTC.
        let b_in = res(
            0.0,
            1.0,
            "2001:0DB8:0:0:0:0:0:7",
            "2026-11-21T12:00:00.25+02:00",
        );
        let b = res(0.0, 1.0, "2001:db8::7", "2026-11-21T10:00:00.250Z");
        let c = res(0.5, 0.5, "198.51.100.1", "2026-11-21T09:00:00.000Z");
        // Same createdAt as `a`, written after it: shown before it.
        let d = res(0.33, 0.44, "192.0.2.1", "2026-11-21T10:00:00.000Z");
        let e = res(1.0, 0.0, "::1", "2026-11-21T08:00:00.000Z");
        let mut results: Vec<Value> = [&a, &b_in, &c, &d, &e]
            .iter()
            .map(|r| in_session("prj_1", "sess_1", r))
            .collect();
        // The same session name in another project is another session.
        results.push(in_session("prj_1b", "sess_1", &c));
        let filler = |i| in_session("prj_1", "sess_100", &res(0.1, 0.2, "10.0.0.1", &at(i)));
        results.extend((0..100).map(filler));
        let srv = Server::seeded(&fixture(results));

        let expected = json!([b, d, a, c, e]);
        srv.get(KEY1, "/v1/results/prj_1/sess_1")
            .await
            .expect(200, json!({ "data": expected }))
            .expect_no("link");
        srv.get(KEY1B, "/v1/results/prj_1b/sess_1")
            .await
            .expect(200, json!({ "data": [c] }));
        // A session without results: data is null, not an error.
        srv.get(KEY1, "/v1/results/prj_1/sess_none")
            .await
            .expect(200, json!({ "data": null }))
            .expect_no("link");
        // Exactly 100 results fill one page: no Link.
        let r = srv.get(KEY1, "/v1/results/prj_1/sess_100").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["data"].as_array().unwrap().len(), 100);
        r.expect_no("link");
        // Small pages keep the order.
        let (all, sizes) = srv
            .all_pages("/v1/results/prj_1/sess_1?limit=2", Some(2))
            .await;
        assert_eq!(json!(all), expected);
        assert_eq!(sizes, [2, 2, 1]);
    }

    #[tokio::test]
    async fn general_is_the_maximum_over_every_result_of_the_session() {
        // 150 results: the highest bot score is the oldest, the highest proxy/VPN score the second
        // oldest; neither is among the newest 100.
        let big = |r: Value| in_session("prj_1", "sess_big", &r);
        let mut results = vec![
            big(res(0.99, 0.1, "203.0.113.1", &at(0))),
            big(res(0.2, 0.97, "203.0.113.2", &at(1))),
        ];
        results.extend((2..150).map(|i| big(res(0.3, 0.4, "203.0.113.3", &at(i)))));
        let one = res(0.02, 0.91, "203.0.113.7", &at(5));
        results.push(in_session("prj_1", "sess_one", &one));
        let srv = Server::seeded(&fixture(results));

        let newest = srv.get(KEY1, "/v1/results/prj_1/sess_big").await.json();
        let newest = newest["data"].as_array().unwrap();
        assert_eq!(newest.len(), 100);
        assert!(newest.iter().all(|r| r["scoreBot"] == json!(0.3)));
        srv.get(KEY1, "/v1/results/prj_1/sess_big/general")
            .await
            .expect(200, general(0.99, 0.97));
        srv.get(KEY1, "/v1/results/prj_1/sess_one/general")
            .await
            .expect(200, general(0.02, 0.91));
        srv.get(KEY1, "/v1/results/prj_1/sess_none/general")
            .await
            .expect_error(404, "Session not found");
        srv.get(KEY1, "/v1/results/prj_missing/sess_one/general")
            .await
            .expect_error(404, "Project not found");
    }

    /// 250 results of prj_1/sess_long with pairs of equal `createdAt`, and the order the API must
    /// return them in (newest first, ties newest written first).
    fn long_session() -> (Vec<Value>, Vec<Value>) {
        let shown: Vec<Value> = (0..250u32)
            .map(|i| {
                let ip = format!("10.0.{}.{}", i / 256, i % 256);
                res(f64::from(i % 10) / 10.0, 0.5, &ip, &at(i * 37 % 125))
            })
            .collect();
        let seed = shown
            .iter()
            .map(|r| in_session("prj_1", "sess_long", r))
            .collect();
        let mut order: Vec<usize> = (0..shown.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse((i as u32 * 37 % 125, i)));
        (seed, order.into_iter().map(|i| shown[i].clone()).collect())
    }

    #[tokio::test]
    async fn paging_follows_link_through_every_result_exactly_once() {
        let (seed, expected) = long_session();
        let srv = Server::seeded(&fixture(seed));

        let (all, sizes) = srv.all_pages("/v1/results/prj_1/sess_long", None).await;
        assert_eq!(sizes, [100, 100, 50]);
        assert_eq!(all, expected);
        for n in [50, 7, 100, 1] {
            let first = format!("/v1/results/prj_1/sess_long?limit={n}");
            let (all, sizes) = srv.all_pages(&first, Some(n)).await;
            let (last, full) = sizes.split_last().unwrap();
            assert!(full.iter().all(|&s| s == n) && *last <= n, "{n}: {sizes:?}");
            assert_eq!(all, expected, "limit {n}");
        }

        // A result written between pages does not shift the pages still to come.
        let first = srv.get(KEY1, "/v1/results/prj_1/sess_long").await;
        let next = next_link(first.header("link").expect("Link on page 1"));
        assert_ok(&srv.cli_line(
            "results add --project prj_1 --session sess_long --score-bot 0.9 --score-proxy-vpn 0.9 \
         --ip 192.0.2.200 --created-at 2026-11-21T01:00:00Z",
        ));
        let (rest, _) = srv.all_pages(&next, None).await;
        let mut seen = first.json()["data"].as_array().unwrap().clone();
        seen.extend(rest);
        assert_eq!(seen, expected);
        let newest = res(0.9, 0.9, "192.0.2.200", &at(3600));
        srv.get(KEY1, "/v1/results/prj_1/sess_long?limit=1")
            .await
            .expect(200, json!({ "data": [newest] }));
    }

    #[tokio::test]
    async fn bad_limit_or_cursor_is_400() {
        let (mut seed, _) = long_session();
        for i in 0..3 {
            let r = res(0.1, 0.1, "192.0.2.1", &at(i));
            seed.push(in_session("prj_1", "sess_other", &r));
            seed.push(in_session("prj_1b", "sess_long", &r));
        }
        let srv = Server::seeded(&fixture(seed));

        let bad_limits = [
            "0",
            "101",
            "-1",
            "abc",
            "",
            "1.5",
            "1e2",
            "99999999999999999999999",
        ];
        for limit in bad_limits {
            srv.get(KEY1, &format!("/v1/results/prj_1/sess_long?limit={limit}"))
                .await
                .expect_error(400, "limit must be an integer from 1 to 100")
                .expect_no("link");
        }

        let cursor = srv
            .first_cursor("/v1/results/prj_1/sess_long?limit=10")
            .await;
        let other_session = srv
            .first_cursor("/v1/results/prj_1/sess_other?limit=1")
            .await;
        let other_project = srv
            .first_cursor("/v1/results/prj_1b/sess_long?limit=1")
            .await;
        let mut first_changed = cursor.clone();
        first_changed.replace_range(0..1, if cursor.starts_with('A') { "B" } else { "A" });
        let bad_cursors = [
            "!!!".to_owned(),
            String::new(),
            "not-a-cursor".to_owned(),
            cursor[..cursor.len() / 2].to_owned(),
            format!("{cursor}A"),
            format!("A{cursor}"),
            first_changed,
            "A".repeat(2000),
            other_session,
            other_project,
        ];
        for bad in &bad_cursors {
            srv.get(KEY1, &format!("/v1/results/prj_1/sess_long?cursor={bad}"))
                .await
                .expect_error(400, "cursor is not valid for this session")
                .expect_no("link");
        }
        // The untouched cursor still works where it was issued.
        let ok = format!("/v1/results/prj_1/sess_long?cursor={cursor}&limit=10");
        let r = srv.get(KEY1, &ok).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
}
