//! Clients generate cleanly from `openapi.yaml` and work, as integrators make them:
//! `openapi-python-client` (PyPI, in make test's virtualenv) and `openapi-typescript` with
//! `openapi-fetch` (npm, in .cache/test-node) generate without a warning (the text/plain form of
//! `/collect`, which only browsers' `sendBeacon` uses, aside), and each drives `vigil serve`: the
//! read routes' answers parse, and an event posted with signals comes back evaluated.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::api::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e} (run make test, which installs the generators)"));
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The generator's warnings, each as its first line, with the accepted one left out.
fn python_warnings(log: &str) -> Vec<String> {
    let mut warnings = Vec::new();
    let blocks: Vec<&str> = log.split("\n\n").collect();
    for (i, block) in blocks.iter().enumerate() {
        let first = block.trim().lines().next().unwrap_or("");
        if !(first.starts_with("WARNING") || first.starts_with("Unable to process")) {
            continue;
        }
        let next = blocks.get(i + 1).map_or("", |b| b.trim());
        // sendBeacon posts text/plain (no preflight); the generator cannot type that body.
        if first == "WARNING parsing POST /collect within default."
            && next.starts_with("Unsupported content type text/plain")
        {
            continue;
        }
        warnings.push(format!("{first} {}", next.lines().next().unwrap_or("")));
    }
    warnings
}

#[test]
fn generated_python_and_typescript_clients_drive_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let srv = Server::seeded(&fixture(vec![]));
    let base = format!("{}/v1", srv.origin);

    // Python: generated with the generator's defaults (no formatter hooks: none is installed).
    let config = out.join("config.yaml");
    std::fs::write(&config, "post_hooks: []\n").unwrap();
    let generated = run(
        Command::new(format!("{ROOT}/.cache/venv-test/bin/openapi-python-client"))
            .args(["generate", "--meta", "none", "--path"])
            .arg(Path::new(ROOT).join("openapi.yaml"))
            .arg("--output-path")
            .arg(out.join("py").join("vigil_client"))
            .arg("--config")
            .arg(&config),
    );
    let log = text(&generated);
    assert_eq!(python_warnings(&log), Vec::<String>::new(), "{log}");
    let driven = run(Command::new(format!("{ROOT}/.cache/venv-test/bin/python"))
        .arg(format!("{ROOT}/tests/clients/drive.py"))
        .arg(out.join("py"))
        .args([&base, KEY1, "prj_1", "client-py"]));
    let said = text(&driven);
    assert!(said.contains("python client: 14 answers parsed"), "{said}");

    // TypeScript: types from openapi-typescript, calls through openapi-fetch, checked by tsc
    // --strict, then run.
    let ts = out.join("ts");
    std::fs::create_dir_all(&ts).unwrap();
    let modules = format!("{ROOT}/.cache/test-node/node_modules");
    std::os::unix::fs::symlink(&modules, ts.join("node_modules")).unwrap();
    std::fs::copy(
        format!("{ROOT}/tests/clients/drive.mts"),
        ts.join("drive.mts"),
    )
    .unwrap();
    let generated = run(Command::new("node")
        .arg(format!("{modules}/openapi-typescript/bin/cli.js"))
        .arg(Path::new(ROOT).join("openapi.yaml"))
        .arg("-o")
        .arg(ts.join("vigil.d.mts")));
    let log = text(&generated);
    assert!(
        !log.to_lowercase().contains("warn") && !log.contains('⚠'),
        "openapi-typescript warned: {log}"
    );
    run(Command::new("node")
        .arg(format!("{modules}/typescript/bin/tsc"))
        .args([
            "--strict",
            "--target",
            "es2022",
            "--module",
            "nodenext",
            "--moduleResolution",
            "nodenext",
            "--skipLibCheck",
            "drive.mts",
        ])
        .current_dir(&ts));
    let driven = run(Command::new("node")
        .arg(ts.join("drive.mjs"))
        .args([&base, KEY1, "prj_1", "client-ts"])
        .current_dir(&ts));
    let said = text(&driven);
    assert!(said.contains("typescript client: 12 answers"), "{said}");
}
