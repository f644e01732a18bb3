//! The webhook-dispatch function's events (`events/webhook-dispatch-*.json`, DynamoDB Streams
//! batches exactly as Lambda delivers them) run through `vigil::lambda::handle_stream_batch`, the
//! function's handler, with a `Dispatcher` over a temporary SQLite store and a real `Sender` (the
//! loopback-allowing policy and the system resolver) posting to a scripted loopback receiver.
//!
//! | event file                          | records                                           |
//! |-------------------------------------|---------------------------------------------------|
//! | webhook-dispatch-crossing.json      | MODIFY of prj_1/sess_1's summary, 0.2 -> 0.8       |
//! | webhook-dispatch-no-crossing.json   | INSERT of a result, MODIFY of the summary 0.1 -> 0.3 |
//! | webhook-dispatch-replay.json        | the crossing record twice (a redelivered batch)    |
//!
//! Every test loads `events/seed.json`, replaces its webhook wh_1 (an address not reachable
//! offline) by loopback webhooks through the store (two active ones and a disabled one), and
//! checks what reached the receiver: `handle_stream_batch` returns after the first attempts, so
//! counts are final when it returns. Tests share nothing.
//!
//! Run one by hand: `cargo lambda invoke --data-file events/webhook-dispatch-crossing.json
//! webhook-dispatch` (it then talks to the configured table).

mod common;
mod receiver;

use std::path::Path;
use std::sync::Arc;

use aws_lambda_events::dynamodb::Event;
use common::delivery_id;
use receiver::{Hit, Receiver, Reply};
use serde_json::{Value, json};
use tempfile::TempDir;
use vigil::config::Config;
use vigil::dispatch::{Dispatcher, Sender, SystemResolver};
use vigil::domain::{
    DeliveryStatus, ManualClock, ProjectId, Timestamp, UrlPolicy, Webhook, WebhookId, WebhookType,
    WebhookUrl,
};
use vigil::lambda::handle_stream_batch;
use vigil::seed;
use vigil::service::Vigil;
use vigil::store::{DeliveryStore, SqliteStore, WebhookInsert, WebhookStore};

/// events/seed.json's project and its private key.
const PROJECT: &str = "prj_1";
const SIGNING_KEY: &str = "sk_example";
const LOOPBACK: UrlPolicy = UrlPolicy {
    allow_loopback: true,
};
/// The active webhooks every fixture has, and their receiver paths.
const ACTIVE: [(&str, &str); 2] = [("wh_a", "/a"), ("wh_b", "/b")];

