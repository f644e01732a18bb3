//! Webhooks and their deliveries, through every door: the route handlers through their Lambda
//! events, the webhook-dispatch function through its DynamoDB Streams events, black-box against
//! `vigil serve`, and delivery end to end through the real binary.

mod common;
mod receiver;

mod lambda {
    //! The handlers through the Lambda events `list-webhooks.json`, `create-webhook*.json`,
    //! `delete-webhook.json` and `list-deliveries.json`.

    use crate::common::lambda::*;
    use http::{StatusCode, header};
    use serde_json::{Value, json};
    use vigil_core::domain::{Timestamp, WebhookId};
    use vigil_core::service::vigil::{Detecting, Vigil};
    use vigil_http::handlers;
    use vigil_store_sqlite::SqliteStore;

    fn wh_1() -> Value {
        json!({
            "id": "wh_1",
            "type": "proxy_vpn_detect",
            "url": "https://hooks.shop.example/vigil",
            "createdAt": "2026-11-21T00:00:00.000Z"
        })
    }

    async fn list_webhooks(app: &Vigil<SqliteStore, Detecting>) -> Answer {
        call::<handlers::ListWebhooks>(app, request("list-webhooks.json")).await
    }

    /// `list-deliveries.json`: a webhook with no delivery yet has an empty log; another
    /// project's webhook is not found.
    #[tokio::test]
    async fn list_deliveries_shows_the_webhooks_log() {
        let f = fixture().await;
        let a = call::<handlers::ListDeliveries>(&f.app, request("list-deliveries.json")).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        assert_eq!(a.body, json!({ "data": [] }));
        let mut other = event_json("list-deliveries.json");
        other["pathParameters"]["webhookId"] = json!("wh_nope");
        let a = call::<handlers::ListDeliveries>(&f.app, request_from(&other)).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{}", a.body);
    }

    #[tokio::test]
    async fn list_webhooks_returns_the_seeded_webhook() {
        let f = fixture().await;
        let a = list_webhooks(&f.app).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.body, json!({ "data": [wh_1()] }));
    }

    #[tokio::test]
    async fn create_webhook_answers_201_with_location_and_is_listed() {
        let f = fixture().await;
        let before = Timestamp::now();
        let a = call::<handlers::CreateWebhook>(&f.app, request("create-webhook.json")).await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
        assert_eq!(a.body, json!({ "data": null }));
        let location = a.header(header::LOCATION).expect("Location header");
        let id = location
            .strip_prefix("/v1/projects/prj_1/webhooks/")
            .unwrap_or_else(|| panic!("Location {location}"));
        assert!(WebhookId::parse(id).is_ok(), "webhook id {id}");
        assert_ne!(id, "wh_1");

        let listed = list_webhooks(&f.app).await;
        assert_eq!(listed.status, StatusCode::OK);
        let hooks = listed.body["data"].as_array().expect("data is a list");
        assert_eq!(hooks.len(), 2, "{}", listed.body);
        assert_eq!(hooks[0], wh_1(), "oldest first");
        let created_at = hooks[1]["createdAt"].as_str().expect("createdAt");
        let parsed: Timestamp = created_at.parse().expect("RFC 3339 createdAt");
        assert_eq!(
            parsed.to_string(),
            created_at,
            "millisecond precision with Z"
        );
        assert!(parsed >= before && parsed <= Timestamp::now());
        assert_eq!(
            hooks[1],
            json!({
                "id": id,
                "type": "proxy_vpn_detect",
                "url": "https://hooks.shop.example/vigil-alerts",
                "createdAt": created_at
            })
        );

        // The same event again: same type and url on the project.
        let again = call::<handlers::CreateWebhook>(&f.app, request("create-webhook.json")).await;
        assert_eq!(again.status, StatusCode::CONFLICT);
        assert_eq!(
            again.body,
            message("A webhook with this type and url already exists on the project")
        );
        assert_eq!(again.header(header::LOCATION), None);
    }

    #[tokio::test]
    async fn create_webhook_refuses_a_private_url() {
        let f = fixture().await;
        let a = call::<handlers::CreateWebhook>(&f.app, request("create-webhook-private-url.json"))
            .await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST);
        assert_eq!(a.body, message("url must point to a public host"));
        assert_eq!(a.header(header::LOCATION), None);
        assert_eq!(
            list_webhooks(&f.app).await.body,
            json!({ "data": [wh_1()] })
        );
    }

    #[tokio::test]
    async fn create_webhook_needs_a_json_content_type() {
        let f = fixture().await;
        let mut event = event_json("create-webhook.json");
        event["headers"]["Content-Type"] = json!("text/plain");
        event["multiValueHeaders"]["Content-Type"] = json!(["text/plain"]);
        let a = call::<handlers::CreateWebhook>(&f.app, request_from(&event)).await;
        assert_eq!(a.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(a.body, message("Content-Type must be application/json"));
    }

    #[tokio::test]
    async fn delete_webhook_removes_it_once() {
        let f = fixture().await;
        let a = call::<handlers::DeleteWebhook>(&f.app, request("delete-webhook.json")).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.body, json!({ "data": null }));
        assert_eq!(list_webhooks(&f.app).await.body, json!({ "data": [] }));

        let again = call::<handlers::DeleteWebhook>(&f.app, request("delete-webhook.json")).await;
        assert_eq!(again.status, StatusCode::NOT_FOUND);
        assert_eq!(again.body, message("Webhook not found"));
    }

    /// `get-webhook-secret.json` and `rotate-webhook-secret.json`: the seeded webhook predates
    /// secrets per webhook (null); a rotation gives it one, which the GET then answers.
    #[tokio::test]
    async fn a_webhook_secret_is_read_and_rotated() {
        let f = fixture().await;
        let get =
            call::<handlers::GetWebhookSecret>(&f.app, request("get-webhook-secret.json")).await;
        assert_eq!(get.status, StatusCode::OK);
        assert_eq!(get.body, json!({ "data": { "secret": null } }));
        let rotated =
            call::<handlers::RotateWebhookSecret>(&f.app, request("rotate-webhook-secret.json"))
                .await;
        assert_eq!(rotated.status, StatusCode::OK);
        let secret = rotated.body["data"]["secret"].as_str().unwrap().to_owned();
        assert!(secret.starts_with("whsec_"), "{secret}");
        let get =
            call::<handlers::GetWebhookSecret>(&f.app, request("get-webhook-secret.json")).await;
        assert_eq!(get.body["data"]["secret"], json!(secret));
        let mut missing = event_json("get-webhook-secret.json");
        missing["pathParameters"]["webhookId"] = json!("wh_missing");
        let a = call::<handlers::GetWebhookSecret>(&f.app, request_from(&missing)).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND);
    }

    /// `test-webhook.json` queues a test event (202 and its delivery id); `redeliver.json` names
    /// a delivery this store does not have: 404.
    #[tokio::test]
    async fn a_test_event_is_queued_and_an_unknown_delivery_is_404() {
        let f = fixture().await;
        let a = call::<handlers::TestWebhook>(&f.app, request("test-webhook.json")).await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
        assert!(
            a.body["data"]["deliveryId"]
                .as_str()
                .unwrap()
                .starts_with("msg_")
        );
        let r = call::<handlers::Redeliver>(&f.app, request("redeliver.json")).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        assert_eq!(r.body, message("Delivery not found"));
    }

    /// Issue 52: test events have a budget per webhook (5 a minute), so a key cannot aim a
    /// stream of deliveries at someone else's URL; past it, 429 with a Retry-After.
    #[tokio::test]
    async fn test_events_have_a_budget_per_webhook() {
        let f = fixture().await;
        for _ in 0..5 {
            let a = call::<handlers::TestWebhook>(&f.app, request("test-webhook.json")).await;
            assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
        }
        let r = call::<handlers::TestWebhook>(&f.app, request("test-webhook.json")).await;
        assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
        assert_eq!(
            r.body,
            message("At most 5 test events per webhook per minute")
        );
        let retry: u64 = r.header(header::RETRY_AFTER).unwrap().parse().unwrap();
        assert!((1..=60).contains(&retry), "{retry}");
    }
}

mod black_box {
    //! Black-box HTTP tests against the real `vigil serve` process (webhooks). The answers checked are
    //! those of CONTRACT.md: status, the exact JSON body and the headers that matter.

    use crate::common;

    use common::api::*;
    use reqwest::Method;
    use serde_json::json;
    use std::time::Duration;

    // ---------------------------------------------------------------------------------------------
    // Webhooks

    /// Another account's webhook secret, rotation, test event and delivery are 404, as any of its
    /// resources is; the owner's are answered.
    #[tokio::test]
    async fn another_accounts_webhook_secret_test_and_deliveries_are_404() {
        let srv = Server::seeded(&fixture(vec![]));
        let auth2 = bearer(KEY2);
        for (method, path) in [
            (Method::GET, "/v1/projects/prj_1/webhooks/wh_seed/secret"),
            (
                Method::POST,
                "/v1/projects/prj_1/webhooks/wh_seed/secret/rotate",
            ),
            (Method::POST, "/v1/projects/prj_1/webhooks/wh_seed/test"),
            (
                Method::POST,
                "/v1/projects/prj_1/deliveries/msg_0123456789abcdef/redeliver",
            ),
        ] {
            let r = srv
                .call(method.clone(), path, Some(&auth2), None, None)
                .await;
            r.expect(404, json!({"message": "Project not found"}));
        }
        let r = srv
            .call(
                Method::GET,
                "/v1/projects/prj_1/webhooks/wh_seed/secret",
                Some(&bearer(KEY1)),
                None,
                None,
            )
            .await;
        // A seeded webhook stands for one made before secrets per webhook.
        r.expect(200, json!({"data": {"secret": null}}));
        let r = srv
            .call(
                Method::POST,
                "/v1/projects/prj_1/webhooks/wh_seed/test",
                Some(&bearer(KEY1)),
                None,
                None,
            )
            .await;
        assert_eq!(r.status, 202, "{}", r.body);
    }

