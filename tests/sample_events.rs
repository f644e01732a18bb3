//! The sample events themselves: every `events/*.json` is known, names its function, and parses
//! as the Lambda runtime parses it. What each event does is tested with its resource.

mod common;

use std::path::Path;

use common::lambda::*;
use lambda_http::RequestExt;
use lambda_http::request::RequestContext;
use serde_json::json;

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
            // DynamoDB Streams events of webhook-dispatch, run by tests/webhooks.rs (module dispatch).
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
            "collect-cloudfront.json",
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
