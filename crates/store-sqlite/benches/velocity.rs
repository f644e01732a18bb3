//! What the velocity counters cost and how exact they are (`cargo bench -p vigil-store-sqlite --bench velocity`).
//!
//! 1. Exactness at 1,000,000 events: a million visits spread over addresses and devices of known
//!    traffic (a few heavy, many light) go through the layout's own updates ([`Tick::work`]),
//!    merged as the stores merge them, and every subject's counts are read back as the engine
//!    would see them at the end. Events must be exact; distinct sessions within four of the
//!    sketch's standard errors (linear counting's, about 2% up to 1,000 distinct), and the share
//!    within one is printed.
//! 2. The added time per visit on SQLite: the velocity call against the result's write, on one
//!    file, interleaved in one run, as p50 and p99.
//!
//! Fails loudly if a count is not the one it claims.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use vigil_core::domain::velocity::{CounterWork, Counters, Tick, estimate};
use vigil_core::domain::{
    CheckResult, DeviceKey, NewResult, ProjectId, Score, SessionId, Timestamp,
};
use vigil_core::store::{ResultStore, VelocityStore};
use vigil_detect::velocity::Span;
use vigil_store_sqlite::SqliteStore;

fn apply(store: &mut HashMap<String, Counters>, work: &CounterWork) -> Vec<Counters> {
    work.updates
        .iter()
        .map(|u| {
            let item = store.entry(u.sk.clone()).or_default();
            item.apply(u);
            item.clone()
        })
        .collect()
}

/// A small deterministic generator (xorshift), so runs compare.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn exactness(events: u64) {
    let project = ProjectId::parse("prj_bench").expect("id");
    let start = 1_790_000_000_i64 - 1_790_000_000_i64 % 86_400;
    // Address i gets a share of traffic by its rank; sessions are drawn from a pool whose size
    // the address's weight sets, so distinct counts range from a handful to thousands.
    let addresses: Vec<String> = (0..2_000)
        .map(|i| format!("10.{}.{}.{}", i / 65_536, (i / 256) % 256, i % 256))
        .collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut store: HashMap<String, Counters> = HashMap::new();
    let mut truth_events: HashMap<usize, u64> = HashMap::new();
    let mut truth_sessions: HashMap<usize, HashSet<u64>> = HashMap::new();
    // All the million within one day: the 24-hour window sees them all.
    let step = 86_000.0 / events as f64;
    let started = Instant::now();
    for n in 0..events {
        // Zipf-like: a few addresses carry most of the traffic.
        let a = ((rng.next() % 1_000_000) as f64 / 1_000_000.0).powi(4) * addresses.len() as f64;
        let a = (a as usize).min(addresses.len() - 1);
        let pool = 1 + 6_000 / (a as u64 + 1);
        let s = rng.next() % pool;
        let session = SessionId::parse(format!("s{a}-{s}")).expect("session");
        *truth_events.entry(a).or_default() += 1;
        truth_sessions.entry(a).or_default().insert(s);
        let at = Timestamp::from_unix_millis((start + (n as f64 * step) as i64) * 1000).expect("t");
        let tick = Tick {
            project: &project,
            session: &session,
            address: addresses[a].parse().expect("ip"),
            device: None,
            country: None,
            at,
        };
        apply(&mut store, &tick.work(vigil_core::store::keys::velocity_sk));
    }
    let fed = started.elapsed();
    // Read each address back at the end of the day, as its next visit would.
    let end = Timestamp::from_unix_millis((start + 86_000) * 1000).expect("t");
    let mut worst: BTreeMap<&str, (f64, u64, u64, u64, u64)> = BTreeMap::new();
    let mut checked = 0;
    for (a, events) in &truth_events {
        let probe = SessionId::parse(format!("s{a}-0")).expect("session");
        let tick = Tick {
            project: &project,
            session: &probe,
            address: addresses[*a].parse().expect("ip"),
            device: None,
            country: None,
            at: end,
        };
        let work = tick.work(vigil_core::store::keys::velocity_sk);
        // Read without adding: the items as they stand.
        let updated: Vec<Counters> = work
            .updates
            .iter()
            .map(|u| store.get(&u.sk).cloned().unwrap_or_default())
            .collect();
        let read: Vec<Counters> = work
            .reads
            .iter()
            .map(|sk| store.get(sk).cloned().unwrap_or_default())
            .collect();
        let day = tick
            .velocity(&updated, &read)
            .address
            .expect("address counts")
            .at(Span::Day);
        assert_eq!(day.events, *events, "address {a}: events must be exact");
        let truth = truth_sessions[a].len() as u64;
        if truth > 5_000 {
            continue;
        }
        // Linear counting's standard error at this load (Whang et al. 1990), in members.
        let sigma = standard_error(truth);
        let err = day.sessions.abs_diff(truth) as f64;
        assert!(
            err <= 4.0 * sigma + 1.0,
            "address {a}: {truth} distinct sessions estimated {} (4 standard errors: +-{:.1})",
            day.sessions,
            4.0 * sigma + 1.0
        );
        let class = if truth <= 1_000 {
            "<= 1,000"
        } else {
            "1,001-5,000"
        };
        let w = worst.entry(class).or_insert((0.0, 0, 0, 0, 0));
        let rel = err / truth as f64;
        if rel >= w.0 {
            (w.0, w.1, w.2) = (rel, truth, day.sessions);
        }
        w.3 += u64::from(err <= sigma + 0.5);
        w.4 += 1;
        checked += 1;
    }
    println!(
        "{events} events over {} addresses ({} items) fed in {:.1} s; events exact at every address, {checked} distinct counts checked",
        truth_events.len(),
        store.len(),
        fed.as_secs_f64()
    );
    for (class, (rel, truth, est, within, n)) in &worst {
        println!(
            "  distinct sessions {class}: {within} of {n} within one standard error, all within four; worst {:.2}% ({truth} estimated {est})",
            rel * 100.0
        );
    }
    println!(
        "  sketch: 1,024 buckets; one standard error at 20 distinct {:.2}, at 200 {:.1}, at 1,000 {:.1}; saturates at {} (every bucket filled)",
        standard_error(20),
        standard_error(200),
        standard_error(1_000),
        estimate(1024)
    );
}