    #[tokio::test]
    async fn webhooks_are_created_listed_and_deleted() {
        let srv = Server::seeded(&fixture(vec![]));
        assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
        srv.get(KEY1, "/v1/projects/prj_1b/webhooks")
            .await
            .expect(200, json!({"data": []}));

        #[rustfmt::skip]
    let creations = [
        // (Content-Type, url sent, url listed)
        ("application/json", "https://hooks.example.com/a", "https://hooks.example.com/a"),
        ("application/json; charset=utf-8", "https://HOOKS.example.com:443/b?x=1", "https://hooks.example.com/b?x=1"),
        ("Application/JSON", "https://8.8.8.8/c", "https://8.8.8.8/c"),
        ("application/json", "https://[2606:4700::1111]/d", "https://[2606:4700::1111]/d"),
    ];
        let auth = bearer(KEY1);
        let mut created = Vec::new();
        for (ct, url, shown) in creations {
            // Distinct milliseconds, so that creation order is observable in createdAt.
            tokio::time::sleep(Duration::from_millis(3)).await;
            let body = json!({"type": "proxy_vpn_detect", "url": url}).to_string();
            let path = "/v1/projects/prj_1/webhooks";
            let r = srv
                .call(Method::POST, path, Some(&auth), Some(ct), Some(body))
                .await;
            r.expect(201, json!({"data": null}));
            let location = r.header("location").expect("Location");
            let id = location
                .strip_prefix("/v1/projects/prj_1/webhooks/")
                .expect("Location under the project's webhooks");
            assert!(valid_id(id), "{id:?}");
            created.push((id.to_owned(), shown));
        }

        let listed = srv.hooks("prj_1").await;
        assert_eq!(listed.len(), 5);
        assert_eq!(listed[0], seeded_hook());
        let mut previous = String::new();
        for (hook, (id, url)) in listed[1..].iter().zip(&created) {
            let created_at = hook["createdAt"].as_str().unwrap().to_owned();
            assert!(is_api_timestamp(&created_at), "{created_at}");
            assert!(created_at > previous, "oldest first: {listed:?}");
            let expected =
                json!({"id": id, "type": "proxy_vpn_detect", "url": url, "createdAt": created_at});
            assert_eq!(hook, &expected);
            previous = created_at;
        }

        // Delete: 200 {"data":null}, gone from the list, then 404.
        let path = format!("/v1/projects/prj_1/webhooks/{}", created[1].0);
        srv.delete(KEY1, &path)
            .await
            .expect(200, json!({"data": null}));
        let kept = [&created[0].0, &created[2].0, &created[3].0].map(String::as_str);
        let left = srv.hook_ids("prj_1").await;
        assert_eq!(left, ["wh_seed", kept[0], kept[1], kept[2]]);
        srv.delete(KEY1, &path)
            .await
            .expect_error(404, "Webhook not found");
        srv.delete(KEY1, "/v1/projects/prj_1/webhooks/wh_unknown")
            .await
            .expect_error(404, "Webhook not found");
        // A webhook of another project of the same account is not found through this one.
        srv.delete(KEY1, "/v1/projects/prj_1b/webhooks/wh_seed")
            .await
            .expect_error(404, "Webhook not found");
        srv.delete(KEY1, "/v1/projects/prj_1/webhooks/wh_seed")
            .await
            .expect(200, json!({"data": null}));
        assert_eq!(srv.hook_ids("prj_1").await, kept);
    }

    #[tokio::test]
    async fn duplicate_and_eleventh_webhooks_are_409() {
        let srv = Server::seeded(&fixture(vec![]));
        let dup = "A webhook with this type and url already exists on the project";
        let full = "The project already has the maximum of 10 webhooks";
        let hooks = "/v1/projects/prj_1/webhooks";

        let first = srv
            .create_hook("prj_1", "https://hooks.example.com/1")
            .await;
        for same in [
            "https://hooks.example.com/1",
            "https://HOOKS.EXAMPLE.COM/1",
            "https://hooks.example.com:443/1",
            "https://Hooks.Shop.Example/vigil", // the seeded one
        ] {
            let body = json!({"type": "proxy_vpn_detect", "url": same}).to_string();
            srv.post(KEY1, hooks, &body)
                .await
                .expect_error(409, dup)
                .expect_no("location");
        }
        // The same target on another project is fine.
        srv.create_hook("prj_1b", "https://hooks.example.com/1")
            .await;
        assert_eq!(srv.hooks("prj_1").await.len(), 2);

        for i in 2..=9 {
            let url = format!("https://hooks.example.com/{i}");
            srv.create_hook("prj_1", &url).await;
        }
        assert_eq!(srv.hooks("prj_1").await.len(), 10);
        let eleventh = r#"{"type":"proxy_vpn_detect","url":"https://hooks.example.com/11"}"#;
        for _ in 0..2 {
            srv.post(KEY1, hooks, eleventh)
                .await
                .expect_error(409, full)
                .expect_no("location");
        }
        assert_eq!(srv.hooks("prj_1").await.len(), 10);

        // Deleting one frees a place, for one webhook only.
        srv.delete(KEY1, &format!("{hooks}/{first}"))
            .await
            .expect(200, json!({"data": null}));
        srv.create_hook("prj_1", "https://hooks.example.com/11")
            .await;
        srv.post(KEY1, hooks, VALID_HOOK)
            .await
            .expect_error(409, full);
        assert_eq!(srv.hooks("prj_1").await.len(), 10);
    }

