//! Black-box HTTP tests against the real `vigil serve` process (authentication, tenancy and routing). The answers checked are
//! those of CONTRACT.md: status, the exact JSON body and the headers that matter.

mod common;

use common::api::*;
use common::at;
use reqwest::Method;
use serde_json::json;

// ---------------------------------------------------------------------------------------------
// Authentication, tenancy and routing

#[tokio::test]
async fn missing_or_bad_credentials_are_401_and_write_nothing() {
    let r = res(0.1, 0.2, "192.0.2.1", &at(0));
    let srv = Server::seeded(&fixture(vec![in_session("prj_1", "sess_1", &r)]));
    let too_long = format!("Bearer vgl_{}", "a".repeat(300));
    let bad: [Option<&str>; 11] = [
        None,
        Some("Bearer vgl_wrong_key"),
        Some("Basic dmdsX3Rlc3RfYWNjMV9wcmltYXJ5Og=="),
        Some("Token vgl_test_acc1_primary"),
        Some("Bearer"),
        Some("Bearer "),
        Some("Bearervgl_test_acc1_primary"),
        Some("vgl_test_acc1_primary"),
        Some("Bearer vgl_test_acc1_primary extra"),
        Some("Bearer pk_shop"), // a project key is not a developer key
        Some(&too_long),
    ];
    let reads = [
        (Method::GET, "/v1/plan"),
        (Method::GET, "/v1/results/prj_1/sess_1"),
        (Method::GET, "/v1/results/prj_1/sess_1/general"),
        (Method::GET, "/v1/projects/prj_1"),
        (Method::GET, "/v1/projects/prj_1/webhooks"),
        (Method::DELETE, "/v1/projects/prj_1/webhooks/wh_seed"),
    ];
    let hooks = "/v1/projects/prj_1/webhooks";
    for auth in bad {
        for (method, path) in reads.clone() {
            srv.call(method, path, auth, None, None)
                .await
                .expect_error(401, "Unauthorized");
        }
        srv.call(
            Method::POST,
            hooks,
            auth,
            Some("application/json"),
            Some(VALID_HOOK.into()),
        )
        .await
        .expect_error(401, "Unauthorized")
        .expect_no("location");
    }
    assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);

    // The scheme word is case-insensitive.
    for scheme in ["bearer", "BEARER", "bEaReR"] {
        let auth = format!("{scheme} {KEY1}");
        srv.call(Method::GET, "/v1/plan", Some(&auth), None, None)
            .await
            .expect(200, json!({ "data": plan1() }));
    }
    let auth = format!("bearer {KEY1}");
    let body = Some(VALID_HOOK.to_owned());
    srv.call(
        Method::POST,
        hooks,
        Some(&auth),
        Some("application/json"),
        body,
    )
    .await
    .expect(201, json!({"data": null}));
}

#[tokio::test]
async fn another_accounts_project_is_answered_like_a_missing_one() {
    let r = res(0.1, 0.2, "192.0.2.1", &at(0));
    let srv = Server::seeded(&fixture(vec![in_session("prj_1", "sess_1", &r)]));
    // The owner first, so that any cache of project owners is warm.
    srv.get(KEY1, "/v1/projects/prj_1")
        .await
        .expect(200, json!({"data": project1()}));
    let before = srv.get(KEY1, "/v1/results/prj_1/sess_1").await.json();

    for project in ["prj_1", "prj_missing"] {
        for path in [
            format!("/v1/results/{project}/sess_1"),
            format!("/v1/results/{project}/sess_1?limit=1"),
            format!("/v1/results/{project}/sess_1/general"),
            format!("/v1/projects/{project}"),
            format!("/v1/projects/{project}/webhooks"),
        ] {
            srv.get(KEY2, &path)
                .await
                .expect_error(404, "Project not found")
                .expect_no("link");
        }
        srv.post(
            KEY2,
            &format!("/v1/projects/{project}/webhooks"),
            VALID_HOOK,
        )
        .await
        .expect_error(404, "Project not found")
        .expect_no("location");
        srv.delete(KEY2, &format!("/v1/projects/{project}/webhooks/wh_seed"))
            .await
            .expect_error(404, "Project not found");
    }
    // And the other way round.
    srv.get(KEY1, "/v1/projects/prj_2")
        .await
        .expect_error(404, "Project not found");
    // Nothing was written or deleted.
    assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
    let after = srv.get(KEY1, "/v1/results/prj_1/sess_1").await.json();
    assert_eq!(after, before);
    srv.get(KEY2, "/v1/projects/prj_2/webhooks")
        .await
        .expect(200, json!({"data": []}));
}

