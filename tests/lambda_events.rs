//! The sample events in `events/` run through the Lambda entry points, exactly as the functions
//! receive them.
//!
//! Every `events/<name>.json` is what API Gateway (REST API, stage `v1`, Lambda proxy integration,
//! payload 1.0, TOKEN authorizer context) or, for `authorizer*.json`, the TOKEN authorizer sends to
//! the function built from `src/bin/<name>.rs`. A file with a suffix (`list-results-bad-limit.json`)
//! goes to the function named before the suffix:
//!
//! | event file                     | function (src/bin)   | code under test                          |
//! |--------------------------------|----------------------|------------------------------------------|
//! | list-results*.json             | list-results         | `handlers::ListResults`                 |
//! | session-score.json             | session-score        | `handlers::SessionScore`                |
//! | get-plan.json                  | get-plan             | `handlers::GetPlan`                     |
//! | get-project.json               | get-project          | `handlers::GetProject`                  |
//! | create-webhook*.json           | create-webhook       | `handlers::CreateWebhook`               |
//! | list-webhooks.json             | list-webhooks        | `handlers::ListWebhooks`                |
//! | delete-webhook.json            | delete-webhook       | `handlers::DeleteWebhook`               |
//! | create-project.json            | create-project       | `handlers::CreateProject`                |
//! | list-projects.json             | list-projects        | `handlers::ListProjects`                 |
//! | update-project.json            | update-project       | `handlers::UpdateProject`                |
//! | get-usage.json                 | get-usage            | `handlers::GetUsage`                     |
//! | list-sessions.json             | list-sessions        | `handlers::ListSessions`                 |
//! | get-stats.json                 | get-stats            | `handlers::GetStats`                     |
//! | dashboard.json                 | dashboard            | `http::insight::dashboard`               |
//! | fallback*.json                 | fallback             | `lambda::fallback`                       |
//! | authorizer*.json               | authorizer           | `lambda::authorizer`                     |
//! | seed.json                      | (data, not an event) | `seed::load`, before every test          |
//!
//! HTTP events are parsed with `lambda_http::request::from_str`, the same deserialiser the runtime
//! uses; authorizer events with serde into `ApiGatewayCustomAuthorizerRequest`, as `lambda_runtime`
//! does. Every test opens its own SQLite store in a temporary directory, seeded with
//! `events/seed.json`: tests share nothing. The same files serve
//! `cargo lambda invoke --data-file events/<name>.json <function>` and
//! `sam local invoke -e events/<name>.json`.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use aws_lambda_events::apigw::ApiGatewayCustomAuthorizerRequest;
use http::{HeaderMap, StatusCode, header};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::{Value, json};
use tempfile::TempDir;
use vigil::detect::Engine;
use vigil::domain::{Timestamp, UrlPolicy, WebhookId};
use vigil::http::{self as http_api, handlers};
use vigil::seed::{self, SeedReport};
use vigil::service::{Detecting, Vigil};
use vigil::store::SqliteStore;

/// The function each HTTP event file is meant for.
const HTTP_EVENTS: &[(&str, &str)] = &[
    ("list-results.json", "list-results"),
    ("list-results-paged.json", "list-results"),
    ("list-results-bad-limit.json", "list-results"),
    ("list-results-no-auth-context.json", "list-results"),
    ("session-score.json", "session-score"),
    ("get-plan.json", "get-plan"),
    ("get-project.json", "get-project"),
    ("create-webhook.json", "create-webhook"),
    ("create-webhook-private-url.json", "create-webhook"),
    ("list-webhooks.json", "list-webhooks"),
    ("delete-webhook.json", "delete-webhook"),
    ("create-project.json", "create-project"),
    ("list-projects.json", "list-projects"),
    ("update-project.json", "update-project"),
    ("get-usage.json", "get-usage"),
    ("create-event.json", "create-event"),
    ("list-events.json", "list-events"),
    ("get-event.json", "get-event"),
    ("collect.json", "collect"),
    ("agent-script.json", "agent-script"),
    ("list-sessions.json", "list-sessions"),
    ("get-stats.json", "get-stats"),
    ("dashboard.json", "dashboard"),
    ("fallback.json", "fallback"),
    ("fallback-wrong-method.json", "fallback"),
];
const AUTHORIZER_EVENTS: &[&str] = &[
    "authorizer.json",
    "authorizer-unknown-key.json",
    "authorizer-malformed.json",
];

