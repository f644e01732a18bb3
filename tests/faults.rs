//! Faults injected between Vigil and DynamoDB. A fault proxy (below: no such tool is packaged
//! here) sits between `vigil serve` / `vigil results add` and the emulator that `make test`
//! starts, and at a set rate answers DynamoDB calls with throttling errors or 500s, resets the
//! connection, or delays past the SDK's attempt timeout; for transactions and reads it may also
//! apply the call and then lose the answer. Meanwhile writers (the events route with idempotency
//! keys, `vigil results add` processes), readers and the webhook follower run. Then, with faults
//! off:
//!
//! - every write that answered success is listed exactly once, and a failed write is absent or,
//!   retried with its idempotency key, present once;
//! - every session's `/general` is the maximum over its listed results;
//! - every crossing is delivered exactly once per webhook (one `webhook-id`);
//! - no answer carried internal detail, and the service answers normally again within seconds.
//!
//! The emulator ignores `ClientRequestToken`, which real DynamoDB honours for ten minutes (a
//! retried transaction that was applied succeeds without applying again); the proxy gives it that
//! property, so the test holds Vigil to the real service's contract, not the emulator's gap. For
//! the same reason it hands the emulator one write at a time: a canceled transaction makes moto
//! restore the whole table from a copy taken when the transaction began, which drops any write
//! (and its stream record) applied in between; DynamoDB never loses a write that way.

mod common;
mod receiver;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use receiver::{Receiver, Reply};
use serde_json::{Value, json};

use common::api::{KEY1, bearer, seed_one_webhook};

// ---------------------------------------------------------------------------------------------
// The fault proxy

#[derive(Default)]
struct Faults {
    /// Faults per thousand calls.
    rate: AtomicU32,
    injected: Mutex<BTreeMap<&'static str, u64>>,
    calls: AtomicU64,
    /// Answers of applied transactions, by ClientRequestToken (DynamoDB's idempotency).
    applied: Mutex<HashMap<String, (u16, Bytes)>>,
    /// Transactions in flight, by token: a retry waits for the first attempt to finish.
    in_flight: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Held while a write is forwarded: the emulator takes one at a time (module docs).
    writes: tokio::sync::Mutex<()>,
}

impl Faults {
    fn count(&self, kind: &'static str) {
        *self.injected.lock().unwrap().entry(kind).or_default() += 1;
    }

    fn roll(&self) -> bool {
        rand::random_range(0..1000) < self.rate.load(Ordering::Relaxed)
    }
}

type Res = Result<hyper::Response<Full<Bytes>>, std::io::Error>;

fn dynamo_error(status: u16, kind: &str) -> Res {
    let body = json!({"__type": format!("com.amazonaws.dynamodb.v20120810#{kind}"),
                      "message": "injected by the fault proxy"});
    Ok(hyper::Response::builder()
        .status(status)
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amzn-requestid", "fault")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap())
}

fn reset() -> Res {
    Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "injected reset",
    ))
}

async fn forward(
    client: &reqwest::Client,
    upstream: &str,
    headers: &http::HeaderMap,
    body: Bytes,
) -> Result<(u16, http::HeaderMap, Bytes), reqwest::Error> {
    let mut req = client.post(upstream).body(body);
    for (k, v) in headers {
        if k != http::header::HOST && k != http::header::CONTENT_LENGTH {
            req = req.header(k, v);
        }
    }
    let res = req.send().await?;
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    Ok((status, headers, res.bytes().await?))
}

fn answer(status: u16, headers: &http::HeaderMap, body: Bytes) -> Res {
    let mut res = hyper::Response::builder().status(status);
    for (k, v) in headers {
        if k != http::header::CONTENT_LENGTH && k != http::header::TRANSFER_ENCODING {
            res = res.header(k, v);
        }
    }
    Ok(res.body(Full::new(body)).unwrap())
}