#[tokio::test]
async fn invalid_path_ids_are_400() {
    let srv = Server::seeded(&fixture(vec![]));
    let long = "x".repeat(129);
    let too_long = |name: &str| format!("{name} must be at most 128 characters");
    let bad_char = |name: &str| BAD_ID.replace("projectId", name);
    let (get, post, delete) = (Method::GET, Method::POST, Method::DELETE);

    #[rustfmt::skip]
    let cases: Vec<(Method, String, String)> = vec![
        (get.clone(), "/v1/projects/bad%20id".into(), bad_char("projectId")),
        (get.clone(), "/v1/projects/a%2Fb".into(), bad_char("projectId")),
        (get.clone(), "/v1/projects/%C3%A9".into(), bad_char("projectId")),
        (get.clone(), "/v1/projects/a+b".into(), bad_char("projectId")),
        (get.clone(), format!("/v1/projects/{long}"), too_long("projectId")),
        (get.clone(), "/v1/results/bad%20id/sess_1".into(), bad_char("projectId")),
        (get.clone(), "/v1/results/prj_1/bad%20id".into(), bad_char("sessionId")),
        (get.clone(), "/v1/results/prj_1/a%2Fb".into(), bad_char("sessionId")),
        (get.clone(), format!("/v1/results/prj_1/{long}"), too_long("sessionId")),
        (get.clone(), "/v1/results/prj_1/a%2Fb/general".into(), bad_char("sessionId")),
        (get.clone(), format!("/v1/results/{long}/sess_1/general"), too_long("projectId")),
        (get.clone(), "/v1/projects/a%2Fb/webhooks".into(), bad_char("projectId")),
        (post.clone(), "/v1/projects/bad%20id/webhooks".into(), bad_char("projectId")),
        (post.clone(), format!("/v1/projects/{long}/webhooks"), too_long("projectId")),
        (delete.clone(), "/v1/projects/prj_1/webhooks/bad%20id".into(), bad_char("webhookId")),
        (delete.clone(), "/v1/projects/prj_1/webhooks/wh%2Fseed".into(), bad_char("webhookId")),
        (delete.clone(), format!("/v1/projects/prj_1/webhooks/{long}"), too_long("webhookId")),
        (delete, "/v1/projects/a%2Fb/webhooks/wh_seed".into(), bad_char("projectId")),
    ];
    let auth = bearer(KEY1);
    for (method, path, message) in cases {
        let body = (method == post).then(|| VALID_HOOK.to_owned());
        srv.call(method, &path, Some(&auth), Some("application/json"), body)
            .await
            .expect_error(400, &message);
    }
    assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
    // 128 characters of the allowed alphabet are a valid id.
    let max = format!("A-z.0:9_{}", "x".repeat(120));
    srv.get(KEY1, &format!("/v1/results/prj_1/{max}"))
        .await
        .expect(200, json!({"data": null}));
    srv.get(KEY1, &format!("/v1/projects/{max}"))
        .await
        .expect_error(404, "Project not found");
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405_with_allow() {
    let srv = Server::seeded(&fixture(vec![]));
    let auth = bearer(KEY1);
    let unknown = [
        "/",
        "/v1",
        "/v1/",
        "/plan",
        "/v2/plan",
        "/v1plan",
        "/v1/nope",
        "/v1/plan/",
        "/v1/plans",
        "/v1/results/prj_1",
        "/v1/results/prj_1/sess_1/general/extra",
        "/v1/results/prj_1/sess_1/",
        "/v1/projects/prj_1/hooks",
        "/v1/projects/a/b",
        "/v1/projects/prj_1/webhooks/wh_seed/x",
    ];
    for path in unknown {
        for a in [Some(auth.as_str()), None] {
            srv.call(Method::GET, path, a, None, None)
                .await
                .expect_error(404, "Not found");
        }
    }
    #[rustfmt::skip]
    let wrong_method = [
        (Method::PUT, "/v1/plan", "GET"),
        (Method::POST, "/v1/plan", "GET"),
        (Method::DELETE, "/v1/plan", "GET"),
        (Method::POST, "/v1/results/prj_1/sess_1", "GET"),
        (Method::DELETE, "/v1/results/prj_1/sess_1/general", "GET"),
        (Method::PUT, "/v1/projects/prj_1", "GET, PATCH"),
        (Method::PATCH, "/v1/projects/prj_1/webhooks", "GET, POST"),
        (Method::PUT, "/v1/projects/prj_1/webhooks", "GET, POST"),
        (Method::DELETE, "/v1/projects/prj_1/webhooks", "GET, POST"),
        (Method::PATCH, "/v1/projects/prj_1/webhooks/wh_seed", "DELETE"),
        (Method::GET, "/v1/projects/prj_1/webhooks/wh_seed", "DELETE"),
        (Method::POST, "/v1/projects/prj_1/webhooks/wh_seed", "DELETE"),
    ];
    for (method, path, allow) in wrong_method {
        let body = Some(VALID_HOOK.to_owned());
        let r = srv
            .call(method, path, Some(&auth), Some("application/json"), body)
            .await;
        r.expect_error(405, "Method not allowed");
        let allowed = r
            .header("allow")
            .unwrap_or_else(|| panic!("{}: no Allow", r.what));
        let mut allowed: Vec<&str> = allowed.split(',').map(str::trim).collect();
        allowed.sort_unstable();
        assert_eq!(allowed.join(", "), allow, "{}", r.what);
    }
    // Nothing was changed by the refused methods.
    assert_eq!(srv.hooks("prj_1").await, [seeded_hook()]);
}
