//! Black-box HTTP tests against the real `vigil serve` process (the `vigil` command beside the server: serve, results add, seed). The answers checked are
//! those of CONTRACT.md: status, the exact JSON body and the headers that matter.

mod common;

use common::api::*;
use common::at;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The `vigil` command

#[tokio::test]
async fn serve_without_seed_creates_a_demo_account_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("vigil.db");
    let srv = Server::start(&db, None);
    let origin = srv.origin.clone();
    // Once it answers, everything it prints at start-up has been printed.
    srv.get("vgl_not_the_demo_key", "/v1/plan")
        .await
        .expect_error(401, "Unauthorized");
    let lines = srv.stop();
    let keys: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.starts_with("vgl_"))
        .collect();
    assert_eq!(keys.len(), 1, "one key line expected in {lines:#?}");
    let key = keys[0].to_owned();
    assert!(key.len() > 30 && valid_id(&key), "{key}");
    let plan_curl = format!("{origin}/v1/plan");
    assert!(lines.iter().any(|l| l.contains(&plan_curl)), "{lines:#?}");

    // Restarted on the same (no longer empty) store: no new demo account, the key still works.
    let srv = Server::start(&db, None);
    let r = srv.get(&key, "/v1/plan").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let plan = r.json()["data"].clone();
    assert_eq!(plan.as_object().unwrap().len(), 10, "{plan}");
    assert_eq!(
        (&plan["id"], &plan["status"]),
        (&json!("plan_trial"), &json!("trialing"))
    );

    // The demo's day was judged by the engine: `sess_proxy` came from home, then through a VPN.
    let r = srv.get(&key, "/v1/results/prj_demo/sess_proxy").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let data = r.json()["data"].clone();
    let times = [&data[0]["createdAt"], &data[1]["createdAt"]].map(|t| t.as_str().unwrap_or(""));
    assert!(times.iter().all(|t| is_api_timestamp(t)), "{data}");
    assert!(times[0] > times[1], "newest first: {data}");
    assert_eq!(
        [&data[0]["ipAddress"], &data[1]["ipAddress"]],
        [&json!("5.253.204.162"), &json!("81.2.69.23")]
    );
    let pv = |i: usize| data[i]["scoreProxyVpn"].as_f64().unwrap();
    assert!(pv(0) >= 0.9 && pv(1) < 0.5, "{data}");
    let general = srv
        .get(&key, "/v1/results/prj_demo/sess_proxy/general")
        .await;
    assert_eq!(
        general.json()["data"]["scoreProxyVpn"],
        data[0]["scoreProxyVpn"]
    );
    // And its events say why.
    let r = srv
        .get(&key, "/v1/projects/prj_demo/sessions/sess_proxy/events")
        .await;
    let codes = r.json()["data"][0]["reasons"].to_string();
    assert!(codes.contains("vpn_range"), "{codes}");
    let lines = srv.stop();
    assert!(!lines.iter().any(|l| l.contains("vgl_")), "{lines:#?}");
}

/// Production (issue 61): `--no-demo-account` leaves an empty store empty, says how to load
/// accounts, and still serves; the demo's account and day are never made.
#[tokio::test]
async fn serve_with_no_demo_account_leaves_an_empty_store_empty() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("vigil.db");
    let srv = Server::start_with(&db, None, &["--no-demo-account"]);
    srv.get("vgl_anything", "/v1/plan")
        .await
        .expect_error(401, "Unauthorized");
    let stderr = srv.served.stderr();
    let lines = srv.stop();
    assert!(!lines.iter().any(|l| l.contains("vgl_")), "{lines:#?}");
    assert!(stderr.contains("the store is empty"), "{stderr}");
    // Started again without the flag, the store is still empty: the demo account is made then.
    let srv = Server::start(&db, None);
    srv.get("vgl_anything", "/v1/plan")
        .await
        .expect_error(401, "Unauthorized");
    let lines = srv.stop();
    assert!(
        lines.iter().any(|l| l.trim().starts_with("vgl_")),
        "{lines:#?}"
    );
}

/// A starter that stops reading stdout (a script that took the address and closed the pipe) must
/// not take the server down: its banner write fails, and it keeps serving.
#[tokio::test]
async fn serve_keeps_serving_when_its_stdout_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut child = vigil_command(&dir.path().join("vigil.db"))
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Closed before the server has written anything.
    drop(child.stdout.take());
    let client = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port}/v1/plan");
    let mut status = None;
    for _ in 0..300 {
        if let Ok(r) = client.get(&url).bearer_auth("vgl_unknown").send().await {
            status = Some(r.status().as_u16());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let exited = child.try_wait().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status, Some(401), "the server answered");
    assert!(exited.is_none(), "the server exited: {exited:?}");
}