/// Linear counting's standard error, in members, for `n` distinct in the sketch's buckets.
fn standard_error(n: u64) -> f64 {
    let m = vigil_core::domain::velocity::SKETCH_BUCKETS as f64;
    let t = n as f64 / m;
    (m * (t.exp() - t - 1.0)).sqrt()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn sqlite_cost(visits: i64) {
    let dir = tempfile::tempdir().expect("tmp");
    let store = SqliteStore::open(dir.path().join("bench.db")).expect("db");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let project = ProjectId::parse("prj_bench").expect("id");
    let device = DeviceKey::parse("dev_00112233445566778899").expect("key");
    let (mut counting, mut writing) = (Vec::new(), Vec::new());
    let t0 = 1_790_000_000_i64;
    rt.block_on(async {
        for i in 0..visits {
            let session = SessionId::parse(format!("s{}", i % 500)).expect("s");
            let at = Timestamp::from_unix_millis((t0 + i / 20) * 1000).expect("t");
            let ip = format!("198.51.100.{}", i % 7);
            let tick = Tick {
                project: &project,
                session: &session,
                address: ip.parse().expect("ip"),
                device: Some(&device),
                country: Some("DE"),
                at,
            };
            let work = tick.work(vigil_core::store::keys::velocity_sk);
            let started = Instant::now();
            let (updated, read) = store
                .count_velocity(&project, &work)
                .await
                .expect("counted");
            counting.push(started.elapsed());
            let v = tick.velocity(&updated, &read);
            let d = v.device.expect("device").at(Span::Day);
            assert_eq!(d.events, (i + 1) as u64, "the device's events");
            let r = NewResult {
                project_id: project.clone(),
                session_id: session.clone(),
                result: CheckResult {
                    score_bot: Score::HALF,
                    score_proxy_vpn: Score::HALF,
                    ip_address: ip.parse().expect("ip"),
                    created_at: at,
                },
                evaluation: None,
            };
            let started = Instant::now();
            store.add_result(&r).await.expect("written");
            writing.push(started.elapsed());
        }
    });
    counting.sort();
    writing.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "SQLite, {visits} visits on one file: velocity p50 {:.3} ms p99 {:.3} ms; the result's write p50 {:.3} ms p99 {:.3} ms (ratio of p50s {:.2})",
        ms(percentile(&counting, 0.5)),
        ms(percentile(&counting, 0.99)),
        ms(percentile(&writing, 0.5)),
        ms(percentile(&writing, 0.99)),
        ms(percentile(&counting, 0.5)) / ms(percentile(&writing, 0.5)),
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` does not: then a small smoke run
    // of the same checks.
    // `-- cost` or `-- exactness` runs one part alone.
    let args: Vec<String> = std::env::args().collect();
    let only = |part: &str| {
        !args.iter().any(|a| a == "cost" || a == "exactness") || args.iter().any(|a| a == part)
    };
    if args.iter().any(|a| a == "--bench") {
        if only("exactness") {
            exactness(1_000_000);
        }
        if only("cost") {
            sqlite_cost(3_000);
        }
    } else {
        exactness(20_000);
        sqlite_cost(200);
    }
}