async fn proxy_call(
    faults: Arc<Faults>,
    client: reqwest::Client,
    upstream: String,
    req: hyper::Request<hyper::body::Incoming>,
) -> Res {
    faults.calls.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map_err(std::io::Error::other)?
        .to_bytes();
    let op = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.rsplit('.').next())
        .unwrap_or("")
        .to_owned();
    let token = (op == "TransactWriteItems")
        .then(|| serde_json::from_slice::<Value>(&body).ok())
        .flatten()
        .and_then(|v| v["ClientRequestToken"].as_str().map(str::to_owned));
    // DynamoDB's idempotency: a retried transaction waits for its first attempt, and once one was
    // applied, gets its answer.
    let _guard = match &token {
        Some(t) => {
            let lock = faults
                .in_flight
                .lock()
                .unwrap()
                .entry(t.clone())
                .or_default()
                .clone();
            Some(lock.lock_owned().await)
        }
        None => None,
    };
    if let Some(t) = &token
        && let Some((status, body)) = faults.applied.lock().unwrap().get(t).cloned()
    {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "content-type",
            "application/x-amz-json-1.0".parse().unwrap(),
        );
        return answer(status, &headers, body);
    }
    let idempotent = token.is_some()
        || matches!(
            op.as_str(),
            "GetItem"
                | "Query"
                | "GetRecords"
                | "GetShardIterator"
                | "DescribeStream"
                | "DescribeTable"
                | "Scan"
        );
    if faults.roll() {
        match rand::random_range(0..4) {
            0 => {
                faults.count("throttle");
                return dynamo_error(400, "ProvisionedThroughputExceededException");
            }
            1 => {
                faults.count("500");
                return dynamo_error(500, "InternalServerError");
            }
            2 => {
                faults.count("reset");
                return reset();
            }
            _ => {
                // Past the SDK's 2 s attempt timeout: the client gives up on this attempt.
                faults.count("delay");
                tokio::time::sleep(Duration::from_millis(2500)).await;
            }
        }
    }
    let serial = match op.as_str() {
        "TransactWriteItems" | "PutItem" | "UpdateItem" | "DeleteItem" | "BatchWriteItem" => {
            Some(faults.writes.lock().await)
        }
        _ => None,
    };
    let (status, headers, out) = forward(&client, &upstream, &parts.headers, body)
        .await
        .map_err(std::io::Error::other)?;
    drop(serial);
    if let Some(t) = &token
        && status == 200
    {
        faults
            .applied
            .lock()
            .unwrap()
            .insert(t.clone(), (status, out.clone()));
    }
    // Applied, and the answer lost: only where a retry is safe (reads, and transactions, which
    // the token makes idempotent), as on the real service.
    if idempotent && faults.roll() {
        faults.count("lost answer");
        return if rand::random_bool(0.5) {
            reset()
        } else {
            dynamo_error(500, "InternalServerError")
        };
    }
    answer(status, &headers, out)
}