#[tokio::test]
async fn results_add_while_serving_is_visible_through_the_api() {
    let old = res(0.5, 0.1, "192.0.2.1", "2026-11-21T10:00:00.000Z");
    let srv = Server::seeded(&fixture(vec![in_session("prj_1", "sess_cli", &old)]));
    let out = srv.cli_line(
        "results add --project prj_1 --session sess_cli --score-bot 0.3 --score-proxy-vpn 0.8 \
         --ip 2001:db8::9 --created-at 2026-11-21T11:00:00Z",
    );
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("added result") && stdout.contains("prj_1/sess_cli"),
        "{stdout}"
    );
    let new = res(0.3, 0.8, "2001:db8::9", "2026-11-21T11:00:00.000Z");
    srv.get(KEY1, "/v1/results/prj_1/sess_cli")
        .await
        .expect(200, json!({"data": [new, old]}));
    srv.get(KEY1, "/v1/results/prj_1/sess_cli/general")
        .await
        .expect(200, general(0.5, 0.8));

    // A session the server has never seen, written while it runs, at the current time.
    assert_ok(&srv.cli_line(
        "results add --project prj_1b --session sess_new --score-bot 1 --score-proxy-vpn 0 \
         --ip 203.0.113.50",
    ));
    let r = srv.get(KEY1, "/v1/results/prj_1b/sess_new").await;
    let created_at = r.json()["data"][0]["createdAt"].clone();
    let created_at = created_at.as_str().unwrap_or_default();
    assert!(is_api_timestamp(created_at), "{}", r.body);
    let expected = res(1.0, 0.0, "203.0.113.50", created_at);
    r.expect(200, json!({ "data": [expected] }));
    srv.get(KEY1, "/v1/results/prj_1b/sess_new/general")
        .await
        .expect(200, general(1.0, 0.0));
}

#[tokio::test]
async fn results_add_refuses_bad_input_and_writes_nothing() {
    let old = res(0.5, 0.1, "192.0.2.1", "2026-11-21T10:00:00.000Z");
    let srv = Server::seeded(&fixture(vec![in_session("prj_1", "sess_cli", &old)]));
    let add = |project: &str, session: &str, bot: &str, pv: &str, ip: &str, at: &str| {
        srv.cli(&[
            "results",
            "add",
            &format!("--project={project}"),
            &format!("--session={session}"),
            &format!("--score-bot={bot}"),
            &format!("--score-proxy-vpn={pv}"),
            &format!("--ip={ip}"),
            &format!("--created-at={at}"),
        ])
    };
    let t = "2026-11-21T12:00:00Z";
    #[rustfmt::skip]
    let cases = [
        (add("prj_1", "sess_cli", "1.5", "0.9", "192.0.2.2", t), "--score-bot"),
        (add("prj_1", "sess_cli", "0.1", "-0.1", "192.0.2.2", t), "--score-proxy-vpn"),
        (add("prj_1", "sess_cli", "NaN", "0.9", "192.0.2.2", t), "--score-bot"),
        (add("prj_1", "sess_cli", "0.1", "0.9", "999.1.1.1", t), "--ip"),
        (add("prj_1", "sess_cli", "0.1", "0.9", "not-an-ip", t), "--ip"),
        (add("prj_1", "bad session", "0.1", "0.9", "192.0.2.2", t), "--session"),
        (add("prj_1", "sess_cli", "0.1", "0.9", "192.0.2.2", "yesterday"), "--created-at"),
        (add("prj_nope", "sess_cli", "0.1", "0.9", "192.0.2.2", t), "project not found"),
            ];
    for (out, needle) in &cases {
        assert_cli_error(out, needle);
    }

    srv.get(KEY1, "/v1/results/prj_1/sess_cli")
        .await
        .expect(200, json!({"data": [old]}));
    srv.get(KEY1, "/v1/results/prj_1/sess_cli/general")
        .await
        .expect(200, general(0.5, 0.1));
    srv.get(KEY1, "/v1/results/prj_nope/sess_cli")
        .await
        .expect_error(404, "Project not found");
}