    #[tokio::test]
    async fn bad_webhook_bodies_are_refused_and_nothing_is_written() {
        let srv = Server::seeded(&fixture(vec![]));
        let hook_to = |path: &str| {
            format!(r#"{{"type":"proxy_vpn_detect","url":"https://example.com/{path}"}}"#)
        };
        let padding = 8 * 1024 - hook_to("").len();
        let exactly_8k = hook_to(&"a".repeat(padding));
        let over_8k = hook_to(&"a".repeat(padding + 1));
        assert_eq!((exactly_8k.len(), over_8k.len()), (8192, 8193));
        let spaced_out = format!("{VALID_HOOK}{}", " ".repeat(9000));
        let trailing = format!("{VALID_HOOK} {{}}");
        let json = Some("application/json");
        let (not_json, not_object) = (
            "Request body must be valid JSON",
            "Request body must be a JSON object",
        );
        let (unknown_type, media) = (
            "`type` must be one of: proxy_vpn_detect, bot_detect",
            "Content-Type must be application/json",
        );

        #[rustfmt::skip]
    let cases: Vec<(Option<&str>, &str, u16, &str)> = vec![
        (json, "{", 400, not_json),
        (json, "", 400, not_json),
        (json, "type=proxy_vpn_detect", 400, not_json),
        (json, &trailing, 400, not_json),
        (json, "[]", 400, not_object),
        (json, r#"["proxy_vpn_detect","https://hooks.example.com/x"]"#, 400, not_object),
        (json, r#""proxy_vpn_detect""#, 400, not_object),
        (json, "null", 400, not_object),
        (json, "42", 400, not_object),
        (json, "{}", 400, "`type` is required"),
        (json, r#"{"url":"https://hooks.example.com/x"}"#, 400, "`type` is required"),
        (json, r#"{"type":null,"url":"https://hooks.example.com/x"}"#, 400, "`type` is required"),
        (json, r#"{"type":"proxy_vpn_detect"}"#, 400, "`url` is required"),
        (json, r#"{"type":"proxy_vpn_detect","url":null}"#, 400, "`url` is required"),
        (json, r#"{"type":1,"url":"https://hooks.example.com/x"}"#, 400, "`type` must be a string"),
        (json, r#"{"type":"proxy_vpn_detect","url":["https://hooks.example.com/x"]}"#, 400, "`url` must be a string"),
        (json, r#"{"type":"captcha_solved","url":"https://hooks.example.com/x"}"#, 400, unknown_type),
        (json, r#"{"type":"PROXY_VPN_DETECT","url":"https://hooks.example.com/x"}"#, 400, unknown_type),
        (json, r#"{"type":"proxy_vpn_detect","url":"https://hooks.example.com/x","secret":"s"}"#, 400,
            "Unknown field `secret`: only `type` and `url` are allowed"),
        (json, &exactly_8k, 400, "url must be at most 2048 characters"),
        (json, &over_8k, 413, "Request body is too large"),
        (json, &spaced_out, 413, "Request body is too large"),
        (Some("text/plain"), VALID_HOOK, 415, media),
        (None, VALID_HOOK, 415, media),
        (Some("application/x-www-form-urlencoded"), VALID_HOOK, 415, media),
        (Some("application/json-patch+json"), VALID_HOOK, 415, media),
    ];
        let auth = bearer(KEY1);
        for (ct, body, status, message) in cases {
            let path = "/v1/projects/prj_1/webhooks";
            srv.call(Method::POST, path, Some(&auth), ct, Some(body.into()))
                .await
                .expect_error(status, message)
                .expect_no("location");
        }
        assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
    }

    #[tokio::test]
    async fn webhook_urls_must_be_public_https() {
        let srv = Server::seeded(&fixture(vec![]));
        let not_public = "url must point to a public host";
        let long = format!("https://hooks.example.com/{}", "a".repeat(2048));

        #[rustfmt::skip]
    let cases: &[(&str, &str)] = &[
        ("http://hooks.example.com/x", "url must use https"),
        ("ftp://hooks.example.com/x", "url must use https"),
        ("hooks.example.com/x", "url must be an absolute URL"),
        ("/relative", "url must be an absolute URL"),
        ("", "url must be an absolute URL"),
        ("https://", "url must be an absolute URL"),
        ("https://user:pass@example.com/", "url must not contain a user name or password"),
        ("https://user@example.com/", "url must not contain a user name or password"),
        (&long, "url must be at most 2048 characters"),
        // Private, shared, loopback, link-local, unspecified, multicast, unique-local, NAT64.
        ("https://10.0.0.1/", not_public),
        ("https://10.1.2.3:8443/x", not_public),
        ("https://172.16.0.1/", not_public),
        ("https://192.168.1.1/", not_public),
        ("https://100.64.0.1/", not_public),
        ("https://127.0.0.1/", not_public),
        ("http://127.0.0.1:8080/hook", not_public),
        ("https://localhost/", not_public),
        ("https://LOCALHOST./", not_public),
        ("https://api.localhost/", not_public),
        ("https://[::1]/", not_public),
        ("https://0.0.0.0/", not_public),
        ("https://169.254.169.254/latest/meta-data/", not_public),
        ("https://224.0.0.1/", not_public),
        ("https://[fd00::1]/", not_public),
        ("https://[fe80::1]/", not_public),
        ("https://[64:ff9b::a00:1]/", not_public),
        // IPv4-mapped IPv6.
        ("https://[::ffff:127.0.0.1]/", not_public),
        ("https://[::ffff:a9fe:a9fe]/", not_public),
        // Other spellings of internal IPv4 addresses that the URL standard accepts.
        ("https://2130706433/", not_public),
        ("https://0x7f000001/", not_public),
        ("https://0177.0.0.1/", not_public),
        ("https://127.1/", not_public),
        ("https://0x7f.1/", not_public),
        ("https://127.0.0.1./", not_public),
        ("https://%31%32%37.0.0.1/", not_public),
        ("https://\u{ff11}\u{ff12}\u{ff17}.0.0.1/", not_public),
        ("https://012.0.0.1/", not_public),
    ];
        for (url, message) in cases {
            let body = json!({"type": "proxy_vpn_detect", "url": url}).to_string();
            srv.post(KEY1, "/v1/projects/prj_1/webhooks", &body)
                .await
                .expect_error(400, message)
                .expect_no("location");
        }
        assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
        // Public addresses, and names (not resolved at creation), are accepted.
        for url in [
            "https://172.32.0.1/",
            "https://100.128.0.1/",
            "https://[::ffff:8.8.8.8]/",
            "https://127.0.0.1.example.com/",
        ] {
            srv.create_hook("prj_1b", url).await;
        }
    }
}

mod dispatch {
    //! The webhook-dispatch function's events (`events/webhook-dispatch-*.json`, DynamoDB Streams
    //! batches exactly as Lambda delivers them) run through `vigil::lambda::handle_stream_batch`, the
    //! function's handler, with a `Dispatcher` over a temporary SQLite store and a real `Sender` (the
    //! loopback-allowing policy and the system resolver) posting to a scripted loopback receiver.
    //!
    //! | event file                          | records                                           |
    //! |-------------------------------------|---------------------------------------------------|
    //! | webhook-dispatch-crossing.json      | MODIFY of prj_1/sess_1's summary, 0.2 -> 0.8       |
    //! | webhook-dispatch-no-crossing.json   | INSERT of a result, MODIFY of the summary 0.1 -> 0.3 |
    //! | webhook-dispatch-replay.json        | the crossing record twice (a redelivered batch)    |
    //!
    //! Every test loads `events/seed.json`, replaces its webhook wh_1 (an address not reachable
    //! offline) by loopback webhooks through the store (two active ones and a disabled one), and
    //! checks what reached the receiver: `handle_stream_batch` returns after the first attempts, so
    //! counts are final when it returns. Tests share nothing.
    //!
    //! Run one by hand: `cargo lambda invoke --data-file events/webhook-dispatch-crossing.json
    //! webhook-dispatch` (it then talks to the configured table).

    use crate::common;
    use crate::receiver;

    use std::path::Path;
    use std::sync::Arc;

    use aws_lambda_events::dynamodb::Event;
    use common::delivery_id;
    use receiver::{Hit, Receiver, Reply};
    use serde_json::{Value, json};
    use tempfile::TempDir;
    use vigil::lambda::handle_stream_batch;
    use vigil_core::config::Config;
    use vigil_core::domain::{
        DeliveryStatus, ManualClock, ProjectId, Timestamp, UrlPolicy, Webhook, WebhookId,
        WebhookType, WebhookUrl,
    };
    use vigil_core::seed;
    use vigil_core::service::vigil::Vigil;
    use vigil_core::store::{DeliveryStore, WebhookInsert, WebhookStore};
    use vigil_dispatch::{Dispatcher, Sender, SystemResolver};
    use vigil_store_sqlite::SqliteStore;

    /// events/seed.json's project and its private key.
    const PROJECT: &str = "prj_1";
    const SIGNING_KEY: &str = "sk_example";
    const LOOPBACK: UrlPolicy = UrlPolicy {
        allow_loopback: true,
    };
    /// The active webhooks every fixture has, and their receiver paths.
    const ACTIVE: [(&str, &str); 2] = [("wh_a", "/a"), ("wh_b", "/b")];

    fn event_text(name: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("events")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// An event file, deserialised as `lambda_runtime` deserialises the function's payload.
    fn event(name: &str) -> Event {
        serde_json::from_str(&event_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn event_of(records: Vec<Value>) -> Event {
        serde_json::from_value(json!({ "Records": records })).expect("a DynamoDB Streams event")
    }

    struct Fixture {
        dispatcher: Dispatcher<SqliteStore>,
        store: SqliteStore,
        rx: Receiver,
        _dir: TempDir,
    }

    /// events/seed.json, with wh_1 replaced by wh_a and wh_b (active) and wh_off (disabled), all on
    /// the loopback receiver (answering 204).
    async fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("vigil.db")).unwrap();
        let app = Vigil::new(store.clone(), LOOPBACK);
        seed::load(&app, &event_text("seed.json"))
            .await
            .expect("events/seed.json loads");
        let project = ProjectId::parse(PROJECT).unwrap();
        assert!(
            store
                .delete_webhook(&project, &WebhookId::parse("wh_1").unwrap())
                .await
                .unwrap()
        );
        let rx = Receiver::start(Reply::status(204));
        for (id, path) in ACTIVE.iter().chain(&[("wh_off", "/off")]) {
            let hook = Webhook {
                id: WebhookId::parse(*id).unwrap(),
                kind: WebhookType::ProxyVpnDetect,
                url: WebhookUrl::parse(&rx.url(path), LOOPBACK).unwrap(),
                created_at: Timestamp::now(),
                secrets: vigil_core::domain::webhook::Secrets::new(),
            };
            assert_eq!(
                store.insert_webhook(&project, &hook).await.unwrap(),
                WebhookInsert::Created
            );
        }
        store
            .disable_webhook(&project, &WebhookId::parse("wh_off").unwrap())
            .await
            .unwrap();
        let sender = Sender::new(LOOPBACK, Arc::new(SystemResolver)).unwrap();
        // The deployment defaults: threshold 0.5.
        let config = Config::from_lookup(|_| None).unwrap();
        Fixture {
            dispatcher: Dispatcher::new(store.clone(), sender, &config),
            store,
            rx,
            _dir: dir,
        }
    }

    impl Fixture {
        /// Runs one batch through the function's handler; asserts no record was reported failed.
        async fn run(&self, event: Event) {
            let response = handle_stream_batch(&self.dispatcher, event).await;
            assert!(
                response.batch_item_failures.is_empty(),
                "batchItemFailures: {:?}",
                response.batch_item_failures
            );
        }

        /// The requests each active webhook received; asserts the disabled one received none.
        fn per_hook(&self) -> Vec<Vec<Hit>> {
            assert!(
                self.rx.hits_to("/off").is_empty(),
                "a disabled webhook was called"
            );
            ACTIVE
                .iter()
                .map(|(_, path)| self.rx.hits_to(path))
                .collect()
        }

        /// Every active webhook got exactly one delivery: `session`'s crossing, its third write.
        fn assert_crossing_delivered_once(&self, session: &str) {
            for ((hook, _), hits) in ACTIVE.iter().zip(self.per_hook()) {
                assert_eq!(hits.len(), 1, "{hook}: {hits:#?}");
                assert_delivery(&hits[0], hook, session, &written(3, "0.6"));
            }
        }

        /// The stored deliveries of a webhook.
        async fn deliveries(&self, hook: &str) -> Vec<vigil_core::domain::Delivery> {
            self.store
                .deliveries(
                    &ProjectId::parse(PROJECT).unwrap(),
                    &WebhookId::parse(hook).unwrap(),
                    100,
                )
                .await
                .unwrap()
        }
    }

    /// The request is the signed delivery of `session`'s crossing with the given result.
    #[track_caller]
    fn assert_delivery(hit: &Hit, hook: &str, session: &str, result: &str) {
        let v = hit.json();
        let ts = v["timestamp"].as_str().expect("a timestamp");
        assert!(ts.len() == 24 && ts.ends_with('Z'), "{ts:?}");
        let expected = format!(
            r#"{{"type":"proxy_vpn_detect","timestamp":"{ts}","data":{{"projectId":"{PROJECT}","sessionId":"{session}",{result}}}}}"#
        );
        assert_eq!(hit.body, expected);
        assert_eq!(hit.method, "POST");
        assert_eq!(hit.header("content-type"), "application/json");
        assert_eq!(
            hit.header("webhook-id"),
            delivery_id(PROJECT, session, hook)
        );
        let wh = standardwebhooks::Webhook::from_bytes(SIGNING_KEY.as_bytes().to_vec()).unwrap();
        wh.verify(hit.body.as_bytes(), &hit.headers)
            .unwrap_or_else(|e| panic!("signature does not verify: {e:?}"));
    }

    /// The `data` members after the ids of the crossing in webhook-dispatch-crossing.json.
    /// The crossing result, and its event: the summary's second write, unevaluated (no reasons).
    const CROSSING_RESULT: &str = r#""scoreBot":0.05,"scoreProxyVpn":0.8,"ipAddress":"198.51.100.23","createdAt":"2026-11-21T10:05:00.000Z","id":"evt_1795255500000_2","reasons":[]"#;

    // ---------------------------------------------------------------------------------------------
    // The event files

    #[test]
    fn the_event_files_are_lambda_dynamodb_events() {
        let crossing = event("webhook-dispatch-crossing.json");
        assert_eq!(crossing.records.len(), 1);
        let r = &crossing.records[0];
        assert_eq!(r.event_name, "MODIFY");
        assert_eq!(r.event_source.as_deref(), Some("aws:dynamodb"));
        assert!(r.change.sequence_number.is_some());
        assert!(!r.change.old_image.is_empty() && !r.change.new_image.is_empty());
        let none = event("webhook-dispatch-no-crossing.json");
        assert_eq!(
            none.records
                .iter()
                .map(|r| r.event_name.as_str())
                .collect::<Vec<_>>(),
            ["INSERT", "MODIFY"]
        );
        let replay = event("webhook-dispatch-replay.json");
        assert_eq!(replay.records.len(), 2);
        assert_eq!(replay.records[0], crossing.records[0]);
        assert_eq!(replay.records[1], crossing.records[0]);
    }

    #[tokio::test]
    async fn crossing_event_delivers_once_to_each_active_webhook() {
        let f = fixture().await;
        f.run(event("webhook-dispatch-crossing.json")).await;
        let hits = f.per_hook();
        for ((hook, _), hits) in ACTIVE.iter().zip(&hits) {
            assert_eq!(hits.len(), 1, "{hook}: {hits:#?}");
            assert_delivery(&hits[0], hook, "sess_1", CROSSING_RESULT);
            let stored = f.deliveries(hook).await;
            assert_eq!(stored.len(), 1);
            assert_eq!(stored[0].status, DeliveryStatus::Delivered);
            assert_eq!(stored[0].attempts.len(), 1);
            assert_eq!(stored[0].attempts[0].status_code, Some(204));
        }
        assert_eq!(f.rx.hits().len(), 2);
        assert!(f.deliveries("wh_off").await.is_empty());
    }

    #[tokio::test]
    async fn no_crossing_event_sends_nothing() {
        let f = fixture().await;
        f.run(event("webhook-dispatch-no-crossing.json")).await;
        assert!(f.rx.hits().is_empty(), "{:#?}", f.rx.hits());
        for (hook, _) in ACTIVE {
            assert!(f.deliveries(hook).await.is_empty());
        }
    }

    #[tokio::test]
    async fn replayed_records_and_batches_deliver_once() {
        let f = fixture().await;
        // The crossing record twice in one batch.
        f.run(event("webhook-dispatch-replay.json")).await;
        // The same batch again, and the single-record batch again (Lambda retries whole batches).
        f.run(event("webhook-dispatch-replay.json")).await;
        f.run(event("webhook-dispatch-crossing.json")).await;
        let hits = f.per_hook();
        for ((hook, _), hits) in ACTIVE.iter().zip(&hits) {
            assert_eq!(hits.len(), 1, "{hook}: {hits:#?}");
            assert_delivery(&hits[0], hook, "sess_1", CROSSING_RESULT);
            assert_eq!(f.deliveries(hook).await.len(), 1);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Crossing across the records of a batch

    /// A session summary image in DynamoDB JSON: the maxima and the last result (`bot`, `pv` at
    /// `10:00:SS`).
    fn summary(session: &str, seq: u32, max: (f64, f64), last: (f64, f64)) -> Value {
        json!({
            "pk": {"S": "PROJECT#prj_1"}, "sk": {"S": format!("SESSION#{session}")},
            "entity": {"S": "session"}, "projectId": {"S": "prj_1"}, "sessionId": {"S": session},
            "seq": {"N": seq.to_string()},
            "scoreBot": {"N": max.0.to_string()}, "scoreProxyVpn": {"N": max.1.to_string()},
            "last": {"M": {
                "scoreBot": {"N": last.0.to_string()}, "scoreProxyVpn": {"N": last.1.to_string()},
                "ipAddress": {"S": "192.0.2.1"},
                "createdAt": {"S": format!("2026-11-21T10:00:{seq:02}.000Z")}
            }}
        })
    }

    /// The stream record of the `seq`-th write to `session` (proxy/VPN scores `pvs[..seq]`), with
    /// bot score 0.1 * seq.
    fn write_record(session: &str, pvs: &[f64], seq: usize) -> Value {
        let image = |n: usize| {
            let max_pv = pvs[..n].iter().copied().fold(0.0, f64::max);
            let bot = 0.1 * n as f64;
            let bot = (bot * 10.0).round() / 10.0;
            summary(session, n as u32, (bot, max_pv), (bot, pvs[n - 1]))
        };
        let mut dynamodb = json!({
            "ApproximateCreationDateTime": 1795255200 + seq,
            "Keys": {"pk": {"S": "PROJECT#prj_1"}, "sk": {"S": format!("SESSION#{session}")}},
            "NewImage": image(seq),
            "SequenceNumber": format!("{:021}", 1000 + seq),
            "SizeBytes": 400,
            "StreamViewType": "NEW_AND_OLD_IMAGES"
        });
        if seq > 1 {
            dynamodb["OldImage"] = image(seq - 1);
        }
        json!({
            "eventID": format!("{session}-{seq}"),
            "eventName": if seq > 1 { "MODIFY" } else { "INSERT" },
            "eventVersion": "1.1", "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
            "dynamodb": dynamodb,
            "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/vigil/stream/2026-11-21T00:00:00.000"
        })
    }

    /// The data members of the result written `seq`-th (bot 0.1 * seq) with proxy/VPN score `pv`,
    /// and its event's id (created at 10:00:`seq`, the session's `seq`-th write).
    fn written(seq: u32, pv: &str) -> String {
        let bot = ((0.1 * seq as f64) * 10.0).round() / 10.0;
        let millis = 1_795_255_200_000u64 + u64::from(seq) * 1000;
        format!(
            r#""scoreBot":{bot},"scoreProxyVpn":{pv},"ipAddress":"192.0.2.1","createdAt":"2026-11-21T10:00:{seq:02}.000Z","id":"evt_{millis}_{seq}","reasons":[]"#
        )
    }

    const PVS: [f64; 4] = [0.1, 0.3, 0.6, 0.9];

    #[tokio::test]
    async fn several_writes_of_a_session_in_one_batch_deliver_once() {
        let f = fixture().await;
        // 0.1 (insert), 0.1 -> 0.3, 0.3 -> 0.6 (the crossing), 0.6 -> 0.9.
        let records = (1..=4).map(|i| write_record("sess_b", &PVS, i)).collect();
        f.run(event_of(records)).await;
        f.assert_crossing_delivered_once("sess_b");
    }

    #[tokio::test]
    async fn records_out_of_order_deliver_once_with_the_crossing_result() {
        let f = fixture().await;
        // Within a batch: the later writes first.
        let order = [4, 3, 1, 2];
        let records = order
            .iter()
            .map(|i| write_record("sess_o", &PVS, *i))
            .collect();
        f.run(event_of(records)).await;
        // Across batches: the crossing record again, then earlier writes.
        f.run(event_of(vec![write_record("sess_o", &PVS, 3)])).await;
        f.run(event_of(vec![
            write_record("sess_o", &PVS, 2),
            write_record("sess_o", &PVS, 1),
        ]))
        .await;
        f.assert_crossing_delivered_once("sess_o");
    }

    #[tokio::test]
    async fn crossings_of_several_sessions_in_one_batch_each_deliver() {
        let f = fixture().await;
        let mut records = Vec::new();
        for i in 1..=4 {
            for s in ["sess_x", "sess_y", "sess_z"] {
                records.push(write_record(s, &PVS, i));
            }
        }
        f.run(event_of(records)).await;
        for ((hook, _), hits) in ACTIVE.iter().zip(f.per_hook()) {
            let mut sessions: Vec<String> = hits
                .iter()
                .map(|h| h.json()["data"]["sessionId"].as_str().unwrap().to_owned())
                .collect();
            sessions.sort();
            assert_eq!(sessions, ["sess_x", "sess_y", "sess_z"], "{hook}");
            for h in &hits {
                let s = h.json()["data"]["sessionId"].as_str().unwrap().to_owned();
                assert_delivery(h, hook, &s, &written(3, "0.6"));
            }
        }
    }

    /// A session record that cannot be read is skipped (retrying cannot fix it) without failing the
    /// batch or the records after it.
    #[tokio::test]
    async fn a_malformed_record_is_skipped_and_the_rest_delivered() {
        let f = fixture().await;
        let mut bad = write_record("sess_bad", &PVS, 3);
        bad["dynamodb"]["NewImage"]["scoreProxyVpn"] = json!({"N": "7"});
        let records = vec![bad, write_record("sess_ok", &PVS, 3)];
        f.run(event_of(records)).await;
        f.assert_crossing_delivered_once("sess_ok");
    }

    /// A receiver's failure is an attempt outcome, never a failed record: the batch succeeds, the
    /// deliveries wait for their retry (5 s, the default schedule's first delay) and are not due yet.
    #[tokio::test]
    async fn a_failing_receiver_does_not_fail_the_batch() {
        let f = fixture().await;
        f.rx.set_default(Reply::status(500));
        f.run(event("webhook-dispatch-crossing.json")).await;
        for ((hook, _), hits) in ACTIVE.iter().zip(f.per_hook()) {
            assert_eq!(hits.len(), 1, "{hook}");
            let stored = f.deliveries(hook).await;
            assert_eq!(stored.len(), 1);
            let d = &stored[0];
            assert_eq!(d.status, DeliveryStatus::Pending);
            assert_eq!(d.attempts.len(), 1);
            assert_eq!(d.attempts[0].status_code, Some(500));
            let wait = d.next_attempt_at.unwrap().unix_millis() - d.attempts[0].at.unix_millis();
            assert_eq!(
                wait, 5_000,
                "{hook}: next attempt after the schedule's first delay"
            );
        }
        assert_eq!(f.dispatcher.sweep().await.unwrap(), 0, "nothing is due yet");
        assert_eq!(f.rx.hits().len(), 2);
    }

    #[tokio::test]
    async fn the_dispatcher_reads_time_from_its_clock_only() {
        let f = fixture().await;
        let at: Timestamp = "2031-05-06T07:08:09.000Z".parse().unwrap();
        let f = Fixture {
            dispatcher: f.dispatcher.with_clock(ManualClock::at(at)),
            ..f
        };
        f.run(event("webhook-dispatch-crossing.json")).await;
        for ((hook, _), hits) in ACTIVE.iter().zip(f.per_hook()) {
            assert_eq!(hits.len(), 1, "{hook}");
            // The payload, the signature's timestamp, the delivery and its attempt: all the clock's.
            assert_eq!(hits[0].json()["timestamp"], "2031-05-06T07:08:09.000Z");
            assert_eq!(
                hits[0].header("webhook-timestamp"),
                at.unix_seconds().to_string()
            );
            let stored = f.deliveries(hook).await;
            assert_eq!(stored[0].created_at, at);
            assert_eq!(stored[0].attempts[0].at, at);
        }
    }
}

mod delivery {
    //! End-to-end webhook delivery through the real `vigil` binary (CONTRACT.md section 4, "Delivery").
    //!
    //! Every test starts its own scripted loopback receiver (tests/receiver), its own store (a SQLite
    //! file in a temporary directory, or a fresh table in the DynamoDB emulator that `make test`
    //! starts) and its own `vigil serve --allow-loopback-webhooks --seed ...` with a short retry
    //! schedule (`VIGIL_WEBHOOK_RETRY_SCHEDULE`) and threshold 0.5. Results are written the way a user
    //! writes them: `vigil results add` in a separate process on the same store. What reaches the
    //! receiver (count, `webhook-id`, body, signature verified with the `standardwebhooks` reference
    //! implementation) and what the delivery log (`GET /v1/projects/{p}/webhooks/{w}/deliveries`)
    //! says are asserted. Waiting is always polling with a deadline; "nothing else arrived" is
    //! asserted after a later crossing (a barrier) has been delivered, since the change feed is
    //! processed in order. Tests share nothing and run in parallel; child processes die with their
    //! test.
    //!
    //! The `dynamodb::*` tests need `VIGIL_TEST_DYNAMODB_ENDPOINT` (`make test`, or
    //! `scripts/with-moto.sh .cache/venv-test cargo test --test webhooks`) and fail without it.

    use crate::common;
    use crate::receiver;

    use std::path::PathBuf;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use common::serve::Served;
    use common::{TEN_AM, at, delivery_id};

    use receiver::{Hit, Receiver, Reply};
    use serde_json::{Value, json};
    use tempfile::TempDir;

    const KEY: &str = "vgl_test_webhooks";
    const PROJECT: &str = "prj_1";
    /// The project's `apiKeyPrivate`: what deliveries are signed with.
    const SIGNING_KEY: &str = "sk_test_3f9a1c";
    const SCHEDULE: &str = "200ms,200ms,200ms";
    /// How long a rotated-out secret keeps signing in these tests (24 hours in a deployment).
    const SECRET_OVERLAP: &str = "4s";
    /// How long anything that should happen may take (the machine is shared with parallel tests).
    const WAIT: Duration = Duration::from_secs(30);
    /// How soon a delivery must arrive while another receiver takes 10 s: well under those 10 s,
    /// with room for a loaded 2-core machine running every test at once.
    const PROMPT: Duration = Duration::from_secs(5);

    // ---------------------------------------------------------------------------------------------
    // Stores and the `vigil` processes on them

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Kind {
        Sqlite,
        Dynamo,
    }

    /// A store of one test, the seed that goes with it, and the settings every `vigil` process of
    /// the test runs with.
    struct Env {
        kind: Kind,
        _dir: TempDir,
        db: PathBuf,
        table: String,
        endpoint: String,
        schedule: String,
        seed: PathBuf,
    }

    impl Env {
        fn new(kind: Kind, seed: &Value, schedule: &str) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let seed_file = dir.path().join("seed.json");
            std::fs::write(&seed_file, seed.to_string()).unwrap();
            let endpoint = match kind {
            Kind::Sqlite => String::new(),
            Kind::Dynamo => std::env::var("VIGIL_TEST_DYNAMODB_ENDPOINT").expect(
                "VIGIL_TEST_DYNAMODB_ENDPOINT is not set: run the DynamoDB tests with `make test` \
                 (or scripts/with-moto.sh .cache/venv-test cargo test --test webhooks)",
            ),
        };
            let env = Self {
                kind,
                db: dir.path().join("vigil.db"),
                _dir: dir,
                table: format!("t_wh_{}", vigil_core::domain::token::random_base62(10)),
                endpoint,
                schedule: schedule.to_owned(),
                seed: seed_file,
            };
            if kind == Kind::Dynamo {
                let out = env.command().args(["table", "create"]).output().unwrap();
                assert!(
                    out.status.success(),
                    "vigil --dynamodb table create: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            env
        }

        /// `vigil` with this test's store flags and settings, and nothing inherited that matters.
        fn command(&self) -> Command {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
            for var in [
                "VIGIL_TABLE",
                "VIGIL_WEBHOOK_THRESHOLD",
                "VIGIL_WEBHOOK_RETRY_SCHEDULE",
                "VIGIL_WEBHOOK_SECRET_OVERLAP",
                "AWS_ENDPOINT_URL",
                "AWS_PROFILE",
                "RUST_LOG",
            ] {
                cmd.env_remove(var);
            }
            cmd.env("VIGIL_WEBHOOK_THRESHOLD", "0.5")
                .env("VIGIL_WEBHOOK_RETRY_SCHEDULE", &self.schedule)
                .env("VIGIL_WEBHOOK_SECRET_OVERLAP", SECRET_OVERLAP);
            match self.kind {
                Kind::Sqlite => {
                    cmd.arg("--db").arg(&self.db);
                }
                Kind::Dynamo => {
                    cmd.arg("--dynamodb")
                        .env("VIGIL_TABLE", &self.table)
                        .env("AWS_ENDPOINT_URL", &self.endpoint)
                        .env("AWS_ACCESS_KEY_ID", "test")
                        .env("AWS_SECRET_ACCESS_KEY", "test")
                        .env("AWS_REGION", "us-east-1")
                        .env("AWS_EC2_METADATA_DISABLED", "true");
                }
            }
            cmd
        }

        /// Starts `vigil serve` on this store (loading the seed when `seed`), after its address line.
        fn serve(&self, seed: bool) -> Server {
            let mut cmd = self.command();
            cmd.args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--allow-loopback-webhooks",
            ]);
            if seed {
                cmd.arg("--seed").arg(&self.seed);
            }
            Server::start(cmd)
        }

        /// `vigil results add` for the project, to completion; returns when the process was started.
        fn add_result(&self, session: &str, bot: f64, pv: f64, created_at: &str) -> Instant {
            let started = Instant::now();
            let out = self
                .command()
                .args(["results", "add", "--project", PROJECT, "--session", session])
                .args(["--score-bot", &bot.to_string()])
                .args(["--score-proxy-vpn", &pv.to_string()])
                .args(["--ip", IP, "--created-at", created_at])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "vigil results add {session} {pv}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            started
        }
    }

    const IP: &str = "203.0.113.7";

    /// A running `vigil serve`; killed when dropped.
    struct Server {
        served: Served,
        origin: String,
        client: reqwest::Client,
    }

    impl Server {
        fn start(cmd: Command) -> Self {
            let served = Served::start(cmd);
            Server {
                origin: served.origin.clone(),
                served,
                client: reqwest::Client::builder().no_proxy().build().unwrap(),
            }
        }

        /// Kills the process (as a crash or `kill -9` would).
        fn kill(mut self) {
            self.served.kill();
        }

        fn logs(&self) -> String {
            self.served.stderr()
        }

        /// The delivery log of a webhook of the project.
        async fn deliveries(&self, webhook: &str) -> Vec<Value> {
            let url = format!(
                "{}/v1/projects/{PROJECT}/webhooks/{webhook}/deliveries",
                self.origin
            );
            let res = self
                .client
                .get(&url)
                .bearer_auth(KEY)
                .send()
                .await
                .unwrap_or_else(|e| panic!("GET {url}: {e}"));
            let status = res.status().as_u16();
            let body = res.text().await.unwrap();
            assert_eq!(status, 200, "GET {url}: {body}");
            let v: Value = serde_json::from_str(&body).unwrap();
            v["data"]
                .as_array()
                .unwrap_or_else(|| panic!("GET {url}: {body}"))
                .clone()
        }

        /// Polls the delivery log of `webhook` until `done` holds; panics after `WAIT` with the last
        /// log and the server's stderr.
        async fn wait_log(&self, webhook: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
            let deadline = Instant::now() + WAIT;
            loop {
                let log = self.deliveries(webhook).await;
                if done(&log) {
                    return log;
                }
                if Instant::now() > deadline {
                    panic!(
                        "delivery log of {webhook} did not reach the expected state within {WAIT:?}: \
                     {log:#?}\nserver stderr:\n{}",
                        self.logs()
                    );
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Data and checks

    /// One account (key KEY), project prj_1 signing with SIGNING_KEY, and `hooks` on it.
    fn seed(hooks: &[(&str, String)]) -> Value {
        let webhooks: Vec<Value> = hooks
            .iter()
            .map(|(id, url)| {
                json!({"id": id, "projectId": PROJECT, "type": "proxy_vpn_detect", "url": url,
                   "createdAt": "2026-11-21T00:00:00.000Z"})
            })
            .collect();
        json!({
            "accounts": [{"id": "acc_1", "apiKeys": [KEY],
                "plan": {"id": "plan_trial", "name": "Trial", "description": "14-day trial",
                         "maxRps": 1000, "maxProjects": 3, "maxRequests": 100000,
                         "expiresAt": "2099-12-05T00:00:00.000Z",
                         "subscribedAt": "2026-11-21T00:00:00.000Z",
                         "status": "trialing", "unsubscribedAt": null}}],
            "projects": [{"id": PROJECT, "accountId": "acc_1", "name": "Shop",
                          "domain": "shop.example", "apiKeyPublic": "pk_test",
                          "apiKeyPrivate": SIGNING_KEY, "disabled": false,
                          "createdAt": "2026-11-21T00:00:00.000Z"}],
            "webhooks": webhooks,
            "results": []
        })
    }

    fn session_of(hit: &Hit) -> String {
        hit.json()["data"]["sessionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The signature verifies with the reference implementation keyed with the project's private key,
    /// and not with another key.
    #[track_caller]
    fn assert_signed(hit: &Hit) {
        let wh = standardwebhooks::Webhook::from_bytes(SIGNING_KEY.as_bytes().to_vec()).unwrap();
        if let Err(e) = wh.verify(hit.body.as_bytes(), &hit.headers) {
            panic!(
                "signature of {} does not verify: {e:?}; headers {:?}",
                hit.path, hit.headers
            );
        }
        let other = standardwebhooks::Webhook::from_bytes(b"sk_other".to_vec()).unwrap();
        assert!(other.verify(hit.body.as_bytes(), &hit.headers).is_err());
        let ts: i64 = hit.header("webhook-timestamp").parse().unwrap();
        let now = chrono::Utc::now().timestamp();
        assert!(
            (now - 60..=now + 1).contains(&ts),
            "webhook-timestamp {ts} is not now ({now})"
        );
        assert!(hit.header("webhook-signature").starts_with("v1,"));
    }

    /// The exact body of a delivery of `session`'s crossing result, with the body's own timestamp
    /// (checked to be RFC 3339 UTC with milliseconds and recent).
    #[track_caller]
    fn assert_body(hit: &Hit, session: &str, bot: &str, pv: &str, created_at: &str) {
        let v = hit.json();
        let ts = v["timestamp"]
            .as_str()
            .unwrap_or_else(|| panic!("no timestamp in {}", hit.body));
        assert_eq!(ts.len(), 24, "timestamp {ts:?}");
        assert!(ts.ends_with('Z') && ts.as_bytes()[19] == b'.', "{ts:?}");
        let parsed = chrono::DateTime::parse_from_rfc3339(ts).unwrap();
        let age = chrono::Utc::now().signed_duration_since(parsed);
        assert!(
            age >= chrono::Duration::zero() && age < chrono::Duration::seconds(120),
            "timestamp {ts} is not now"
        );
        // The event's id is its createdAt (epoch ms) and the session's write count.
        let id = v["data"]["id"].as_str().unwrap_or_default();
        let millis = chrono::DateTime::parse_from_rfc3339(created_at)
            .unwrap()
            .timestamp_millis();
        assert!(id.starts_with(&format!("evt_{millis}_")), "{id}");
        let expected = format!(
            r#"{{"type":"proxy_vpn_detect","timestamp":"{ts}","data":{{"projectId":"{PROJECT}","sessionId":"{session}","scoreBot":{bot},"scoreProxyVpn":{pv},"ipAddress":"{IP}","createdAt":"{created_at}","id":"{id}","reasons":[]}}}}"#
        );
        assert_eq!(hit.body, expected, "body of the request to {}", hit.path);
        assert_eq!(hit.method, "POST");
        assert_eq!(hit.header("content-type"), "application/json");
    }

    fn entry<'a>(log: &'a [Value], session: &str) -> Option<&'a Value> {
        log.iter().find(|d| d["sessionId"] == session)
    }

    fn status_of(log: &[Value], session: &str) -> Option<String> {
        entry(log, session).and_then(|d| d["status"].as_str().map(str::to_owned))
    }

    /// A log entry, without its creation time (checked to be a timestamp).
    #[track_caller]
    fn without_created_at(d: &Value) -> Value {
        let mut d = d.clone();
        let created = d
            .as_object_mut()
            .unwrap()
            .remove("createdAt")
            .expect("createdAt");
        assert!(
            created.as_str().is_some_and(|s| s.ends_with('Z')),
            "{created}"
        );
        d
    }

    // ---------------------------------------------------------------------------------------------
    // Scenarios (each run on both stores where it matters)

    /// 0.2, 0.7, 0.9, 0.3 on one session: one delivery per webhook, carrying the 0.7 result.
    async fn one_delivery_per_crossing(kind: Kind) {
        let rx = Receiver::start(Reply::status(204));
        let hooks = [
            ("wh_a", rx.url("/a")),
            ("wh_b", rx.url("/b")),
            ("wh_c", rx.url("/c")),
        ];
        let env = Env::new(kind, &seed(&hooks), SCHEDULE);
        let server = env.serve(true);
        for (i, (bot, pv)) in [(0.01, 0.2), (0.05, 0.7), (0.02, 0.9), (0.03, 0.3)]
            .into_iter()
            .enumerate()
        {
            env.add_result("sess_cross", bot, pv, &at(TEN_AM + i as i64));
        }
        // A later crossing: once it is delivered, every earlier record has been dispatched.
        env.add_result("sess_barrier", 0.5, 0.95, &at(TEN_AM + 10));
        rx.wait_for(6, WAIT, |_| true).await;
        for (id, _) in &hooks {
            server
                .wait_log(id, |l| {
                    status_of(l, "sess_cross").as_deref() == Some("delivered")
                        && status_of(l, "sess_barrier").as_deref() == Some("delivered")
                })
                .await;
        }
        let hits = rx.hits();
        assert_eq!(hits.len(), 6, "3 webhooks x 2 crossings: {hits:#?}");
        for (id, url) in &hooks {
            let path = url.rsplit_once('/').map(|(_, p)| format!("/{p}")).unwrap();
            let mine: Vec<&Hit> = hits
                .iter()
                .filter(|h| h.path == path && session_of(h) == "sess_cross")
                .collect();
            assert_eq!(mine.len(), 1, "one delivery of the crossing to {id}");
            let hit = mine[0];
            assert_body(hit, "sess_cross", "0.05", "0.7", &at(TEN_AM + 1));
            assert_signed(hit);
            let msg = delivery_id(PROJECT, "sess_cross", id);
            assert_eq!(hit.header("webhook-id"), msg);
            let log = server.deliveries(id).await;
            assert_eq!(log.len(), 2, "{id}: {log:#?}");
            assert_eq!(
                without_created_at(entry(&log, "sess_cross").unwrap()),
                json!({"id": msg, "sessionId": "sess_cross", "status": "delivered", "attempts": 1,
                   "lastStatusCode": 204, "lastError": null, "nextAttemptAt": null})
            );
            // Newest crossing first.
            assert_eq!(log[0]["sessionId"], "sess_barrier");
        }
    }

    /// 500, 500, then 204: three attempts of the same delivery, byte-identical, on the schedule.
    async fn failing_then_succeeding(kind: Kind) {
        let rx = Receiver::start(Reply::status(204));
        rx.script([Reply::status(500), Reply::status(500)]);
        let env = Env::new(kind, &seed(&[("wh_flaky", rx.url("/hook"))]), SCHEDULE);
        let server = env.serve(true);
        env.add_result("sess_1", 0.1, 0.8, &at(TEN_AM));
        let hits = rx.wait_for(3, WAIT, |_| true).await;
        let log = server
            .wait_log("wh_flaky", |l| {
                status_of(l, "sess_1").as_deref() == Some("delivered")
            })
            .await;
        let msg = delivery_id(PROJECT, "sess_1", "wh_flaky");
        assert_eq!(
            without_created_at(&log[0]),
            json!({"id": msg, "sessionId": "sess_1", "status": "delivered", "attempts": 3,
               "lastStatusCode": 204, "lastError": null, "nextAttemptAt": null})
        );
        assert_eq!(log.len(), 1);
        let hits_now = rx.hits();
        assert_eq!(hits_now.len(), 3, "{hits_now:#?}");
        assert_eq!(
            hits.iter().map(|h| h.answered).collect::<Vec<_>>(),
            [500, 500, 204]
        );
        for h in &hits {
            assert_eq!(h.header("webhook-id"), msg);
            assert_eq!(h.body, hits[0].body, "retries send the same body");
            assert_signed(h);
        }
        assert_body(&hits[0], "sess_1", "0.1", "0.8", &at(TEN_AM));
        for pair in hits.windows(2) {
            let gap = pair[1].at - pair[0].at;
            assert!(
                gap >= Duration::from_millis(150),
                "retry after {gap:?}, before the 200ms of the schedule"
            );
        }
    }

    /// The receiver answers 503; the server is killed; the receiver recovers; the server restarts on
    /// the same store and delivers the pending delivery (same webhook-id).
    async fn pending_delivery_survives_a_restart(kind: Kind) {
        let rx = Receiver::start(Reply::status(503));
        // Long enough delays that the kill lands between attempts, not during one.
        let env = Env::new(
            kind,
            &seed(&[("wh_down", rx.url("/hook"))]),
            "3s,3s,3s,3s,3s",
        );
        let first = env.serve(true);
        env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
        let before = rx.wait_for(1, WAIT, |_| true).await;
        let log = first
            .wait_log("wh_down", |l| {
                entry(l, "sess_1").is_some_and(|d| d["attempts"] == 1 && d["status"] == "pending")
            })
            .await;
        assert_eq!(log[0]["lastStatusCode"], 503);
        first.kill();
        let n_before = rx.hits().len();
        rx.set_default(Reply::status(204));
        let restarted_at = Instant::now();
        let second = env.serve(false);
        let delivered = rx.wait_for(1, WAIT, |h| h.answered == 204).await.remove(0);
        assert!(delivered.at > restarted_at, "delivered after the restart");
        let msg = delivery_id(PROJECT, "sess_1", "wh_down");
        assert_eq!(before[0].header("webhook-id"), msg);
        assert_eq!(delivered.header("webhook-id"), msg);
        assert_eq!(delivered.body, before[0].body);
        assert_signed(&delivered);
        assert_body(&delivered, "sess_1", "0.1", "0.9", &at(TEN_AM));
        let log = second
            .wait_log("wh_down", |l| {
                status_of(l, "sess_1").as_deref() == Some("delivered")
            })
            .await;
        let all = rx.hits();
        assert_eq!(
            all.len(),
            n_before + 1,
            "one attempt after the restart: {all:#?}"
        );
        assert_eq!(log.len(), 1);
        assert_eq!(log[0]["lastStatusCode"], 204);
        assert_eq!(log[0]["attempts"], all.len());
    }

    /// Results written with `vigil results add` while no server runs are delivered when it starts.
    async fn results_written_while_stopped(kind: Kind) {
        let rx = Receiver::start(Reply::status(204));
        let env = Env::new(kind, &seed(&[("wh_1", rx.url("/hook"))]), SCHEDULE);
        env.serve(true).kill();
        env.add_result("sess_offline", 0.3, 0.2, &at(TEN_AM));
        env.add_result("sess_offline", 0.4, 0.85, &at(TEN_AM + 1));
        env.add_result("sess_offline", 0.4, 0.95, &at(TEN_AM + 2));
        assert!(rx.hits().is_empty());
        let server = env.serve(false);
        let hit = rx.wait_for(1, WAIT, |_| true).await.remove(0);
        assert_body(&hit, "sess_offline", "0.4", "0.85", &at(TEN_AM + 1));
        assert_signed(&hit);
        assert_eq!(
            hit.header("webhook-id"),
            delivery_id(PROJECT, "sess_offline", "wh_1")
        );
        let log = server
            .wait_log("wh_1", |l| {
                status_of(l, "sess_offline").as_deref() == Some("delivered")
            })
            .await;
        assert_eq!(log.len(), 1);
        assert_eq!(log[0]["attempts"], 1);
        assert_eq!(rx.hits().len(), 1);
    }

    // ---------------------------------------------------------------------------------------------
    // SQLite (the change feed)

    /// A 410 answer fails the delivery and disables the webhook: a later crossing sends it nothing.
    async fn gone_disables_the_webhook(kind: Kind) {
        let gone = Receiver::start(Reply::status(410));
        let ok = Receiver::start(Reply::status(204));
        let hooks = [("wh_gone", gone.url("/gone")), ("wh_ok", ok.url("/ok"))];
        let env = Env::new(kind, &seed(&hooks), SCHEDULE);
        let server = env.serve(true);
        env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
        gone.wait_for(1, WAIT, |_| true).await;
        let log = server
            .wait_log("wh_gone", |l| {
                status_of(l, "sess_1").as_deref() == Some("failed")
            })
            .await;
        let mut d = without_created_at(&log[0]);
        assert!(d["lastError"].is_string(), "{d}");
        d["lastError"] = Value::Null;
        assert_eq!(
            d,
            json!({"id": delivery_id(PROJECT, "sess_1", "wh_gone"), "sessionId": "sess_1", "status": "failed",
               "attempts": 1, "lastStatusCode": 410, "lastError": null, "nextAttemptAt": null})
        );
        // The second crossing reaches the other webhook (the barrier) and not the disabled one.
        env.add_result("sess_2", 0.1, 0.9, &at(TEN_AM + 1));
        ok.wait_for(1, WAIT, |h| session_of(h) == "sess_2").await;
        server
            .wait_log("wh_ok", |l| {
                status_of(l, "sess_2").as_deref() == Some("delivered")
            })
            .await;
        assert_eq!(gone.hits().len(), 1, "{:#?}", gone.hits());
        let log = server.deliveries("wh_gone").await;
        assert_eq!(log.len(), 1, "no delivery for a disabled webhook: {log:#?}");
        assert_eq!(log[0]["status"], "failed");
        assert_eq!(log[0]["lastStatusCode"], 410);
    }

    /// A 302 is a failed attempt: the Location is never requested; after the schedule, failed.
    async fn redirect_is_not_followed(kind: Kind) {
        let target = Receiver::start(Reply::status(204));
        let redirector =
            Receiver::start(Reply::status(302).header("location", &target.url("/landing")));
        let env = Env::new(kind, &seed(&[("wh_r", redirector.url("/hook"))]), SCHEDULE);
        let server = env.serve(true);
        env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
        redirector.wait_for(1, WAIT, |_| true).await;
        let log = server
            .wait_log("wh_r", |l| {
                entry(l, "sess_1").is_some_and(|d| d["lastStatusCode"] == 302)
            })
            .await;
        let status = log[0]["status"].as_str().unwrap();
        assert!(status == "pending" || status == "failed", "{status}");
        // 1 attempt + 3 retries, then failed for good.
        let log = server
            .wait_log("wh_r", |l| {
                status_of(l, "sess_1").as_deref() == Some("failed")
            })
            .await;
        assert_eq!(log[0]["attempts"], 4);
        assert_eq!(log[0]["lastStatusCode"], 302);
        assert!(
            log[0]["lastError"]
                .as_str()
                .is_some_and(|e| e.contains("redirect")),
            "{}",
            log[0]
        );
        assert_eq!(redirector.hits().len(), 4);
        assert!(target.hits().is_empty(), "the redirect was followed");
    }

    /// A receiver that takes 10 s to answer does not delay the delivery of the same crossing to
    /// another webhook, and the slow answer still counts (it is within the 15 s total timeout).
    async fn slow_receiver_does_not_delay_others(kind: Kind) {
        let slow = Receiver::start(Reply::status(204).after(Duration::from_secs(10)));
        let fast = Receiver::start(Reply::status(204));
        let hooks = [
            ("wh_slow", slow.url("/slow")),
            ("wh_fast", fast.url("/fast")),
        ];
        let env = Env::new(kind, &seed(&hooks), SCHEDULE);
        let server = env.serve(true);
        let written = env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
        let hit = fast.wait_for(1, WAIT, |_| true).await.remove(0);
        let took = hit.at - written;
        assert!(took < PROMPT, "fast receiver waited {took:?}");
        slow.wait_for(1, WAIT, |_| true).await;
        let log = server
            .wait_log("wh_slow", |l| {
                status_of(l, "sess_1").as_deref() == Some("delivered")
            })
            .await;
        assert_eq!(log[0]["attempts"], 1);
        assert_eq!(log[0]["lastStatusCode"], 204);
    }

    /// While a slow receiver holds an attempt, a later crossing (another session) still reaches the
    /// other receiver at once: a slow receiver must not block the change feed or the stream shard
    /// (CONTRACT.md: "a failing receiver never blocks the stream shard or delays deliveries to other
    /// receivers").
    async fn slow_receiver_does_not_block_later_crossings(kind: Kind) {
        let slow = Receiver::start(Reply::status(204).after(Duration::from_secs(10)));
        let fast = Receiver::start(Reply::status(204));
        let hooks = [
            ("wh_slow", slow.url("/slow")),
            ("wh_fast", fast.url("/fast")),
        ];
        let env = Env::new(kind, &seed(&hooks), SCHEDULE);
        let _server = env.serve(true);
        env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
        slow.wait_for(1, WAIT, |_| true).await;
        fast.wait_for(1, WAIT, |_| true).await;
        // The slow attempt is now in flight for about 10 s.
        let written = env.add_result("sess_2", 0.1, 0.9, &at(TEN_AM + 1));
        let hit = fast
            .wait_for(1, WAIT, |h| session_of(h) == "sess_2")
            .await
            .remove(0);
        let took = hit.at - written;
        assert!(
            took < PROMPT,
            "the second crossing reached the fast receiver after {took:?}"
        );
    }

    /// A crossing written after another writer's transaction was canceled is still delivered. A
    /// canceled transaction makes the emulator replace the table with a copy, stream shard
    /// included, so an iterator the follower held from before reads nothing more: the follower
    /// takes its iterators again from its checkpoints (every 5 s) instead of going blind.
    #[tokio::test]
    async fn dynamodb_crossing_after_a_canceled_transaction_is_delivered() {
        use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
        let rx = Receiver::start(Reply::status(204));
        let env = Env::new(Kind::Dynamo, &seed(&[("wh_1", rx.url("/hook"))]), SCHEDULE);
        let _server = env.serve(true);
        env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
        rx.wait_for(1, WAIT, |h| session_of(h) == "sess_1").await;

        let client = common::dynamo_client(&env.endpoint, |b| b).await;
        let put = Put::builder()
            .table_name(&env.table)
            .item("pk", AttributeValue::S("TEST#canceled".into()))
            .item("sk", AttributeValue::S("TEST#canceled".into()))
            .condition_expression("attribute_exists(pk)")
            .build()
            .unwrap();
        let canceled = client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().put(put).build())
            .send()
            .await;
        assert!(canceled.is_err(), "the transaction's condition held");

        env.add_result("sess_2", 0.1, 0.9, &at(TEN_AM + 1));
        rx.wait_for(1, WAIT, |h| session_of(h) == "sess_2").await;
    }

    // ---------------------------------------------------------------------------------------------
    // The scenarios, on each store

    /// Every scenario on both stores: `sqlite::NAME` over the SQLite change feed, `dynamodb::NAME`
    /// over the table's stream in the emulator.
    macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::Kind::Sqlite).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::Kind::Dynamo).await;
                }
            )*
        }
    };
}

    /// A developer request to this server; the status and the JSON body.
    async fn api(
        server: &Server,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = server
            .client
            .request(method, format!("{}/v1{path}", server.origin))
            .bearer_auth(KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        let text = res.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Queues a test event to `webhook`: its delivery id.
    async fn queue_test(server: &Server, webhook: &str) -> String {
        let (status, queued) = api(
            server,
            reqwest::Method::POST,
            &format!("/projects/{PROJECT}/webhooks/{webhook}/test"),
            None,
        )
        .await;
        assert_eq!(status, 202, "{queued}");
        queued["data"]["deliveryId"].as_str().unwrap().to_owned()
    }

    /// The id of the project's webhook to `url`, from the listing.
    async fn webhook_to(server: &Server, url: &str) -> String {
        let (_, list) = api(
            server,
            reqwest::Method::GET,
            &format!("/projects/{PROJECT}/webhooks"),
            None,
        )
        .await;
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["url"] == json!(url))
            .map(|w| w["id"].as_str().unwrap().to_owned())
            .unwrap()
    }

    /// Verifies a delivery with the official Standard Webhooks library given the secret string as
    /// the API returned it (the Rust library; `tests/verify_webhook.py` does the same with
    /// Python's from PyPI).
    fn verifies(hit: &Hit, secret: &str) -> bool {
        standardwebhooks::Webhook::new(secret)
            .unwrap()
            .verify(hit.body.as_bytes(), &hit.headers)
            .is_ok()
    }

    fn verifies_with_bytes(hit: &Hit, key: &[u8]) -> bool {
        standardwebhooks::Webhook::from_bytes(key.to_vec())
            .unwrap()
            .verify(hit.body.as_bytes(), &hit.headers)
            .is_ok()
    }

    /// Whether an official Standard Webhooks library, run as `cmd` (a script reading
    /// {"secret", "headers", "body"} on stdin and printing `verified` or `refused`), verifies the
    /// delivery with the secret string as the API returned it.
    fn library_verifies(mut cmd: Command, hit: &Hit, secret: &str) -> bool {
        use std::io::Write as _;
        let headers: serde_json::Map<String, Value> = hit
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v.to_str().unwrap_or_default())))
            .collect();
        let input = json!({"secret": secret, "headers": headers, "body": hit.body});
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{cmd:?}: {e} (make test installs the libraries)"));
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        match String::from_utf8_lossy(&out.stdout).trim() {
            "verified" => true,
            "refused" => false,
            other => panic!("{cmd:?} answered {other:?}"),
        }
    }

    /// Python's official library (`standardwebhooks` from PyPI, in make test's virtualenv).
    fn python_verifies(hit: &Hit, secret: &str) -> bool {
        let root = env!("CARGO_MANIFEST_DIR");
        let mut cmd = Command::new(format!("{root}/.cache/venv-test/bin/python"));
        cmd.arg(format!("{root}/tests/verify_webhook.py"));
        library_verifies(cmd, hit, secret)
    }

    /// Node's official library (`standardwebhooks` from npm, installed by `make test` into
    /// .cache/test-node).
    fn node_verifies(hit: &Hit, secret: &str) -> bool {
        let root = env!("CARGO_MANIFEST_DIR");
        let mut cmd = Command::new("node");
        cmd.arg(format!("{root}/tests/node/verify_webhook.js"))
            .env("NODE_PATH", format!("{root}/.cache/test-node/node_modules"));
        library_verifies(cmd, hit, secret)
    }

    /// A webhook made through the API has its own `whsec_` secret: its deliveries verify with it
    /// (as given, by the official libraries), and with the project's key while the legacy
    /// signature is on. After a rotation both secrets verify for the overlap, then only the new.
    /// A seeded (older) webhook has no secret and keeps its `apiKeyPrivate` signature.
    async fn secrets_per_webhook_rotate_with_an_overlap(kind: Kind) {
        let rx = Receiver::start(Reply::status(204));
        let env = Env::new(kind, &seed(&[("wh_old", rx.url("/old"))]), SCHEDULE);
        let server = env.serve(true);
        let (status, _) = api(
            &server,
            reqwest::Method::POST,
            &format!("/projects/{PROJECT}/webhooks"),
            Some(json!({"type": "proxy_vpn_detect", "url": rx.url("/new")})),
        )
        .await;
        assert_eq!(status, 201);
        let (_, list) = api(
            &server,
            reqwest::Method::GET,
            &format!("/projects/{PROJECT}/webhooks"),
            None,
        )
        .await;
        assert!(
            !list.to_string().contains("whsec_"),
            "a listing shows no secret: {list}"
        );
        let id = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["url"] == json!(rx.url("/new")))
            .map(|w| w["id"].as_str().unwrap().to_owned())
            .unwrap();
        let secret_path = format!("/projects/{PROJECT}/webhooks/{id}/secret");
        let (status, got) = api(&server, reqwest::Method::GET, &secret_path, None).await;
        assert_eq!(status, 200, "{got}");
        let first = got["data"]["secret"].as_str().unwrap().to_owned();
        assert!(first.starts_with("whsec_") && first.len() == 38, "{first}");
        let (status, old) = api(
            &server,
            reqwest::Method::GET,
            &format!("/projects/{PROJECT}/webhooks/wh_old/secret"),
            None,
        )
        .await;
        assert_eq!(
            (status, &old["data"]["secret"]),
            (200, &Value::Null),
            "{old}"
        );
        let (status, _) = api(
            &server,
            reqwest::Method::GET,
            &format!("/projects/{PROJECT}/webhooks/wh_none/secret"),
            None,
        )
        .await;
        assert_eq!(status, 404);
        let (status, _) = api(
            &server,
            reqwest::Method::GET,
            &format!("/projects/prj_other/webhooks/{id}/secret"),
            None,
        )
        .await;
        assert_eq!(status, 404);

        // A crossing: the new webhook's delivery verifies with its secret and, legacy on, with
        // the project's key; the old webhook's with the project's key.
        env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
        let hit = rx
            .wait_for(1, WAIT, |h| h.path == "/new" && session_of(h) == "sess_1")
            .await
            .remove(0);
        assert!(verifies(&hit, &first), "{:?}", hit.headers);
        assert!(
            python_verifies(&hit, &first),
            "Python's library, the secret as given"
        );
        assert!(
            node_verifies(&hit, &first),
            "Node's library, the secret as given"
        );
        assert!(verifies_with_bytes(&hit, SIGNING_KEY.as_bytes()));
        let old_hit = rx
            .wait_for(1, WAIT, |h| h.path == "/old" && session_of(h) == "sess_1")
            .await
            .remove(0);
        assert!(verifies_with_bytes(&old_hit, SIGNING_KEY.as_bytes()));

        // The legacy signature off, then a rotation: both secrets during the overlap.
        let (status, p) = api(
            &server,
            reqwest::Method::PATCH,
            &format!("/projects/{PROJECT}"),
            Some(json!({"webhookLegacySignature": false})),
        )
        .await;
        assert_eq!(
            (status, &p["data"]["webhookLegacySignature"]),
            (200, &json!(false)),
            "{p}"
        );
        let (status, rotated) = api(
            &server,
            reqwest::Method::POST,
            &format!("{secret_path}/rotate"),
            None,
        )
        .await;
        assert_eq!(status, 200, "{rotated}");
        let second = rotated["data"]["secret"].as_str().unwrap().to_owned();
        assert_ne!(second, first);
        let (_, now) = api(&server, reqwest::Method::GET, &secret_path, None).await;
        assert_eq!(now["data"]["secret"], json!(second));
        let rotated_at = Instant::now();
        env.add_result("sess_2", 0.1, 0.9, &at(TEN_AM + 1));
        let hit = rx
            .wait_for(1, WAIT, |h| h.path == "/new" && session_of(h) == "sess_2")
            .await
            .remove(0);
        assert!(
            rotated_at.elapsed() < Duration::from_secs(4),
            "the overlap passed before the delivery"
        );
        assert!(
            verifies(&hit, &second) && verifies(&hit, &first),
            "{:?}",
            hit.headers
        );
        assert!(python_verifies(&hit, &second) && python_verifies(&hit, &first));
        assert!(node_verifies(&hit, &second) && node_verifies(&hit, &first));
        assert!(
            !verifies_with_bytes(&hit, SIGNING_KEY.as_bytes()),
            "legacy signature off"
        );
        // The old webhook keeps its project-key signature whatever the setting: it has no other.
        let old_hit = rx
            .wait_for(1, WAIT, |h| h.path == "/old" && session_of(h) == "sess_2")
            .await
            .remove(0);
        assert!(verifies_with_bytes(&old_hit, SIGNING_KEY.as_bytes()));

        // After the overlap, only the new secret.
        tokio::time::sleep(
            Duration::from_secs(4).saturating_sub(rotated_at.elapsed())
                + Duration::from_millis(300),
        )
        .await;
        env.add_result("sess_3", 0.1, 0.9, &at(TEN_AM + 2));
        let hit = rx
            .wait_for(1, WAIT, |h| h.path == "/new" && session_of(h) == "sess_3")
            .await
            .remove(0);
        assert!(verifies(&hit, &second));
        assert!(
            !verifies(&hit, &first),
            "the rotated-out secret stops after the overlap"
        );
        assert!(python_verifies(&hit, &second) && !python_verifies(&hit, &first));
        assert!(node_verifies(&hit, &second) && !node_verifies(&hit, &first));
        assert!(node_verifies(&hit, &second) && !node_verifies(&hit, &first));
        assert_eq!(hit.header("webhook-signature").matches("v1,").count(), 1);
    }

    /// A test event arrives signed like the rest and is logged; a delivered crossing sent again
    /// arrives with the same `webhook-id` and body, as one more attempt in the log.
    async fn test_events_and_redelivery(kind: Kind) {
        let rx = Receiver::start(Reply::status(204));
        let env = Env::new(kind, &seed(&[("wh_a", rx.url("/a"))]), SCHEDULE);
        let server = env.serve(true);
        let test_id = queue_test(&server, "wh_a").await;
        let hit = rx
            .wait_for(1, WAIT, |h| h.json()["type"] == json!("webhook.test"))
            .await
            .remove(0);
        assert_eq!(hit.header("webhook-id"), test_id);
        assert_eq!(
            hit.json()["data"],
            json!({"projectId": PROJECT, "webhookId": "wh_a"})
        );
        assert_signed(&hit);
        server
            .wait_log("wh_a", |l| {
                l.iter().any(|d| {
                    d["id"] == json!(test_id)
                        && d["status"] == json!("delivered")
                        && d["sessionId"] == json!("webhook-test")
                })
            })
            .await;

        env.add_result("sess_r", 0.1, 0.9, &at(TEN_AM));
        let first = rx
            .wait_for(1, WAIT, |h| session_of(h) == "sess_r")
            .await
            .remove(0);
        let log = server
            .wait_log("wh_a", |l| {
                status_of(l, "sess_r").as_deref() == Some("delivered")
            })
            .await;
        let id = log
            .iter()
            .find(|d| d["sessionId"] == json!("sess_r"))
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let (status, again) = api(
            &server,
            reqwest::Method::POST,
            &format!("/projects/{PROJECT}/deliveries/{id}/redeliver"),
            None,
        )
        .await;
        assert_eq!(
            (status, again["data"]["deliveryId"].as_str()),
            (202, Some(id.as_str())),
            "{again}"
        );
        let hits = rx.wait_for(2, WAIT, |h| session_of(h) == "sess_r").await;
        assert_eq!(hits[1].header("webhook-id"), first.header("webhook-id"));
        assert_eq!(hits[1].body, first.body, "the same payload");
        assert_signed(&hits[1]);
        server
            .wait_log("wh_a", |l| {
                l.iter().any(|d| {
                    d["id"] == json!(id)
                        && d["attempts"] == json!(2)
                        && d["status"] == json!("delivered")
                })
            })
            .await;
        // Unknown deliveries and webhooks, and other projects', are 404.
        for path in [
            format!("/projects/{PROJECT}/deliveries/msg_unknown/redeliver"),
            format!("/projects/prj_other/deliveries/{id}/redeliver"),
            format!("/projects/{PROJECT}/webhooks/wh_none/test"),
        ] {
            let (status, body) = api(&server, reqwest::Method::POST, &path, None).await;
            assert_eq!(status, 404, "{path}: {body}");
        }
    }

    /// Issue 52: a test event is tried once, whatever its receiver answers: retries would make
    /// it an amplifier.
    async fn a_test_event_is_never_retried(kind: Kind) {
        let rx = Receiver::start(Reply::status(500));
        let env = Env::new(kind, &seed(&[("wh_a", rx.url("/a"))]), SCHEDULE);
        let server = env.serve(true);
        let id = queue_test(&server, "wh_a").await;
        let log = server
            .wait_log("wh_a", |l| {
                l.iter()
                    .any(|d| d["id"] == json!(id) && d["status"] == json!("failed"))
            })
            .await;
        let d = log.iter().find(|d| d["id"] == json!(id)).unwrap();
        assert_eq!(d["attempts"], json!(1), "{d}");
        // The schedule's retries (200 ms apart) would have come by now.
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert_eq!(rx.hits().len(), 1);
    }

    /// A visitor's session may be called what the test events are listed under: its crossing
    /// is still retried, as the delivery's own test mark, not its session id, says what it is.
    async fn a_session_named_like_the_test_events_is_retried(kind: Kind) {
        let rx = Receiver::start(Reply::status(204));
        rx.script([Reply::status(500)]);
        let env = Env::new(kind, &seed(&[("wh_a", rx.url("/a"))]), SCHEDULE);
        let _server = env.serve(true);
        env.add_result("webhook-test", 0.1, 0.8, &at(TEN_AM));
        let hits = rx.wait_for(2, WAIT, |_| true).await;
        assert_eq!(
            hits.iter().map(|h| h.answered).collect::<Vec<_>>(),
            [500, 204]
        );
    }

    /// Issue 52: two rotations in quick succession keep the first secret signing until the
    /// overlap the first rotation promised: a receiver still on it loses nothing.
    async fn two_quick_rotations_keep_the_first_overlap(kind: Kind) {
        let rx = Receiver::start(Reply::status(204));
        let env = Env::new(kind, &seed(&[]), SCHEDULE);
        let server = env.serve(true);
        let (status, made) = api(
            &server,
            reqwest::Method::POST,
            &format!("/projects/{PROJECT}/webhooks"),
            Some(json!({"type": "proxy_vpn_detect", "url": rx.url("/q")})),
        )
        .await;
        assert_eq!(status, 201, "{made}");
        let id = webhook_to(&server, &rx.url("/q")).await;
        let secret_path = format!("/projects/{PROJECT}/webhooks/{id}/secret");
        let (_, got) = api(&server, reqwest::Method::GET, &secret_path, None).await;
        let mut secrets = vec![got["data"]["secret"].as_str().unwrap().to_owned()];
        for _ in 0..2 {
            let (status, rotated) = api(
                &server,
                reqwest::Method::POST,
                &format!("{secret_path}/rotate"),
                None,
            )
            .await;
            assert_eq!(status, 200, "{rotated}");
            secrets.push(rotated["data"]["secret"].as_str().unwrap().to_owned());
        }
        env.add_result("sess_q", 0.1, 0.9, &at(TEN_AM));
        let hit = rx
            .wait_for(1, WAIT, |h| session_of(h) == "sess_q")
            .await
            .remove(0);
        for (i, s) in secrets.iter().enumerate() {
            assert!(verifies(&hit, s), "secret {i}: {:?}", hit.headers);
        }
    }

    on_both_stores!(
        two_quick_rotations_keep_the_first_overlap,
        a_test_event_is_never_retried,
        a_session_named_like_the_test_events_is_retried,
        test_events_and_redelivery,
        secrets_per_webhook_rotate_with_an_overlap,
        one_delivery_per_crossing,
        failing_then_succeeding,
        pending_delivery_survives_a_restart,
        results_written_while_stopped,
        gone_disables_the_webhook,
        redirect_is_not_followed,
        slow_receiver_does_not_delay_others,
        slow_receiver_does_not_block_later_crossings,
    );
}
