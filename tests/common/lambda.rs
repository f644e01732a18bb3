//! The Lambda harness: the sample events in `events/` as the functions receive them, and a fresh
//! store seeded with `events/seed.json` per test.
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
//! | list-sessions.json             | list-sessions        | `insight::ListSessions`                 |
//! | get-stats.json                 | get-stats            | `insight::GetStats`                     |
//! | create-event.json              | create-event         | `ingest::CreateEvent`                  |
//! | list-events.json               | list-events          | `ingest::ListEvents`                   |
//! | get-event.json                 | get-event            | `ingest::GetEvent`                     |
//! | get-sealing-key.json           | get-sealing-key      | `handlers::GetSealingKey`                |
//! | rotate-sealing-key.json        | rotate-sealing-key   | `handlers::RotateSealingKey`             |
//! | put-label.json                 | put-label            | `handlers::PutLabel`                     |
//! | get-label.json                 | get-label            | `handlers::GetLabel`                     |
//! | delete-label.json              | delete-label         | `handlers::DeleteLabel`                  |
//! | list-deliveries.json           | list-deliveries      | `handlers::ListDeliveries`               |
//! | list-labels.json               | list-labels          | `handlers::ListLabels`                   |
//! | get-quality.json               | get-quality          | `handlers::GetQuality`                   |
//! | collect*.json                  | collect              | `lambda::collect`                        |
//! | agent-script.json              | agent-script         | `http::ingest::agent_script`             |
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
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};
use tempfile::TempDir;
use vigil_core::domain::UrlPolicy;
use vigil_core::seed::{self, SeedReport};
use vigil_core::service::vigil::{Detecting, Vigil};
use vigil_detect::Engine;
use vigil_http::Endpoint;
use vigil_store_sqlite::SqliteStore;

/// The function each HTTP event file is meant for.
pub const HTTP_EVENTS: &[(&str, &str)] = &[
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
    ("list-deliveries.json", "list-deliveries"),
    ("create-project.json", "create-project"),
    ("list-projects.json", "list-projects"),
    ("update-project.json", "update-project"),
    ("get-usage.json", "get-usage"),
    ("create-event.json", "create-event"),
    ("list-events.json", "list-events"),
    ("get-event.json", "get-event"),
    ("collect.json", "collect"),
    ("collect-cloudfront.json", "collect"),
    ("agent-script.json", "agent-script"),
    ("list-sessions.json", "list-sessions"),
    ("list-device-sessions.json", "list-device-sessions"),
    ("get-webhook-secret.json", "get-webhook-secret"),
    ("rotate-webhook-secret.json", "rotate-webhook-secret"),
    ("get-sealing-key.json", "get-sealing-key"),
    ("rotate-sealing-key.json", "rotate-sealing-key"),
    ("put-label.json", "put-label"),
    ("get-label.json", "get-label"),
    ("delete-label.json", "delete-label"),
    ("list-labels.json", "list-labels"),
    ("get-quality.json", "get-quality"),
    ("test-webhook.json", "test-webhook"),
    ("redeliver.json", "redeliver"),
    ("get-stats.json", "get-stats"),
    ("dashboard.json", "dashboard"),
    ("fallback.json", "fallback"),
    ("fallback-wrong-method.json", "fallback"),
];
pub const AUTHORIZER_EVENTS: &[&str] = &[
    "authorizer.json",
    "authorizer-unknown-key.json",
    "authorizer-malformed.json",
];

pub fn events_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("events")
}

pub fn event_text(name: &str) -> String {
    let path = events_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn event_json(name: &str) -> Value {
    serde_json::from_str(&event_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// An HTTP event as the Lambda runtime hands it to the function.
pub fn request(name: &str) -> Request {
    lambda_http::request::from_str(&event_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A variant of an event file (another path parameter, query, body...).
pub fn request_from(event: &Value) -> Request {
    lambda_http::request::from_str(&event.to_string()).expect("event variant parses")
}

pub fn authorizer_event(name: &str) -> ApiGatewayCustomAuthorizerRequest {
    serde_json::from_str(&event_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The engine, built once for the whole binary: it is immutable, so tests still share no data.
pub static ENGINE: std::sync::LazyLock<Arc<Engine>> =
    std::sync::LazyLock::new(|| Arc::new(Engine::embedded().expect("the committed data loads")));

/// A fresh store in its own temporary directory, loaded with `events/seed.json`.
pub struct Fixture {
    pub app: Vigil<SqliteStore, Detecting>,
    _dir: TempDir,
}

pub async fn fixture() -> Fixture {
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

impl Fixture {
    /// The same fixture, its service changed by `f` (a fetcher, a clock).
    pub fn map(
        self,
        f: impl FnOnce(Vigil<SqliteStore, Detecting>) -> Vigil<SqliteStore, Detecting>,
    ) -> Self {
        Self {
            app: f(self.app),
            _dir: self._dir,
        }
    }

    /// Another instance of the service on the same store, with its own memory: what a second
    /// Lambda instance would find.
    pub fn twin(&self) -> Vigil<SqliteStore, Detecting> {
        let store = SqliteStore::open(self._dir.path().join("vigil.db")).expect("sqlite store");
        Vigil::new(store, UrlPolicy::default()).with_engine(ENGINE.clone())
    }
}

/// A handler's response, its body parsed as JSON.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Answer {
    pub fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers
            .get(name)
            .map(|v| v.to_str().expect("ASCII header"))
    }
}

/// What the function of endpoint `E` answers to `req` (the Lambda door: the API Gateway seam,
/// then the pipeline), read by [`answer`].
pub async fn call<E: Endpoint<SqliteStore, Detecting>>(
    app: &Vigil<SqliteStore, Detecting>,
    req: Request,
) -> Answer {
    answer(vigil::lambda::answer::<E, _, _>(app, req).await)
}

/// Every answer has a JSON body and says so.
pub fn answer(res: Response<Body>) -> Answer {
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

pub fn message(text: &str) -> Value {
    json!({ "message": text })
}

/// The one result of `sess_1` in the seed, as the API shows it.
pub fn sess_1_result() -> Value {
    json!({
        "scoreBot": 0.02,
        "scoreProxyVpn": 0.91,
        "ipAddress": "203.0.113.7",
        "createdAt": "2026-11-21T10:00:00.000Z"
    })
}
