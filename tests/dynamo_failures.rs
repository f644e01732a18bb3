//! DynamoDB failures reach clients as a bare 500 (or 503 when throttled), never with SDK text,
//! table names or other internal detail. Runs against the emulator `make test` starts.

use http::StatusCode;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::Value;
use vigil::domain::UrlPolicy;
use vigil::http::handlers;
use vigil::service::Vigil;
use vigil::store::DynamoStore;

async fn store(endpoint: &str, table: &str) -> DynamoStore {
    let conf = vigil::store::dynamo::sdk_config().await;
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&conf)
            .endpoint_url(endpoint)
            .build(),
    );
    DynamoStore::new(client, table)
}

fn request(path_params: &[(&str, &str)]) -> Request {
    let mut ctx = aws_lambda_events::apigw::ApiGatewayProxyRequestContext::default();
    ctx.authorizer
        .fields
        .insert("accountId".into(), Value::String("acc_1".into()));
    http::Request::new(Body::Empty)
        .with_path_parameters(
            path_params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<std::collections::HashMap<_, _>>(),
        )
        .with_request_context(RequestContext::ApiGatewayV1(ctx))
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
    let endpoint = std::env::var("VIGIL_TEST_DYNAMODB_ENDPOINT")
        .expect("VIGIL_TEST_DYNAMODB_ENDPOINT is not set: run with `make test`");
    let app = Vigil::new(
        store(&endpoint, "no_such_table_vigil_secret").await,
        UrlPolicy::default(),
    );
    let rs = [("projectId", "prj_1"), ("sessionId", "sess_1")];
    assert_internal_error(handlers::get_plan(&app, request(&[])).await);
    assert_internal_error(handlers::get_project(&app, request(&rs[..1])).await);
    assert_internal_error(handlers::list_results(&app, request(&rs)).await);
    assert_internal_error(handlers::session_score(&app, request(&rs)).await);
    assert_internal_error(handlers::list_webhooks(&app, request(&rs[..1])).await);
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
    assert_internal_error(handlers::get_plan(&app, request(&[])).await);
}