/// The one result of `sess_1` in the seed, as the API shows it.
fn sess_1_result() -> Value {
    json!({
        "scoreBot": 0.02,
        "scoreProxyVpn": 0.91,
        "ipAddress": "203.0.113.7",
        "createdAt": "2026-11-21T10:00:00.000Z"
    })
}

fn wh_1() -> Value {
    json!({
        "id": "wh_1",
        "type": "proxy_vpn_detect",
        "url": "https://hooks.shop.example/vigil",
        "createdAt": "2026-11-21T00:00:00.000Z"
    })
}

// ---------------------------------------------------------------------------------------------
// Fixtures

fn events_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("events")
}

fn event_text(name: &str) -> String {
    let path = events_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn event_json(name: &str) -> Value {
    serde_json::from_str(&event_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// An HTTP event as the Lambda runtime hands it to the function.
fn request(name: &str) -> Request {
    lambda_http::request::from_str(&event_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A variant of an event file (another path parameter, query, body...).
fn request_from(event: &Value) -> Request {
    lambda_http::request::from_str(&event.to_string()).expect("event variant parses")
}

fn authorizer_event(name: &str) -> ApiGatewayCustomAuthorizerRequest {
    serde_json::from_str(&event_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The engine, built once for the whole binary: it is immutable, so tests still share no data.
static ENGINE: std::sync::LazyLock<Arc<Engine>> =
    std::sync::LazyLock::new(|| Arc::new(Engine::embedded().expect("the committed data loads")));

/// A fresh store in its own temporary directory, loaded with `events/seed.json`.
struct Fixture {
    app: Vigil<SqliteStore, Detecting>,
    _dir: TempDir,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = SqliteStore::open(dir.path().join("vigil.db")).expect("sqlite store");
    let app = Vigil::new(store, UrlPolicy::default()).with_engine(ENGINE.clone());
    let report = seed::load(&app, &event_text("seed.json"))
        .await
        .expect("events/seed.json loads");
    assert_eq!(
        report,
        SeedReport {
            accounts: 1,
            projects: 1,
            webhooks: 1,
            results: 1
        }
    );
    Fixture { app, _dir: dir }
}

/// A handler's response, its body parsed as JSON.
#[derive(Debug)]
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

impl Answer {
    fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers
            .get(name)
            .map(|v| v.to_str().expect("ASCII header"))
    }
}

/// Every answer has a JSON body and says so.
fn answer(res: Response<Body>) -> Answer {
    let (parts, body) = res.into_parts();
    let body: Value = serde_json::from_slice(body.as_ref()).unwrap_or_else(|e| {
        panic!(
            "body is not JSON ({e}): {:?}",
            String::from_utf8_lossy(body.as_ref())
        )
    });
    assert_eq!(
        parts
            .headers
            .get(header::CONTENT_TYPE)
            .map(|v| v.as_bytes()),
        Some(&b"application/json"[..]),
        "Content-Type of {body}"
    );
    Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

fn message(text: &str) -> Value {
    json!({ "message": text })
}

async fn list_webhooks(app: &Vigil<SqliteStore, Detecting>) -> Answer {
    answer(
        http_api::answer::<handlers::ListWebhooks, _, _>(app, request("list-webhooks.json")).await,
    )
}

// ---------------------------------------------------------------------------------------------
// The files themselves

/// Every file in events/ is one of the known events (or the seed), and each HTTP event parses into
/// the request its route expects: REST API context, stage, request id, method, path and parameters.
#[test]
fn every_event_file_is_known_and_parses_like_lambda_http() {
    let mut on_disk: Vec<String> = std::fs::read_dir(events_dir())
        .expect("events/ exists")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    on_disk.sort();
    let mut known: Vec<String> = HTTP_EVENTS
        .iter()
        .map(|(f, _)| *f)
        .chain(AUTHORIZER_EVENTS.iter().copied())
        .chain([
            "seed.json",
            // DynamoDB Streams events of webhook-dispatch, run by tests/dispatch_events.rs.
            "webhook-dispatch-crossing.json",
            "webhook-dispatch-no-crossing.json",
            "webhook-dispatch-replay.json",
        ])
        .map(str::to_owned)
        .collect();
    known.sort();
    assert_eq!(on_disk, known, "events/ and this test disagree");

    for (file, function) in HTTP_EVENTS {
        assert!(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src/bin")
                .join(format!("{function}.rs"))
                .is_file(),
            "{file}: no function {function}"
        );
        let raw = event_json(file);
        let req = request(file);
        assert_eq!(req.method().as_str(), raw["httpMethod"], "{file}");
        // lambda_http puts the stage in front of the path, as the client saw it.
        assert_eq!(
            req.uri().path(),
            format!("/v1{}", raw["path"].as_str().unwrap()),
            "{file}"
        );
        assert_eq!(
            req.uri().host(),
            Some("abcdef1234.execute-api.us-east-1.amazonaws.com")
        );
        let Some(RequestContext::ApiGatewayV1(ctx)) = req.request_context_ref() else {
            panic!("{file}: not an API Gateway REST event");
        };
        assert_eq!(ctx.stage.as_deref(), Some("v1"), "{file}");
        assert_eq!(
            ctx.resource_path.as_deref(),
            raw["resource"].as_str(),
            "{file}"
        );
        assert_eq!(
            ctx.request_id.as_deref(),
            raw["requestContext"]["requestId"].as_str(),
            "{file}"
        );
        let anonymous = [
            "list-results-no-auth-context.json",
            "collect.json",
            "agent-script.json",
            "dashboard.json",
        ];
        let expected_account = if anonymous.contains(file) {
            None
        } else {
            Some(&json!("acc_1"))
        };
        assert_eq!(
            ctx.authorizer.fields.get("accountId"),
            expected_account,
            "{file}"
        );
        let params: Vec<(String, String)> = req
            .path_parameters_ref()
            .map(|p| {
                p.iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let mut params = params;
        params.sort();
        let mut expected: Vec<(String, String)> = raw["pathParameters"]
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        expected.sort();
        assert_eq!(params, expected, "{file}");
    }

    for file in AUTHORIZER_EVENTS {
        let event = authorizer_event(file);
        assert_eq!(
            event.method_arn.as_deref(),
            Some("arn:aws:execute-api:us-east-1:123456789012:abcdef1234/v1/GET/plan"),
            "{file}"
        );
        assert_eq!(event_json(file)["type"], "TOKEN", "{file}");
    }
}

// ---------------------------------------------------------------------------------------------
// list-results

#[tokio::test]
async fn list_results_returns_the_seeded_result() {
    let f = fixture().await;
    let a = answer(
        http_api::answer::<handlers::ListResults, _, _>(&f.app, request("list-results.json")).await,
    );
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
    let a =
        answer(http_api::answer::<handlers::ListResults, _, _>(&f.app, request_from(&event)).await);
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
        let a = answer(
            http_api::answer::<handlers::ListResults, _, _>(&f.app, request_from(&event)).await,
        );
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
        event["multiValueQueryStringParameters"] = json!({ "limit": ["1"], "cursor": [cursor] });
    }
}

#[tokio::test]
async fn list_results_refuses_a_bad_limit_and_a_bad_cursor() {
    let f = fixture().await;
    let a = answer(
        http_api::answer::<handlers::ListResults, _, _>(
            &f.app,
            request("list-results-bad-limit.json"),
        )
        .await,
    );
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(a.body, message("limit must be an integer from 1 to 100"));

    let mut event = event_json("list-results.json");
    event["queryStringParameters"] = json!({ "cursor": "not-a-cursor" });
    event["multiValueQueryStringParameters"] = json!({ "cursor": ["not-a-cursor"] });
    let a =
        answer(http_api::answer::<handlers::ListResults, _, _>(&f.app, request_from(&event)).await);
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(a.body, message("cursor is not valid for this session"));
}

#[tokio::test]
async fn list_results_without_authorizer_context_is_401() {
    let f = fixture().await;
    let a = answer(
        http_api::answer::<handlers::ListResults, _, _>(
            &f.app,
            request("list-results-no-auth-context.json"),
        )
        .await,
    );
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert_eq!(a.body, message("Unauthorized"));
}

#[tokio::test]
async fn list_results_of_another_accounts_project_is_404() {
    let f = fixture().await;
    let mut event = event_json("list-results.json");
    event["requestContext"]["authorizer"]["principalId"] = json!("acc_2");
    event["requestContext"]["authorizer"]["accountId"] = json!("acc_2");
    let a =
        answer(http_api::answer::<handlers::ListResults, _, _>(&f.app, request_from(&event)).await);
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(a.body, message("Project not found"));
}

// ---------------------------------------------------------------------------------------------
// session-score

#[tokio::test]
async fn session_score_is_the_maximum_of_the_session() {
    let f = fixture().await;
    let a = answer(
        http_api::answer::<handlers::SessionScore, _, _>(&f.app, request("session-score.json"))
            .await,
    );
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
    let a = answer(
        http_api::answer::<handlers::SessionScore, _, _>(&f.app, request("session-score.json"))
            .await,
    );
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
    let a = answer(
        http_api::answer::<handlers::SessionScore, _, _>(&f.app, request_from(&event)).await,
    );
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(a.body, message("Session not found"));
}

// ---------------------------------------------------------------------------------------------
// get-plan, get-project

#[tokio::test]
async fn get_plan_returns_all_ten_fields() {
    let f = fixture().await;
    let a =
        answer(http_api::answer::<handlers::GetPlan, _, _>(&f.app, request("get-plan.json")).await);
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(
        a.body,
        json!({ "data": {
            "id": "plan_trial",
            "name": "Trial",
            "description": "14-day trial",
            "maxRps": 1000,
            "maxProjects": 3,
            "maxRequests": 100000,
            "expiresAt": "2099-12-05T00:00:00.000Z",
            "subscribedAt": "2026-11-21T00:00:00.000Z",
            "status": "trialing",
            "unsubscribedAt": null
        }})
    );
}

#[tokio::test]
async fn get_project_returns_exactly_eight_fields() {
    let f = fixture().await;
    let a = answer(
        http_api::answer::<handlers::GetProject, _, _>(&f.app, request("get-project.json")).await,
    );
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
            "createdAt": "2026-11-21T00:00:00.000Z"
        }})
    );
}

#[tokio::test]
async fn get_project_unknown_is_404_and_bad_id_is_400() {
    let f = fixture().await;
    let mut event = event_json("get-project.json");
    event["pathParameters"]["projectId"] = json!("prj_unknown");
    event["path"] = json!("/projects/prj_unknown");
    let a =
        answer(http_api::answer::<handlers::GetProject, _, _>(&f.app, request_from(&event)).await);
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(a.body, message("Project not found"));

    // API Gateway hands over path parameters URL-decoded.
    event["pathParameters"]["projectId"] = json!("prj 1");
    event["path"] = json!("/projects/prj%201");
    let a =
        answer(http_api::answer::<handlers::GetProject, _, _>(&f.app, request_from(&event)).await);
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    let text = a.body["message"].as_str().expect("message");
    assert!(text.starts_with("projectId "), "{text}");
    assert_eq!(a.body.as_object().map(|o| o.len()), Some(1));
}

// ---------------------------------------------------------------------------------------------
// webhooks

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
    let a = answer(
        http_api::answer::<handlers::CreateWebhook, _, _>(&f.app, request("create-webhook.json"))
            .await,
    );
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
    let again = answer(
        http_api::answer::<handlers::CreateWebhook, _, _>(&f.app, request("create-webhook.json"))
            .await,
    );
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
    let a = answer(
        http_api::answer::<handlers::CreateWebhook, _, _>(
            &f.app,
            request("create-webhook-private-url.json"),
        )
        .await,
    );
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
    let a = answer(
        http_api::answer::<handlers::CreateWebhook, _, _>(&f.app, request_from(&event)).await,
    );
    assert_eq!(a.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(a.body, message("Content-Type must be application/json"));
}

#[tokio::test]
async fn delete_webhook_removes_it_once() {
    let f = fixture().await;
    let a = answer(
        http_api::answer::<handlers::DeleteWebhook, _, _>(&f.app, request("delete-webhook.json"))
            .await,
    );
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body, json!({ "data": null }));
    assert_eq!(list_webhooks(&f.app).await.body, json!({ "data": [] }));

    let again = answer(
        http_api::answer::<handlers::DeleteWebhook, _, _>(&f.app, request("delete-webhook.json"))
            .await,
    );
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert_eq!(again.body, message("Webhook not found"));
}

// ---------------------------------------------------------------------------------------------
// authorizer

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
    let err = vigil::lambda::authorizer(&f.app, authorizer_event("authorizer-unknown-key.json"))
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

// ---------------------------------------------------------------------------------------------
// fallback

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

// ---------------------------------------------------------------------------------------------
// create-project, list-projects, update-project, get-usage

#[tokio::test]
async fn create_project_then_list_and_update_it() {
    let f = fixture().await;
    let created =
        http_api::answer::<handlers::CreateProject, _, _>(&f.app, request("create-project.json"))
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

    let a = answer(
        http_api::answer::<handlers::ListProjects, _, _>(&f.app, request("list-projects.json"))
            .await,
    );
    assert_eq!(a.status, StatusCode::OK);
    let ids: Vec<&str> = a.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["prj_1", p["id"].as_str().unwrap()]);

    let a = answer(
        http_api::answer::<handlers::UpdateProject, _, _>(&f.app, request("update-project.json"))
            .await,
    );
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body["data"]["id"], "prj_1");
    assert_eq!(a.body["data"]["disabled"], true);
}

#[tokio::test]
async fn get_usage_counts_the_period() {
    let f = fixture().await;
    let a = answer(
        http_api::answer::<handlers::GetUsage, _, _>(&f.app, request("get-usage.json")).await,
    );
    assert_eq!(a.status, StatusCode::OK);
    let d = &a.body["data"];
    // This request is the first of the period.
    assert_eq!(
        (d["requests"].as_u64(), d["remaining"].as_u64()),
        (Some(1), Some(99_999))
    );
    assert_eq!(d["maxRequests"], 100_000);
    assert!(d["periodStart"].as_str().unwrap() < d["periodEnd"].as_str().unwrap());
}

// ---------------------------------------------------------------------------------------------
// Ingestion: create-event, list-events, get-event, collect, agent-script

/// The seeded result of sess_1, as an event: no reasons, no engine.
fn sess_1_event() -> Value {
    let mut e = sess_1_result();
    e["id"] = json!("evt_1795255200000_1");
    e["sessionId"] = json!("sess_1");
    e["reasons"] = json!([]);
    e["engineVersion"] = Value::Null;
    e
}

#[tokio::test]
async fn create_event_evaluates_stores_and_locates_the_event() {
    let f = fixture().await;
    let a = answer(
        http_api::answer::<handlers::CreateEvent, _, _>(&f.app, request("create-event.json")).await,
    );
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
    let read =
        answer(http_api::answer::<handlers::GetEvent, _, _>(&f.app, request_from(&get)).await);
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(&read.body["data"], event);

    // Nothing is written for a body the route refuses.
    let mut bad = event_json("create-event.json");
    bad["body"] = json!(r#"{"ipAddress":"203.0.113.7","scoreBot":1}"#);
    bad["pathParameters"]["sessionId"] = json!("sess_9");
    let refused =
        answer(http_api::answer::<handlers::CreateEvent, _, _>(&f.app, request_from(&bad)).await);
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    let mut list = event_json("list-events.json");
    list["pathParameters"]["sessionId"] = json!("sess_9");
    let listed =
        answer(http_api::answer::<handlers::ListEvents, _, _>(&f.app, request_from(&list)).await);
    assert_eq!(listed.body, json!({"data": []}));
}

#[tokio::test]
async fn list_and_get_event_show_a_seeded_result_as_an_event() {
    let f = fixture().await;
    let listed = answer(
        http_api::answer::<handlers::ListEvents, _, _>(&f.app, request("list-events.json")).await,
    );
    assert_eq!(listed.status, StatusCode::OK);
    assert_eq!(listed.body, json!({"data": [sess_1_event()]}));
    let one = answer(
        http_api::answer::<handlers::GetEvent, _, _>(&f.app, request("get-event.json")).await,
    );
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.body, json!({"data": sess_1_event()}));
}

#[tokio::test]
async fn collect_takes_the_visit_from_the_request_and_answers_only_the_id() {
    let f = fixture().await;
    let a = answer(vigil::lambda::collect(&f.app, &request("collect.json")).await);
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
    let listed =
        answer(http_api::answer::<handlers::ListEvents, _, _>(&f.app, request_from(&list)).await);
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
    let r = answer(vigil::lambda::collect(&f.app, &request_from(&foreign)).await);
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.header(header::ACCESS_CONTROL_ALLOW_ORIGIN), None);
    let mut unknown = event_json("collect.json");
    unknown["body"] = json!(r#"{"publicKey":"pk_nope","sessionId":"sess_3"}"#);
    let r = answer(vigil::lambda::collect(&f.app, &request_from(&unknown)).await);
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.body, message("Unauthorized"));
}

