//! Projects, through every door: the handlers through their Lambda events, black-box against
//! `vigil serve` (created, listed and changed under `maxProjects`), and the `vigil projects`
//! command.

mod common;

mod lambda {
    //! The handlers through the Lambda events `get-project.json`, `create-project.json`,
    //! `list-projects.json` and `update-project.json`.

    use crate::common::lambda::*;
    use http::{StatusCode, header};
    use serde_json::json;
    use vigil_http::handlers;

    #[tokio::test]
    async fn get_project_returns_exactly_nine_fields() {
        let f = fixture().await;
        let a = call::<handlers::GetProject>(&f.app, request("get-project.json")).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(
            a.body,
            json!({ "data": {
                "id": "prj_1",
                "name": "Shop",
                "apiKeyPublic": "pk_example",
                "apiKeyPrivate": "sk_example",
                "domain": "shop.example",
                "disabled": false,
                "requireSessionToken": false,
                "webhookLegacySignature": true,
                "agents": {"allow": []},
                "sealedResults": false,
                "model": "latest",
                "calibration": null,
                "createdAt": "2026-11-21T00:00:00.000Z"
            }})
        );
    }

    /// `get-sealing-key.json` and `rotate-sealing-key.json` (issue 49): a project has no sealing
    /// key until one is made; a rotation makes the first, the next keeps the replaced one listed
    /// with the end of its overlap; another account's project is 404.
    #[tokio::test]
    async fn sealing_keys_are_listed_and_rotated() {
        let f = fixture().await;
        let a = call::<handlers::GetSealingKey>(&f.app, request("get-sealing-key.json")).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        assert_eq!(
            a.body,
            json!({"data": {"sealedResults": false, "keys": []}})
        );
        assert_eq!(a.header(header::CACHE_CONTROL), Some("no-store"));
        let first =
            call::<handlers::RotateSealingKey>(&f.app, request("rotate-sealing-key.json")).await;
        assert_eq!(first.status, StatusCode::OK, "{}", first.body);
        let keys = first.body["data"]["keys"].as_array().unwrap().clone();
        assert_eq!(keys.len(), 1);
        assert_eq!(
            (
                &keys[0]["kty"],
                &keys[0]["alg"],
                &keys[0]["enc"],
                &keys[0]["expiresAt"]
            ),
            (
                &json!("oct"),
                &json!("dir"),
                &json!("A256GCM"),
                &json!(null)
            )
        );
        let again = call::<handlers::GetSealingKey>(&f.app, request("get-sealing-key.json")).await;
        assert_eq!(again.body["data"]["keys"], json!(keys));
        let second =
            call::<handlers::RotateSealingKey>(&f.app, request("rotate-sealing-key.json")).await;
        let listed = second.body["data"]["keys"].as_array().unwrap().clone();
        assert_eq!(listed.len(), 2);
        assert_ne!(listed[0]["kid"], keys[0]["kid"]);
        assert_eq!(listed[1]["kid"], keys[0]["kid"]);
        assert!(listed[1]["expiresAt"].is_string(), "{}", second.body);

        let mut other = event_json("get-sealing-key.json");
        other["pathParameters"]["projectId"] = json!("prj_unknown");
        other["path"] = json!("/projects/prj_unknown/sealing-key");
        let a = call::<handlers::GetSealingKey>(&f.app, request_from(&other)).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND);
    }

    /// `put-label.json`, `get-label.json`, `list-labels.json`, `get-quality.json` and
    /// `delete-label.json` (issue 49):
    /// a session is labelled (idempotently), listed with what Vigil had said of it, counted in the
    /// quality report, and withdrawn; a session the project never saw, and bad labels, are refused.
    #[tokio::test]
    async fn labels_are_put_listed_measured_and_withdrawn() {
        let f = fixture().await;
        let put = call::<handlers::PutLabel>(&f.app, request("put-label.json")).await;
        assert_eq!(put.status, StatusCode::OK, "{}", put.body);
        let label = put.body["data"].clone();
        assert_eq!(
            (
                &label["sessionId"],
                &label["label"],
                &label["reason"],
                &label["note"]
            ),
            (
                &json!("sess_1"),
                &json!("human"),
                &json!("support_ticket"),
                &json!("A kiosk in the store")
            )
        );
        assert!(
            label["scoreBot"].is_number() && label["reasons"].is_array(),
            "{label}"
        );
        let again = call::<handlers::PutLabel>(&f.app, request("put-label.json")).await;
        assert_eq!(again.status, StatusCode::OK);
        let read = call::<handlers::GetLabel>(&f.app, request("get-label.json")).await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.body);
        assert_eq!(read.body["data"], again.body["data"]);
        let list = call::<handlers::ListLabels>(&f.app, request("list-labels.json")).await;
        assert_eq!(list.status, StatusCode::OK, "{}", list.body);
        assert_eq!(
            list.body["data"].as_array().unwrap().len(),
            1,
            "one label however often put"
        );
        let q = call::<handlers::GetQuality>(&f.app, request("get-quality.json")).await;
        assert_eq!(q.status, StatusCode::OK, "{}", q.body);
        assert_eq!(
            (&q.body["data"]["labelled"], &q.body["data"]["humans"]),
            (&json!(1), &json!(1))
        );

        // A session the project has no events of, and labels that are not one.
        let mut unknown = event_json("put-label.json");
        unknown["pathParameters"]["sessionId"] = json!("sess_never");
        unknown["path"] = json!("/projects/prj_1/sessions/sess_never/label");
        let a = call::<handlers::PutLabel>(&f.app, request_from(&unknown)).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND);
        assert_eq!(a.body, message("Session not found"));
        for (body, why) in [
            (r#"{"label":"robot"}"#, "`label` must be one of: bot, human"),
            (r#"{"label":"bot","reason":"Not A Code"}"#, "reason must be"),
            (r#"{"label":"bot","extra":1}"#, "extra"),
            (r#"{"label":"human","note":null}"#, "note"),
        ] {
            let mut bad = event_json("put-label.json");
            bad["body"] = json!(body);
            let a = call::<handlers::PutLabel>(&f.app, request_from(&bad)).await;
            assert_eq!(a.status, StatusCode::BAD_REQUEST, "{body}");
            assert!(
                a.body["message"].as_str().unwrap().contains(why),
                "{}",
                a.body
            );
        }

        let gone = call::<handlers::DeleteLabel>(&f.app, request("delete-label.json")).await;
        assert_eq!(gone.status, StatusCode::OK, "{}", gone.body);
        assert_eq!(gone.body, json!({"data": null}));
        let twice = call::<handlers::DeleteLabel>(&f.app, request("delete-label.json")).await;
        assert_eq!(twice.status, StatusCode::NOT_FOUND);
        assert_eq!(twice.body, message("Label not found"));
        let read = call::<handlers::GetLabel>(&f.app, request("get-label.json")).await;
        assert_eq!(read.status, StatusCode::NOT_FOUND);
        assert_eq!(read.body, message("Label not found"));
        let list = call::<handlers::ListLabels>(&f.app, request("list-labels.json")).await;
        assert_eq!(list.body["data"], json!([]));
    }

    #[tokio::test]
    async fn get_project_unknown_is_404_and_bad_id_is_400() {
        let f = fixture().await;
        let mut event = event_json("get-project.json");
        event["pathParameters"]["projectId"] = json!("prj_unknown");
        event["path"] = json!("/projects/prj_unknown");
        let a = call::<handlers::GetProject>(&f.app, request_from(&event)).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND);
        assert_eq!(a.body, message("Project not found"));

        // API Gateway hands over path parameters URL-decoded.
        event["pathParameters"]["projectId"] = json!("prj 1");
        event["path"] = json!("/projects/prj%201");
        let a = call::<handlers::GetProject>(&f.app, request_from(&event)).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST);
        let text = a.body["message"].as_str().expect("message");
        assert!(text.starts_with("projectId "), "{text}");
        assert_eq!(a.body.as_object().map(|o| o.len()), Some(1));
    }

    #[tokio::test]
    async fn create_project_then_list_and_update_it() {
        let f = fixture().await;
        let created = vigil::lambda::answer::<handlers::CreateProject, _, _>(
            &f.app,
            request("create-project.json"),
        )
        .await;
        let location = created.headers()[header::LOCATION]
            .to_str()
            .unwrap()
            .to_owned();
        let a = answer(created);
        assert_eq!(a.status, StatusCode::CREATED);
        let p = a.body["data"].clone();
        assert_eq!(
            location,
            format!("/v1/projects/{}", p["id"].as_str().unwrap())
        );
        assert_eq!(
            (p["name"].as_str(), p["domain"].as_str()),
            (Some("Blog"), Some("blog.example"))
        );

        let a = call::<handlers::ListProjects>(&f.app, request("list-projects.json")).await;
        assert_eq!(a.status, StatusCode::OK);
        let ids: Vec<&str> = a.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["prj_1", p["id"].as_str().unwrap()]);

        let a = call::<handlers::UpdateProject>(&f.app, request("update-project.json")).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.body["data"]["id"], "prj_1");
        assert_eq!(a.body["data"]["disabled"], true);
    }
}

