//! Authentication, tenancy and routing, through every door: the authorizer and the fallback
//! through their Lambda events, the API Gateway seam's typed context, and black-box against
//! `vigil serve`.

mod common;

mod lambda {
    //! The authorizer, the fallback and a route without the authorizer's context, through their
    //! Lambda events.

    use crate::common::lambda::*;
    use aws_lambda_events::apigw::ApiGatewayCustomAuthorizerRequest;
    use http::{StatusCode, header};
    use serde_json::json;
    use vigil_http::handlers;

    #[tokio::test]
    async fn list_results_without_authorizer_context_is_401() {
        let f = fixture().await;
        let a = call::<handlers::ListResults>(&f.app, request("list-results-no-auth-context.json"))
            .await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED);
        assert_eq!(a.body, message("Unauthorized"));
    }

    #[tokio::test]
    async fn list_results_of_another_accounts_project_is_404() {
        let f = fixture().await;
        let mut event = event_json("list-results.json");
        event["requestContext"]["authorizer"]["principalId"] = json!("acc_2");
        event["requestContext"]["authorizer"]["accountId"] = json!("acc_2");
        let a = call::<handlers::ListResults>(&f.app, request_from(&event)).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND);
        assert_eq!(a.body, message("Project not found"));
    }

    #[tokio::test]
    async fn authorizer_allows_a_known_key_for_the_whole_stage() {
        let f = fixture().await;
        let res = vigil::lambda::authorizer(&f.app, authorizer_event("authorizer.json"))
            .await
            .expect("known key is allowed");
        let v = serde_json::to_value(&res).expect("response serialises");
        // The whole answer API Gateway receives: the policy covers every route of the stage (the
        // answer is cached per token), and the context carries the account to the handlers.
        assert_eq!(
            v,
            json!({
                "principalId": "acc_1",
                "policyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [{
                        "Action": ["execute-api:Invoke"],
                        "Effect": "Allow",
                        "Resource": ["arn:aws:execute-api:us-east-1:123456789012:abcdef1234/v1/*"]
                    }]
                },
                // The account, and its plan's terms for the pipeline's plan stage.
                "context": {
                    "accountId": "acc_1",
                    "planStatus": "trialing",
                    "planExpiresAt": "2099-12-05T00:00:00.000Z",
                    "planSubscribedAt": "2026-11-21T00:00:00.000Z",
                    "maxRps": "1000",
                    "maxRequests": "100000",
                    "maxProjects": "3"
                },
                "usageIdentifierKey": null
            })
        );

        // The scheme word is case-insensitive.
        let mut event = event_json("authorizer.json");
        event["authorizationToken"] = json!("bearer vgl_dev_example");
        let event: ApiGatewayCustomAuthorizerRequest = serde_json::from_value(event).unwrap();
        let res = vigil::lambda::authorizer(&f.app, event)
            .await
            .expect("lower-case scheme is allowed");
        assert_eq!(res.principal_id.as_deref(), Some("acc_1"));
    }

    #[tokio::test]
    async fn authorizer_refuses_an_unknown_key_with_unauthorized() {
        let f = fixture().await;
        let err =
            vigil::lambda::authorizer(&f.app, authorizer_event("authorizer-unknown-key.json"))
                .await
                .expect_err("unknown key is refused");
        // API Gateway answers 401 only for this exact error message.
        assert_eq!(err.to_string(), "Unauthorized");
    }

    #[tokio::test]
    async fn authorizer_refuses_malformed_headers_with_unauthorized() {
        let f = fixture().await;
        let err = vigil::lambda::authorizer(&f.app, authorizer_event("authorizer-malformed.json"))
            .await
            .expect_err("Basic scheme is refused");
        assert_eq!(err.to_string(), "Unauthorized");

        for token in [
            json!("Bearer"),
            json!("Bearer "),
            json!("vgl_dev_example"),
            json!("Bearer vgl_dev_example extra"),
            json!(null),
        ] {
            let mut event = event_json("authorizer.json");
            event["authorizationToken"] = token.clone();
            let event: ApiGatewayCustomAuthorizerRequest = serde_json::from_value(event).unwrap();
            let err = vigil::lambda::authorizer(&f.app, event)
                .await
                .expect_err("malformed token is refused");
            assert_eq!(err.to_string(), "Unauthorized", "{token}");
        }
    }

    #[tokio::test]
    async fn fallback_answers_unknown_routes_with_404() {
        let a = answer(vigil::lambda::fallback(request("fallback.json")).await);
        assert_eq!(a.status, StatusCode::NOT_FOUND);
        assert_eq!(a.body, message("Not found"));
        assert_eq!(a.header(header::ALLOW), None);
    }

    #[tokio::test]
    async fn fallback_answers_a_wrong_method_with_405_and_allow() {
        let a = answer(vigil::lambda::fallback(request("fallback-wrong-method.json")).await);
        assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(a.body, message("Method not allowed"));
        assert_eq!(a.header(header::ALLOW), Some("POST, GET"));

        // The same for a path with one method only.
        let mut event = event_json("fallback-wrong-method.json");
        event["resource"] = json!("/plan");
        event["path"] = json!("/plan");
        event["pathParameters"] = json!(null);
        event["httpMethod"] = json!("DELETE");
        event["requestContext"]["httpMethod"] = json!("DELETE");
        let a = answer(vigil::lambda::fallback(request_from(&event)).await);
        assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(a.header(header::ALLOW), Some("GET"));
    }
}

