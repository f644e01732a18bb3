//! End-to-end webhook delivery through the real `vigil` binary (CONTRACT.md section 4, "Delivery").
//!
//! Every test starts its own scripted loopback receiver (tests/receiver), its own store (a SQLite
//! file in a temporary directory, or a fresh table in the DynamoDB emulator that `make test`
//! starts) and its own `vigil serve --allow-loopback-webhooks --seed ...` with a short retry
//! schedule (`VIGIL_WEBHOOK_RETRY_SCHEDULE`) and threshold 0.5. Results are written the way a user
//! writes them: `vigil results add` in a separate process on the same store. What reaches the
//! receiver (count, `webhook-id`, body, signature verified with the `standardwebhooks` reference
//! implementation) and what the delivery log (`GET /v1/projects/{p}/webhooks/{w}/deliveries`)
//! says are asserted. Waiting is always polling with a deadline; "nothing else arrived" is
//! asserted after a later crossing (a barrier) has been delivered, since the change feed is
//! processed in order. Tests share nothing and run in parallel; child processes die with their
//! test.
//!
//! The `dynamodb::*` tests need `VIGIL_TEST_DYNAMODB_ENDPOINT` (`make test`, or
//! `scripts/with-moto.sh .cache/venv-test cargo test --test webhook_e2e`) and fail without it.

mod common;
mod receiver;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::serve::Served;
use common::{TEN_AM, at, delivery_id};

use receiver::{Hit, Receiver, Reply};
use serde_json::{Value, json};
use tempfile::TempDir;

const KEY: &str = "vgl_test_webhooks";
const PROJECT: &str = "prj_1";
/// The project's `apiKeyPrivate`: what deliveries are signed with.
const SIGNING_KEY: &str = "sk_test_3f9a1c";
const SCHEDULE: &str = "200ms,200ms,200ms";
/// How long anything that should happen may take (the machine is shared with parallel tests).
const WAIT: Duration = Duration::from_secs(30);
/// How soon a delivery must arrive while another receiver takes 10 s: well under those 10 s,
/// with room for a loaded 2-core machine running every test at once.
const PROMPT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// Stores and the `vigil` processes on them

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Sqlite,
    Dynamo,
}

/// A store of one test, the seed that goes with it, and the settings every `vigil` process of
/// the test runs with.
struct Env {
    kind: Kind,
    _dir: TempDir,
    db: PathBuf,
    table: String,
    endpoint: String,
    schedule: String,
    seed: PathBuf,
}

impl Env {
    fn new(kind: Kind, seed: &Value, schedule: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let seed_file = dir.path().join("seed.json");
        std::fs::write(&seed_file, seed.to_string()).unwrap();
        let endpoint = match kind {
            Kind::Sqlite => String::new(),
            Kind::Dynamo => std::env::var("VIGIL_TEST_DYNAMODB_ENDPOINT").expect(
                "VIGIL_TEST_DYNAMODB_ENDPOINT is not set: run the DynamoDB tests with `make test` \
                 (or scripts/with-moto.sh .cache/venv-test cargo test --test webhook_e2e)",
            ),
        };
        let env = Self {
            kind,
            db: dir.path().join("vigil.db"),
            _dir: dir,
            table: format!("t_wh_{}", vigil::domain::token::random_base62(10)),
            endpoint,
            schedule: schedule.to_owned(),
            seed: seed_file,
        };
        if kind == Kind::Dynamo {
            let out = env.command().args(["table", "create"]).output().unwrap();
            assert!(
                out.status.success(),
                "vigil --dynamodb table create: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        env
    }

    /// `vigil` with this test's store flags and settings, and nothing inherited that matters.
    fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vigil"));
        for var in [
            "VIGIL_TABLE",
            "VIGIL_WEBHOOK_THRESHOLD",
            "VIGIL_WEBHOOK_RETRY_SCHEDULE",
            "AWS_ENDPOINT_URL",
            "AWS_PROFILE",
            "RUST_LOG",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("VIGIL_WEBHOOK_THRESHOLD", "0.5")
            .env("VIGIL_WEBHOOK_RETRY_SCHEDULE", &self.schedule);
        match self.kind {
            Kind::Sqlite => {
                cmd.arg("--db").arg(&self.db);
            }
            Kind::Dynamo => {
                cmd.arg("--dynamodb")
                    .env("VIGIL_TABLE", &self.table)
                    .env("AWS_ENDPOINT_URL", &self.endpoint)
                    .env("AWS_ACCESS_KEY_ID", "test")
                    .env("AWS_SECRET_ACCESS_KEY", "test")
                    .env("AWS_REGION", "us-east-1")
                    .env("AWS_EC2_METADATA_DISABLED", "true");
            }
        }
        cmd
    }

    /// Starts `vigil serve` on this store (loading the seed when `seed`), after its address line.
    fn serve(&self, seed: bool) -> Server {
        let mut cmd = self.command();
        cmd.args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--allow-loopback-webhooks",
        ]);
        if seed {
            cmd.arg("--seed").arg(&self.seed);
        }
        Server::start(cmd)
    }