mod black_box {
    //! Black-box against `vigil serve`.

    use crate::common;
    use common::api::*;
    use common::api::{Server, bearer};
    use common::plans::*;
    use reqwest::Method;
    use serde_json::{Value, json};

    #[tokio::test]
    async fn project_shows_exactly_its_fields() {
        let srv = Server::seeded(&fixture(vec![]));
        srv.get(KEY1, "/v1/projects/prj_1")
            .await
            .expect(200, json!({ "data": project1() }));
        // Times are shown in UTC with milliseconds, whatever the seed's spelling.
        let prj_2 = json!({"id": "prj_2", "name": "Other", "apiKeyPublic": "pk_other",
        "apiKeyPrivate": "sk_other", "domain": "other.example", "disabled": true,
        "requireSessionToken": false, "webhookLegacySignature": true,
        "agents": {"allow": []}, "sealedResults": false, "model": "latest", "calibration": null,
        "createdAt": "2026-11-21T10:00:00.500Z"});
        srv.get(KEY2, "/v1/projects/prj_2")
            .await
            .expect(200, json!({ "data": prj_2 }));
        srv.get(KEY1, "/v1/projects/prj_missing")
            .await
            .expect_error(404, "Project not found");
    }

    #[tokio::test]
    async fn projects_are_created_listed_and_changed_under_max_projects() {
        let srv = start(plan("trialing", 1000, 1000, 2));
        let created = create(&srv, " New shop ", "New.Example").await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        let p = created.json()["data"].clone();
        let id = p["id"].as_str().unwrap().to_owned();
        assert!(id.starts_with("prj_"));
        assert_eq!(
            created.header_value("location"),
            format!("/v1/projects/{id}")
        );
        assert_eq!(p.as_object().unwrap().len(), 13, "{p}");
        assert_eq!(p["requireSessionToken"], true, "on for new projects");
        assert_eq!(
            p["webhookLegacySignature"], true,
            "legacy signature on until turned off"
        );
        assert_eq!(
            (p["name"].as_str(), p["domain"].as_str()),
            (Some("New shop"), Some("new.example"))
        );
        assert_eq!(p["disabled"], false);
        assert!(p["apiKeyPublic"].as_str().unwrap().starts_with("pk_"));
        assert!(p["apiKeyPrivate"].as_str().unwrap().starts_with("sk_"));
        assert_eq!(
            srv.get(KEY, &format!("/v1/projects/{id}")).await.json()["data"],
            p
        );

        // The seeded project and the new one: the limit of two is reached.
        let listed = srv.get(KEY, "/v1/projects").await;
        let listed = listed.json();
        let ids: Vec<&str> = listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["prj_1", id.as_str()], "oldest first");
        let over = create(&srv, "Third", "third.example").await;
        assert_eq!(
            (over.status, over.message().as_str()),
            (403, "Project limit reached")
        );
        assert_eq!(
            srv.get(KEY, "/v1/projects").await.json()["data"]
                .as_array()
                .unwrap()
                .len(),
            2
        );

