//! Agents by identity, black-box against `vigil serve --allow-loopback-directories`: a local key
//! directory on plain HTTP serves a signed JWKS; signed requests posted as evidence are
//! verified, the same user agent unsigned is a declared AI agent, forgeries and replays are
//! spoofed, and a project's `agents.allow` keeps an allowed agent out of its bot counts.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::api::*;
use serde_json::{Value, json};
use vigil_detect::RequestLine;
use vigil_detect::signature::sign::{AgentForm, Key};

const EVENTS: &str = "/v1/projects/prj_1/sessions";
const CLAUDE: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)";

/// A key directory on loopback: every GET answers the key's JWKS, signed for its authority.
struct Directory {
    origin: String,
    fetches: Arc<AtomicUsize>,
}

fn directory(key: &Key) -> Directory {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let authority = listener.local_addr().unwrap().to_string();
    let body = key.jwks();
    let signed = key.sign_directory(&authority).unwrap();
    let fetches = Arc::new(AtomicUsize::new(0));
    let count = fetches.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            count.fetch_add(1, Ordering::SeqCst);
            let mut head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/http-message-signatures-directory+json\r\ncache-control: max-age=600\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in &signed {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            let _ = s.write_all(format!("{head}\r\n{body}").as_bytes());
        }
    });
    Directory {
        origin: format!("http://{authority}"),
        fetches,
    }
}

fn request() -> RequestLine {
    RequestLine {
        method: Some("GET".into()),
        authority: Some("shop.example".into()),
        path: Some("/checkout".into()),
    }
}

/// Evidence of a request signed by `key` under `directory`, as a backend forwards it.
fn signed(key: &Key, directory: &str, nonce: &str, form: AgentForm) -> Value {
    let headers: serde_json::Map<String, Value> = key
        .sign_request(&request(), directory, form, nonce, Duration::from_secs(60))
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k, json!(v)))
        .collect();
    let mut headers = Value::Object(headers);
    headers["user-agent"] = json!(CLAUDE);
    json!({"ipAddress": "84.128.0.1", "userAgent": CLAUDE, "headers": headers,
           "request": {"method": "GET", "authority": "shop.example", "path": "/checkout"}})
}

fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let seed = dir.path().join("seed.json");
    std::fs::write(&seed, fixture(vec![]).to_string()).unwrap();
    let mut srv = Server::start_with(
        &dir.path().join("vigil.db"),
        Some(&seed),
        &["--allow-loopback-directories", "--allow-loopback-webhooks"],
    );
    srv._dir = Some(dir);
    srv
}

