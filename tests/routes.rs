//! A route is declared once, in `crates/http/src/routes.rs` (`declare_routes!`): its name (and so
//! its endpoint, `{module}::{name}`), method, path, whether it is public, and its Lambda binary.
//! Everything else about it is checked here against that table: its binary's source, its function
//! in `template.yaml` (the same methods and paths, the authorizer on exactly the developer routes),
//! the Makefile's list of functions, its sample event, and the "Add a route" recipe in
//! `docs/architecture.md`. (`tests/openapi.rs` checks `openapi.yaml` against the same table.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use vigil_http::routes::{ROUTES, Route};

fn read(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn exists(name: &str) -> bool {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name).exists()
}

/// A route's name, as its enum variant and its endpoint are called.
fn name(r: Route) -> String {
    format!("{r:?}")
}

/// The route's `METHOD /path` pairs in the table.
fn operations(r: Route) -> BTreeSet<String> {
    ROUTES
        .iter()
        .filter(|(_, _, x)| *x == r)
        .map(|(m, p, _)| format!("{m} {p}"))
        .collect()
}

/// What the template says of each function by its binary: its API events' `METHOD /path` (the
/// fallback's ANY aside) and whether each runs without the authorizer.
fn template_functions() -> BTreeMap<String, Vec<(String, bool)>> {
    let doc: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&read("template.yaml")).expect("template.yaml is YAML");
    let mut out = BTreeMap::new();
    for (_, r) in doc["Resources"].as_mapping().expect("Resources") {
        if r["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let Some(binary) = r["Metadata"]["BuildProperties"]["Binary"].as_str() else {
            continue;
        };
        let mut events = Vec::new();
        if let Some(map) = r["Properties"]["Events"].as_mapping() {
            for (_, e) in map {
                if e["Type"].as_str() != Some("Api") {
                    continue;
                }
                let method = e["Properties"]["Method"].as_str().expect("Method");
                if method == "ANY" {
                    continue;
                }
                let path = e["Properties"]["Path"].as_str().expect("Path");
                let public = e["Properties"]["Auth"]["Authorizer"].as_str() == Some("NONE");
                events.push((format!("{} {path}", method.to_uppercase()), public));
            }
        }
        out.insert(binary.to_owned(), events);
    }
    out
}

#[test]
fn every_route_has_its_binary_function_template_entry_and_sample_event() {
    let functions = template_functions();
    let makefile = read("Makefile");
    let lambdas: BTreeSet<&str> = makefile
        .split("LAMBDAS")
        .nth(1)
        .and_then(|rest| rest.split(":=").nth(1))
        .map(|list| {
            list.lines()
                .take_while(|l| !l.trim().is_empty() && !l.starts_with("LAMBDA_TARGET"))
                .flat_map(|l| l.split_whitespace())
                .filter(|w| *w != "\\")
                .collect()
        })
        .expect("the Makefile's LAMBDAS");
    for &r in Route::ALL {
        let binary = r.binary();
        let source = format!("src/bin/{binary}.rs");
        assert!(exists(&source), "{r:?}: no {source}");
        if !r.is_public() {
            // The binary serves exactly this route's endpoint.
            let text = read(&source);
            let endpoint = format!("{}::{}", r.module().unwrap(), name(r));
            assert!(
                text.contains(&format!("vigil_http::{endpoint}>")),
                "{source} does not run {endpoint}"
            );
            let event = format!("events/{binary}.json");
            assert!(exists(&event), "{r:?}: no sample event {event}");
        }
        assert!(
            lambdas.contains(binary),
            "{r:?}: {binary} not in the Makefile's LAMBDAS"
        );
        let events = functions
            .get(binary)
            .unwrap_or_else(|| panic!("{r:?}: no function with Binary: {binary} in template.yaml"));
        let templated: BTreeSet<String> = events.iter().map(|(op, _)| op.clone()).collect();
        assert_eq!(templated, operations(r), "{r:?}: template.yaml's events");
        for (op, public) in events {
            assert_eq!(
                *public,
                r.is_public(),
                "{r:?} {op}: the authorizer must guard exactly the developer routes"
            );
        }
    }
}

#[test]
fn every_binary_of_a_route_is_one_routes() {
    let mut seen = BTreeSet::new();
    for &r in Route::ALL {
        assert!(seen.insert(r.binary()), "{} serves two routes", r.binary());
    }
}

/// The recipe in `docs/architecture.md` names every place a new route touches, and every file
/// it names exists: when a place is added to or taken from the checks above, the recipe must
/// follow.
#[test]
fn the_add_a_route_recipe_names_every_place_the_checks_do() {
    let doc = read("docs/architecture.md");
    let recipe = doc
        .split("\n## Add a route\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("docs/architecture.md has an \"Add a route\" section");
    for place in [
        "crates/http/src/routes.rs",
        "endpoint!",
        "src/bin/",
        "template.yaml",
        "Makefile",
        "events/",
        "tests/common/lambda.rs",
        "openapi.yaml",
        "clients/node/src/openapi.ts",
        "clients/node/scripts/coverage.ts",
        "clients/python/tests/test_openapi_drift.py",
        "tests/routes.rs",
        "tests/openapi.rs",
    ] {
        assert!(recipe.contains(place), "the recipe does not name {place}");
    }
    // Every file path it quotes is there.
    for quoted in recipe.split('`').skip(1).step_by(2) {
        let looks_like_file = quoted.contains('/')
            && !quoted.contains(' ')
            && !quoted.contains('{')
            && !quoted.starts_with('/')
            && (quoted.ends_with(".rs")
                || quoted.ends_with(".yaml")
                || quoted.ends_with(".ts")
                || quoted.ends_with(".py")
                || quoted.ends_with('/'));
        if looks_like_file {
            assert!(
                exists(quoted),
                "the recipe names {quoted}, which is not there"
            );
        }
    }
}

/// Every Rust file `docs/architecture.md` names is there (a name or a path ending in `.rs`), so
/// the map of concerns to files cannot go stale unnoticed when a file moves.
#[test]
fn every_file_the_architecture_names_is_there() {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | ".cache" | "node_modules") {
                    walk(&path, out);
                }
            } else if name.ends_with(".rs") {
                out.push(path.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(root, &mut files);
    let doc = read("docs/architecture.md");
    for quoted in doc.split('`').skip(1).step_by(2) {
        if !quoted.ends_with(".rs") || quoted.contains(' ') || quoted.contains('{') {
            continue;
        }
        assert!(
            files.iter().any(|f| f.ends_with(&format!("/{quoted}"))),
            "docs/architecture.md names {quoted}, which no file is"
        );
    }
}