fn event_text(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("events")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An event file, deserialised as `lambda_runtime` deserialises the function's payload.
fn event(name: &str) -> Event {
    serde_json::from_str(&event_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn event_of(records: Vec<Value>) -> Event {
    serde_json::from_value(json!({ "Records": records })).expect("a DynamoDB Streams event")
}

struct Fixture {
    dispatcher: Dispatcher<SqliteStore>,
    store: SqliteStore,
    rx: Receiver,
    _dir: TempDir,
}

/// events/seed.json, with wh_1 replaced by wh_a and wh_b (active) and wh_off (disabled), all on
/// the loopback receiver (answering 204).
async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("vigil.db")).unwrap();
    let app = Vigil::new(store.clone(), LOOPBACK);
    seed::load(&app, &event_text("seed.json"))
        .await
        .expect("events/seed.json loads");
    let project = ProjectId::parse(PROJECT).unwrap();
    assert!(
        store
            .delete_webhook(&project, &WebhookId::parse("wh_1").unwrap())
            .await
            .unwrap()
    );
    let rx = Receiver::start(Reply::status(204));
    for (id, path) in ACTIVE.iter().chain(&[("wh_off", "/off")]) {
        let hook = Webhook {
            id: WebhookId::parse(*id).unwrap(),
            kind: WebhookType::ProxyVpnDetect,
            url: WebhookUrl::parse(&rx.url(path), LOOPBACK).unwrap(),
            created_at: Timestamp::now(),
        };
        assert_eq!(
            store.insert_webhook(&project, &hook).await.unwrap(),
            WebhookInsert::Created
        );
    }
    store
        .disable_webhook(&project, &WebhookId::parse("wh_off").unwrap())
        .await
        .unwrap();
    let sender = Sender::new(LOOPBACK, Arc::new(SystemResolver)).unwrap();
    // The deployment defaults: threshold 0.5.
    let config = Config::from_lookup(|_| None).unwrap();
    Fixture {
        dispatcher: Dispatcher::new(store.clone(), sender, &config),
        store,
        rx,
        _dir: dir,
    }
}

impl Fixture {
    /// Runs one batch through the function's handler; asserts no record was reported failed.
    async fn run(&self, event: Event) {
        let response = handle_stream_batch(&self.dispatcher, event).await;
        assert!(
            response.batch_item_failures.is_empty(),
            "batchItemFailures: {:?}",
            response.batch_item_failures
        );
    }

    /// The requests each active webhook received; asserts the disabled one received none.
    fn per_hook(&self) -> Vec<Vec<Hit>> {
        assert!(
            self.rx.hits_to("/off").is_empty(),
            "a disabled webhook was called"
        );
        ACTIVE
            .iter()
            .map(|(_, path)| self.rx.hits_to(path))
            .collect()
    }

    /// The stored deliveries of a webhook.
    async fn deliveries(&self, hook: &str) -> Vec<vigil::domain::Delivery> {
        self.store
            .deliveries(
                &ProjectId::parse(PROJECT).unwrap(),
                &WebhookId::parse(hook).unwrap(),
                100,
            )
            .await
            .unwrap()
    }
}

/// The request is the signed delivery of `session`'s crossing with the given result.
#[track_caller]
fn assert_delivery(hit: &Hit, hook: &str, session: &str, result: &str) {
    let v = hit.json();
    let ts = v["timestamp"].as_str().expect("a timestamp");
    assert!(ts.len() == 24 && ts.ends_with('Z'), "{ts:?}");
    let expected = format!(
        r#"{{"type":"proxy_vpn_detect","timestamp":"{ts}","data":{{"projectId":"{PROJECT}","sessionId":"{session}",{result}}}}}"#
    );
    assert_eq!(hit.body, expected);
    assert_eq!(hit.method, "POST");
    assert_eq!(hit.header("content-type"), "application/json");
    assert_eq!(
        hit.header("webhook-id"),
        delivery_id(PROJECT, session, hook)
    );
    let wh = standardwebhooks::Webhook::from_bytes(SIGNING_KEY.as_bytes().to_vec()).unwrap();
    wh.verify(hit.body.as_bytes(), &hit.headers)
        .unwrap_or_else(|e| panic!("signature does not verify: {e:?}"));
}

/// The `data` members after the ids of the crossing in webhook-dispatch-crossing.json.
/// The crossing result, and its event: the summary's second write, unevaluated (no reasons).
const CROSSING_RESULT: &str = r#""scoreBot":0.05,"scoreProxyVpn":0.8,"ipAddress":"198.51.100.23","createdAt":"2026-11-21T10:05:00.000Z","id":"evt_1795255500000_2","reasons":[]"#;

// ---------------------------------------------------------------------------------------------
// The event files

#[test]
fn the_event_files_are_lambda_dynamodb_events() {
    let crossing = event("webhook-dispatch-crossing.json");
    assert_eq!(crossing.records.len(), 1);
    let r = &crossing.records[0];
    assert_eq!(r.event_name, "MODIFY");
    assert_eq!(r.event_source.as_deref(), Some("aws:dynamodb"));
    assert!(r.change.sequence_number.is_some());
    assert!(!r.change.old_image.is_empty() && !r.change.new_image.is_empty());
    let none = event("webhook-dispatch-no-crossing.json");
    assert_eq!(
        none.records
            .iter()
            .map(|r| r.event_name.as_str())
            .collect::<Vec<_>>(),
        ["INSERT", "MODIFY"]
    );
    let replay = event("webhook-dispatch-replay.json");
    assert_eq!(replay.records.len(), 2);
    assert_eq!(replay.records[0], crossing.records[0]);
    assert_eq!(replay.records[1], crossing.records[0]);
}

#[tokio::test]
async fn crossing_event_delivers_once_to_each_active_webhook() {
    let f = fixture().await;
    f.run(event("webhook-dispatch-crossing.json")).await;
    let hits = f.per_hook();
    for ((hook, _), hits) in ACTIVE.iter().zip(&hits) {
        assert_eq!(hits.len(), 1, "{hook}: {hits:#?}");
        assert_delivery(&hits[0], hook, "sess_1", CROSSING_RESULT);
        let stored = f.deliveries(hook).await;
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].status, DeliveryStatus::Delivered);
        assert_eq!(stored[0].attempts.len(), 1);
        assert_eq!(stored[0].attempts[0].status_code, Some(204));
    }
    assert_eq!(f.rx.hits().len(), 2);
    assert!(f.deliveries("wh_off").await.is_empty());
}

#[tokio::test]
async fn no_crossing_event_sends_nothing() {
    let f = fixture().await;
    f.run(event("webhook-dispatch-no-crossing.json")).await;
    assert!(f.rx.hits().is_empty(), "{:#?}", f.rx.hits());
    for (hook, _) in ACTIVE {
        assert!(f.deliveries(hook).await.is_empty());
    }
}