async fn post(srv: &Server, session: &str, body: &Value) -> Value {
    let r = srv
        .post(
            KEY1,
            &format!("{EVENTS}/{session}/events"),
            &body.to_string(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["data"].clone()
}

fn codes(event: &Value) -> Vec<String> {
    event["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn signed_unsigned_forged_and_replayed_agents() {
    let key = Key::from_secret(rand::random());
    let dir = directory(&key);
    let srv = server();

    // Signed under the local directory, in the current dictionary form: verified.
    let e = post(
        &srv,
        "s_signed",
        &signed(&key, &dir.origin, "n1", AgentForm::Dictionary),
    )
    .await;
    assert_eq!(e["agent"]["status"], "verified", "{e}");
    assert_eq!(e["agent"]["via"], "signature");
    assert_eq!(e["agent"]["category"], "ai_agent");
    assert!(codes(&e).contains(&"signed_agent".to_owned()), "{e}");
    assert_eq!(e["allowed"], false);
    // The older plain-string form, another nonce: verified, and the directory is not fetched
    // again (this instance remembers it).
    let e = post(
        &srv,
        "s_plain",
        &signed(&key, &dir.origin, "n2", AgentForm::Plain),
    )
    .await;
    assert_eq!(e["agent"]["status"], "verified", "{e}");
    assert_eq!(dir.fetches.load(Ordering::SeqCst), 1);

    // The same user agent unsigned: a declared AI agent, unverified.
    let e = post(
        &srv,
        "s_unsigned",
        &json!({"ipAddress": "84.128.0.1", "userAgent": CLAUDE}),
    )
    .await;
    assert_eq!(e["agent"]["status"], "unsigned", "{e}");
    assert_eq!(e["agent"]["via"], "user_agent");
    assert!(codes(&e).contains(&"ai_agent".to_owned()), "{e}");

    // Forged: signed by another key, claiming the same directory.
    let forger = Key::from_secret(rand::random());
    let mut forged = signed(&forger, &dir.origin, "n3", AgentForm::Dictionary);
    forged["headers"]["signature-input"] = json!(
        forged["headers"]["signature-input"]
            .as_str()
            .unwrap()
            .replace(&forger.thumbprint(), &key.thumbprint())
    );
    let e = post(&srv, "s_forged", &forged).await;
    assert_eq!(e["agent"]["status"], "spoofed", "{e}");
    assert!(e["scoreBot"].as_f64().unwrap() >= 0.9, "{e}");
    assert!(codes(&e).contains(&"spoofed_agent".to_owned()));

    // Tampered: the signed request's path changed.
    let mut tampered = signed(&key, &dir.origin, "n4", AgentForm::Dictionary);
    tampered["request"]["path"] = json!("/admin");
    let e = post(&srv, "s_tampered", &tampered).await;
    assert_eq!(e["agent"]["status"], "spoofed", "{e}");

    // Replayed: the first request's signature again.
    let e = post(
        &srv,
        "s_replay",
        &signed(&key, &dir.origin, "n1", AgentForm::Dictionary),
    )
    .await;
    assert_eq!(e["agent"]["status"], "spoofed", "{e}");
    assert!(
        e["reasons"].to_string().contains("replay"),
        "the detail names the replay: {e}"
    );

    // A directory that cannot be reached: signed_unknown, never an error.
    let e = post(
        &srv,
        "s_gone",
        &signed(&key, "http://127.0.0.1:9", "n5", AgentForm::Plain),
    )
    .await;
    assert_eq!(e["agent"]["status"], "signed_unknown", "{e}");

    // The sessions list filters by agent status.
    let r = srv
        .get(KEY1, "/v1/projects/prj_1/sessions?agent=verified")
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut ids: Vec<String> = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    assert_eq!(ids, ["s_plain", "s_signed"]);
    let r = srv
        .get(KEY1, "/v1/projects/prj_1/sessions?agent=robot")
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
}

/// Issue 52, from outside: a `Signature-Agent` naming a path and query makes `vigil serve` ask
/// nothing of that host; ten concurrent visits naming one uncached directory cost one fetch.
#[tokio::test]
async fn a_visitor_chooses_no_path_and_concurrent_visits_share_one_fetch() {
    let key = Key::from_secret(rand::random());
    let dir = directory(&key);
    let srv = server();
    let pathy = format!("{}/internal/admin?delete=1", dir.origin);
    let e = post(
        &srv,
        "s_path",
        &signed(&key, &pathy, "p1", AgentForm::Dictionary),
    )
    .await;
    assert_eq!(e["agent"]["status"], "signed_unknown", "{e}");
    assert_eq!(
        dir.fetches.load(Ordering::SeqCst),
        0,
        "nothing was asked of the host"
    );
    let visits = (0..10).map(|i| {
        let body = signed(&key, &dir.origin, &format!("c{i}"), AgentForm::Dictionary);
        let srv = &srv;
        async move { post(srv, &format!("s_c{i}"), &body).await }
    });
    let events = futures_util::future::join_all(visits).await;
    assert!(
        events.iter().all(|e| e["agent"]["status"] == "verified"),
        "{events:?}"
    );
    assert_eq!(
        dir.fetches.load(Ordering::SeqCst),
        1,
        "one fetch for ten visits"
    );
}

#[tokio::test]
async fn an_allowed_category_is_no_bot_and_fires_no_bot_detect() {
    let key = Key::from_secret(rand::random());
    let dir = directory(&key);
    let srv = server();
    let r = srv
        .call(
            reqwest::Method::PATCH,
            "/v1/projects/prj_1",
            Some(&format!("Bearer {KEY1}")),
            Some("application/json"),
            Some(r#"{"agents": {"allow": ["ai_agent"]}}"#.to_owned()),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["data"]["agents"], json!({"allow": ["ai_agent"]}));
    for bad in [
        r#"{"agents": {"allow": "ai_agent"}}"#,
        r#"{"agents": {"deny": []}}"#,
        r#"{"agents": {"allow": ["<x>"]}}"#,
    ] {
        let r = srv
            .call(
                reqwest::Method::PATCH,
                "/v1/projects/prj_1",
                Some(&format!("Bearer {KEY1}")),
                Some("application/json"),
                Some(bad.to_owned()),
            )
            .await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }

    // A bot_detect webhook on a loopback receiver that keeps every body it is sent.
    let receiver = TcpListener::bind("127.0.0.1:0").unwrap();
    let hook = format!("http://{}/hook", receiver.local_addr().unwrap());
    let bodies = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in receiver.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut req = Vec::new();
            let mut buf = [0u8; 16384];
            s.set_read_timeout(Some(Duration::from_millis(300))).ok();
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                req.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&req);
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if body.len() >= len {
                        kept.lock().unwrap().push(body.to_owned());
                        break;
                    }
                }
            }
            let _ = s.write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n");
        }
    });
    let hook_body = json!({"type": "bot_detect", "url": hook}).to_string();
    let r = srv
        .post(KEY1, "/v1/projects/prj_1/webhooks", &hook_body)
        .await;
    assert_eq!(r.status, 201, "{}", r.body);

    let e = post(
        &srv,
        "s_allowed",
        &signed(&key, &dir.origin, "a1", AgentForm::Dictionary),
    )
    .await;
    assert_eq!(e["agent"]["status"], "verified", "{e}");
    assert_eq!(e["allowed"], true, "{e}");
    assert!(
        e["scoreBot"].as_f64().unwrap() >= 0.5,
        "scoreBot kept as evidence: {e}"
    );
    // Unsigned, the same user agent is a bot like any other.
    let e = post(
        &srv,
        "s_declared",
        &json!({"ipAddress": "84.128.0.1", "userAgent": CLAUDE}),
    )
    .await;
    assert_eq!(e["allowed"], false);

    let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let r = srv
        .get(
            KEY1,
            &format!(
                "/v1/projects/prj_1/stats?from={day}T00:00:00Z&to={day}T23:59:59Z&granularity=day"
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let buckets = r.json()["data"].as_array().unwrap().clone();
    let sum = |k: &str| buckets.iter().map(|b| b[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!((sum("visits"), sum("bots")), (2, 1), "{buckets:?}");

    // The declared bot's session crosses and is delivered as bot_detect; the allowed agent's
    // session never is.
    for _ in 0..100 {
        if bodies
            .lock()
            .unwrap()
            .iter()
            .any(|b| b.contains("s_declared"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let got = bodies.lock().unwrap().clone();
    assert!(
        got.iter()
            .any(|b| b.contains("\"bot_detect\"") && b.contains("s_declared")),
        "{got:?}"
    );
    assert!(!got.iter().any(|b| b.contains("s_allowed")), "{got:?}");
}

/// docs/detection.md's worked example, with the commands it names: `vigil agents directory` serves the
/// test key's signed directory, `vigil agents sign` prints the evidence, the events route verifies
/// it; the same body posted again is a replay.
#[tokio::test]
async fn the_readme_worked_example_runs_with_the_cli() {
    let srv = server();
    // A free loopback port for the directory.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    // Stopped however the test ends.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _directory = Killed(
        std::process::Command::new(env!("CARGO_BIN_EXE_vigil"))
            .args(["agents", "directory", "--addr", &addr])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let origin = format!("http://{addr}");
    let mut up = false;
    for _ in 0..100 {
        if std::net::TcpStream::connect(&addr).is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "the directory did not start");

    // `vigil agents sign --agent ORIGIN --authority shop.example EXTRA...`'s body.
    let sign = |extra: &[&str]| -> Value {
        let mut args = vec![
            "agents",
            "sign",
            "--agent",
            &origin,
            "--authority",
            "shop.example",
        ];
        args.extend_from_slice(extra);
        let out = srv.cli(&args);
        assert_ok(&out);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let body = sign(&["--path", "/checkout"]);
    assert_eq!(body["request"]["path"], "/checkout");
    let e = post(&srv, "readme-1", &body).await;
    assert_eq!(e["agent"]["status"], "verified", "{e}");
    assert_eq!(e["agent"]["via"], "signature");
    assert_eq!(e["agent"]["operator"], addr.as_str());
    assert!(codes(&e).contains(&"signed_agent".to_owned()), "{e}");

    // The same body again: its nonce is spent.
    let e = post(&srv, "readme-2", &body).await;
    assert_eq!(e["agent"]["status"], "spoofed", "{e}");
    assert!(codes(&e).contains(&"spoofed_agent".to_owned()), "{e}");

    // The older plain form verifies too.
    let e = post(&srv, "readme-3", &sign(&["--form", "plain"])).await;
    assert_eq!(e["agent"]["status"], "verified", "{e}");

    // Another key's signature under this directory does not verify.
    let e = post(&srv, "readme-4", &sign(&["--key-phrase", "someone else"])).await;
    assert_ne!(e["agent"]["status"], "verified", "{e}");
}
