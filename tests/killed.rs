//! Processes killed mid-write (CONTRACT: bad events lose nothing). `vigil serve` and concurrent
//! `vigil results add` processes on one SQLite store are killed with SIGKILL while they write,
//! several times over, then the server is started again. Afterwards the database passes `PRAGMA
//! integrity_check`, every session's summary is the maximum of its listed results, every write that
//! reported success is listed once, and every session that crossed the webhook threshold was
//! delivered exactly once (one `webhook-id`), pending deliveries included.

mod common;
mod receiver;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::api::{KEY1, bearer, seed_one_webhook};
use common::serve::Served;
use receiver::{Receiver, Reply};
use serde_json::Value;

const SESSIONS: usize = 8;

fn vigil(db: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
    cmd.arg("--db")
        .arg(db)
        .env_remove("RUST_LOG")
        .env("VIGIL_WEBHOOK_THRESHOLD", "0.5")
        .env("VIGIL_WEBHOOK_RETRY_SCHEDULE", "200ms,500ms,1s,2s");
    cmd
}

fn serve(db: &Path) -> Served {
    let mut cmd = vigil(db);
    cmd.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--allow-loopback-webhooks",
    ]);
    Served::start(cmd)
}

/// One `vigil results add`, left running: (process, session, proxy/VPN score).
fn add(db: &Path, n: usize) -> (Child, String, f64) {
    let session = format!("s{}", n % SESSIONS);
    // Scores rise with n, so many sessions cross 0.5 at some write.
    let pv = ((n * 37) % 100) as f64 / 100.0;
    let child = vigil(db)
        .args([
            "results",
            "add",
            "--project",
            "prj_1",
            "--session",
            &session,
        ])
        .args(["--score-bot", "0.1", "--score-proxy-vpn", &pv.to_string()])
        .args(["--ip", "203.0.113.7"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn vigil results add");
    (child, session, pv)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killed_writers_and_server_lose_and_corrupt_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("vigil.db");
    let rx = Receiver::start(Reply::status(204));
    seed_one_webhook(vigil(&db), dir.path(), "wh_k", &rx.url("/k"));

    // Writes that reported success: (session, score) with the count of each.
    let confirmed: Arc<Mutex<BTreeMap<(String, u64), usize>>> = Arc::default();
    let mut n = 0;
    for round in 0..4 {
        let mut server = serve(&db);
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let origin = server.origin.clone();
        // Events through the server, beside the writer processes.
        let poster = {
            let (client, origin, confirmed) = (client.clone(), origin.clone(), confirmed.clone());
            tokio::spawn(async move {
                for i in 0.. {
                    let session = format!("s{}", i % SESSIONS);
                    let url = format!("{origin}/v1/projects/prj_1/sessions/{session}/events");
                    let res = client
                        .post(url)
                        .header("authorization", bearer(KEY1))
                        .header("content-type", "application/json")
                        .body(r#"{"ipAddress":"185.220.101.1","userAgent":"curl/8.5.0"}"#)
                        .send()
                        .await;
                    let Ok(res) = res else { break };
                    if res.status() == 201
                        && let Ok(v) = res.json::<Value>().await
                    {
                        let pv = v["data"]["scoreProxyVpn"].as_f64().unwrap();
                        *confirmed
                            .lock()
                            .unwrap()
                            .entry((session, pv.to_bits()))
                            .or_default() += 1;
                    }
                }
            })
        };
        let started = Instant::now();
        let mut running: Vec<(Child, String, f64)> = Vec::new();
        // Writers start and finish for a while; then everything still running is killed.
        let kill_at = Duration::from_millis(600 + 200 * round);
        while started.elapsed() < kill_at {
            while running.len() < 4 {
                running.push(add(&db, n));
                n += 1;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            let mut still = Vec::new();
            for (mut child, session, pv) in running {
                match child.try_wait().unwrap() {
                    Some(status) if status.success() => {
                        *confirmed
                            .lock()
                            .unwrap()
                            .entry((session, pv.to_bits()))
                            .or_default() += 1;
                    }
                    Some(_) => {} // refused (a busy database): not confirmed, may be absent
                    None => still.push((child, session, pv)),
                }
            }
            running = still;
        }
        server.kill();
        for (mut child, ..) in running {
            let _ = child.kill(); // SIGKILL mid-write
            let _ = child.wait();
        }
        poster.abort();
        let _ = poster.await;
    }

    // The database is whole.
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    }

    let server = serve(&db);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let get = |path: String| {
        let (client, origin) = (client.clone(), server.origin.clone());
        async move {
            let res = client
                .get(format!("{origin}{path}"))
                .header("authorization", bearer(KEY1))
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.json::<Value>().await.unwrap())
        }
    };
    let mut listed: BTreeMap<(String, u64), usize> = BTreeMap::new();
    let mut crossed = BTreeSet::new();
    let mut total = 0;
    for s in 0..SESSIONS {
        let session = format!("s{s}");
        let events = all_events(&client, &server.origin, &session).await;
        if events.is_empty() {
            continue;
        }
        total += events.len();
        let max = |field: &str| {
            events
                .iter()
                .map(|e| e[field].as_f64().unwrap())
                .fold(0.0, f64::max)
        };
        let (status, general) = get(format!("/v1/results/prj_1/{session}/general")).await;
        assert_eq!(status, 200);
        assert_eq!(
            general["data"]["scoreBot"].as_f64(),
            Some(max("scoreBot")),
            "{session}"
        );
        assert_eq!(
            general["data"]["scoreProxyVpn"].as_f64(),
            Some(max("scoreProxyVpn")),
            "{session}"
        );
        if max("scoreProxyVpn") >= 0.5 {
            crossed.insert(session.clone());
        }
        for e in &events {
            let key = (
                session.clone(),
                e["scoreProxyVpn"].as_f64().unwrap().to_bits(),
            );
            *listed.entry(key).or_default() += 1;
        }
    }
    // Every confirmed write is listed (a write killed before it answered may be there too).
    for (key, count) in confirmed.lock().unwrap().iter() {
        let found = listed.get(key).copied().unwrap_or(0);
        assert!(
            found >= *count,
            "{key:?}: confirmed {count}, listed {found}"
        );
    }
    assert!(
        total >= 20,
        "the rounds wrote too little to mean anything: {total}"
    );

    // Every crossing was delivered exactly once: one webhook-id per session, retries aside.
    let hits = rx
        .wait_for(crossed.len(), Duration::from_secs(60), |h| h.path == "/k")
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut ids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for h in rx.hits_to("/k") {
        let session = h.json()["data"]["sessionId"].as_str().unwrap().to_owned();
        ids.entry(session)
            .or_default()
            .insert(h.header("webhook-id").to_owned());
    }
    assert_eq!(
        ids.keys().cloned().collect::<BTreeSet<_>>(),
        crossed,
        "{hits:?}"
    );
    for (session, set) in &ids {
        assert_eq!(
            set.len(),
            1,
            "{session} delivered under several ids: {set:?}"
        );
    }
    println!(
        "killed 4 rounds: {n} writer processes started, {total} results listed, {} sessions \
         crossed and were delivered once each",
        crossed.len()
    );
}

/// Every event of a session, following the `Link` of each page.
async fn all_events(client: &reqwest::Client, origin: &str, session: &str) -> Vec<Value> {
    let mut path = format!("/v1/projects/prj_1/sessions/{session}/events?limit=100");
    let mut all = Vec::new();
    loop {
        let res = client
            .get(format!("{origin}{path}"))
            .header("authorization", bearer(KEY1))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        let next = res
            .headers()
            .get("link")
            .map(|l| common::api::next_link(l.to_str().unwrap()));
        let page: Value = res.json().await.unwrap();
        all.extend(page["data"].as_array().unwrap().iter().cloned());
        match next {
            Some(p) => path = p,
            None => return all,
        }
    }
}
