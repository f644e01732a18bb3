//! `vigil serve` stopped under load (issue 61), as a service manager stops it: SIGTERM while
//! clients keep posting visits. The server stops accepting, answers what it has in flight and
//! exits 0 within its drain; started again on the same database, every visit it answered 202 is
//! there, once. A visit it did not answer was refused, never half-taken.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::api::{KEY1, Server, fixture};
use serde_json::json;

const WORKERS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stopped_under_load_every_accepted_visit_is_readable() {
    let dir = tempfile::tempdir().unwrap();
    let mut seed = fixture(vec![]);
    seed["accounts"][0]["plan"]["maxRps"] = json!(1_000_000);
    seed["accounts"][0]["plan"]["maxRequests"] = json!(1_000_000_000u64);
    let seed_file = dir.path().join("seed.json");
    std::fs::write(&seed_file, seed.to_string()).unwrap();
    let db = dir.path().join("vigil.db");
    let mut srv = Server::start(&db, Some(&seed_file));

    let accepted = Arc::new(Mutex::new(Vec::<String>::new()));
    let refused_by_status = Arc::new(Mutex::new(Vec::<u16>::new()));
    let mut workers = Vec::new();
    for w in 0..WORKERS {
        let (client, origin) = (srv.client.clone(), srv.origin.clone());
        let (accepted, refused) = (accepted.clone(), refused_by_status.clone());
        workers.push(tokio::spawn(async move {
            let started = Instant::now();
            for i in 0.. {
                let session = format!("w{w}-{i}");
                let body = json!({"publicKey": "pk_shop", "sessionId": session}).to_string();
                let sent = client
                    .post(format!("{origin}/v1/collect"))
                    .header("content-type", "text/plain;charset=UTF-8")
                    .header("origin", "https://shop.example")
                    .body(body)
                    .timeout(Duration::from_secs(30))
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status() == 202 => accepted.lock().unwrap().push(session),
                    Ok(r) => refused.lock().unwrap().push(r.status().as_u16()),
                    // The listener is closed: the server is stopping or gone.
                    Err(_) => break,
                }
                assert!(started.elapsed() < Duration::from_secs(60), "never stopped");
            }
        }));
    }
    // Load for a while, then stop it as systemd would.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = accepted.lock().unwrap().len();
    let status = tokio::task::block_in_place(|| srv.served.terminate(Duration::from_secs(30)));
    let status = status.expect("vigil serve exited within its drain after SIGTERM");
    assert!(
        status.success(),
        "a graceful stop exits 0, not by the signal: {status:?}; stderr: {}",
        srv.served.stderr()
    );
    assert!(
        srv.served.stderr().contains("vigil: stopped"),
        "{}",
        srv.served.stderr()
    );
    for w in workers {
        w.await.unwrap();
    }
    let accepted = accepted.lock().unwrap().clone();
    let refused = refused_by_status.lock().unwrap().clone();
    assert!(
        before >= 10,
        "the load was real: {before} visits before the stop"
    );
    assert!(
        refused.iter().all(|s| *s < 500),
        "no visit is answered 5xx by a stopping server: {refused:?}"
    );

    // Started again on the same database: every answered visit is stored, once.
    drop(srv);
    let again = Server::start(&db, None);
    let mut missing = Vec::new();
    for session in &accepted {
        let r = again
            .get(
                KEY1,
                &format!("/v1/projects/prj_1/sessions/{session}/events"),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let n = r.json()["data"].as_array().map_or(0, Vec::len);
        if n != 1 {
            missing.push((session.clone(), n));
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {} accepted visits not stored once: {missing:?}",
        missing.len(),
        accepted.len()
    );
}
