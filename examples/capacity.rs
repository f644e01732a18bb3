//! The cost and capacity model (`make cost`): what one million visits, API reads and webhook
//! deliveries cost on AWS, and which regional limit binds first, computed from this build's own
//! figures and published prices, with the arithmetic printed.
//!
//! Measured here: the items a visit writes (built by the store layout from a real evaluation of a
//! typical bot's visit, sized by DynamoDB's rules), the engine's time per evaluation, and the
//! DynamoDB calls per route (`tests/dynamo_calls.rs` asserts the same lists). Assumed, and
//! printed as assumptions: DynamoDB's latency per round trip, and the prices (us-east-1, on-demand,
//! as published in 2025-2026).

use std::collections::HashMap;
use std::time::Instant;

use aws_sdk_dynamodb::types::AttributeValue;
use vigil_core::domain::Flagged;
use vigil_core::domain::insight::{Granularity, Tally};
use vigil_core::domain::velocity::Tick;
use vigil_core::domain::{
    CheckResult, DeviceKey, Evaluation, NewResult, ProjectId, Score, SessionId, Timestamp,
};
use vigil_core::store::items::{ResultItem, SessionItem, StatsItem};
use vigil_core::store::keys::stats_shard;
use vigil_detect::{Engine, Evidence};

// Prices, USD (us-east-1, published).
const API_GATEWAY_PER_M: f64 = 3.50; // REST API, first 333 M requests a month
const WAF_PER_M: f64 = 0.60; // web ACL requests (the collect route's rate rule)
const LAMBDA_PER_M: f64 = 0.20; // invocations
const LAMBDA_GB_S: f64 = 0.000_013_333_4; // arm64
const WRU_PER_M: f64 = 0.625; // DynamoDB on-demand write request units
const RRU_PER_M: f64 = 0.125; // read request units
const LOGS_PER_GB: f64 = 0.50; // CloudWatch Logs ingestion (EMF metrics are log lines)
// Assumptions.
const ROUND_TRIP_MS: f64 = 6.0; // one DynamoDB call from Lambda in the same region
const LOG_BYTES_PER_REQUEST: f64 = 700.0; // the request's log line and its EMF line
const WEBHOOK_POST_MS: f64 = 150.0; // a receiver's answer time

/// DynamoDB's size of an item: attribute names and values (numbers about one byte per two digits
/// plus one; maps and lists three bytes plus their elements).
fn size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => n.trim_start_matches('-').replace('.', "").len().div_ceil(2) + 1,
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, v)| k.len() + value_size(v))
                .sum::<usize>()
        }
        AttributeValue::L(l) => 3 + l.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        _ => 0,
    }
}

/// Write units of one item write: one per KB (two in a transaction).
fn wru(bytes: usize, transactional: bool) -> f64 {
    let units = bytes.div_ceil(1024).max(1) as f64;
    if transactional { 2.0 * units } else { units }
}

fn item<T: serde::Serialize>(v: &T) -> HashMap<String, AttributeValue> {
    serde_dynamo::to_item(v).expect("a layout item serialises")
}

struct Line {
    what: &'static str,
    usd: f64,
    how: String,
}

fn print(title: &str, lines: &[Line]) -> f64 {
    let total: f64 = lines.iter().map(|l| l.usd).sum();
    println!("\n{title}: ${total:.2} per million");
    for l in lines {
        println!("  {:<28} ${:>6.2}  {}", l.what, l.usd, l.how);
    }
    total
}

fn lambda(mb: f64, ms: f64) -> (f64, String) {
    let gb_s = mb / 1024.0 * ms / 1000.0;
    (
        LAMBDA_PER_M + gb_s * LAMBDA_GB_S * 1e6,
        format!("${LAMBDA_PER_M} + {mb} MB x {ms:.1} ms = {gb_s:.5} GB-s x ${LAMBDA_GB_S}/GB-s"),
    )
}

