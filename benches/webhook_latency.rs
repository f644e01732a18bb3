//! Webhook delivery: latency through the real `vigil` binary, and one dispatcher's throughput.
//!
//! 1. Latency on the SQLite change feed: `vigil serve --allow-loopback-webhooks` with one webhook
//!    pointing at a loopback receiver; each crossing is a new session with one result of 0.9,
//!    written by starting `vigil results add` (a separate process, as a user writes). Measured:
//!    from starting that process to the request reaching the receiver (p50, p99, max), and, for
//!    reference, how long the `results add` process itself ran.
//! 2. Throughput of `Dispatcher::handle`: batches of 100 synthetic crossing records (each a new
//!    session) on a SQLite store whose project has 3 webhooks on a loopback receiver, so 300
//!    deliveries per batch (created, signed, posted, recorded). Measured: wall time per batch and
//!    deliveries per second.
//!
//! Run (bench profile = release settings, so `vigil` is the optimised binary):
//!   cargo bench --bench webhook_latency
//!   cargo bench --bench webhook_latency -- CROSSINGS BATCHES     (defaults: 300 5)
//! The receiver, the server, the writer processes and the dispatcher share this machine's cores.

#[path = "../tests/receiver/mod.rs"]
mod receiver;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use receiver::{Receiver, Reply};
use serde_json::{Value, json};
use vigil_core::config::Config;
use vigil_core::domain::{
    ProjectId, Timestamp, UrlPolicy, Webhook, WebhookId, WebhookType, WebhookUrl,
};
use vigil_core::seed;
use vigil_core::service::vigil::Vigil;
use vigil_core::store::WebhookStore;
use vigil_dispatch::{Dispatcher, Sender, SystemResolver};
use vigil_store_sqlite::SqliteStore;

const LOOPBACK: UrlPolicy = UrlPolicy {
    allow_loopback: true,
};

fn seed_json(hooks: &[(&str, String)]) -> Value {
    let webhooks: Vec<Value> = hooks
        .iter()
        .map(|(id, url)| {
            json!({"id": id, "projectId": "prj_1", "type": "proxy_vpn_detect", "url": url,
                   "createdAt": "2026-11-21T00:00:00.000Z"})
        })
        .collect();
    json!({
        "accounts": [{"id": "acc_1", "apiKeys": ["vgl_bench"],
            "plan": {"id": "plan_trial", "name": "Trial", "description": "14-day trial",
                     "maxRps": 1000, "maxProjects": 3, "maxRequests": 100000,
                     "expiresAt": null, "subscribedAt": "2026-11-21T00:00:00.000Z",
                     "status": "active", "unsubscribedAt": null}}],
        "projects": [{"id": "prj_1", "accountId": "acc_1", "name": "Bench",
                      "domain": "bench.example", "apiKeyPublic": "pk_bench",
                      "apiKeyPrivate": "sk_bench", "disabled": false,
                      "createdAt": "2026-11-21T00:00:00.000Z"}],
        "webhooks": webhooks,
        "results": []
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// Part 1: from starting `vigil results add` to the delivery reaching the receiver.
async fn latency(crossings: usize) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bench.db");
    let rx = Receiver::start(Reply::status(204));
    let seed_file = dir.path().join("seed.json");
    std::fs::write(
        &seed_file,
        seed_json(&[("wh_1", rx.url("/hook"))]).to_string(),
    )
    .unwrap();
    let vigil = env!("CARGO_BIN_EXE_vigil");
    let mut server = Command::new(vigil)
        .arg("--db")
        .arg(&db)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--allow-loopback-webhooks",
            "--seed",
        ])
        .arg(&seed_file)
        .env_remove("VIGIL_WEBHOOK_THRESHOLD")
        .env_remove("VIGIL_WEBHOOK_RETRY_SCHEDULE")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start vigil serve");
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.starts_with("vigil listening on "), "{first:?}");
    // Keep reading the rest of the banner, as a terminal would.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));

    let mut latencies = Vec::with_capacity(crossings);
    let mut writer = Vec::with_capacity(crossings);
    for i in 0..crossings {
        let session = format!("sess_{i}");
        let started = Instant::now();
        let mut child = Command::new(vigil)
            .arg("--db")
            .arg(&db)
            .args([
                "results",
                "add",
                "--project",
                "prj_1",
                "--session",
                &session,
            ])
            .args([
                "--score-bot",
                "0.1",
                "--score-proxy-vpn",
                "0.9",
                "--ip",
                "203.0.113.7",
            ])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let status = child.wait().unwrap();
        writer.push(started.elapsed());
        assert!(status.success(), "vigil results add failed");
        let hit = rx
            .wait_for(i + 1, Duration::from_secs(30), |_| true)
            .await
            .pop()
            .unwrap();
        assert!(hit.body.contains(&format!("\"sessionId\":\"{session}\"")));
        latencies.push(hit.at - started);
    }
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(rx.hits().len(), crossings, "one delivery per crossing");

    latencies.sort();
    writer.sort();
    let mean = latencies.iter().sum::<Duration>() / crossings as u32;
    println!(
        "latency: `vigil results add` started -> delivery at the loopback receiver (SQLite feed)"
    );
    println!(
        "  {crossings} crossings: p50 {}  p99 {}  max {}  mean {}",
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(*latencies.last().unwrap()),
        ms(mean)
    );
    println!(
        "  of which the `results add` process alone: p50 {}  p99 {}",
        ms(percentile(&writer, 0.50)),
        ms(percentile(&writer, 0.99))
    );
}