mod black_box {
    //! Black-box HTTP tests against the real `vigil serve` process (authentication, tenancy and routing). The answers checked are
    //! those of CONTRACT.md: status, the exact JSON body and the headers that matter.

    use crate::common;

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
}

mod gateway {
    //! The API Gateway seam: the typed context a function reads from API Gateway's request
    //! context. The authorizer-context JSON is read here and nowhere else.

    use crate::common::lambda::*;
    use serde_json::json;
    use vigil::gateway::request_context;
    use vigil_core::domain::PlanStatus;

    #[tokio::test]
    async fn the_authorizers_context_becomes_a_typed_principal_and_client() {
        let f = fixture().await;
        let ctx = request_context(&f.app, &request("list-results.json"))
            .await
            .unwrap();
        let principal = ctx.principal.expect("the authorizer's account");
        assert_eq!(principal.account.as_str(), "acc_1");
        assert_eq!(principal.terms.status, PlanStatus::Trialing);
        assert_eq!(
            (principal.terms.max_rps, principal.terms.max_requests),
            (1000, 100_000)
        );
        assert_eq!(ctx.client, Some("203.0.113.7".parse().unwrap()));
        // API Gateway's edge adds headers of its own: the client is never direct.
        assert!(!ctx.direct);
    }

    #[tokio::test]
    async fn a_public_route_has_a_client_and_no_principal() {
        let f = fixture().await;
        let ctx = request_context(&f.app, &request("collect.json"))
            .await
            .unwrap();
        assert_eq!(ctx.principal, None);
        assert_eq!(ctx.client, Some("81.2.69.142".parse().unwrap()));
        let ctx = request_context(&f.app, &request("list-results-no-auth-context.json"))
            .await
            .unwrap();
        assert_eq!(ctx.principal, None);
    }

    #[tokio::test]
    async fn a_context_cached_before_the_terms_reads_them_from_the_account() {
        let f = fixture().await;
        let mut event = event_json("list-results.json");
        let authorizer = &mut event["requestContext"]["authorizer"];
        *authorizer = json!({ "principalId": "acc_1", "accountId": "acc_1" });
        let ctx = request_context(&f.app, &request_from(&event))
            .await
            .unwrap();
        let principal = ctx.principal.expect("the account");
        let plan = f.app.plans().plan(&principal.account).await.unwrap();
        assert_eq!(principal.terms, plan.terms());
        // A garbled source address is no address, never a panic.
        event["requestContext"]["identity"]["sourceIp"] = json!("not an address");
        let ctx = request_context(&f.app, &request_from(&event))
            .await
            .unwrap();
        assert_eq!(ctx.client, None);
    }
}