    /// `vigil results add` for the project, to completion; returns when the process was started.
    fn add_result(&self, session: &str, bot: f64, pv: f64, created_at: &str) -> Instant {
        let started = Instant::now();
        let out = self
            .command()
            .args(["results", "add", "--project", PROJECT, "--session", session])
            .args(["--score-bot", &bot.to_string()])
            .args(["--score-proxy-vpn", &pv.to_string()])
            .args(["--ip", IP, "--created-at", created_at])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "vigil results add {session} {pv}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        started
    }
}

const IP: &str = "203.0.113.7";

/// A running `vigil serve`; killed when dropped.
struct Server {
    served: Served,
    origin: String,
    client: reqwest::Client,
}

impl Server {
    fn start(cmd: Command) -> Self {
        let served = Served::start(cmd);
        Server {
            origin: served.origin.clone(),
            served,
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
        }
    }

    /// Kills the process (as a crash or `kill -9` would).
    fn kill(mut self) {
        self.served.kill();
    }

    fn logs(&self) -> String {
        self.served.stderr()
    }

    /// The delivery log of a webhook of the project.
    async fn deliveries(&self, webhook: &str) -> Vec<Value> {
        let url = format!(
            "{}/v1/projects/{PROJECT}/webhooks/{webhook}/deliveries",
            self.origin
        );
        let res = self
            .client
            .get(&url)
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        let status = res.status().as_u16();
        let body = res.text().await.unwrap();
        assert_eq!(status, 200, "GET {url}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["data"]
            .as_array()
            .unwrap_or_else(|| panic!("GET {url}: {body}"))
            .clone()
    }

    /// Polls the delivery log of `webhook` until `done` holds; panics after `WAIT` with the last
    /// log and the server's stderr.
    async fn wait_log(&self, webhook: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + WAIT;
        loop {
            let log = self.deliveries(webhook).await;
            if done(&log) {
                return log;
            }
            if Instant::now() > deadline {
                panic!(
                    "delivery log of {webhook} did not reach the expected state within {WAIT:?}: \
                     {log:#?}\nserver stderr:\n{}",
                    self.logs()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Data and checks

/// One account (key KEY), project prj_1 signing with SIGNING_KEY, and `hooks` on it.
fn seed(hooks: &[(&str, String)]) -> Value {
    let webhooks: Vec<Value> = hooks
        .iter()
        .map(|(id, url)| {
            json!({"id": id, "projectId": PROJECT, "type": "proxy_vpn_detect", "url": url,
                   "createdAt": "2026-11-21T00:00:00.000Z"})
        })
        .collect();
    json!({
        "accounts": [{"id": "acc_1", "apiKeys": [KEY],
            "plan": {"id": "plan_trial", "name": "Trial", "description": "14-day trial",
                     "maxRps": 1000, "maxProjects": 3, "maxRequests": 100000,
                     "expiresAt": "2099-12-05T00:00:00.000Z",
                     "subscribedAt": "2026-11-21T00:00:00.000Z",
                     "status": "trialing", "unsubscribedAt": null}}],
        "projects": [{"id": PROJECT, "accountId": "acc_1", "name": "Shop",
                      "domain": "shop.example", "apiKeyPublic": "pk_test",
                      "apiKeyPrivate": SIGNING_KEY, "disabled": false,
                      "createdAt": "2026-11-21T00:00:00.000Z"}],
        "webhooks": webhooks,
        "results": []
    })
}

fn session_of(hit: &Hit) -> String {
    hit.json()["data"]["sessionId"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The signature verifies with the reference implementation keyed with the project's private key,
/// and not with another key.
#[track_caller]
fn assert_signed(hit: &Hit) {
    let wh = standardwebhooks::Webhook::from_bytes(SIGNING_KEY.as_bytes().to_vec()).unwrap();
    if let Err(e) = wh.verify(hit.body.as_bytes(), &hit.headers) {
        panic!(
            "signature of {} does not verify: {e:?}; headers {:?}",
            hit.path, hit.headers
        );
    }
    let other = standardwebhooks::Webhook::from_bytes(b"sk_other".to_vec()).unwrap();
    assert!(other.verify(hit.body.as_bytes(), &hit.headers).is_err());
    let ts: i64 = hit.header("webhook-timestamp").parse().unwrap();
    let now = chrono::Utc::now().timestamp();
    assert!(
        (now - 60..=now + 1).contains(&ts),
        "webhook-timestamp {ts} is not now ({now})"
    );
    assert!(hit.header("webhook-signature").starts_with("v1,"));
}

/// The exact body of a delivery of `session`'s crossing result, with the body's own timestamp
/// (checked to be RFC 3339 UTC with milliseconds and recent).
#[track_caller]
fn assert_body(hit: &Hit, session: &str, bot: &str, pv: &str, created_at: &str) {
    let v = hit.json();
    let ts = v["timestamp"]
        .as_str()
        .unwrap_or_else(|| panic!("no timestamp in {}", hit.body));
    assert_eq!(ts.len(), 24, "timestamp {ts:?}");
    assert!(ts.ends_with('Z') && ts.as_bytes()[19] == b'.', "{ts:?}");
    let parsed = chrono::DateTime::parse_from_rfc3339(ts).unwrap();
    let age = chrono::Utc::now().signed_duration_since(parsed);
    assert!(
        age >= chrono::Duration::zero() && age < chrono::Duration::seconds(120),
        "timestamp {ts} is not now"
    );
    // The event's id is its createdAt (epoch ms) and the session's write count.
    let id = v["data"]["id"].as_str().unwrap_or_default();
    let millis = chrono::DateTime::parse_from_rfc3339(created_at)
        .unwrap()
        .timestamp_millis();
    assert!(id.starts_with(&format!("evt_{millis}_")), "{id}");
    let expected = format!(
        r#"{{"type":"proxy_vpn_detect","timestamp":"{ts}","data":{{"projectId":"{PROJECT}","sessionId":"{session}","scoreBot":{bot},"scoreProxyVpn":{pv},"ipAddress":"{IP}","createdAt":"{created_at}","id":"{id}","reasons":[]}}}}"#
    );
    assert_eq!(hit.body, expected, "body of the request to {}", hit.path);
    assert_eq!(hit.method, "POST");
    assert_eq!(hit.header("content-type"), "application/json");
}

fn entry<'a>(log: &'a [Value], session: &str) -> Option<&'a Value> {
    log.iter().find(|d| d["sessionId"] == session)
}

fn status_of(log: &[Value], session: &str) -> Option<String> {
    entry(log, session).and_then(|d| d["status"].as_str().map(str::to_owned))
}

/// A log entry, without its creation time (checked to be a timestamp).
#[track_caller]
fn without_created_at(d: &Value) -> Value {
    let mut d = d.clone();
    let created = d
        .as_object_mut()
        .unwrap()
        .remove("createdAt")
        .expect("createdAt");
    assert!(
        created.as_str().is_some_and(|s| s.ends_with('Z')),
        "{created}"
    );
    d
}

// ---------------------------------------------------------------------------------------------
// Scenarios (each run on both stores where it matters)

/// 0.2, 0.7, 0.9, 0.3 on one session: one delivery per webhook, carrying the 0.7 result.
async fn one_delivery_per_crossing(kind: Kind) {
    let rx = Receiver::start(Reply::status(204));
    let hooks = [
        ("wh_a", rx.url("/a")),
        ("wh_b", rx.url("/b")),
        ("wh_c", rx.url("/c")),
    ];
    let env = Env::new(kind, &seed(&hooks), SCHEDULE);
    let server = env.serve(true);
    for (i, (bot, pv)) in [(0.01, 0.2), (0.05, 0.7), (0.02, 0.9), (0.03, 0.3)]
        .into_iter()
        .enumerate()
    {
        env.add_result("sess_cross", bot, pv, &at(TEN_AM + i as i64));
    }
    // A later crossing: once it is delivered, every earlier record has been dispatched.
    env.add_result("sess_barrier", 0.5, 0.95, &at(TEN_AM + 10));
    rx.wait_for(6, WAIT, |_| true).await;
    for (id, _) in &hooks {
        server
            .wait_log(id, |l| {
                status_of(l, "sess_cross").as_deref() == Some("delivered")
                    && status_of(l, "sess_barrier").as_deref() == Some("delivered")
            })
            .await;
    }
    let hits = rx.hits();
    assert_eq!(hits.len(), 6, "3 webhooks x 2 crossings: {hits:#?}");
    for (id, url) in &hooks {
        let path = url.rsplit_once('/').map(|(_, p)| format!("/{p}")).unwrap();
        let mine: Vec<&Hit> = hits
            .iter()
            .filter(|h| h.path == path && session_of(h) == "sess_cross")
            .collect();
        assert_eq!(mine.len(), 1, "one delivery of the crossing to {id}");
        let hit = mine[0];
        assert_body(hit, "sess_cross", "0.05", "0.7", &at(TEN_AM + 1));
        assert_signed(hit);
        let msg = delivery_id(PROJECT, "sess_cross", id);
        assert_eq!(hit.header("webhook-id"), msg);
        let log = server.deliveries(id).await;
        assert_eq!(log.len(), 2, "{id}: {log:#?}");
        assert_eq!(
            without_created_at(entry(&log, "sess_cross").unwrap()),
            json!({"id": msg, "sessionId": "sess_cross", "status": "delivered", "attempts": 1,
                   "lastStatusCode": 204, "lastError": null, "nextAttemptAt": null})
        );
        // Newest crossing first.
        assert_eq!(log[0]["sessionId"], "sess_barrier");
    }
}

/// 500, 500, then 204: three attempts of the same delivery, byte-identical, on the schedule.
async fn failing_then_succeeding(kind: Kind) {
    let rx = Receiver::start(Reply::status(204));
    rx.script([Reply::status(500), Reply::status(500)]);
    let env = Env::new(kind, &seed(&[("wh_flaky", rx.url("/hook"))]), SCHEDULE);
    let server = env.serve(true);
    env.add_result("sess_1", 0.1, 0.8, &at(TEN_AM));
    let hits = rx.wait_for(3, WAIT, |_| true).await;
    let log = server
        .wait_log("wh_flaky", |l| {
            status_of(l, "sess_1").as_deref() == Some("delivered")
        })
        .await;
    let msg = delivery_id(PROJECT, "sess_1", "wh_flaky");
    assert_eq!(
        without_created_at(&log[0]),
        json!({"id": msg, "sessionId": "sess_1", "status": "delivered", "attempts": 3,
               "lastStatusCode": 204, "lastError": null, "nextAttemptAt": null})
    );
    assert_eq!(log.len(), 1);
    let hits_now = rx.hits();
    assert_eq!(hits_now.len(), 3, "{hits_now:#?}");
    assert_eq!(
        hits.iter().map(|h| h.answered).collect::<Vec<_>>(),
        [500, 500, 204]
    );
    for h in &hits {
        assert_eq!(h.header("webhook-id"), msg);
        assert_eq!(h.body, hits[0].body, "retries send the same body");
        assert_signed(h);
    }
    assert_body(&hits[0], "sess_1", "0.1", "0.8", &at(TEN_AM));
    for pair in hits.windows(2) {
        let gap = pair[1].at - pair[0].at;
        assert!(
            gap >= Duration::from_millis(150),
            "retry after {gap:?}, before the 200ms of the schedule"
        );
    }
}

/// The receiver answers 503; the server is killed; the receiver recovers; the server restarts on
/// the same store and delivers the pending delivery (same webhook-id).
async fn pending_delivery_survives_a_restart(kind: Kind) {
    let rx = Receiver::start(Reply::status(503));
    // Long enough delays that the kill lands between attempts, not during one.
    let env = Env::new(
        kind,
        &seed(&[("wh_down", rx.url("/hook"))]),
        "3s,3s,3s,3s,3s",
    );
    let first = env.serve(true);
    env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
    let before = rx.wait_for(1, WAIT, |_| true).await;
    let log = first
        .wait_log("wh_down", |l| {
            entry(l, "sess_1").is_some_and(|d| d["attempts"] == 1 && d["status"] == "pending")
        })
        .await;
    assert_eq!(log[0]["lastStatusCode"], 503);
    first.kill();
    let n_before = rx.hits().len();
    rx.set_default(Reply::status(204));
    let restarted_at = Instant::now();
    let second = env.serve(false);
    let delivered = rx.wait_for(1, WAIT, |h| h.answered == 204).await.remove(0);
    assert!(delivered.at > restarted_at, "delivered after the restart");
    let msg = delivery_id(PROJECT, "sess_1", "wh_down");
    assert_eq!(before[0].header("webhook-id"), msg);
    assert_eq!(delivered.header("webhook-id"), msg);
    assert_eq!(delivered.body, before[0].body);
    assert_signed(&delivered);
    assert_body(&delivered, "sess_1", "0.1", "0.9", &at(TEN_AM));
    let log = second
        .wait_log("wh_down", |l| {
            status_of(l, "sess_1").as_deref() == Some("delivered")
        })
        .await;
    let all = rx.hits();
    assert_eq!(
        all.len(),
        n_before + 1,
        "one attempt after the restart: {all:#?}"
    );
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["lastStatusCode"], 204);
    assert_eq!(log[0]["attempts"], all.len());
}

/// Results written with `vigil results add` while no server runs are delivered when it starts.
async fn results_written_while_stopped(kind: Kind) {
    let rx = Receiver::start(Reply::status(204));
    let env = Env::new(kind, &seed(&[("wh_1", rx.url("/hook"))]), SCHEDULE);
    env.serve(true).kill();
    env.add_result("sess_offline", 0.3, 0.2, &at(TEN_AM));
    env.add_result("sess_offline", 0.4, 0.85, &at(TEN_AM + 1));
    env.add_result("sess_offline", 0.4, 0.95, &at(TEN_AM + 2));
    assert!(rx.hits().is_empty());
    let server = env.serve(false);
    let hit = rx.wait_for(1, WAIT, |_| true).await.remove(0);
    assert_body(&hit, "sess_offline", "0.4", "0.85", &at(TEN_AM + 1));
    assert_signed(&hit);
    assert_eq!(
        hit.header("webhook-id"),
        delivery_id(PROJECT, "sess_offline", "wh_1")
    );
    let log = server
        .wait_log("wh_1", |l| {
            status_of(l, "sess_offline").as_deref() == Some("delivered")
        })
        .await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["attempts"], 1);
    assert_eq!(rx.hits().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// SQLite (the change feed)

/// A 410 answer fails the delivery and disables the webhook: a later crossing sends it nothing.
async fn gone_disables_the_webhook(kind: Kind) {
    let gone = Receiver::start(Reply::status(410));
    let ok = Receiver::start(Reply::status(204));
    let hooks = [("wh_gone", gone.url("/gone")), ("wh_ok", ok.url("/ok"))];
    let env = Env::new(kind, &seed(&hooks), SCHEDULE);
    let server = env.serve(true);
    env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
    gone.wait_for(1, WAIT, |_| true).await;
    let log = server
        .wait_log("wh_gone", |l| {
            status_of(l, "sess_1").as_deref() == Some("failed")
        })
        .await;
    let mut d = without_created_at(&log[0]);
    assert!(d["lastError"].is_string(), "{d}");
    d["lastError"] = Value::Null;
    assert_eq!(
        d,
        json!({"id": delivery_id(PROJECT, "sess_1", "wh_gone"), "sessionId": "sess_1", "status": "failed",
               "attempts": 1, "lastStatusCode": 410, "lastError": null, "nextAttemptAt": null})
    );
    // The second crossing reaches the other webhook (the barrier) and not the disabled one.
    env.add_result("sess_2", 0.1, 0.9, &at(TEN_AM + 1));
    ok.wait_for(1, WAIT, |h| session_of(h) == "sess_2").await;
    server
        .wait_log("wh_ok", |l| {
            status_of(l, "sess_2").as_deref() == Some("delivered")
        })
        .await;
    assert_eq!(gone.hits().len(), 1, "{:#?}", gone.hits());
    let log = server.deliveries("wh_gone").await;
    assert_eq!(log.len(), 1, "no delivery for a disabled webhook: {log:#?}");
    assert_eq!(log[0]["status"], "failed");
    assert_eq!(log[0]["lastStatusCode"], 410);
}

/// A 302 is a failed attempt: the Location is never requested; after the schedule, failed.
async fn redirect_is_not_followed(kind: Kind) {
    let target = Receiver::start(Reply::status(204));
    let redirector =
        Receiver::start(Reply::status(302).header("location", &target.url("/landing")));
    let env = Env::new(kind, &seed(&[("wh_r", redirector.url("/hook"))]), SCHEDULE);
    let server = env.serve(true);
    env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
    redirector.wait_for(1, WAIT, |_| true).await;
    let log = server
        .wait_log("wh_r", |l| {
            entry(l, "sess_1").is_some_and(|d| d["lastStatusCode"] == 302)
        })
        .await;
    let status = log[0]["status"].as_str().unwrap();
    assert!(status == "pending" || status == "failed", "{status}");
    // 1 attempt + 3 retries, then failed for good.
    let log = server
        .wait_log("wh_r", |l| {
            status_of(l, "sess_1").as_deref() == Some("failed")
        })
        .await;
    assert_eq!(log[0]["attempts"], 4);
    assert_eq!(log[0]["lastStatusCode"], 302);
    assert!(
        log[0]["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("redirect")),
        "{}",
        log[0]
    );
    assert_eq!(redirector.hits().len(), 4);
    assert!(target.hits().is_empty(), "the redirect was followed");
}

/// A receiver that takes 10 s to answer does not delay the delivery of the same crossing to
/// another webhook, and the slow answer still counts (it is within the 15 s total timeout).
async fn slow_receiver_does_not_delay_others(kind: Kind) {
    let slow = Receiver::start(Reply::status(204).after(Duration::from_secs(10)));
    let fast = Receiver::start(Reply::status(204));
    let hooks = [
        ("wh_slow", slow.url("/slow")),
        ("wh_fast", fast.url("/fast")),
    ];
    let env = Env::new(kind, &seed(&hooks), SCHEDULE);
    let server = env.serve(true);
    let written = env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
    let hit = fast.wait_for(1, WAIT, |_| true).await.remove(0);
    let took = hit.at - written;
    assert!(took < PROMPT, "fast receiver waited {took:?}");
    slow.wait_for(1, WAIT, |_| true).await;
    let log = server
        .wait_log("wh_slow", |l| {
            status_of(l, "sess_1").as_deref() == Some("delivered")
        })
        .await;
    assert_eq!(log[0]["attempts"], 1);
    assert_eq!(log[0]["lastStatusCode"], 204);
}

/// While a slow receiver holds an attempt, a later crossing (another session) still reaches the
/// other receiver at once: a slow receiver must not block the change feed or the stream shard
/// (CONTRACT.md: "a failing receiver never blocks the stream shard or delays deliveries to other
/// receivers").
async fn slow_receiver_does_not_block_later_crossings(kind: Kind) {
    let slow = Receiver::start(Reply::status(204).after(Duration::from_secs(10)));
    let fast = Receiver::start(Reply::status(204));
    let hooks = [
        ("wh_slow", slow.url("/slow")),
        ("wh_fast", fast.url("/fast")),
    ];
    let env = Env::new(kind, &seed(&hooks), SCHEDULE);
    let _server = env.serve(true);
    env.add_result("sess_1", 0.1, 0.9, &at(TEN_AM));
    slow.wait_for(1, WAIT, |_| true).await;
    fast.wait_for(1, WAIT, |_| true).await;
    // The slow attempt is now in flight for about 10 s.
    let written = env.add_result("sess_2", 0.1, 0.9, &at(TEN_AM + 1));
    let hit = fast
        .wait_for(1, WAIT, |h| session_of(h) == "sess_2")
        .await
        .remove(0);
    let took = hit.at - written;
    assert!(
        took < PROMPT,
        "the second crossing reached the fast receiver after {took:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The scenarios, on each store

/// Every scenario on both stores: `sqlite::NAME` over the SQLite change feed, `dynamodb::NAME`
/// over the table's stream in the emulator.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::Kind::Sqlite).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::Kind::Dynamo).await;
                }
            )*
        }
    };
}

on_both_stores!(
    one_delivery_per_crossing,
    failing_then_succeeding,
    pending_delivery_survives_a_restart,
    results_written_while_stopped,
    gone_disables_the_webhook,
    redirect_is_not_followed,
    slow_receiver_does_not_delay_others,
    slow_receiver_does_not_block_later_crossings,
);
