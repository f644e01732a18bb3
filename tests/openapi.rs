//! The OpenAPI document (`openapi.yaml`), the route table (`crates/http/src/routes.rs`) and the SAM
//! template (`template.yaml`) name the same routes and methods: none can drift from the others.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

fn read(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The document's operations, as `METHOD /path`.
fn documented() -> BTreeSet<String> {
    let doc: Value = serde_yaml_ng::from_str(&read("openapi.yaml")).expect("openapi.yaml is YAML");
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("a path item") {
            assert!(
                op["operationId"].is_string(),
                "{method} {path}: no operationId"
            );
            assert!(
                op["responses"].as_object().is_some_and(|r| !r.is_empty()),
                "{method} {path}: no responses"
            );
            ops.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    ops
}

/// The route table's routes.
fn routed() -> BTreeSet<String> {
    vigil_http::routes::ROUTES
        .iter()
        .map(|(m, p, _)| format!("{m} {p}"))
        .collect()
}

/// The template's API events with a method other than ANY (the fallback's), and their functions.
fn templated() -> BTreeSet<String> {
    // The template uses CloudFormation tags (!Ref, !GetAtt, !Sub), which plain YAML parses as
    // tagged values; only the functions' events are read here.
    let text = read("template.yaml");
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("template.yaml is YAML");
    let mut ops = BTreeSet::new();
    let resources = doc["Resources"].as_mapping().expect("Resources");
    for (_, r) in resources {
        if r["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let Some(events) = r["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for (_, e) in events {
            if e["Type"].as_str() != Some("Api") {
                continue;
            }
            let method = e["Properties"]["Method"].as_str().expect("Method");
            let path = e["Properties"]["Path"].as_str().expect("Path");
            if method != "ANY" {
                ops.insert(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    ops
}

#[test]
fn the_document_the_route_table_and_the_template_name_the_same_routes() {
    let routes = routed();
    assert_eq!(
        documented(),
        routes,
        "openapi.yaml and crates/http/src/routes.rs"
    );
    assert_eq!(
        templated(),
        routes,
        "template.yaml and crates/http/src/routes.rs"
    );
}

#[test]
fn every_documented_path_has_a_fallback_for_other_methods() {
    // API Gateway answers a missing method on a known resource with its own 403 unless the
    // fallback function takes ANY there; the fallback then answers 405 with Allow.
    let text = read("template.yaml");
    for op in routed() {
        let path = op.split_once(' ').expect("METHOD path").1;
        let line = format!("Path: {path}\n            Method: ANY");
        assert!(text.contains(&line), "no fallback ANY on {path}");
    }
}

/// The events route's `EventSignals` are the agent's `Signals`, closed: the same members.
#[test]
fn the_events_routes_signals_are_the_agents_closed() {
    let doc: Value = serde_yaml_ng::from_str(&read("openapi.yaml")).expect("openapi.yaml is YAML");
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["EventSignals"]["properties"],
        schemas["Signals"]["properties"]
    );
    assert_eq!(schemas["EventSignals"]["additionalProperties"], false);
    assert!(schemas["Signals"]["additionalProperties"].is_null());
}
