//! The metric lines the Lambda adapter writes (CloudWatch EMF) for a request that evaluates a
//! visit. Alone in its test binary on purpose: tracing caches each call site's interest process-
//! wide, so a test running beside it on another thread, reaching the same call sites without a
//! subscriber, could make this one miss its lines.

mod common;

use std::sync::Arc;

use common::lambda::*;
use http::StatusCode;
use serde_json::{Value, json};
use vigil_http::ingest;

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
        tracing_subscriber::registry().with(vigil_core::metrics::EmfLayer::new(buf.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    let res = vigil::lambda::answer_measured::<ingest::CreateEvent, _, _>(
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