fn main() {
    // A typical flagged visit: curl from a hosting address, as the events route evaluates it.
    let engine = Engine::embedded().expect("the embedded detection data loads");
    let evidence: Evidence = serde_json::from_str(
        r#"{"ipAddress":"3.5.140.2","userAgent":"curl/8.5.0","headers":{"accept-language":"en-US"}}"#,
    )
    .expect("evidence");
    let started = Instant::now();
    let runs = 10_000;
    let mut verdict = engine.evaluate(&evidence);
    for _ in 1..runs {
        verdict = engine.evaluate(&evidence);
    }
    let eval_us = started.elapsed().as_secs_f64() * 1e6 / f64::from(runs);
    let score = |v: f64| Score::new(v).expect("a score");
    let now: Timestamp = "2026-11-23T10:00:00.000Z".parse().expect("time");
    let r = NewResult {
        project_id: ProjectId::parse("prj_01JD3X7ZQ5W8K2").expect("id"),
        session_id: SessionId::parse("c3a1f9e2-5b7d-4c1a-9e8f-2d6b0a4c7e19").expect("id"),
        result: CheckResult {
            score_bot: score(verdict.score_bot),
            score_proxy_vpn: score(verdict.score_proxy_vpn),
            ip_address: "3.5.140.2".parse().expect("ip"),
            created_at: now,
        },
        evaluation: Some(Evaluation {
            reasons: verdict.reasons.clone(),
            engine_version: vigil_detect::ENGINE_VERSION.to_owned(),
            model: "shared".into(),
            ja4: None,
            transport: None,
            device: None,
            flagged: Flagged::at(
                Score::HALF,
                score(verdict.score_bot),
                score(verdict.score_proxy_vpn),
            ),
            agent: verdict.agent.clone(),
            allowed: false,
            page: None,
        }),
    };
    let summary = SessionItem::next(None, &r);
    let result = ResultItem::new(&r, summary.seq);
    let mut stats = StatsItem::empty(
        &r.project_id,
        Granularity::Hour,
        now,
        stats_shard(&r.session_id),
    );
    stats.add(&Tally::of(&r).counts());
    let (result_b, summary_b, stats_b) = (
        size(&item(&result)),
        size(&item(&summary)),
        size(&item(&stats)),
    );
    let counter_b = 80; // pk, sk, count, total, visits, ttl, entity
    // The velocity items a visit with a device key adds to (its address's, device's and a project
    // shard's hour and day), as the layout builds them, at a person's first visit of the hour.
    let device = DeviceKey::parse("dev_00112233445566778899").expect("key");
    let tick = Tick {
        project: &r.project_id,
        session: &r.session_id,
        address: r.result.ip_address,
        device: Some(&device),
        country: Some("US"),
        at: now,
    };
    let work = tick.work(vigil_core::store::keys::velocity_sk);
    let velocity_b: Vec<usize> = work
        .updates
        .iter()
        .map(|u| {
            let mut item = HashMap::new();
            item.insert(
                "pk".to_owned(),
                AttributeValue::S(format!("PROJECT#{}", r.project_id)),
            );
            item.insert("sk".to_owned(), AttributeValue::S(u.sk.clone()));
            item.insert("ttl".to_owned(), AttributeValue::N(u.expires.to_string()));
            for (a, n) in &u.adds {
                item.insert(a.clone(), AttributeValue::N(n.to_string()));
            }
            for (a, m) in &u.members {
                item.insert(a.clone(), AttributeValue::Ss(vec![m.clone()]));
            }
            size(&item)
        })
        .collect();
    let velocity_wru: f64 = velocity_b.iter().map(|b| wru(*b, false)).sum();
    // BatchGetItem, eventually consistent: 0.5 RRU for each item up to 4 KB.
    let velocity_rru = 0.5 * work.reads.len() as f64;
    println!("Measured on this build:");
    println!(
        "  items of one visit: result {result_b} B, session summary {summary_b} B, statistics {stats_b} B, counter ~{counter_b} B"
    );
    println!(
        "  reasons: {}",
        verdict
            .reasons
            .iter()
            .map(|x| x.code.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  velocity items of one visit with a device key: {} UpdateItems of {:?} B, {} read back in one BatchGetItem",
        velocity_b.len(),
        velocity_b,
        work.reads.len()
    );
    println!("  one evaluation: {eval_us:.1} us (mean of {runs})");
    println!(
        "Assumed: {ROUND_TRIP_MS} ms per DynamoDB round trip, {LOG_BYTES_PER_REQUEST} B of logs per request, receivers answer in {WEBHOOK_POST_MS} ms"
    );

    // One visit (POST /collect), warm: 3 counter UpdateItems, the velocity UpdateItems and their
    // BatchGetItem, and the GetItem of the summary (strongly consistent), all together (1 round
    // trip); then one TransactWriteItems: the result, the summary, the hour's and the day's
    // statistics items; the summary's copies in the sessions and devices indexes.
    let visit_wru = 3.0 * wru(counter_b, false)
        + velocity_wru
        + wru(result_b, true)
        + wru(summary_b, true)
        + 2.0 * wru(stats_b, true)
        + 2.0 * wru(summary_b, false);
    let visit_rru = 1.0 + velocity_rru;
    let visit_ms = 2.0 * ROUND_TRIP_MS + eval_us / 1000.0 + 1.0;
    let (visit_lambda, visit_lambda_how) = lambda(1024.0, visit_ms);
    // The dispatcher sees the summary change (stream filtered on sessions), batches of 100.
    let (dispatch_lambda, _) = lambda(256.0, 5.0);
    let visits = print(
        "1,000,000 visits (POST /v1/collect)",
        &[
            Line {
                what: "API Gateway",
                usd: API_GATEWAY_PER_M,
                how: format!("${API_GATEWAY_PER_M}/M requests"),
            },
            Line {
                what: "WAF",
                usd: WAF_PER_M,
                how: format!("${WAF_PER_M}/M requests"),
            },
            Line {
                what: "Lambda (collect)",
                usd: visit_lambda,
                how: visit_lambda_how,
            },
            Line {
                what: "DynamoDB writes",
                usd: visit_wru * WRU_PER_M,
                how: format!(
                    "{visit_wru} WRU = 3 counters + {velocity_wru} velocity + 2 x result + 2 x summary + 2 x 2 statistics + 2 index copies, x ${WRU_PER_M}/M"
                ),
            },
            Line {
                what: "DynamoDB reads",
                usd: visit_rru * RRU_PER_M,
                how: format!(
                    "{visit_rru} RRU = 1 (summary, consistent) + {velocity_rru} (velocity windows before, eventual)"
                ),
            },
            Line {
                what: "stream dispatcher",
                usd: dispatch_lambda / 100.0,
                how: "one invocation per 100 summary changes, 256 MB x 5 ms".into(),
            },
            Line {
                what: "logs and metrics",
                usd: LOG_BYTES_PER_REQUEST * 1e6 / 1e9 * LOGS_PER_GB,
                how: format!(
                    "{LOG_BYTES_PER_REQUEST} B x 1 M = {:.2} GB x ${LOGS_PER_GB}/GB",
                    LOG_BYTES_PER_REQUEST / 1e3
                ),
            },
        ],
    );

    // One API read (GET results/events/sessions/stats), warm: 2 counter UpdateItems together and
    // one Query of up to 100 items (eventually consistent: 0.5 RRU per 4 KB).
    let page_kb = 100.0 * result_b as f64 / 1024.0;
    let read_rru = (page_kb / 4.0).ceil() * 0.5;
    let read_ms = 2.0 * ROUND_TRIP_MS + 1.0;
    let (read_lambda, read_lambda_how) = lambda(256.0, read_ms);
    let reads = print(
        "1,000,000 API reads (a 100-result page)",
        &[
            Line {
                what: "API Gateway",
                usd: API_GATEWAY_PER_M,
                how: format!("${API_GATEWAY_PER_M}/M requests"),
            },
            Line {
                what: "authorizer",
                usd: 0.0,
                how: "cached 300 s per key: about one call per key and 5 minutes (2 GetItems)"
                    .into(),
            },
            Line {
                what: "Lambda",
                usd: read_lambda,
                how: read_lambda_how,
            },
            Line {
                what: "DynamoDB writes",
                usd: 2.0 * wru(counter_b, false) * WRU_PER_M,
                how: "2 WRU: the plan's two counters".into(),
            },
            Line {
                what: "DynamoDB reads",
                usd: read_rru * RRU_PER_M,
                how: format!("{page_kb:.0} KB page = {read_rru} RRU, eventually consistent"),
            },
            Line {
                what: "logs and metrics",
                usd: LOG_BYTES_PER_REQUEST * 1e6 / 1e9 * LOGS_PER_GB,
                how: format!("{LOG_BYTES_PER_REQUEST} B per request"),
            },
        ],
    );

    // One delivery: created with its first attempt by the dispatcher (a put, then an update with
    // the outcome; the due index holds it while pending), the receiver's time billed.
    let delivery_b = 900;
    let delivery_wru = 2.0 * wru(delivery_b, false) + 2.0 * wru(delivery_b, false);
    // First attempts of a batch run concurrently: a batch of 100 lasts about one receiver's answer
    // plus the writes, and its billed time is shared by its deliveries.
    let batch_ms = WEBHOOK_POST_MS + 2.0 * ROUND_TRIP_MS;
    let (batch_lambda, batch_how) = lambda(256.0, batch_ms);
    let deliveries = print(
        "1,000,000 webhook deliveries (first attempt succeeds)",
        &[
            Line {
                what: "Lambda (dispatcher)",
                usd: batch_lambda / 100.0,
                how: format!("({batch_how}) / 100 deliveries a batch"),
            },
            Line {
                what: "DynamoDB writes",
                usd: delivery_wru * WRU_PER_M,
                how: format!("{delivery_wru} WRU: put + outcome, each also in the due index"),
            },
            Line {
                what: "logs and metrics",
                usd: LOG_BYTES_PER_REQUEST * 1e6 / 1e9 * LOGS_PER_GB,
                how: "one line per delivery".into(),
            },
        ],
    );

    println!(
        "\nPer million: visits ${visits:.2}, API reads ${reads:.2}, webhook deliveries ${deliveries:.2}."
    );

    // What binds first, per region, with the template's settings.
    let stage_rps = 2_000.0;
    let concurrency = 1_000.0;
    let visit_s = visit_ms / 1000.0;
    println!("\nRegional limits (defaults, raised on request) and where they bind:");
    println!(
        "  API Gateway stage throttle (template): {stage_rps} req/s, bursts 4,000 -> binds first, at 2,000 requests a second over all customers"
    );
    println!(
        "  Lambda concurrency 1,000 a region: at {visit_ms:.0} ms a visit, {:.0} visits/s ({concurrency} / {visit_s:.3} s); at 2,000 req/s only {:.0} concurrent",
        concurrency / visit_s,
        stage_rps * visit_s
    );
    println!(
        "  DynamoDB partition, 1,000 WRU/s: one project's visits write {:.0} WRU into PROJECT#p ({:.0} visits/s before adaptive capacity splits it by sort key; results, summaries, the 4 statistics shards and the velocity items sit apart)",
        visit_wru - 3.0,
        1000.0 / (visit_wru - 3.0)
    );
    println!(
        "  DynamoDB table, on-demand: 40,000 WRU/s a table by default -> {:.0} visits/s",
        40_000.0 / visit_wru
    );
    println!(
        "  Account counters: spread over up to 16 items of 250 writes/s each (a plan of 4,000 req/s)"
    );
}
