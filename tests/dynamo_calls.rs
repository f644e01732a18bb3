//! DynamoDB round trips per request, counted by an SDK interceptor on the emulator `make test`
//! starts. These are the numbers the design promises: the plan's two counters (two UpdateItems
//! sent together: one round trip) and one data call per read, plus one ownership lookup that a
//! warm instance caches; two GetItems (key, account) per authorizer cache miss.
//! `cargo test --test dynamo_calls -- --nocapture` prints the table.

mod common;

use std::sync::{Arc, Mutex};

use aws_lambda_events::apigw::ApiGatewayCustomAuthorizerRequest;
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use http::StatusCode;
use lambda_http::Body;
use vigil::lambda::answer;
use vigil_core::domain::UrlPolicy;
use vigil_core::service::vigil::{Detecting, Vigil};
use vigil_http::{handlers, ingest, insight};
use vigil_store_dynamo::DynamoStore;

/// Records the operation of every request the client sends (retries included).
#[derive(Debug, Clone, Default)]
struct CallLog(Arc<Mutex<Vec<String>>>);

impl CallLog {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Intercept for CallLog {
    fn name(&self) -> &'static str {
        "CallLog"
    }

    /// Once per attempt sent on the wire; the operation is in the `X-Amz-Target` header
    /// (`DynamoDB_20120810.GetItem`).
    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let target = context
            .request()
            .headers()
            .get("x-amz-target")
            .unwrap_or("?");
        let op = target.rsplit('.').next().unwrap_or(target).to_owned();
        self.0.lock().unwrap().push(op);
        Ok(())
    }
}

const SEED: &str = r#"{
  "accounts": [{"id": "acc_1", "apiKeys": ["vgl_dev_example"],
                "plan": {"id": "plan_trial", "name": "Trial", "description": "14-day trial",
                         "maxRps": 1000, "maxProjects": 3, "maxRequests": 100000,
                         "expiresAt": null, "subscribedAt": "2026-11-21T00:00:00.000Z",
                         "status": "trialing", "unsubscribedAt": null}}],
  "projects": [{"id": "prj_1", "accountId": "acc_1", "name": "Shop", "domain": "shop.example",
                "apiKeyPublic": "pk_example", "apiKeyPrivate": "sk_example", "disabled": false,
                "createdAt": "2026-11-21T00:00:00.000Z"}],
  "results": [{"projectId": "prj_1", "sessionId": "sess_1", "scoreBot": 0.02, "scoreProxyVpn": 0.91,
               "ipAddress": "203.0.113.7", "createdAt": "2026-11-21T10:00:00.000Z"}]
}"#;

/// The service on a fresh seeded table, and the table's name.
async fn app(log: &CallLog) -> (Vigil<DynamoStore, Detecting>, String) {
    let l = log.clone();
    let client = common::dynamo_client(&common::emulator(), move |b| b.interceptor(l)).await;
    let table = common::unique_table("calls");
    let store = DynamoStore::new(client, table.clone());
    store.create_table().await.unwrap();
    // Seeded by another instance, so the one measured starts cold.
    let seeder = Vigil::new(store.clone(), UrlPolicy::default());
    vigil_core::seed::load(&seeder, SEED).await.unwrap();
    log.take();
    let engine = Arc::new(vigil_detect::Engine::embedded().unwrap());
    (
        Vigil::new(store, UrlPolicy::default()).with_engine(engine),
        table,
    )
}

/// A request with the context the authorizer returned (the account and its plan's terms).
fn req_with(
    context: &serde_json::Value,
    params: &[(&str, &str)],
    body: Body,
) -> lambda_http::Request {
    use lambda_http::RequestExt;
    use lambda_http::request::RequestContext;
    let mut req = common::api_request(Some("acc_1"), params, &[], body);
    if let (Some(RequestContext::ApiGatewayV1(ctx)), serde_json::Value::Object(fields)) =
        (req.request_context_ref().cloned(), context.clone())
    {
        let mut ctx = ctx;
        ctx.authorizer.fields.extend(fields);
        req = req.with_request_context(RequestContext::ApiGatewayV1(ctx));
    }
    req
}

