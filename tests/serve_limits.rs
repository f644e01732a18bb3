//! `vigil serve` under abuse: clients that hold connections open without finishing a request,
//! oversized request heads and bodies that never arrive must not stop the server answering
//! others. The server runs with a small connection cap and a short read deadline.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use common::serve::Served;
use serde_json::json;

const KEY: &str = "vgl_limits_key";

fn start(dir: &tempfile::TempDir) -> Served {
    start_with(dir, &[])
}

fn start_with(dir: &tempfile::TempDir, extra: &[&str]) -> Served {
    let seed = json!({"accounts": [{"id": "acc_1", "apiKeys": [KEY], "plan": {
        "id": "plan_x", "name": "X", "description": "x", "maxRps": 1000, "maxProjects": 5,
        "maxRequests": 100000, "expiresAt": null, "subscribedAt": "2026-01-01T00:00:00.000Z",
        "status": "active", "unsubscribedAt": null}}]});
    let seed_file = dir.path().join("seed.json");
    std::fs::write(&seed_file, seed.to_string()).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
    cmd.arg("--db")
        .arg(dir.path().join("vigil.db"))
        .args(["serve", "--addr", "127.0.0.1:0", "--max-connections", "3"])
        .args(["--read-timeout", "1s", "--idle-timeout", "2s"])
        .args(extra)
        .arg("--seed")
        .arg(&seed_file);
    Served::start(cmd)
}

fn connect(origin: &str) -> TcpStream {
    let addr = origin.trim_start_matches("http://");
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s
}

/// Everything the server sends until it closes the connection.
fn read_to_close(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

async fn plan_status(origin: &str) -> u16 {
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    client
        .get(format!("{origin}/v1/plan"))
        .bearer_auth(KEY)
        .send()
        .await
        .expect("the server answers within 10 s")
        .status()
        .as_u16()
}

#[tokio::test]
async fn clients_that_never_finish_a_request_are_cut_off_and_others_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    // Every client here is on loopback, one source: its cap above the total lets the fourth wait
    // for a slot as a client of another source would, instead of being closed as the source's
    // fourth (`one_source_holds_at_most_its_cap`).
    let served = start_with(&dir, &["--max-connections-per-source", "8"]);
    // As many half-sent requests as the server takes connections.
    let mut slow: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut s = connect(&served.origin);
            s.write_all(b"GET /v1/plan HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
            s
        })
        .collect();
    // A well-behaved client still gets its answer once the deadline frees a connection.
    assert_eq!(plan_status(&served.origin).await, 200);
    // The slow clients were disconnected (hyper answers 408 or just closes).
    for s in &mut slow {
        let rest = read_to_close(s);
        assert!(
            rest.is_empty() || rest.starts_with("HTTP/1.1 408"),
            "{rest:?}"
        );
    }
}

#[tokio::test]
async fn oversized_heads_are_refused_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let served = start(&dir);
    let mut s = connect(&served.origin);
    let huge = "a".repeat(64 * 1024);
    let _ = s
        .write_all(format!("GET /v1/plan HTTP/1.1\r\nHost: x\r\nX-Big: {huge}\r\n\r\n").as_bytes());
    let answer = read_to_close(&mut s);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{answer:.80}"
    );
    assert_eq!(plan_status(&served.origin).await, 200);
}

#[tokio::test]
async fn a_body_that_never_arrives_is_408_in_the_api_shape() {
    let dir = tempfile::tempdir().unwrap();
    let served = start(&dir);
    let mut s = connect(&served.origin);
    let head = format!(
        "POST /v1/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"name\""
    );
    s.write_all(head.as_bytes()).unwrap();
    let answer = read_to_close(&mut s);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    // An authenticated answer: it carries the plan's rate-limit fields.
    assert!(answer.contains("ratelimit-policy: "), "{answer}");
    assert!(
        answer.ends_with(r#"{"message":"Request body was not received in time"}"#),
        "{answer}"
    );
    // Nothing was created, and the server answers others.
    assert_eq!(plan_status(&served.origin).await, 200);
}

/// Issue 52: a keep-alive connection with no request in flight is closed after the idle
/// deadline, so idle clients cannot hold the connection slots for good.
#[tokio::test]
async fn idle_keep_alive_connections_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let served = start(&dir);
    let mut idle: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut s = connect(&served.origin);
            s.write_all(
                format!("GET /v1/plan HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n\r\n")
                    .as_bytes(),
            )
            .unwrap();
            s
        })
        .collect();
    let started = std::time::Instant::now();
    for s in &mut idle {
        // The answer, then nothing until the server closes the idle connection.
        let all = read_to_close(s);
        assert!(all.starts_with("HTTP/1.1 200"), "{all:.80}");
    }
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(10), "closed after {waited:?}");
    // The slots are free again.
    assert_eq!(plan_status(&served.origin).await, 200);
}

/// Issue 52: a body declared larger than any route reads is 413 at once, before a byte of it
/// is read (not 408 after the read deadline); one sent larger is cut off while it is read.
#[tokio::test]
async fn oversized_bodies_are_413_without_being_read() {
    let dir = tempfile::tempdir().unwrap();
    let served = start(&dir);
    let mut s = connect(&served.origin);
    let started = std::time::Instant::now();
    s.write_all(
        format!(
            "POST /v1/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n\
             Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let answer = read_to_close(&mut s);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer:.200}");
    assert!(
        answer.ends_with(r#"{"message":"Request body is too large"}"#),
        "{answer}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let big = format!(r#"{{"name":"{}"}}"#, "a".repeat(20 * 1024));
    let r = client
        .post(format!("{}/v1/projects", served.origin))
        .bearer_auth(KEY)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 413);
    assert_eq!(plan_status(&served.origin).await, 200);
}

/// Issue 52: one source holds at most its share of the connections: past it, a new connection
/// is closed at once, and the source gets its slots back as its connections end.
#[tokio::test]
async fn one_source_holds_at_most_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    let served = start_with(&dir, &["--max-connections-per-source", "2"]);
    let held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = connect(&served.origin);
            s.write_all(b"GET /v1/plan HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
            s
        })
        .collect();
    // Give the server the time to count both.
    std::thread::sleep(Duration::from_millis(200));
    let mut third = connect(&served.origin);
    let started = std::time::Instant::now();
    let _ = third.write_all(b"GET /v1/plan HTTP/1.1\r\nHost: x\r\n\r\n");
    let answer = read_to_close(&mut third);
    assert!(answer.is_empty(), "{answer:.80}");
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "closed at once, not by the read deadline: {:?}",
        started.elapsed()
    );
    drop(held);
    // The held connections' slots come back, once the server has seen them close (a moment:
    // a connection made before that is still the source's third, and closed).
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let r = client
            .get(format!("{}/v1/plan", served.origin))
            .bearer_auth(KEY)
            .send()
            .await;
        match r {
            Ok(r) => {
                assert_eq!(r.status().as_u16(), 200);
                break;
            }
            Err(e) if std::time::Instant::now() < deadline => {
                eprintln!("not yet: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the slots did not come back within 5 s: {e}"),
        }
    }
}
