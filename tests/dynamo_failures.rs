//! DynamoDB failures reach clients as a bare 500 (or 503 when throttled), never with SDK text,
//! table names or other internal detail. Runs against the emulator `make test` starts.

mod common;

use http::StatusCode;
use lambda_http::{Body, Request, Response};
use vigil::lambda::answer;
use vigil_core::domain::UrlPolicy;
use vigil_core::service::vigil::Vigil;
use vigil_http::handlers;
use vigil_store_dynamo::DynamoStore;

async fn store(endpoint: &str, table: &str) -> DynamoStore {
    DynamoStore::new(common::dynamo_client(endpoint, |b| b).await, table)
}

fn request(path_params: &[(&str, &str)]) -> Request {
    common::api_request(Some("acc_1"), path_params, &[], Body::Empty)
}

fn assert_internal_error(res: Response<Body>) {
    assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(res.headers()["content-type"], "application/json");
    assert_eq!(
        res.body().as_ref(),
        br#"{"message":"Internal server error"}"#
    );
}

#[tokio::test]
async fn a_missing_table_is_a_bare_500_on_every_read_route() {
    let endpoint = common::emulator();
    let app = Vigil::new(
        store(&endpoint, "no_such_table_vigil_secret").await,
        UrlPolicy::default(),
    );
    let rs = [("projectId", "prj_1"), ("sessionId", "sess_1")];
    assert_internal_error(answer::<handlers::GetPlan, _, _>(&app, request(&[])).await);
    assert_internal_error(answer::<handlers::GetProject, _, _>(&app, request(&rs[..1])).await);
    assert_internal_error(answer::<handlers::ListResults, _, _>(&app, request(&rs)).await);
    assert_internal_error(answer::<handlers::SessionScore, _, _>(&app, request(&rs)).await);
    assert_internal_error(answer::<handlers::ListWebhooks, _, _>(&app, request(&rs[..1])).await);
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_bare_500() {
    // A port nothing listens on: connection refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let app = Vigil::new(
        store(&format!("http://127.0.0.1:{port}"), "vigil").await,
        UrlPolicy::default(),
    );
    assert_internal_error(answer::<handlers::GetPlan, _, _>(&app, request(&[])).await);
}