/// Starts the proxy in front of `upstream`; returns its URL.
async fn start_proxy(faults: Arc<Faults>, upstream: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (faults, client, upstream) = (faults.clone(), client.clone(), upstream.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    proxy_call(faults.clone(), client.clone(), upstream.clone(), req)
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

// ---------------------------------------------------------------------------------------------
// The load and the checks

fn vigil(endpoint: &str, table: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_vigil"));
    cmd.arg("--dynamodb")
        .env_remove("RUST_LOG")
        .env("VIGIL_TABLE", table)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("VIGIL_WEBHOOK_THRESHOLD", "0.5")
        .env("VIGIL_WEBHOOK_RETRY_SCHEDULE", "300ms,1s,2s,3s,5s");
    cmd
}

/// The only bodies a failure may carry: the API's own messages, never a cause.
const FAILURE_BODIES: &[&str] = &[
    r#"{"message":"Internal server error"}"#,
    r#"{"message":"Service temporarily unavailable, retry later"}"#,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn faults_lose_nothing_duplicate_nothing_and_leak_nothing() {
    let moto = common::emulator();
    let table = format!("vigil-faults-{}", std::process::id());
    let out = vigil(&moto, &table)
        .args(["table", "create"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rx = Receiver::start(Reply::status(204));
    let dir = tempfile::tempdir().unwrap();
    seed_one_webhook(vigil(&moto, &table), dir.path(), "wh_f", &rx.url("/f"));

    let faults = Arc::new(Faults::default());
    let proxy = start_proxy(faults.clone(), moto.clone()).await;
    let mut serve = vigil(&proxy, &table);
    serve.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--allow-loopback-webhooks",
    ]);
    let mut server = common::serve::Served::start(serve);
    let origin = server.origin.clone();
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();

    faults.rate.store(250, Ordering::Relaxed); // a quarter of the calls
    let leaks: Arc<Mutex<Vec<String>>> = Arc::default();
    let answers: Arc<Mutex<BTreeMap<u16, u64>>> = Arc::default();
    let load_for = Duration::from_secs(8);

    // Event writers: each write has its own key; the outcome of its first try is kept.
    let mut writers = Vec::new();
    for w in 0..3 {
        let (client, origin, leaks, answers) = (
            client.clone(),
            origin.clone(),
            leaks.clone(),
            answers.clone(),
        );
        writers.push(tokio::spawn(async move {
            let mut tried: Vec<(String, String, Option<String>)> = Vec::new();
            let started = Instant::now();
            let mut i = 0;
            while started.elapsed() < load_for {
                let session = format!("e{}", (w * 7 + i) % 6);
                let key = format!("w{w}-{i}");
                let id = post_event(&client, &origin, &session, &key, &leaks, &answers).await;
                tried.push((session, key, id));
                i += 1;
            }
            tried
        }));
    }
    // `vigil results add` writers: each write has a unique scoreBot to be found by.
    let adders = {
        let (proxy, table) = (proxy.clone(), table.clone());
        tokio::task::spawn_blocking(move || {
            let mut done: Vec<(String, u32, bool)> = Vec::new();
            let started = Instant::now();
            let mut n = 0u32;
            while started.elapsed() < load_for {
                let session = format!("r{}", n % 4);
                let pv = f64::from((n * 37) % 100) / 100.0;
                let ok = vigil(&proxy, &table)
                    .args([
                        "results",
                        "add",
                        "--project",
                        "prj_1",
                        "--session",
                        &session,
                    ])
                    .args(["--score-bot", &format!("0.{:04}", n + 1)])
                    .args(["--score-proxy-vpn", &pv.to_string(), "--ip", "198.51.100.7"])
                    .output()
                    .map(|o| o.status.success())
                    .unwrap_or(false);
                done.push((session, n + 1, ok));
                n += 1;
            }
            done
        })
    };
    // Readers.
    let reader = {
        let (client, origin, leaks, answers) = (
            client.clone(),
            origin.clone(),
            leaks.clone(),
            answers.clone(),
        );
        tokio::spawn(async move {
            let started = Instant::now();
            let mut i = 0;
            while started.elapsed() < load_for {
                let path = match i % 3 {
                    0 => format!("/v1/results/prj_1/e{}/general", i % 6),
                    1 => format!("/v1/projects/prj_1/sessions/r{}/events", i % 4),
                    _ => "/v1/projects/prj_1/webhooks/wh_f/deliveries".to_owned(),
                };
                if let Ok(res) = client
                    .get(format!("{origin}{path}"))
                    .header("authorization", bearer(KEY1))
                    .send()
                    .await
                {
                    let status = res.status().as_u16();
                    let body = res.text().await.unwrap_or_default();
                    note(status, &body, &leaks, &answers);
                }
                i += 1;
            }
        })
    };

    let mut tried = Vec::new();
    for w in writers {
        tried.extend(w.await.unwrap());
    }
    let added = adders.await.unwrap();
    reader.await.unwrap();

    // Faults off: the service answers normally again within seconds.
    faults.rate.store(0, Ordering::Relaxed);
    let off = Instant::now();
    loop {
        let res = client
            .get(format!("{origin}/v1/plan"))
            .header("authorization", bearer(KEY1))
            .send()
            .await;
        if res.is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(
            off.elapsed() < Duration::from_secs(10),
            "not recovered after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let recovered = off.elapsed();

    // Failed event writes, retried with their keys, are present once.
    let mut retried = 0;
    let mut events_by_key: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (session, key, id) in &tried {
        let id = match id {
            Some(id) => id.clone(),
            None => {
                retried += 1;
                post_event(&client, &origin, session, key, &leaks, &answers)
                    .await
                    .unwrap_or_else(|| panic!("{key}: the retry with faults off failed"))
            }
        };
        events_by_key.insert(key.clone(), (session.clone(), id));
    }

    // Every event session lists exactly its keys' events, each once.
    let list = |path: String| {
        let (client, origin) = (client.clone(), origin.clone());
        async move {
            let res = client
                .get(format!("{origin}{path}"))
                .header("authorization", bearer(KEY1))
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), 200, "{path}");
            res.json::<Value>().await.unwrap()["data"].clone()
        }
    };
    let mut crossed = BTreeSet::new();
    for s in 0..6 {
        let session = format!("e{s}");
        let listed: Vec<String> = all_events(&list, &session).await;
        let expected: BTreeSet<String> = events_by_key
            .values()
            .filter(|(sess, _)| sess == &session)
            .map(|(_, id)| id.clone())
            .collect();
        let unique: BTreeSet<String> = listed.iter().cloned().collect();
        assert_eq!(
            unique.len(),
            listed.len(),
            "{session}: an event listed twice"
        );
        assert_eq!(
            unique, expected,
            "{session}: listed events are not the keys' events"
        );
        if !listed.is_empty() {
            crossed.insert(session);
        }
    }
    // Every successful `results add` is listed exactly once; a failed one at most once.
    for s in 0..4 {
        let session = format!("r{s}");
        let events = all_event_values(&list, &session).await;
        let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
        for e in &events {
            let n = (e["scoreBot"].as_f64().unwrap() * 10_000.0).round() as u32;
            *seen.entry(n).or_default() += 1;
        }
        for (sess, n, ok) in added.iter().filter(|(sess, ..)| sess == &session) {
            let count = seen.get(n).copied().unwrap_or(0);
            if *ok {
                assert_eq!(count, 1, "{sess}: confirmed write {n} listed {count} times");
            } else {
                assert!(count <= 1, "{sess}: failed write {n} listed {count} times");
            }
        }
        let max_pv = events
            .iter()
            .map(|e| e["scoreProxyVpn"].as_f64().unwrap())
            .fold(0.0, f64::max);
        if max_pv >= 0.5 {
            crossed.insert(session.clone());
        }
        // The summary is the maximum over what is listed.
        if !events.is_empty() {
            let general = list(format!("/v1/results/prj_1/{session}/general")).await;
            let max_bot = events
                .iter()
                .map(|e| e["scoreBot"].as_f64().unwrap())
                .fold(0.0, f64::max);
            assert_eq!(general["scoreBot"].as_f64(), Some(max_bot), "{session}");
            assert_eq!(general["scoreProxyVpn"].as_f64(), Some(max_pv), "{session}");
        }
    }
    for s in 0..6 {
        let session = format!("e{s}");
        let events = all_event_values(&list, &session).await;
        if let Some(max) = events
            .iter()
            .map(|e| e["scoreProxyVpn"].as_f64().unwrap())
            .reduce(f64::max)
        {
            let general = list(format!("/v1/results/prj_1/{session}/general")).await;
            assert_eq!(general["scoreProxyVpn"].as_f64(), Some(max), "{session}");
        }
    }

    // Every crossing delivered exactly once, under one webhook-id. A delivery whose creation was
    // applied but answered with a fault is not attempted at once (its creator cannot tell it made
    // it): the sweep attempts it when its lease (60 s) ends, so allow a few leases.
    // On failure, say which crossing is missing and what the server logged: a lost delivery
    // here is rare and random, so the first failing run must carry its own diagnosis.
    let deadline = Instant::now() + Duration::from_secs(180);
    while rx.hits_to("/f").len() < crossed.len() {
        if Instant::now() > deadline {
            let delivered: BTreeSet<String> = rx
                .hits_to("/f")
                .iter()
                .filter_map(|h| h.json()["data"]["sessionId"].as_str().map(str::to_owned))
                .collect();
            server.fail(&format!(
                "crossed {crossed:?}, delivered within 180 s {delivered:?}; faults {:?}",
                faults.injected.lock().unwrap()
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut ids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for h in rx.hits_to("/f") {
        let session = h.json()["data"]["sessionId"].as_str().unwrap().to_owned();
        ids.entry(session)
            .or_default()
            .insert(h.header("webhook-id").to_owned());
    }
    assert_eq!(ids.keys().cloned().collect::<BTreeSet<_>>(), crossed);
    for (session, set) in &ids {
        assert_eq!(set.len(), 1, "{session}: delivered under {set:?}");
    }

    let leaks = leaks.lock().unwrap();
    assert!(leaks.is_empty(), "answers with internal detail: {leaks:?}");
    let injected = faults.injected.lock().unwrap().clone();
    let total: u64 = injected.values().sum();
    assert!(total >= 20, "too few faults to mean anything: {injected:?}");
    println!(
        "faults: {} DynamoDB calls, {total} faults injected {injected:?}; answers {:?}; \
         {} event writes ({retried} retried with their key), {} results add ({} failed); \
         {} crossings delivered once each; recovered in {recovered:?}",
        faults.calls.load(Ordering::Relaxed),
        answers.lock().unwrap(),
        tried.len(),
        added.len(),
        added.iter().filter(|(_, _, ok)| !ok).count(),
        crossed.len(),
    );
}

/// Posts one event with `key`; its id when it answered 201.
async fn post_event(
    client: &reqwest::Client,
    origin: &str,
    session: &str,
    key: &str,
    leaks: &Mutex<Vec<String>>,
    answers: &Mutex<BTreeMap<u16, u64>>,
) -> Option<String> {
    let res = client
        .post(format!(
            "{origin}/v1/projects/prj_1/sessions/{session}/events"
        ))
        .header("authorization", bearer(KEY1))
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(r#"{"ipAddress":"185.220.101.1","userAgent":"curl/8.5.0"}"#)
        .send()
        .await
        .ok()?;
    let status = res.status().as_u16();
    let body = res.text().await.unwrap_or_default();
    note(status, &body, leaks, answers);
    (status == 201)
        .then(|| serde_json::from_str::<Value>(&body).ok())
        .flatten()
        .and_then(|v| v["data"]["id"].as_str().map(str::to_owned))
}

fn note(status: u16, body: &str, leaks: &Mutex<Vec<String>>, answers: &Mutex<BTreeMap<u16, u64>>) {
    *answers.lock().unwrap().entry(status).or_default() += 1;
    if status >= 500 && !FAILURE_BODIES.contains(&body) {
        leaks.lock().unwrap().push(format!("{status} {body}"));
    }
}

async fn all_event_values<F, Fut>(list: &F, session: &str) -> Vec<Value>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let page = list(format!(
        "/v1/projects/prj_1/sessions/{session}/events?limit=100"
    ))
    .await;
    let events = page.as_array().unwrap().clone();
    assert!(events.len() < 100, "{session}: more than one page");
    events
}

async fn all_events<F, Fut>(list: &F, session: &str) -> Vec<String>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    all_event_values(list, session)
        .await
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}