#[test]
fn agent_script_is_served_with_its_etag() {
    let res = vigil::http::ingest::agent_script(&request("agent-script.json"));
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()[header::CONTENT_TYPE],
        "text/javascript; charset=utf-8"
    );
    let etag = res.headers()[header::ETAG].to_str().unwrap().to_owned();
    assert!(
        std::str::from_utf8(res.body().as_ref())
            .unwrap()
            .contains("Vigil.collect")
            || std::str::from_utf8(res.body().as_ref())
                .unwrap()
                .contains("collect: collect")
    );
    let mut again = event_json("agent-script.json");
    again["headers"]["If-None-Match"] = json!(etag);
    again["multiValueHeaders"]["If-None-Match"] = json!([etag]);
    let res = vigil::http::ingest::agent_script(&request_from(&again));
    assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
    assert!(res.body().as_ref().is_empty());
}

/// The metric lines the Lambda adapter writes (CloudWatch Embedded Metric Format): the request's
/// route, status class and latency, and the engine's evaluation with the project as a property.
#[tokio::test]
async fn the_lambda_adapter_writes_emf_metric_lines() {
    use tracing_subscriber::layer::SubscriberExt;

    #[derive(Clone, Default)]
    struct Buf(Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    let f = fixture().await;
    let buf = Buf::default();
    let subscriber =
        tracing_subscriber::registry().with(vigil::metrics::EmfLayer::new(buf.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    let res = vigil::lambda::answer_measured::<handlers::CreateEvent, _, _>(
        &f.app,
        request("create-event.json"),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let evaluation = lines
        .iter()
        .find(|l| l.get("EngineTime").is_some())
        .expect("an evaluation line");
    assert_eq!(evaluation["project"], "prj_1");
    assert_eq!(evaluation["Evaluations"], 1.0);
    let request_line = lines.last().expect("the request line last");
    assert_eq!(request_line["Route"], "CreateEvent");
    assert_eq!(request_line["StatusClass"], "2xx");
    assert_eq!(request_line["Requests"], 1.0);
    assert!(request_line["Latency"].as_f64().unwrap() >= 0.0);
    assert_eq!(
        request_line["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
        json!([["Route", "StatusClass"], ["StatusClass"]])
    );
}

#[tokio::test]
async fn list_sessions_filters_the_seeded_session_by_score() {
    let f = fixture().await;
    // The sample asks for sessions with scoreBot >= 0.5: the seeded one has 0.02.
    let none = answer(
        http_api::answer::<handlers::ListSessions, _, _>(&f.app, request("list-sessions.json"))
            .await,
    );
    assert_eq!(none.status, StatusCode::OK, "{}", none.body);
    assert_eq!(none.body, json!({"data": []}));
    let mut all = event_json("list-sessions.json");
    all["queryStringParameters"] = json!({"minScoreProxyVpn": "0.9"});
    all["multiValueQueryStringParameters"] = json!({"minScoreProxyVpn": ["0.9"]});
    let listed =
        answer(http_api::answer::<handlers::ListSessions, _, _>(&f.app, request_from(&all)).await);
    assert_eq!(
        listed.body,
        json!({"data": [{
            "sessionId": "sess_1",
            "scoreBot": 0.02,
            "scoreProxyVpn": 0.91,
            "lastSeenAt": "2026-11-21T10:00:00.000Z",
            "events": 1,
            "lastReasons": []
        }]})
    );
    assert_eq!(listed.header(header::LINK), None);
}

#[tokio::test]
async fn get_stats_counts_the_seeded_result_in_its_hour() {
    let f = fixture().await;
    let a = answer(
        http_api::answer::<handlers::GetStats, _, _>(&f.app, request("get-stats.json")).await,
    );
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
    let refused =
        answer(http_api::answer::<handlers::GetStats, _, _>(&f.app, request_from(&long)).await);
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        refused.body["message"],
        "the range may span at most 744 hours for granularity=hour"
    );
}

#[tokio::test]
async fn the_dashboard_is_a_static_page_with_a_strict_policy() {
    let res = vigil::http::insight::dashboard(&request("dashboard.json"));
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