#[tokio::test]
async fn replayed_records_and_batches_deliver_once() {
    let f = fixture().await;
    // The crossing record twice in one batch.
    f.run(event("webhook-dispatch-replay.json")).await;
    // The same batch again, and the single-record batch again (Lambda retries whole batches).
    f.run(event("webhook-dispatch-replay.json")).await;
    f.run(event("webhook-dispatch-crossing.json")).await;
    let hits = f.per_hook();
    for ((hook, _), hits) in ACTIVE.iter().zip(&hits) {
        assert_eq!(hits.len(), 1, "{hook}: {hits:#?}");
        assert_delivery(&hits[0], hook, "sess_1", CROSSING_RESULT);
        assert_eq!(f.deliveries(hook).await.len(), 1);
    }
}

// ---------------------------------------------------------------------------------------------
// Crossing across the records of a batch

/// A session summary image in DynamoDB JSON: the maxima and the last result (`bot`, `pv` at
/// `10:00:SS`).
fn summary(session: &str, seq: u32, max: (f64, f64), last: (f64, f64)) -> Value {
    json!({
        "pk": {"S": "PROJECT#prj_1"}, "sk": {"S": format!("SESSION#{session}")},
        "entity": {"S": "session"}, "projectId": {"S": "prj_1"}, "sessionId": {"S": session},
        "seq": {"N": seq.to_string()},
        "scoreBot": {"N": max.0.to_string()}, "scoreProxyVpn": {"N": max.1.to_string()},
        "last": {"M": {
            "scoreBot": {"N": last.0.to_string()}, "scoreProxyVpn": {"N": last.1.to_string()},
            "ipAddress": {"S": "192.0.2.1"},
            "createdAt": {"S": format!("2026-11-21T10:00:{seq:02}.000Z")}
        }}
    })
}

/// The stream record of the `seq`-th write to `session` (proxy/VPN scores `pvs[..seq]`), with
/// bot score 0.1 * seq.
fn write_record(session: &str, pvs: &[f64], seq: usize) -> Value {
    let image = |n: usize| {
        let max_pv = pvs[..n].iter().copied().fold(0.0, f64::max);
        let bot = 0.1 * n as f64;
        let bot = (bot * 10.0).round() / 10.0;
        summary(session, n as u32, (bot, max_pv), (bot, pvs[n - 1]))
    };
    let mut dynamodb = json!({
        "ApproximateCreationDateTime": 1795255200 + seq,
        "Keys": {"pk": {"S": "PROJECT#prj_1"}, "sk": {"S": format!("SESSION#{session}")}},
        "NewImage": image(seq),
        "SequenceNumber": format!("{:021}", 1000 + seq),
        "SizeBytes": 400,
        "StreamViewType": "NEW_AND_OLD_IMAGES"
    });
    if seq > 1 {
        dynamodb["OldImage"] = image(seq - 1);
    }
    json!({
        "eventID": format!("{session}-{seq}"),
        "eventName": if seq > 1 { "MODIFY" } else { "INSERT" },
        "eventVersion": "1.1", "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
        "dynamodb": dynamodb,
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/vigil/stream/2026-11-21T00:00:00.000"
    })
}

/// The data members of the result written `seq`-th (bot 0.1 * seq) with proxy/VPN score `pv`,
/// and its event's id (created at 10:00:`seq`, the session's `seq`-th write).
fn written(seq: u32, pv: &str) -> String {
    let bot = ((0.1 * seq as f64) * 10.0).round() / 10.0;
    let millis = 1_795_255_200_000u64 + u64::from(seq) * 1000;
    format!(
        r#""scoreBot":{bot},"scoreProxyVpn":{pv},"ipAddress":"192.0.2.1","createdAt":"2026-11-21T10:00:{seq:02}.000Z","id":"evt_{millis}_{seq}","reasons":[]"#
    )
}

const PVS: [f64; 4] = [0.1, 0.3, 0.6, 0.9];

#[tokio::test]
async fn several_writes_of_a_session_in_one_batch_deliver_once() {
    let f = fixture().await;
    // 0.1 (insert), 0.1 -> 0.3, 0.3 -> 0.6 (the crossing), 0.6 -> 0.9.
    let records = (1..=4).map(|i| write_record("sess_b", &PVS, i)).collect();
    f.run(event_of(records)).await;
    for ((hook, _), hits) in ACTIVE.iter().zip(f.per_hook()) {
        assert_eq!(hits.len(), 1, "{hook}: {hits:#?}");
        assert_delivery(&hits[0], hook, "sess_b", &written(3, "0.6"));
    }
}

