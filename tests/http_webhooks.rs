//! Black-box HTTP tests against the real `vigil serve` process (webhooks). The answers checked are
//! those of CONTRACT.md: status, the exact JSON body and the headers that matter.

mod common;

use common::api::*;
use reqwest::Method;
use serde_json::json;
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Webhooks

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
    let hook_to =
        |path: &str| format!(r#"{{"type":"proxy_vpn_detect","url":"https://example.com/{path}"}}"#);
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
        "`type` must be one of: proxy_vpn_detect",
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
        (json, r#"{"type":"bot_detect","url":"https://hooks.example.com/x"}"#, 400, unknown_type),
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