#[tokio::test]
async fn seed_refuses_an_invalid_file_and_writes_none_of_it() {
    let old = res(0.5, 0.1, "192.0.2.1", "2026-11-21T10:00:00.000Z");
    let srv = Server::seeded(&fixture(vec![in_session("prj_1", "sess_1", &old)]));
    let dir = tempfile::tempdir().unwrap();
    let mut changed_plan = plan1();
    changed_plan["name"] = json!("Changed");
    let changed_account = json!({"id": "acc_1", "apiKeys": [KEY1], "plan": changed_plan});
    let new_account = json!({"id": "acc_new", "apiKeys": ["vgl_new_key"], "plan": plan2()});
    let new_project = json!({"id": "prj_new", "accountId": "acc_new", "name": "New",
        "domain": "new.example", "apiKeyPublic": "pk_new", "apiKeyPrivate": "sk_new",
        "disabled": false, "createdAt": "2026-11-21T00:00:00.000Z"});
    let newer = res(0.9, 0.9, "192.0.2.9", &at(43_200));
    let new_result = in_session("prj_1", "sess_1", &newer);
    let mut bad_score = new_result.clone();
    bad_score["scoreBot"] = json!(1.5);
    let orphan = in_session("prj_nope", "sess_1", &newer);
    let private_hook = json!({"id": "wh_new", "projectId": "prj_new", "type": "proxy_vpn_detect",
        "url": "https://10.0.0.1/hook", "createdAt": "2026-11-21T00:00:00.000Z"});
    // Valid on its own, but prj_1 already has this (type, url) in the store.
    let same_target = json!({"id": "wh_other", "projectId": "prj_1", "type": "proxy_vpn_detect",
        "url": "https://hooks.shop.example/vigil", "createdAt": "2026-11-21T00:00:00.000Z"});

    // Every file starts with valid entries (one of them changing an existing account).
    let valid = json!({"accounts": [changed_account, new_account], "projects": [new_project],
        "webhooks": [], "results": [new_result]});
    let with = |section: &str, entry: &Value| {
        let mut file = valid.clone();
        file[section].as_array_mut().unwrap().push(entry.clone());
        file
    };
    let mut bad_time = valid.clone();
    bad_time["projects"][0]["createdAt"] = json!("yesterday");
    let mut extra_field = valid.clone();
    extra_field["extra"] = json!([]);
    let cases = [
        (bad_time, "projects[0].createdAt"),
        (with("results", &bad_score), "results[1].scoreBot"),
        (with("results", &orphan), "results[1].projectId"),
        (with("webhooks", &private_hook), "webhooks[0].url"),
        (extra_field, "extra"),
        (with("webhooks", &same_target), "webhooks[0]"),
    ];
    let mut cases: Vec<(String, &str)> = cases.iter().map(|(f, n)| (f.to_string(), *n)).collect();
    cases.push(("{\"accounts\": [".into(), "bad6.json: "));
    for (i, (text, needle)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad{i}.json"));
        std::fs::write(&path, text).unwrap();
        println!("bad seed file {i}: expecting an error about {needle}");
        let out = srv.cli(&["seed", path.to_str().unwrap()]);
        assert!(!out.status.success(), "{needle}: the seed was accepted");

        // None of the file was written.
        srv.get(KEY1, "/v1/plan")
            .await
            .expect(200, json!({"data": plan1()}));
        srv.get("vgl_new_key", "/v1/plan")
            .await
            .expect_error(401, "Unauthorized");
        srv.get(KEY1, "/v1/results/prj_1/sess_1")
            .await
            .expect(200, json!({"data": [old]}));
        assert_eq!(srv.hooks("prj_1").await, [seeded_hook()], "{needle}");
        // The one-line error names the entry and the field.
        assert_cli_error(&out, needle);
    }

    // The valid entries alone load, and the running server sees them.
    let path = dir.path().join("good.json");
    std::fs::write(&path, valid.to_string()).unwrap();
    let out = srv.cli(&["seed", path.to_str().unwrap()]);
    assert_ok(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "seeded 2 accounts, 1 projects, 0 webhooks, 1 results"
    );
    let mut plan = plan1();
    plan["name"] = json!("Changed");
    srv.get(KEY1, "/v1/plan")
        .await
        .expect(200, json!({ "data": plan }));
    srv.get("vgl_new_key", "/v1/plan")
        .await
        .expect(200, json!({"data": plan2()}));
    srv.get(KEY1, "/v1/results/prj_1/sess_1")
        .await
        .expect(200, json!({"data": [newer, old]}));
}

/// Issue 49: `vigil calibrate` says why it cannot calibrate, in one line, and changes nothing; with
/// `--all` and no labelled project it calibrates nothing and says so as JSON.
#[tokio::test]
async fn calibrate_refuses_what_it_cannot_fit_and_changes_nothing() {
    let srv = Server::seeded(&fixture(vec![]));
    for (args, needle) in [
        (
            &["calibrate", "--project=prj_nope"][..],
            "project not found",
        ),
        (
            &["calibrate", "--project=prj_1"][..],
            "calibration needs 50 admitted labels of each kind; the project has 0 bots and 0 humans",
        ),
        (&["calibrate"][..], "required arguments were not provided"),
        (&["calibrate", "--project=prj_1", "--all"][..], "--all"),
        (&["calibrate", "--project=bad id"][..], "--project"),
    ] {
        assert_cli_error(&srv.cli(args), needle);
    }
    let all = srv.cli(&["calibrate", "--all"]);
    assert!(all.status.success(), "{all:?}");
    assert_eq!(String::from_utf8_lossy(&all.stdout).trim(), "[]");
    srv.get(KEY1, "/v1/projects/prj_1")
        .await
        .expect(200, json!({"data": project1()}));
}