        // PATCH changes only what it names.
        let changed = send_json(
            &srv,
            Method::PATCH,
            &format!("/v1/projects/{id}"),
            &json!({"disabled": true, "name": "Renamed"}),
        )
        .await;
        assert_eq!(changed.status, 200);
        let mut want = p.clone();
        want["disabled"] = json!(true);
        want["name"] = json!("Renamed");
        assert_eq!(changed.json()["data"], want);
        assert_eq!(
            srv.get(KEY, &format!("/v1/projects/{id}")).await.json()["data"],
            want
        );
        // A disabled project still answers reads.
        assert_eq!(
            srv.get(KEY, &format!("/v1/projects/{id}/webhooks"))
                .await
                .status,
            200
        );
        // Another account's project is a missing one.
        let foreign = send_json(
            &srv,
            Method::PATCH,
            "/v1/projects/prj_2",
            &json!({"name": "Mine"}),
        )
        .await;
        assert_eq!(
            (foreign.status, foreign.message().as_str()),
            (404, "Project not found")
        );
        let other = srv.get(OTHER, "/v1/projects/prj_2").await;
        assert_eq!(other.json()["data"]["name"], "Other");
    }

    #[tokio::test]
    async fn bad_project_input_is_refused_and_writes_nothing() {
        let srv = start(plan("active", 1000, 1000, 10));
        let auth = bearer(KEY);
        let post = |body: String, content_type: &'static str| {
            srv.call(
                Method::POST,
                "/v1/projects",
                Some(&auth),
                Some(content_type),
                Some(body),
            )
        };
        let cases: Vec<(String, &str, u16, &str)> = vec![
            (
                "{\"name\":\"a\",\"domain\":\"a.example\"}".into(),
                "text/plain",
                415,
                "Content-Type must be application/json",
            ),
            (
                format!(
                    "{{\"name\":\"{}\",\"domain\":\"a.example\"}}",
                    "x".repeat(9000)
                ),
                "application/json",
                413,
                "Request body is too large",
            ),
            (
                "{".into(),
                "application/json",
                400,
                "Request body must be valid JSON",
            ),
            (
                "[]".into(),
                "application/json",
                400,
                "Request body must be a JSON object",
            ),
            (
                "{\"domain\":\"a.example\"}".into(),
                "application/json",
                400,
                "`name` is required",
            ),
            (
                "{\"name\":\"a\"}".into(),
                "application/json",
                400,
                "`domain` is required",
            ),
            (
                "{\"name\":1,\"domain\":\"a.example\"}".into(),
                "application/json",
                400,
                "`name` must be a string",
            ),
            (
                "{\"name\":\"\",\"domain\":\"a.example\"}".into(),
                "application/json",
                400,
                "`name` must be 1 to 100 characters without control characters",
            ),
            (
                "{\"name\":\"a\",\"domain\":\"https://a.example\"}".into(),
                "application/json",
                400,
                "`domain` must be a host name such as shop.example (letters, digits, hyphens and dots)",
            ),
            (
                "{\"name\":\"a\",\"domain\":\"a.example\",\"disabled\":true}".into(),
                "application/json",
                400,
                "Unknown field `disabled`: only `name`, `domain` and `requireSessionToken` are allowed",
            ),
        ];
        for (body, content_type, status, message) in cases {
            let a = post(body.clone(), content_type).await;
            assert_eq!(
                (a.status, a.message().as_str()),
                (status, message),
                "{body:.80}"
            );
        }
        let patch = |body: &str| {
            srv.call(
                Method::PATCH,
                "/v1/projects/prj_1",
                Some(&auth),
                Some("application/json"),
                Some(body.to_owned()),
            )
        };
        for (body, message) in [
            (
                "{}",
                "Request body must set at least one of `name`, `domain`, `disabled`, `requireSessionToken`, `webhookLegacySignature`, `agents`, `sealedResults` and `model`",
            ),
            ("{\"disabled\":\"yes\"}", "`disabled` must be true or false"),
            (
                "{\"id\":\"prj_x\"}",
                "Unknown field `id`: only `name`, `domain`, `disabled`, `requireSessionToken`, `webhookLegacySignature`, `agents`, `sealedResults` and `model` are allowed",
            ),
            (
                "{\"domain\":\"bad domain\"}",
                "`domain` must be a host name such as shop.example (letters, digits, hyphens and dots)",
            ),
            (
                "{\"model\":\"v1\"}",
                "`model` must be \"latest\" or \"shared\"",
            ),
            ("{\"model\":1}", "`model` must be a string"),
        ] {
            let a = patch(body).await;
            assert_eq!((a.status, a.message().as_str()), (400, message), "{body}");
        }
        let bad_id = send_json(
            &srv,
            Method::PATCH,
            "/v1/projects/a%20b",
            &json!({"name": "x"}),
        )
        .await;
        assert_eq!(bad_id.status, 400);
        // Nothing was written.
        let listed = srv.get(KEY, "/v1/projects").await;
        assert_eq!(listed.json()["data"].as_array().unwrap().len(), 1);
        assert_eq!(listed.json()["data"][0]["name"], "Shop");
    }

    #[tokio::test]
    async fn vigil_projects_create_and_list_on_the_command_line() {
        let srv = start(plan("active", 1000, 1000, 2));
        let run = |args: &[&str]| srv.cli(args);
        let out = run(&[
            "projects",
            "create",
            "--account",
            "acc_1",
            "--name",
            "Cli",
            "--domain",
            "cli.example",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let created: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(created["domain"], "cli.example");
        let out = run(&["projects", "list", "--account", "acc_1"]);
        let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 2);
        // Visible through the API, and the limit holds on the command line too.
        assert_eq!(srv.get(KEY, "/v1/projects").await.json()["data"], listed);
        let out = run(&[
            "projects",
            "create",
            "--account",
            "acc_1",
            "--name",
            "More",
            "--domain",
            "more.example",
        ]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("most projects"), "{err}");
        let out = run(&["projects", "list", "--account", "acc_nobody"]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("unknown account acc_nobody"));
        let out = run(&[
            "projects",
            "create",
            "--account",
            "acc_1",
            "--name",
            "X",
            "--domain",
            "not a domain",
        ]);
        assert!(!out.status.success());
    }
}
