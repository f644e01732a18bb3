//! Helpers shared by the integration tests: a DynamoDB store on the emulator `make test` starts,
//! and API Gateway proxy requests as the authorizer leaves them.
#![allow(dead_code)]

pub mod api;
pub mod lambda;
pub mod plans;
pub mod serve;

use std::collections::HashMap;

use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt};
use serde_json::Value;
use vigil_store_dynamo::DynamoStore;

/// The emulator's address; the DynamoDB tests fail rather than skip without it.
pub fn emulator() -> String {
    std::env::var("VIGIL_TEST_DYNAMODB_ENDPOINT").expect(
        "VIGIL_TEST_DYNAMODB_ENDPOINT is not set: run the DynamoDB tests with `make test`, \
         which starts the emulator",
    )
}

/// A DynamoDB client for `endpoint`, configured as the functions configure theirs.
pub async fn dynamo_client(
    endpoint: &str,
    customise: impl FnOnce(aws_sdk_dynamodb::config::Builder) -> aws_sdk_dynamodb::config::Builder,
) -> aws_sdk_dynamodb::Client {
    let conf = vigil_store_dynamo::dynamo::sdk_config().await;
    let builder = aws_sdk_dynamodb::config::Builder::from(&conf).endpoint_url(endpoint);
    aws_sdk_dynamodb::Client::from_conf(customise(builder).build())
}

/// A store on a new table of its own in the emulator. Its attempts may take 30 s: the production
/// timeouts (2 s an attempt) are for DynamoDB, and one emulator process serving every parallel
/// test on two cores can take longer, when the SDK would retry a write the emulator has already
/// applied and the exact-counter tests would count it twice.
pub async fn fresh_dynamo(name: &str) -> DynamoStore {
    let patient = aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
        .connect_timeout(std::time::Duration::from_secs(5))
        .operation_attempt_timeout(std::time::Duration::from_secs(30))
        .operation_timeout(std::time::Duration::from_secs(60))
        .build();
    let client = dynamo_client(&emulator(), |b| b.timeout_config(patient)).await;
    let store = DynamoStore::new(client, unique_table(name));
    store.create_table().await.unwrap();
    store
}

/// `2026-11-21T00:00:00.000Z` plus `secs` seconds, as the API writes times.
pub fn at(secs: impl Into<i64>) -> String {
    let base = vigil_core::domain::Timestamp::from_unix_millis(1_795_219_200_000).unwrap();
    vigil_core::domain::Timestamp::from_unix_millis(base.unix_millis() + secs.into() * 1000)
        .unwrap()
        .to_string()
}

/// Ten in the morning of that day, in seconds: the time most fixtures write results at.
pub const TEN_AM: i64 = 36_000;

/// The Standard Webhooks `webhook-id` of one session's crossing delivered to one webhook.
pub fn delivery_id(project: &str, session: &str, webhook: &str) -> String {
    vigil_core::domain::DeliveryId::for_crossing(
        &vigil_core::domain::ProjectId::parse(project).unwrap(),
        &vigil_core::domain::SessionId::parse(session).unwrap(),
        &vigil_core::domain::WebhookId::parse(webhook).unwrap(),
    )
    .as_str()
    .to_owned()
}

pub fn unique_table(name: &str) -> String {
    format!("t_{name}_{}", vigil_core::domain::token::random_base62(8))
}

/// A request as API Gateway hands it to a function after the authorizer allowed `account`.
pub fn api_request(
    account: Option<&str>,
    path_params: &[(&str, &str)],
    query: &[(&str, &str)],
    body: Body,
) -> Request {
    let mut ctx = aws_lambda_events::apigw::ApiGatewayProxyRequestContext::default();
    if let Some(account) = account {
        ctx.authorizer
            .fields
            .insert("accountId".into(), Value::String(account.into()));
    }
    let map = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<HashMap<_, _>>()
    };
    http::Request::builder()
        .header("content-type", "application/json")
        .body(body)
        .unwrap()
        .with_path_parameters(map(path_params))
        .with_query_string_parameters(map(query))
        .with_request_context(RequestContext::ApiGatewayV1(ctx))
}
