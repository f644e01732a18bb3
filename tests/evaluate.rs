//! `vigil evaluate` as a customer runs it: JSON lines or combined log lines in, exactly one JSON
//! answer line per input line, in order; bad lines answered with a message in their place, and
//! exit status 1 when there was any.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn evaluate(args: &[&str], input: &str) -> Output {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
    cmd.args(["evaluate", "--data", data]).args(args);
    run(cmd, input)
}

/// Runs `cmd` with `input` on its standard input, to completion.
fn run(mut cmd: Command, input: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn answers(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn json_lines_are_answered_in_order_and_bad_ones_in_place() {
    let input = [
        r#"{"userAgent": "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)"}"#,
        r#"{"ipAddress": "not an address"}"#,
        r#"{}"#,
        r#"{"signals": {"webdriver": true, "somethingNewer": 1}}"#,
        "not json",
        r#"{"ip": "1.2.3.4"}"#,
    ]
    .join("\n");
    let out = evaluate(&[], &(input + "\n"));
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = answers(&out);
    assert_eq!(a.len(), 6);
    assert!(a[0]["scoreBot"].as_f64().unwrap() >= 0.5);
    assert_eq!(a[0]["reasons"][0]["code"], "bot_user_agent");
    assert!(
        a[0]["reasons"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("AI crawler")
    );
    assert!(
        a[1]["message"]
            .as_str()
            .unwrap()
            .starts_with("line 2: ipAddress: ")
    );
    assert_eq!(
        a[2],
        serde_json::json!({"scoreBot": 0.018, "scoreProxyVpn": 0.018, "reasons": []})
    );
    assert!(a[3]["scoreBot"].as_f64().unwrap() >= 0.99);
    assert!(a[4]["message"].as_str().unwrap().starts_with("line 5: "));
    assert!(
        a[5]["message"]
            .as_str()
            .unwrap()
            .contains("unknown field `ip`")
    );
    for ok in [&a[0], &a[2], &a[3]] {
        let keys: Vec<&String> = ok.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["reasons", "scoreBot", "scoreProxyVpn"]);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn combined_log_lines_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    std::fs::write(
        &log,
        "66.249.66.1 - - [22/Nov/2026:10:00:00 +0000] \"GET / HTTP/1.1\" 200 512 \"-\" \"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)\"\n\
         84.128.0.1 - - [22/Nov/2026:10:00:01 +0000] \"GET / HTTP/1.1\" 200 512 \"-\" \"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36\"\n\
         garbage\n",
    )
    .unwrap();
    let out = evaluate(&["--format", "combined", log.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(1));
    let a = answers(&out);
    assert_eq!(a.len(), 3);
    let codes: Vec<&str> = a[0]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"verified_bot"), "{codes:?}");
    assert!(a[1]["scoreBot"].as_f64().unwrap() < 0.5);
    assert!(a[2]["message"].as_str().unwrap().starts_with("line 3: "));

    // All good: exit 0.
    let out = evaluate(&[], "{}\n{}\n");
    assert!(out.status.success());
    assert_eq!(answers(&out).len(), 2);
    // A missing file is one error line.
    let out = evaluate(&["/nonexistent/file"], "");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/file"));
}

/// The binary carries its data: a user who installed it scores logs from any folder, and the
/// answers are those of the repository's data/.
#[test]
fn evaluate_runs_from_any_directory_with_its_own_data() {
    let dir = tempfile::tempdir().unwrap();
    let input = "{\"ipAddress\": \"3.5.140.1\", \"userAgent\": \"curl/8.5.0\"}\n";
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
    cmd.arg("evaluate")
        .current_dir(dir.path())
        .env_remove("VIGIL_DATA_DIR");
    let out = run(cmd, input);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(answers(&out), answers(&evaluate(&[], input)));
    assert!(answers(&out)[0]["scoreBot"].as_f64().unwrap() >= 0.9);
}

/// `--summary` adds a table on stderr; the answers on stdout are the same lines.
#[test]
fn summary_tables_lines_bots_proxies_and_reasons() {
    let input = "{\"userAgent\": \"curl/8.5.0\"}\n{\"userAgent\": \"Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)\"}\n{}\n";
    let out = evaluate(&["--summary"], input);
    assert!(out.status.success());
    assert_eq!(answers(&out), answers(&evaluate(&[], input)));
    let table = String::from_utf8(out.stderr).unwrap();
    for line in [
        "lines             3",
        "bad               0",
        "bots              2",
        "top reasons:",
    ] {
        assert!(table.contains(line), "{line:?} in\n{table}");
    }
    assert!(table.contains("bot_user_agent"), "{table}");
}