#[tokio::test]
async fn records_out_of_order_deliver_once_with_the_crossing_result() {
    let f = fixture().await;
    // Within a batch: the later writes first.
    let order = [4, 3, 1, 2];
    let records = order
        .iter()
        .map(|i| write_record("sess_o", &PVS, *i))
        .collect();
    f.run(event_of(records)).await;
    // Across batches: the crossing record again, then earlier writes.
    f.run(event_of(vec![write_record("sess_o", &PVS, 3)])).await;
    f.run(event_of(vec![
        write_record("sess_o", &PVS, 2),
        write_record("sess_o", &PVS, 1),
    ]))
    .await;
    for ((hook, _), hits) in ACTIVE.iter().zip(f.per_hook()) {
        assert_eq!(hits.len(), 1, "{hook}: {hits:#?}");
        assert_delivery(&hits[0], hook, "sess_o", &written(3, "0.6"));
    }
}

#[tokio::test]
async fn crossings_of_several_sessions_in_one_batch_each_deliver() {
    let f = fixture().await;
    let mut records = Vec::new();
    for i in 1..=4 {
        for s in ["sess_x", "sess_y", "sess_z"] {
            records.push(write_record(s, &PVS, i));
        }
    }
    f.run(event_of(records)).await;
    for ((hook, _), hits) in ACTIVE.iter().zip(f.per_hook()) {
        let mut sessions: Vec<String> = hits
            .iter()
            .map(|h| h.json()["data"]["sessionId"].as_str().unwrap().to_owned())
            .collect();
        sessions.sort();
        assert_eq!(sessions, ["sess_x", "sess_y", "sess_z"], "{hook}");
        for h in &hits {
            let s = h.json()["data"]["sessionId"].as_str().unwrap().to_owned();
            assert_delivery(h, hook, &s, &written(3, "0.6"));
        }
    }
}

/// A session record that cannot be read is skipped (retrying cannot fix it) without failing the
/// batch or the records after it.
#[tokio::test]
async fn a_malformed_record_is_skipped_and_the_rest_delivered() {
    let f = fixture().await;
    let mut bad = write_record("sess_bad", &PVS, 3);
    bad["dynamodb"]["NewImage"]["scoreProxyVpn"] = json!({"N": "7"});
    let records = vec![bad, write_record("sess_ok", &PVS, 3)];
    f.run(event_of(records)).await;
    for ((hook, _), hits) in ACTIVE.iter().zip(f.per_hook()) {
        assert_eq!(hits.len(), 1, "{hook}: {hits:#?}");
        assert_delivery(&hits[0], hook, "sess_ok", &written(3, "0.6"));
    }
}

/// A receiver's failure is an attempt outcome, never a failed record: the batch succeeds, the
/// deliveries wait for their retry (5 s, the default schedule's first delay) and are not due yet.
#[tokio::test]
async fn a_failing_receiver_does_not_fail_the_batch() {
    let f = fixture().await;
    f.rx.set_default(Reply::status(500));
    f.run(event("webhook-dispatch-crossing.json")).await;
    for ((hook, _), hits) in ACTIVE.iter().zip(f.per_hook()) {
        assert_eq!(hits.len(), 1, "{hook}");
        let stored = f.deliveries(hook).await;
        assert_eq!(stored.len(), 1);
        let d = &stored[0];
        assert_eq!(d.status, DeliveryStatus::Pending);
        assert_eq!(d.attempts.len(), 1);
        assert_eq!(d.attempts[0].status_code, Some(500));
        let wait = d.next_attempt_at.unwrap().unix_millis() - d.attempts[0].at.unix_millis();
        assert_eq!(
            wait, 5_000,
            "{hook}: next attempt after the schedule's first delay"
        );
    }
    assert_eq!(f.dispatcher.sweep().await.unwrap(), 0, "nothing is due yet");
    assert_eq!(f.rx.hits().len(), 2);
}

#[tokio::test]
async fn the_dispatcher_reads_time_from_its_clock_only() {
    let f = fixture().await;
    let at: Timestamp = "2031-05-06T07:08:09.000Z".parse().unwrap();
    let f = Fixture {
        dispatcher: f.dispatcher.with_clock(ManualClock::at(at)),
        ..f
    };
    f.run(event("webhook-dispatch-crossing.json")).await;
    for ((hook, _), hits) in ACTIVE.iter().zip(f.per_hook()) {
        assert_eq!(hits.len(), 1, "{hook}");
        // The payload, the signature's timestamp, the delivery and its attempt: all the clock's.
        assert_eq!(hits[0].json()["timestamp"], "2031-05-06T07:08:09.000Z");
        assert_eq!(
            hits[0].header("webhook-timestamp"),
            at.unix_seconds().to_string()
        );
        let stored = f.deliveries(hook).await;
        assert_eq!(stored[0].created_at, at);
        assert_eq!(stored[0].attempts[0].at, at);
    }
}