/// The stream record of a new session's first result (0.9): a crossing.
fn crossing_record(session: &str, n: usize) -> Value {
    let image = json!({
        "pk": {"S": "PROJECT#prj_1"}, "sk": {"S": format!("SESSION#{session}")},
        "entity": {"S": "session"}, "projectId": {"S": "prj_1"}, "sessionId": {"S": session},
        "seq": {"N": "1"}, "scoreBot": {"N": "0.1"}, "scoreProxyVpn": {"N": "0.9"},
        "last": {"M": {"scoreBot": {"N": "0.1"}, "scoreProxyVpn": {"N": "0.9"},
                       "ipAddress": {"S": "203.0.113.7"},
                       "createdAt": {"S": "2026-11-21T10:00:00.000Z"}}}
    });
    json!({
        "eventID": format!("ev{n}"), "eventName": "INSERT", "eventVersion": "1.1",
        "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
        "dynamodb": {
            "Keys": {"pk": image["pk"].clone(), "sk": image["sk"].clone()},
            "NewImage": image, "SequenceNumber": format!("{n:021}"), "SizeBytes": 300,
            "StreamViewType": "NEW_AND_OLD_IMAGES"
        }
    })
}

/// Part 2: deliveries per second of one dispatcher.
async fn throughput(batches: usize) {
    const RECORDS: usize = 100;
    const HOOKS: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("bench.db")).unwrap();
    let app = Vigil::new(store.clone(), LOOPBACK);
    seed::load(&app, &seed_json(&[]).to_string()).await.unwrap();
    let rx = Receiver::start(Reply::status(204));
    let project = ProjectId::parse("prj_1").unwrap();
    for h in 0..HOOKS {
        let hook = Webhook {
            id: WebhookId::parse(format!("wh_{h}")).unwrap(),
            kind: WebhookType::ProxyVpnDetect,
            url: WebhookUrl::parse(&rx.url(&format!("/h{h}")), LOOPBACK).unwrap(),
            created_at: Timestamp::now(),
            secrets: vigil_core::domain::webhook::Secrets::new(),
        };
        store.insert_webhook(&project, &hook).await.unwrap();
    }
    let sender = Sender::new(LOOPBACK, Arc::new(SystemResolver)).unwrap();
    let dispatcher = Dispatcher::new(store, sender, &Config::from_lookup(|_| None).unwrap());
    println!(
        "throughput: Dispatcher::handle, {RECORDS} crossing records x {HOOKS} webhooks \
         (SQLite store, loopback receiver)"
    );
    let mut rates = Vec::new();
    for b in 0..batches {
        let records: Vec<Value> = (0..RECORDS)
            .map(|i| crossing_record(&format!("b{b}_s{i}"), b * RECORDS + i))
            .collect();
        let records: Vec<aws_lambda_events::dynamodb::EventRecord> =
            serde_json::from_value(Value::Array(records)).unwrap();
        let before = rx.hits().len();
        let started = Instant::now();
        // What the function does with a batch: records to feed events, then deliveries. A budget
        // no batch here comes near: every attempt is awaited and counted.
        let events = vigil_store_dynamo::records::feed_events(&records);
        let attempted = dispatcher
            .handle(&events, std::time::Duration::from_secs(600))
            .await
            .expect("handle");
        let took = started.elapsed();
        assert_eq!(attempted, RECORDS * HOOKS);
        assert_eq!(rx.hits().len() - before, RECORDS * HOOKS);
        let rate = attempted as f64 / took.as_secs_f64();
        rates.push(rate);
        println!(
            "  batch {}: {attempted} deliveries in {}  = {rate:.0} deliveries/s",
            b + 1,
            ms(took)
        );
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "  median {:.0} deliveries/s over {batches} batches",
        rates[rates.len() / 2]
    );
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` does not: then a small smoke run
    // (a few crossings, one batch) only checks that the benchmark works.
    let benching = std::env::args().any(|a| a == "--bench");
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (crossings, batches) = if benching { (300, 5) } else { (5, 1) };
    let crossings = args.first().copied().unwrap_or(crossings);
    let batches = args.get(1).copied().unwrap_or(batches);
    println!(
        "webhook_latency ({} cores, {})",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        chrono::Utc::now().format("%F")
    );
    latency(crossings).await;
    throughput(batches).await;
}