#[tokio::test]
async fn round_trips_per_request() {
    let log = CallLog::default();
    let (app, table_name) = app(&log).await;
    let rs = [("projectId", "prj_1"), ("sessionId", "sess_1")];
    let p = [("projectId", "prj_1")];
    let mut table = Vec::new();
    let mut check = |route: &str, status: StatusCode, want_status: StatusCode, want: &[&str]| {
        let calls = log.take();
        assert_eq!(status, want_status, "{route}");
        // Calls sent together arrive in any order: compared as a multiset, listed in the order
        // of the round trips.
        let (mut got, mut wanted) = (calls.clone(), want.to_vec());
        got.sort_unstable();
        wanted.sort_unstable();
        assert_eq!(got, wanted, "{route}: {calls:?}");
        table.push(format!("{route:<44} {}", calls.join(" + ")));
    };

    // The authorizer: the key and its account, once per API Gateway cache miss.
    let mut event = ApiGatewayCustomAuthorizerRequest::default();
    event.authorization_token = Some("Bearer vgl_dev_example".into());
    event.method_arn = Some("arn:aws:execute-api:us-east-1:1:api/v1/GET/plan".into());
    let allowed = vigil::lambda::authorizer(&app, event).await;
    check(
        "authorizer",
        if allowed.is_ok() {
            StatusCode::OK
        } else {
            StatusCode::UNAUTHORIZED
        },
        StatusCode::OK,
        &["GetItem", "GetItem"],
    );
    let context = allowed.unwrap().context;
    let req = |params: &[(&str, &str)], body: Body| req_with(&context, params, body);

    let s = answer::<handlers::ListResults, _, _>(&app, req(&rs, Body::Empty))
        .await
        .status();
    check(
        "GET results (cold: ownership + page)",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "GetItem", "Query"],
    );
    let s = answer::<handlers::ListResults, _, _>(&app, req(&rs, Body::Empty))
        .await
        .status();
    check(
        "GET results (warm)",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "Query"],
    );
    let s = answer::<handlers::SessionScore, _, _>(&app, req(&rs, Body::Empty))
        .await
        .status();
    check(
        "GET results/general (warm)",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "GetItem"],
    );
    let s = answer::<handlers::GetPlan, _, _>(&app, req(&[], Body::Empty))
        .await
        .status();
    check(
        "GET plan",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "GetItem"],
    );
    let s = answer::<handlers::GetProject, _, _>(&app, req(&p, Body::Empty))
        .await
        .status();
    check(
        "GET project",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "GetItem"],
    );
    let s = answer::<handlers::ListWebhooks, _, _>(&app, req(&p, Body::Empty))
        .await
        .status();
    check(
        "GET webhooks (warm)",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "Query"],
    );
    let body = Body::Text(r#"{"type":"proxy_vpn_detect","url":"https://hooks.example/a"}"#.into());
    let created = answer::<handlers::CreateWebhook, _, _>(&app, req(&p, body)).await;
    check(
        "POST webhooks (warm)",
        created.status(),
        StatusCode::CREATED,
        &["UpdateItem", "UpdateItem", "TransactWriteItems"],
    );
    let id = created.headers()["location"]
        .to_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let dp = [("projectId", "prj_1"), ("webhookId", id.as_str())];
    let s = answer::<handlers::DeleteWebhook, _, _>(&app, req(&dp, Body::Empty))
        .await
        .status();
    check(
        "DELETE webhook (warm: read + transaction)",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "GetItem", "TransactWriteItems"],
    );

    // Ingestion: one transaction (the result and the session summary) after one read of the
    // summary; the project (for its owner and whether it is disabled) is read once per instance
    // and kept for a minute. The velocity counters go out with the summary's read: an UpdateItem
    // for each subject's hour and day (the address's and a project shard's; a device's too when
    // the visit has a device key) and one BatchGetItem of the windows before. No added round
    // trip.
    let ev = [("projectId", "prj_1"), ("sessionId", "sess_9")];
    let visit = r#"{"ipAddress":"185.220.101.1","userAgent":"curl/8.5.0"}"#;
    let s = answer::<ingest::CreateEvent, _, _>(&app, req(&ev, Body::Text(visit.into())))
        .await
        .status();
    check(
        "POST events (cold: project + velocity and summary + tx)",
        s,
        StatusCode::CREATED,
        &[
            "UpdateItem",
            "UpdateItem",
            "GetItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "BatchGetItem",
            "GetItem",
            "TransactWriteItems",
        ],
    );
    let created =
        answer::<ingest::CreateEvent, _, _>(&app, req(&ev, Body::Text(visit.into()))).await;
    check(
        "POST events (warm: velocity and summary + tx)",
        created.status(),
        StatusCode::CREATED,
        &[
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "BatchGetItem",
            "GetItem",
            "TransactWriteItems",
        ],
    );
    let event_id = created.headers()["location"]
        .to_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let s = answer::<ingest::ListEvents, _, _>(&app, req(&ev, Body::Empty))
        .await
        .status();
    check(
        "GET events (warm)",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "Query"],
    );
    let one = [
        ("projectId", "prj_1"),
        ("sessionId", "sess_9"),
        ("eventId", event_id.as_str()),
    ];
    let s = answer::<ingest::GetEvent, _, _>(&app, req(&one, Body::Empty))
        .await
        .status();
    check(
        "GET event (warm)",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "GetItem"],
    );
    // The browser route: the public key's project and its account's plan, once per instance
    // and minute; its own three counters (the source's and the project's second, the account's
    // period), the velocity counters (with the device's, since the agent's signals make a key)
    // and the summary's read at once; then the transaction.
    let collect = || {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/events/collect.json"))
                .unwrap();
        lambda_http::request::from_str(&text).unwrap()
    };
    let s = vigil::lambda::collect(&app, &Default::default(), collect())
        .await
        .status();
    check(
        "POST collect (cold: key + plan + 3 counters, velocity and summary + tx)",
        s,
        StatusCode::ACCEPTED,
        &[
            "GetItem",
            "GetItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "BatchGetItem",
            "GetItem",
            "TransactWriteItems",
        ],
    );
    let s = vigil::lambda::collect(&app, &Default::default(), collect())
        .await
        .status();
    check(
        "POST collect (warm: 3 counters, velocity and summary + tx)",
        s,
        StatusCode::ACCEPTED,
        &[
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "UpdateItem",
            "BatchGetItem",
            "GetItem",
            "TransactWriteItems",
        ],
    );

    // Projects and usage.
    let body = Body::Text(r#"{"name":"Second","domain":"second.example"}"#.into());
    let created = answer::<handlers::CreateProject, _, _>(&app, req(&[], body)).await;
    check(
        "POST projects (project, copy, counter)",
        created.status(),
        StatusCode::CREATED,
        &["UpdateItem", "UpdateItem", "TransactWriteItems"],
    );
    let s = answer::<handlers::ListProjects, _, _>(&app, req(&[], Body::Empty))
        .await
        .status();
    check(
        "GET projects",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "Query"],
    );
    let body = Body::Text(r#"{"disabled":true}"#.into());
    let s = answer::<handlers::UpdateProject, _, _>(&app, req(&p, body))
        .await
        .status();
    check(
        "PATCH project (read + transaction)",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "GetItem", "TransactWriteItems"],
    );
    let s = answer::<handlers::GetUsage, _, _>(&app, req(&[], Body::Empty))
        .await
        .status();
    check(
        "GET usage (every shard of the period in one Query)",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "Query"],
    );

    // Sessions and statistics: one Query each (ownership is cached by now).
    let s = answer::<insight::ListSessions, _, _>(&app, req(&p, Body::Empty))
        .await
        .status();
    check(
        "GET sessions (the sessions index)",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "Query"],
    );
    let s = answer::<insight::GetStats, _, _>(&app, req(&p, Body::Empty))
        .await
        .status();
    check(
        "GET stats (the range's items)",
        s,
        StatusCode::OK,
        &["UpdateItem", "UpdateItem", "Query"],
    );

    // A context from before the plan's terms were in it (a policy cached across a deploy): the
    // terms are read from the account.
    let s = answer::<handlers::GetProject, _, _>(
        &app,
        common::api_request(Some("acc_1"), &p, &[], Body::Empty),
    )
    .await
    .status();
    check(
        "GET project (older authorizer context)",
        s,
        StatusCode::OK,
        &["GetItem", "UpdateItem", "UpdateItem", "GetItem"],
    );

    // A cold instance answering /general first: counters, ownership, summary.
    let log2 = CallLog::default();
    let cold = app_on_same_data(&log2, &table_name).await;
    let s = answer::<handlers::SessionScore, _, _>(&cold, req(&rs, Body::Empty))
        .await
        .status();
    let calls = log2.take();
    assert_eq!(s, StatusCode::OK);
    assert_eq!(calls, ["UpdateItem", "UpdateItem", "GetItem", "GetItem"]);
    table.push(format!(
        "{:<44} {}",
        "GET results/general (cold)",
        calls.join(" + ")
    ));

    println!("\nDynamoDB calls per request\n{}", table.join("\n"));
}

/// A second service instance (a new cold start) on the same table.
async fn app_on_same_data(log: &CallLog, table: &str) -> Vigil<DynamoStore> {
    let l = log.clone();
    let client = common::dynamo_client(&common::emulator(), move |b| b.interceptor(l)).await;
    Vigil::new(DynamoStore::new(client, table), UrlPolicy::default())
}
