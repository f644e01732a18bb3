//! One conformance suite for the storage traits, run against both adapters: SQLite in a temporary
//! file, and DynamoDB in the moto emulator that `make test` starts (its address in
//! `VIGIL_TEST_DYNAMODB_ENDPOINT`). Every test creates its own database or table: nothing is shared.

mod common;

use common::{TEN_AM, at};

use std::collections::HashSet;
use std::sync::Arc;

use vigil_core::domain::insight::{Bucket, Granularity, SessionQuery, SessionSummary, StatsRange};
use vigil_core::domain::plan::{Counted, Period, Refusal, VisitCount};
use vigil_core::domain::webhook::{UrlPolicy, WebhookType, WebhookUrl};
use vigil_core::domain::{
    Account, AccountId, CheckResult, NewResult, Plan, PlanStatus, Project, ProjectId, Score,
    SessionId, Timestamp, Webhook, WebhookId,
};
use vigil_core::domain::{Delivery, DeliveryId, DeliveryStatus};
use vigil_core::domain::{Flagged, ManualClock};
use vigil_core::service::error::ServiceError;
use vigil_core::service::vigil::Vigil;
use vigil_core::store::{
    ProjectInsert, ResultStore, Store, UsageStore, WebhookInsert, WebhookStore,
};
use vigil_store_sqlite::SqliteStore;

fn pid(s: &str) -> ProjectId {
    ProjectId::parse(s).unwrap()
}
fn sid(s: &str) -> SessionId {
    SessionId::parse(s).unwrap()
}
fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}
fn score(v: f64) -> Score {
    Score::new(v).unwrap()
}

fn result(project: &str, session: &str, bot: f64, pv: f64, at: &str) -> NewResult {
    NewResult {
        project_id: pid(project),
        session_id: sid(session),
        result: CheckResult {
            score_bot: score(bot),
            score_proxy_vpn: score(pv),
            ip_address: "203.0.113.7".parse().unwrap(),
            created_at: ts(at),
        },
        evaluation: None,
    }
}

fn account(id: &str) -> Account {
    Account {
        id: AccountId::parse(id).unwrap(),
        plan: Plan {
            id: "plan_trial".parse().unwrap(),
            name: "Trial".into(),
            description: "14-day trial".into(),
            max_rps: 10,
            max_projects: 3,
            max_requests: 100_000,
            expires_at: None,
            subscribed_at: ts("2026-11-21T00:00:00Z"),
            status: PlanStatus::Trialing,
            unsubscribed_at: None,
        },
    }
}

fn project(id: &str, account: &str) -> Project {
    Project {
        id: pid(id),
        account_id: AccountId::parse(account).unwrap(),
        name: "Shop".into(),
        api_key_public: format!("pk_{id}"),
        api_key_private: format!("sk_{id}"),
        domain: "shop.example".into(),
        disabled: false,
        require_session_token: false,
        webhook_legacy_signature: true,
        sealed_results: false,
        sealing_keys: None,
        model: Default::default(),
        calibration: None,
        agents: Default::default(),
        created_at: ts("2026-11-21T00:00:00Z"),
    }
}

fn webhook(n: usize, url: &str) -> Webhook {
    Webhook {
        id: WebhookId::parse(format!("wh_{n:02}")).unwrap(),
        kind: WebhookType::ProxyVpnDetect,
        url: WebhookUrl::parse(url, UrlPolicy::default()).unwrap(),
        created_at: Timestamp::from_unix_millis(1_795_000_000_000 + n as i64).unwrap(),
        // A fixed secret, so the stored webhook compares equal (and its secret round-trips).
        secrets: vigil_core::domain::webhook::Secrets {
            current: Some(
                vigil_core::domain::webhook::WebhookSecret::try_from(format!(
                    "whsec_{}",
                    "A".repeat(32)
                ))
                .unwrap(),
            ),
            previous: None,
            previous_until: None,
            earlier: Vec::new(),
        },
    }
}

// ---- the suite: each function takes a fresh store --------------------------------------------

async fn accounts_keys_and_projects_round_trip<S: Store>(store: S) {
    assert!(store.is_empty().await.unwrap());
    let acc = account("acc_1");
    store.put_account(&acc).await.unwrap();
    store.put_key("hash_1", &acc.id).await.unwrap();
    let prj = project("prj_1", "acc_1");
    store.put_project(&prj).await.unwrap();
    assert!(!store.is_empty().await.unwrap());

    assert_eq!(store.account(&acc.id).await.unwrap(), Some(acc.clone()));
    assert_eq!(
        store.key_account("hash_1").await.unwrap(),
        Some(acc.id.clone())
    );
    assert_eq!(store.key_account("hash_2").await.unwrap(), None);
    assert_eq!(store.project(&prj.id).await.unwrap(), Some(prj.clone()));
    assert_eq!(store.project(&pid("prj_2")).await.unwrap(), None);
    assert_eq!(
        store
            .account(&AccountId::parse("acc_2").unwrap())
            .await
            .unwrap(),
        None
    );

    // Upserts replace.
    let mut renamed = prj.clone();
    renamed.name = "Renamed".into();
    store.put_project(&renamed).await.unwrap();
    assert_eq!(
        store.project(&prj.id).await.unwrap().unwrap().name,
        "Renamed"
    );
}

async fn results_are_newest_first_with_write_order_tie_break<S: Store>(store: S) {
    // Written out of createdAt order, with two ties.
    let writes = [
        (0.1, at(TEN_AM + 5)),
        (0.2, at(TEN_AM + 1)),
        (0.3, at(TEN_AM + 5)),
        (0.4, at(TEN_AM + 9)),
        (0.5, at(TEN_AM + 1)),
    ];
    for (bot, when) in &writes {
        store
            .add_result(&result("p", "s", *bot, 0.0, when))
            .await
            .unwrap();
    }
    let page = store
        .results(&pid("p"), &sid("s"), 100, None)
        .await
        .unwrap();
    assert!(!page.more);
    let bots: Vec<f64> = page
        .results
        .iter()
        .map(|(_, r)| r.score_bot.get())
        .collect();
    // at(TEN_AM + 9); at(TEN_AM + 5) written 3rd then 1st; at(TEN_AM + 1) written 5th then 2nd.
    assert_eq!(bots, vec![0.4, 0.3, 0.1, 0.5, 0.2]);
    let seqs: Vec<u64> = page.results.iter().map(|(p, _)| p.seq).collect();
    assert_eq!(seqs, vec![4, 3, 1, 5, 2]);
    assert_eq!(page.results[0].1.created_at.to_string(), at(TEN_AM + 9));
}

async fn pages_cover_every_result_once<S: Store>(store: S) {
    for i in 0..25 {
        // Pairs of equal createdAt exercise the tie-break across page boundaries.
        store
            .add_result(&result("p", "s", 0.0, 0.0, &at(TEN_AM + i / 2)))
            .await
            .unwrap();
    }
    let (mut after, mut seen, mut pages) = (None, Vec::new(), 0);
    loop {
        let page = store
            .results(&pid("p"), &sid("s"), 10, after)
            .await
            .unwrap();
        pages += 1;
        seen.extend(page.results.iter().map(|(p, _)| *p));
        if !page.more {
            break;
        }
        after = page.results.last().map(|(p, _)| *p);
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 25);
    assert_eq!(seen.iter().map(|p| p.seq).collect::<HashSet<_>>().len(), 25);
    assert!(
        seen.windows(2).all(|w| w[0] > w[1]),
        "strictly newest first"
    );
    // Exactly a page's worth left: `more` is false on the page that ends the session.
    let last10 = store
        .results(&pid("p"), &sid("s"), 10, Some(seen[14]))
        .await
        .unwrap();
    assert_eq!(last10.results.len(), 10);
    assert!(!last10.more);
}

async fn session_score_is_maximum_over_all_results<S: Store>(store: S) {
    assert_eq!(
        store.session_score(&pid("p"), &sid("s")).await.unwrap(),
        None
    );
    // The highest scores are in the oldest results, beyond the newest 100.
    store
        .add_result(&result("p", "s", 0.9, 0.2, &at(TEN_AM)))
        .await
        .unwrap();
    store
        .add_result(&result("p", "s", 0.1, 0.95, &at(TEN_AM + 1)))
        .await
        .unwrap();
    for i in 0..110 {
        store
            .add_result(&result("p", "s", 0.05, 0.05, &at(TEN_AM + 10 + i)))
            .await
            .unwrap();
    }
    let s = store
        .session_score(&pid("p"), &sid("s"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((s.score_bot.get(), s.score_proxy_vpn.get()), (0.9, 0.95));
}

async fn sessions_and_projects_are_isolated<S: Store>(store: S) {
    store
        .add_result(&result("p", "abc", 0.1, 0.1, &at(TEN_AM)))
        .await
        .unwrap();
    store
        .add_result(&result("p", "abcd", 0.2, 0.2, &at(TEN_AM)))
        .await
        .unwrap();
    store
        .add_result(&result("q", "abc", 0.3, 0.3, &at(TEN_AM)))
        .await
        .unwrap();
    let page = store
        .results(&pid("p"), &sid("abc"), 100, None)
        .await
        .unwrap();
    assert_eq!(page.results.len(), 1);
    assert_eq!(page.results[0].1.score_bot.get(), 0.1);
    let s = store
        .session_score(&pid("q"), &sid("abc"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.score_bot.get(), 0.3);
    let none = store
        .results(&pid("p"), &sid("ab"), 100, None)
        .await
        .unwrap();
    assert!(none.results.is_empty());
}

async fn webhooks_are_unique_limited_and_deletable<S: Store>(store: S) {
    let p = pid("p");
    assert!(store.webhooks(&p).await.unwrap().is_empty());
    for n in 0..10 {
        let w = webhook(n, &format!("https://hooks.example/{n}"));
        assert_eq!(
            store.insert_webhook(&p, &w).await.unwrap(),
            WebhookInsert::Created
        );
    }
    // Same (type, url) as an existing one, under a new id.
    let dup = webhook(20, "https://hooks.example/3");
    assert_eq!(
        store.insert_webhook(&p, &dup).await.unwrap(),
        WebhookInsert::Duplicate
    );
    let eleventh = webhook(21, "https://hooks.example/new");
    assert_eq!(
        store.insert_webhook(&p, &eleventh).await.unwrap(),
        WebhookInsert::LimitReached
    );

    let listed = store.webhooks(&p).await.unwrap();
    assert_eq!(listed.len(), 10);
    assert_eq!(listed[0], webhook(0, "https://hooks.example/0"));
    assert!(
        listed
            .windows(2)
            .all(|w| w[0].created_at <= w[1].created_at),
        "oldest first"
    );
    // Another project is unaffected.
    assert_eq!(
        store.insert_webhook(&pid("q"), &dup).await.unwrap(),
        WebhookInsert::Created
    );

    let gone = WebhookId::parse("wh_03").unwrap();
    assert!(store.delete_webhook(&p, &gone).await.unwrap());
    assert!(!store.delete_webhook(&p, &gone).await.unwrap());
    let unknown = WebhookId::parse("wh_99").unwrap();
    assert!(!store.delete_webhook(&p, &unknown).await.unwrap());
    assert_eq!(store.webhooks(&p).await.unwrap().len(), 9);
    // Deleting freed both the URL and a place under the limit.
    assert_eq!(
        store.insert_webhook(&p, &dup).await.unwrap(),
        WebhookInsert::Created
    );
    assert_eq!(
        store.insert_webhook(&p, &eleventh).await.unwrap(),
        WebhookInsert::LimitReached
    );
}

async fn concurrent_writers_keep_the_summary_exact<S: Store>(store: S) {
    let store = Arc::new(store);
    let writers = 4;
    let per_writer = 8;
    let mut tasks = Vec::new();
    for w in 0..writers {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..per_writer {
                // One result of one writer holds each maximum.
                let pv = if w == 2 && i == 3 {
                    0.99
                } else {
                    0.1 + 0.01 * i as f64
                };
                let bot = if w == 1 && i == 7 { 0.88 } else { 0.2 };
                store
                    .add_result(&result("p", "hot", bot, pv, &at(TEN_AM + i)))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let total = writers * per_writer;
    let page = store
        .results(&pid("p"), &sid("hot"), 100, None)
        .await
        .unwrap();
    assert_eq!(page.results.len(), total as usize);
    let seqs: HashSet<u64> = page.results.iter().map(|(p, _)| p.seq).collect();
    assert_eq!(
        seqs,
        (1..=total as u64).collect::<HashSet<_>>(),
        "every write got its own seq"
    );
    let s = store
        .session_score(&pid("p"), &sid("hot"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((s.score_bot.get(), s.score_proxy_vpn.get()), (0.88, 0.99));
}

fn delivery(webhook: &str, session: &str, crossed: i64, due: Option<i64>) -> Delivery {
    let (p, s, w) = (pid("p"), sid(session), WebhookId::parse(webhook).unwrap());
    Delivery {
        id: DeliveryId::for_crossing(&p, &s, &w),
        project_id: p,
        webhook_id: w,
        session_id: s,
        url: WebhookUrl::parse("https://hooks.example/x", UrlPolicy::default()).unwrap(),
        body: r#"{"type":"proxy_vpn_detect"}"#.into(),
        crossed_at: ts(&at(TEN_AM + crossed)),
        status: DeliveryStatus::Pending,
        attempts: vec![],
        next_attempt_at: due.map(|d| ts(&at(TEN_AM + d))),
        created_at: ts(&at(TEN_AM + crossed)),
        test: false,
    }
}

async fn deliveries_are_idempotent_leased_and_indexed<S: Store>(store: S) {
    let a = delivery("wh_a", "s1", 10, Some(100));
    let b = delivery("wh_a", "s2", 20, Some(50));
    let c = delivery("wh_b", "s1", 10, Some(500));
    for d in [&a, &b, &c] {
        assert!(store.create_delivery(d).await.unwrap());
    }
    // A replay finds the delivery it already made.
    assert!(!store.create_delivery(&a).await.unwrap());

    // Due at t=100: b (50) then a (100), not c (500).
    let due = store
        .due_deliveries(ts(&at(TEN_AM + 100)), 10)
        .await
        .unwrap();
    assert_eq!(
        due.iter().map(|d| d.id.clone()).collect::<Vec<_>>(),
        vec![b.id.clone(), a.id.clone()]
    );
    assert_eq!(due[0], b);

    // Claiming is conditional on the due time we saw.
    let mut claimed = a.clone();
    claimed.next_attempt_at = Some(ts(&at(TEN_AM + 160)));
    assert!(
        store
            .update_delivery(&claimed, a.next_attempt_at)
            .await
            .unwrap()
    );
    assert!(
        !store
            .update_delivery(&claimed, a.next_attempt_at)
            .await
            .unwrap(),
        "claimed twice"
    );
    assert_eq!(
        store
            .due_deliveries(ts(&at(TEN_AM + 100)), 10)
            .await
            .unwrap()
            .len(),
        1
    );

    // Finishing leaves the due index.
    let mut done = claimed.clone();
    done.status = DeliveryStatus::Delivered;
    done.next_attempt_at = None;
    assert!(
        store
            .update_delivery(&done, claimed.next_attempt_at)
            .await
            .unwrap()
    );
    let due = store
        .due_deliveries(ts(&at(TEN_AM + 10_000)), 10)
        .await
        .unwrap();
    assert_eq!(
        due.iter().map(|d| d.id.clone()).collect::<Vec<_>>(),
        vec![b.id.clone(), c.id.clone()]
    );

    // The log of one webhook, newest crossing first.
    let log = store
        .deliveries(&pid("p"), &WebhookId::parse("wh_a").unwrap(), 10)
        .await
        .unwrap();
    assert_eq!(
        log.iter().map(|d| d.id.clone()).collect::<Vec<_>>(),
        vec![b.id.clone(), a.id.clone()]
    );
    assert_eq!(log[1].status, DeliveryStatus::Delivered);
}

async fn webhooks_can_be_disabled_and_checkpoints_kept<S: Store>(store: S) {
    let p = pid("p");
    for n in 0..3 {
        let w = webhook(n, &format!("https://hooks.example/{n}"));
        store.insert_webhook(&p, &w).await.unwrap();
    }
    store
        .disable_webhook(&p, &WebhookId::parse("wh_01").unwrap())
        .await
        .unwrap();
    // Disabling a webhook that is gone is not an error.
    store
        .disable_webhook(&p, &WebhookId::parse("wh_99").unwrap())
        .await
        .unwrap();
    let active: Vec<String> = store
        .active_webhooks(&p)
        .await
        .unwrap()
        .into_iter()
        .map(|w| w.id.to_string())
        .collect();
    assert_eq!(active, vec!["wh_00", "wh_02"]);
    // The list still shows it: disabling is not deleting.
    assert_eq!(store.webhooks(&p).await.unwrap().len(), 3);

    assert_eq!(store.checkpoint("feed").await.unwrap(), None);
    store.set_checkpoint("feed", "41").await.unwrap();
    store.set_checkpoint("feed", "42").await.unwrap();
    assert_eq!(
        store.checkpoint("feed").await.unwrap().as_deref(),
        Some("42")
    );
}

// ---- the two adapters ---------------------------------------------------------------------------

fn sqlite() -> (SqliteStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("vigil.db")).unwrap();
    (store, dir)
}

// ---- plans: request counters and projects ---------------------------------------------------------

fn period(start: &str, end: &str) -> Period {
    Period {
        start: ts(start),
        end: ts(end),
    }
}

const SECOND: i64 = 1_795_000_000;

async fn rate_windows_allow_exactly_max_rps<S: Store>(store: S) {
    let acc = AccountId::parse("acc_rate").unwrap();
    let p = period("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");
    for n in 1..=3 {
        assert_eq!(
            store.count_request(&acc, SECOND, 3, &p, 100).await.unwrap(),
            Counted::Allowed {
                in_second: n,
                in_period: u64::from(n)
            }
        );
    }
    // The last of the window was allowed; the next is refused and not counted in the period.
    assert_eq!(
        store.count_request(&acc, SECOND, 3, &p, 100).await.unwrap(),
        Counted::RateLimited
    );
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 3);
    // The next second is a new window.
    assert_eq!(
        store
            .count_request(&acc, SECOND + 1, 3, &p, 100)
            .await
            .unwrap(),
        Counted::Allowed {
            in_second: 1,
            in_period: 4
        }
    );
    // Another account has windows of its own.
    let other = AccountId::parse("acc_other").unwrap();
    assert_eq!(
        store
            .count_request(&other, SECOND, 3, &p, 100)
            .await
            .unwrap(),
        Counted::Allowed {
            in_second: 1,
            in_period: 1
        }
    );
}

/// A new limit is a step of core's count plan: both stores apply a visit plan with one more
/// window (here a device's, 2 a second) as they apply the built-in ones, with the same rules: the
/// first step without room refuses, and the refused visit counts nowhere.
async fn a_new_visit_limit_is_one_more_step<S: Store>(store: S) {
    use vigil_core::store::count::{CountPlan, CountStep, Reports, Spread, Tally};
    let acc = AccountId::parse("acc_steps").unwrap();
    let prj = pid("prj_steps");
    let p = period("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");
    let mut plan = CountPlan::visit(&VisitCount {
        account: &acc,
        project: &prj,
        source: "203.0.113.9".to_owned(),
        second: SECOND,
        project_rps: 50,
        source_rps: 20,
        period: p,
        max_requests: 100,
        max_rps: 5,
    });
    let device = CountStep {
        sk: format!("VDEV#d1#{SECOND}"),
        tally: Tally::Window,
        spread: Spread::for_rate(0, 2),
        reports: Reports::Nothing,
        ..plan.steps[1].clone()
    };
    plan.steps.insert(2, device);
    for n in 1..=2 {
        assert_eq!(
            store.count(&plan).await.unwrap(),
            Counted::Allowed {
                in_second: n,
                in_period: u64::from(n)
            }
        );
    }
    assert_eq!(store.count(&plan).await.unwrap(), Counted::RateLimited);
    // Nothing of the refused visit stayed: not in the period, not in the source's second.
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 2);
    plan.steps.remove(2);
    assert_eq!(
        store.count(&plan).await.unwrap(),
        Counted::Allowed {
            in_second: 3,
            in_period: 3
        }
    );
}

/// A new limit on developer requests is one more step in core's plan, and every store applies
/// it unchanged: here a minute's window of 3 between the second's and the period's. It ranks
/// after the second and before the period; the request it refuses keeps its place in the second
/// (that step keeps its count) and counts nothing in the period. The request before it went the
/// usual way (SQLite claims positions in blocks), and the plans mix without a position lost.
async fn a_new_developer_limit_is_one_more_step<S: Store>(store: S) {
    use vigil_core::store::count::{CountPlan, CountStep, RATE_WINDOW_TTL, Reports, Spread, Tally};
    let acc = AccountId::parse("acc_minute").unwrap();
    let p = period("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");
    let allowed = |in_second, in_period| Counted::Allowed {
        in_second,
        in_period,
    };
    assert_eq!(
        store
            .count_request(&acc, SECOND, 10, &p, 100)
            .await
            .unwrap(),
        allowed(1, 1)
    );
    let with_minute = |second: i64| {
        let mut plan = CountPlan::request(&acc, second, 10, &p, 100);
        let start = SECOND / 60 * 60;
        let minute = CountStep {
            sk: format!("MINUTE#{start}"),
            tally: Tally::Window,
            // Kept as long after the minute as a second's window is after its second.
            expires: start + 60 + RATE_WINDOW_TTL,
            spread: Spread::for_rate(0, 3),
            kept_when_refused: false,
            reports: Reports::Nothing,
            ..plan.steps[0].clone()
        };
        plan.steps.insert(1, minute);
        plan
    };
    for n in 2..=4 {
        assert_eq!(
            store.count(&with_minute(SECOND)).await.unwrap(),
            allowed(n, u64::from(n))
        );
    }
    assert_eq!(
        store.count(&with_minute(SECOND)).await.unwrap(),
        Counted::RateLimited
    );
    assert_eq!(
        store.count(&with_minute(SECOND + 1)).await.unwrap(),
        Counted::RateLimited
    );
    // The refused requests counted nothing in the period...
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 4);
    // ...and kept their places in their seconds: the next request of SECOND + 1 is its second.
    assert_eq!(
        store
            .count_request(&acc, SECOND + 1, 10, &p, 100)
            .await
            .unwrap(),
        allowed(2, 5)
    );
}

/// The collect route's budget: visits are limited per project and per source in their own
/// windows, never by the developer rate, and count toward the period's quota; only visits are
/// refused once the quota is spent, and developer requests are refused by their own count.
async fn visits_have_their_own_budget<S: Store>(store: S) {
    let acc = AccountId::parse("acc_visits").unwrap();
    let prj = pid("prj_visits");
    let p = period("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");
    let visit = |source: &str, second: i64, project_rps: u32, max_requests: u64| VisitCount {
        account: &acc,
        project: &prj,
        source: source.to_owned(),
        second,
        project_rps,
        source_rps: 3,
        period: p,
        max_requests,
        max_rps: 1,
    };
    // The developer rate of this second is spent...
    assert_eq!(
        store.count_request(&acc, SECOND, 1, &p, 100).await.unwrap(),
        Counted::Allowed {
            in_second: 1,
            in_period: 1
        }
    );
    // ...and visits still pass: 3 from one source, then that source is refused in this second.
    for n in 1..=3 {
        assert_eq!(
            store
                .count_visit(&visit("203.0.113.7", SECOND, 5, 100))
                .await
                .unwrap(),
            Counted::Allowed {
                in_second: n,
                in_period: 1 + u64::from(n)
            }
        );
    }
    assert_eq!(
        store
            .count_visit(&visit("203.0.113.7", SECOND, 5, 100))
            .await
            .unwrap(),
        Counted::RateLimited
    );
    // Other sources share the project's 5 per second.
    for source in ["198.51.100.1", "198.51.100.2"] {
        assert!(matches!(
            store
                .count_visit(&visit(source, SECOND, 5, 100))
                .await
                .unwrap(),
            Counted::Allowed { in_second: 1, .. }
        ));
    }
    assert_eq!(
        store
            .count_visit(&visit("198.51.100.3", SECOND, 5, 100))
            .await
            .unwrap(),
        Counted::RateLimited
    );
    // Refused visits were not counted: 1 developer request and 5 visits.
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 6);
    // The quota counts both: with 8, two more visits fit, then visits are refused...
    for second in [SECOND + 1, SECOND + 2] {
        assert!(matches!(
            store
                .count_visit(&visit("203.0.113.7", second, 5, 8))
                .await
                .unwrap(),
            Counted::Allowed { .. }
        ));
    }
    assert_eq!(
        store
            .count_visit(&visit("203.0.113.7", SECOND + 3, 5, 8))
            .await
            .unwrap(),
        Counted::QuotaExceeded
    );
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 8);
    // ...while developer requests, refused by their own count only, go on.
    assert!(matches!(
        store
            .count_request(&acc, SECOND + 3, 1, &p, 8)
            .await
            .unwrap(),
        Counted::Allowed { in_period: 2, .. }
    ));
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 9);
}

async fn quota_allows_exactly_max_requests<S: Store>(store: S) {
    let acc = AccountId::parse("acc_quota").unwrap();
    let p = period("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");
    for (i, second) in [SECOND, SECOND + 1].into_iter().enumerate() {
        assert_eq!(
            store.count_request(&acc, second, 10, &p, 2).await.unwrap(),
            Counted::Allowed {
                in_second: 1,
                in_period: i as u64 + 1
            }
        );
    }
    assert_eq!(
        store
            .count_request(&acc, SECOND + 2, 10, &p, 2)
            .await
            .unwrap(),
        Counted::QuotaExceeded
    );
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 2);
    // The next period starts from zero.
    let next = period("2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z");
    assert_eq!(store.period_usage(&acc, &next).await.unwrap(), 0);
    assert_eq!(
        store
            .count_request(&acc, SECOND + 3, 10, &next, 2)
            .await
            .unwrap(),
        Counted::Allowed {
            in_second: 1,
            in_period: 1
        }
    );
}

async fn concurrent_requests_allow_exactly_max_rps<S: Store>(store: S) {
    let store = Arc::new(store);
    let acc = AccountId::parse("acc_burst").unwrap();
    let p = period("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (store, acc) = (store.clone(), acc.clone());
            tokio::spawn(async move { store.count_request(&acc, SECOND, 5, &p, 1000).await })
        })
        .collect();
    let mut allowed = 0;
    for t in tasks {
        match t.await.unwrap().unwrap() {
            Counted::Allowed { .. } => allowed += 1,
            Counted::RateLimited => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(allowed, 5);
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 5);
}

async fn projects_are_limited_listed_and_updated<S: Store>(store: S) {
    store.put_account(&account("acc_p")).await.unwrap();
    let acc = AccountId::parse("acc_p").unwrap();
    let store = Arc::new(store);
    // Concurrent creations: exactly the limit succeed.
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            let mut p = project(&format!("prj_c{i}"), "acc_p");
            p.created_at = Timestamp::from_unix_millis(1_795_000_000_000 + i).unwrap();
            tokio::spawn(async move { (store.create_project(&p, 3).await.unwrap(), p) })
        })
        .collect();
    let mut created = Vec::new();
    for t in tasks {
        let (outcome, p) = t.await.unwrap();
        if outcome == ProjectInsert::Created {
            created.push(p);
        } else {
            assert_eq!(outcome, ProjectInsert::LimitReached);
        }
    }
    assert_eq!(created.len(), 3);
    let mut listed = store.account_projects(&acc).await.unwrap();
    listed.sort_by(|a, b| a.id.cmp(&b.id));
    created.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(listed, created);
    for p in &created {
        assert_eq!(store.project(&p.id).await.unwrap().as_ref(), Some(p));
    }

    // An update changes the project and its listed copy.
    let mut changed = created[0].clone();
    changed.name = "Renamed".into();
    changed.disabled = true;
    assert!(store.update_project(&changed).await.unwrap());
    assert_eq!(
        store.project(&changed.id).await.unwrap(),
        Some(changed.clone())
    );
    assert!(
        store
            .account_projects(&acc)
            .await
            .unwrap()
            .contains(&changed)
    );
    // Not another account's, nor a missing one.
    let mut foreign = changed.clone();
    foreign.account_id = AccountId::parse("acc_else").unwrap();
    assert!(!store.update_project(&foreign).await.unwrap());
    assert!(
        !store
            .update_project(&project("prj_none", "acc_p"))
            .await
            .unwrap()
    );
    assert_eq!(store.project(&pid("prj_none")).await.unwrap(), None);

    // Seeded projects count too: the account is full.
    store.put_account(&account("acc_s")).await.unwrap();
    store
        .put_project(&project("prj_s1", "acc_s"))
        .await
        .unwrap();
    store
        .put_project(&project("prj_s1", "acc_s"))
        .await
        .unwrap();
    assert_eq!(
        store
            .create_project(&project("prj_s2", "acc_s"), 1)
            .await
            .unwrap(),
        ProjectInsert::LimitReached
    );
    assert_eq!(
        store
            .create_project(&project("prj_s3", "acc_s"), 2)
            .await
            .unwrap(),
        ProjectInsert::Created
    );
    assert_eq!(
        store
            .account_projects(&AccountId::parse("acc_s").unwrap())
            .await
            .unwrap()
            .len(),
        2
    );
}

async fn the_service_enforces_plans_at_exact_boundaries<S: Store>(store: S) {
    let clock = ManualClock::at(ts("2025-01-31T00:00:00.000Z"));
    let mut acc = account("acc_terms");
    acc.plan.max_rps = 2;
    acc.plan.max_requests = 5;
    acc.plan.subscribed_at = ts("2025-01-31T00:00:00.000Z");
    acc.plan.status = PlanStatus::Active;
    store.put_account(&acc).await.unwrap();
    let app = Vigil::new(store, UrlPolicy::default()).with_clock(clock.clone());
    let terms = acc.plan.terms();
    let admit = |plan_read| app.plans().admit(&acc.id, &terms, plan_read);

    // The last request of a second is allowed, the next refused, the next second allowed again.
    clock.set(ts("2025-02-27T23:59:58.000Z"));
    assert_eq!(admit(false).await.unwrap().rps_remaining, 1);
    clock.set(ts("2025-02-27T23:59:58.999Z"));
    assert_eq!(admit(false).await.unwrap().rps_remaining, 0);
    match admit(false).await {
        Err(ServiceError::Refused(Refusal::RateLimited(1))) => {}
        other => panic!("{other:?}"),
    }
    clock.set(ts("2025-02-27T23:59:59.000Z"));
    let s = admit(false).await.unwrap();
    assert_eq!((s.rps_remaining, s.period_remaining), (1, 2));
    // The period (from Jan 31st) ends on February's last day: one second left.
    assert_eq!(s.period_reset, 1);
    admit(false).await.unwrap();
    // Reading the plan is limited like any request.
    clock.set(ts("2025-02-27T23:59:59.900Z"));
    match admit(true).await {
        Err(ServiceError::Refused(Refusal::RateLimited(_))) => {}
        other => panic!("{other:?}"),
    }
    // A new period starts at the anniversary, on February 28th.
    clock.set(ts("2025-02-28T00:00:00.000Z"));
    let s = admit(false).await.unwrap();
    assert_eq!(s.period_remaining, 4);
    // 31 days to March 31st.
    assert_eq!(s.period_reset, 31 * 86_400);
    clock.set(ts("2025-02-28T00:00:01.000Z"));
    admit(false).await.unwrap();
    admit(false).await.unwrap();
    clock.set(ts("2025-02-28T00:00:02.000Z"));
    admit(false).await.unwrap();
    // The fifth request of the period is the last one allowed.
    assert_eq!(admit(false).await.unwrap().period_remaining, 0);
    clock.set(ts("2025-02-28T00:00:03.000Z"));
    match admit(false).await {
        Err(ServiceError::Refused(Refusal::QuotaExceeded(secs))) => {
            assert_eq!(secs, 31 * 86_400 - 3)
        }
        other => panic!("{other:?}"),
    }
    let usage = app.plans().usage(&acc.id, &terms).await.unwrap();
    assert_eq!((usage.requests, usage.remaining), (5, 0));
    assert_eq!(usage.period_end, ts("2025-03-31T00:00:00.000Z"));

    // A plan that expires: in force until the instant it expires; the plan stays readable.
    let mut expiring = terms;
    expiring.max_requests = 1000;
    expiring.max_rps = 1000;
    expiring.expires_at = Some(ts("2025-03-01T00:00:00.000Z"));
    clock.set(ts("2025-02-28T23:59:59.999Z"));
    app.plans().admit(&acc.id, &expiring, false).await.unwrap();
    clock.set(ts("2025-03-01T00:00:00.000Z"));
    match app.plans().admit(&acc.id, &expiring, false).await {
        Err(ServiceError::Refused(Refusal::PlanInactive)) => {}
        other => panic!("{other:?}"),
    }
    app.plans().admit(&acc.id, &expiring, true).await.unwrap();
    // Each refused status.
    for status in [PlanStatus::Canceled, PlanStatus::Unpaid, PlanStatus::Paused] {
        let mut t = expiring;
        t.expires_at = None;
        t.status = status;
        match app.plans().admit(&acc.id, &t, false).await {
            Err(ServiceError::Refused(Refusal::PlanInactive)) => {}
            other => panic!("{status:?}: {other:?}"),
        }
    }
}

/// Events keep their reasons and engine version and are read back by id; projects are found by
/// their public key, through every write path, and a replaced key stops finding them.
async fn events_and_public_keys_round_trip<S: Store>(store: S) {
    store.put_account(&account("acc_1")).await.unwrap();
    let mut p = project("p", "acc_1");
    p.api_key_public = "pk_first".into();
    store.put_project(&p).await.unwrap();
    let found = store.project_by_public_key("pk_first").await.unwrap();
    assert_eq!(found.as_ref().map(|p| p.id.as_str()), Some("p"));

    // A seed that replaces the key: the old one finds nothing.
    p.api_key_public = "pk_second".into();
    store.put_project(&p).await.unwrap();
    assert_eq!(store.project_by_public_key("pk_first").await.unwrap(), None);
    p.disabled = true;
    assert!(store.update_project(&p).await.unwrap());
    let found = store
        .project_by_public_key("pk_second")
        .await
        .unwrap()
        .unwrap();
    assert!(found.disabled, "an update reaches the key's copy");
    let mut created = project("q", "acc_1");
    created.api_key_public = "pk_created".into();
    store.create_project(&created, 10).await.unwrap();
    assert_eq!(
        store
            .project_by_public_key("pk_created")
            .await
            .unwrap()
            .map(|p| p.id),
        Some(pid("q"))
    );
    assert_eq!(store.project_by_public_key("pk_nope").await.unwrap(), None);

    let reason =
        vigil_detect::Reason::new(vigil_detect::Code::Webdriver, "navigator.webdriver is true");
    let mut evaluated = result("p", "s", 0.99, 0.1, "2026-11-21T10:00:00Z");
    let signals: vigil_detect::Signals = serde_json::from_value(serde_json::json!({
        "userAgent": "Mozilla/5.0 Chrome/156.0.0.0", "webglRenderer": "ANGLE", "timeZone": "Etc/UTC",
        "languages": ["en"], "hardwareConcurrency": 8, "evalLength": 33, "productSub": "20030107"
    }))
    .unwrap();
    let device = vigil_core::domain::DeviceKey::of("sk_test", &signals).expect("enough signals");
    let transport: vigil_detect::transport::Transport = serde_json::from_value(serde_json::json!({
        "tcpRttMs": 20.5, "endToEndRttMs": 131.2, "endToEndSamples": 3,
        "syn": {"ttl": 117, "window": 64240, "mss": 1460, "windowScale": 8,
                "options": ["mss", "nop", "windowScale", "nop", "nop", "sackPermitted"]}
    }))
    .unwrap();
    evaluated.evaluation = Some(vigil_core::domain::Evaluation {
        reasons: vec![reason.clone()],
        engine_version: "vigil-detect/test".into(),
        model: "shared".into(),
        ja4: Some("t13d1516h2_8daaf6152771_d8a2da3f94cd".into()),
        transport: Some(transport.clone()),
        device: Some(device.clone()),
        flagged: Default::default(),
        agent: vigil_detect::Agent::NONE,
        allowed: false,
        page: None,
    });
    let at = store.add_result(&evaluated).await.unwrap();
    let plain = result("p", "s", 0.1, 0.2, "2026-11-21T10:00:00Z");
    let at_plain = store.add_result(&plain).await.unwrap();

    let e = store
        .event(&pid("p"), &sid("s"), at)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(e.id, vigil_core::domain::EventId::new(at));
    assert_eq!(e.reasons, vec![reason]);
    assert_eq!(e.engine_version.as_deref(), Some("vigil-detect/test"));
    assert_eq!(
        e.ja4.as_deref(),
        Some("t13d1516h2_8daaf6152771_d8a2da3f94cd"),
        "the wire's fingerprint is kept with the event"
    );
    assert_eq!(
        e.transport.as_ref(),
        Some(&transport),
        "and the connection's round trips and SYN"
    );
    assert_eq!(
        e.device.as_deref(),
        Some(device.as_str()),
        "and the device key"
    );
    assert_eq!(e.result(), evaluated.result);
    let e = store
        .event(&pid("p"), &sid("s"), at_plain)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            e.reasons.len(),
            e.engine_version,
            e.ja4,
            e.device,
            e.transport
        ),
        (0, None, None, None, None)
    );
    assert_eq!(
        at_plain.seq,
        at.seq + 1,
        "same createdAt, told apart by the write count"
    );
    let missing = vigil_core::domain::ResultPosition {
        created_at: at.created_at,
        seq: 99,
    };
    assert_eq!(
        store.event(&pid("p"), &sid("s"), missing).await.unwrap(),
        None
    );
    assert_eq!(
        store.event(&pid("p"), &sid("other"), at).await.unwrap(),
        None
    );
}

/// A key's use is written with what it created, and a second use writes nothing, until it expires.
async fn idempotency_keys_make_writes_happen_once<S: Store>(store: S) {
    use vigil_core::domain::idempotency::{Created, IdempotencyKey, Once, Written};
    store.put_account(&account("acc_1")).await.unwrap();
    store.put_project(&project("p", "acc_1")).await.unwrap();
    let acc = AccountId::parse("acc_1").unwrap();
    let key = IdempotencyKey::parse("k").unwrap();
    let now = ts("2026-11-21T10:00:00Z");
    let once = Once::new(acc.clone(), key.clone(), &[b"request"], now);
    let r = result("p", "s", 0.5, 0.5, "2026-11-21T10:00:00Z");
    let Written::New(at) = store.add_result_once(&r, &once).await.unwrap() else {
        panic!("the first use writes")
    };
    let Written::Before(used) = store.add_result_once(&r, &once).await.unwrap() else {
        panic!("the second use writes nothing")
    };
    assert_eq!(used.fingerprint, once.fingerprint);
    assert_eq!(used.created, Created::event(&pid("p"), &sid("s"), at));
    assert_eq!(store.used_key(&acc, &key, now).await.unwrap(), Some(used));
    let page = store.results(&pid("p"), &sid("s"), 10, None).await.unwrap();
    assert_eq!(page.results.len(), 1);
    // 24 hours later the key is forgotten (even before the table's TTL removes it).
    let later = Timestamp::from_unix_millis(now.unix_millis() + 24 * 3_600_000 + 1000).unwrap();
    assert_eq!(store.used_key(&acc, &key, later).await.unwrap(), None);
    let reuse = Once::new(acc.clone(), key.clone(), &[b"request"], later);
    assert!(matches!(
        store.add_result_once(&r, &reuse).await.unwrap(),
        Written::New(_)
    ));

    // Projects: the same, inside the maxProjects transaction.
    let pkey = IdempotencyKey::parse("p").unwrap();
    let once = Once::new(acc.clone(), pkey, &[b"project"], now);
    let q = project("q", "acc_1");
    assert!(matches!(
        store.create_project_once(&q, 10, &once).await.unwrap(),
        Written::New(ProjectInsert::Created)
    ));
    let mut q2 = project("q2", "acc_1");
    q2.api_key_public = "pk_other".into();
    let Written::Before(used) = store.create_project_once(&q2, 10, &once).await.unwrap() else {
        panic!("the key was used")
    };
    assert_eq!(
        used.created,
        Created::Project {
            project_id: pid("q")
        }
    );
    assert_eq!(store.project(&pid("q2")).await.unwrap(), None);
}

/// A result the engine evaluated, flagged as the service flags it (threshold 0.5), with reasons.
fn evaluated(
    project: &str,
    session: &str,
    bot: f64,
    pv: f64,
    at: &str,
    codes: &[vigil_detect::Code],
) -> NewResult {
    let mut r = result(project, session, bot, pv, at);
    r.evaluation = Some(vigil_core::domain::Evaluation {
        reasons: codes
            .iter()
            .map(|c| vigil_detect::Reason::new(*c, "test"))
            .collect(),
        engine_version: "vigil-detect/test".into(),
        model: "shared".into(),
        ja4: None,
        transport: None,
        device: None,
        flagged: Flagged::at(Score::HALF, score(bot), score(pv)),
        agent: vigil_detect::Agent::NONE,
        allowed: false,
        page: None,
    });
    r
}

fn query(limit: usize, bot: Option<f64>, pv: Option<f64>) -> SessionQuery {
    SessionQuery {
        limit,
        after: None,
        min_score_bot: bot.map(score),
        min_score_proxy_vpn: pv.map(score),
        device: None,
        agent: None,
    }
}

/// Every page of a query, followed to the end: the sessions in the order listed.
async fn all_pages<S: Store>(store: &S, project: &str, mut q: SessionQuery) -> Vec<SessionSummary> {
    let mut out = Vec::new();
    for _ in 0..100 {
        let page = store.sessions(&pid(project), &q).await.unwrap();
        assert!(page.sessions.len() <= q.limit);
        out.extend(page.sessions);
        match page.next {
            Some(next) => q.after = Some(next),
            None => return out,
        }
    }
    panic!("paging did not end");
}

async fn sessions_are_listed_by_last_activity_paged_and_filtered<S: Store>(store: S) {
    assert!(
        store
            .sessions(&pid("p"), &query(10, None, None))
            .await
            .unwrap()
            .sessions
            .is_empty()
    );
    let writes = [
        ("s1", 0.1, 0.1, "2026-11-21T10:00:00Z"),
        ("s2", 0.9, 0.1, "2026-11-21T11:00:00Z"),
        ("s3", 0.2, 0.8, "2026-11-21T12:00:00Z"),
        ("s1", 0.6, 0.0, "2026-11-21T13:00:00Z"),
        ("s4", 0.7, 0.7, "2026-11-21T14:00:00Z"),
        // A late-arriving result from earlier: s4 stays last seen at 14:00.
        ("s4", 0.0, 0.0, "2026-11-21T09:00:00Z"),
        ("s5", 0.0, 0.0, "2026-11-21T12:00:00Z"),
    ];
    for (s, b, p, at) in writes {
        store.add_result(&result("p", s, b, p, at)).await.unwrap();
    }
    store
        .add_result(&result("q", "other", 1.0, 1.0, "2026-11-21T15:00:00Z"))
        .await
        .unwrap();

    let page = store
        .sessions(&pid("p"), &query(100, None, None))
        .await
        .unwrap();
    assert_eq!(page.next, None);
    let order: Vec<&str> = page
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    // s3 and s5 were both last seen at 12:00: the tie goes by session id, descending.
    assert_eq!(order, ["s4", "s1", "s5", "s3", "s2"]);
    let s4 = &page.sessions[0];
    assert_eq!(s4.last_seen_at, ts("2026-11-21T14:00:00Z"));
    assert_eq!(
        (s4.events, s4.score_bot.get(), s4.score_proxy_vpn.get()),
        (2, 0.7, 0.7)
    );
    let s1 = &page.sessions[1];
    assert_eq!((s1.events, s1.score_bot.get()), (2, 0.6));

    // Pages of two cover every session once, in the same order.
    let paged = all_pages(&store, "p", query(2, None, None)).await;
    let paged: Vec<&str> = paged.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(paged, order);

    // Filters on the overall scores, alone and together, also across pages.
    let bots = all_pages(&store, "p", query(1, Some(0.6), None)).await;
    let bots: Vec<&str> = bots.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(bots, ["s4", "s1", "s2"]);
    let both = all_pages(&store, "p", query(100, Some(0.5), Some(0.5))).await;
    let both: Vec<&str> = both.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(both, ["s4"]);
    assert!(
        store
            .sessions(&pid("p"), &query(5, Some(1.0), None))
            .await
            .unwrap()
            .sessions
            .is_empty()
    );

    // Another project's sessions are its own.
    let q = store
        .sessions(&pid("q"), &query(10, None, None))
        .await
        .unwrap();
    assert_eq!(q.sessions.len(), 1);
    assert_eq!(q.sessions[0].session_id.as_str(), "other");
}

async fn stats_buckets_equal_the_events_written<S: Store>(store: S) {
    use vigil_detect::Code::{CdpAutomation, HostingIp, Webdriver};
    let writes = [
        evaluated(
            "p",
            "a",
            0.99,
            0.1,
            "2026-11-21T10:05:00Z",
            &[Webdriver, CdpAutomation],
        ),
        evaluated("p", "b", 0.1, 0.9, "2026-11-21T10:59:59.999Z", &[HostingIp]),
        evaluated(
            "p",
            "c",
            0.5,
            0.5,
            "2026-11-21T10:30:00Z",
            &[CdpAutomation, HostingIp],
        ),
        evaluated("p", "d", 0.1, 0.1, "2026-11-21T11:00:00Z", &[]),
        // Not evaluated (a backend's own scores): a visit, never a bot or a proxy.
        result("p", "e", 1.0, 1.0, "2026-11-21T11:10:00Z"),
        evaluated("p", "a", 0.9, 0.0, "2026-11-22T00:00:00Z", &[Webdriver]),
        evaluated("q", "a", 0.99, 0.99, "2026-11-21T10:00:00Z", &[Webdriver]),
    ];
    for w in &writes {
        store.add_result(w).await.unwrap();
    }
    let hours = StatsRange::new(
        ts("2026-11-21T09:00:00Z"),
        ts("2026-11-21T12:00:00Z"),
        Granularity::Hour,
    )
    .unwrap();
    let got = store.stats(&pid("p"), &hours).await.unwrap();
    let counts = |b: &Bucket| (b.start.to_string(), b.visits, b.bots, b.proxies);
    assert_eq!(
        got.iter().map(counts).collect::<Vec<_>>(),
        [
            ("2026-11-21T09:00:00.000Z".to_owned(), 0, 0, 0),
            ("2026-11-21T10:00:00.000Z".to_owned(), 3, 2, 2),
            ("2026-11-21T11:00:00.000Z".to_owned(), 2, 0, 0),
        ]
    );
    let reasons: Vec<(&str, u64)> = got[1]
        .reasons
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        reasons,
        [("cdp_automation", 2), ("hosting_ip", 2), ("webdriver", 1)]
    );
    assert!(got[2].reasons.is_empty());

    let days = StatsRange::new(
        ts("2026-11-20T00:00:00Z"),
        ts("2026-11-23T00:00:00Z"),
        Granularity::Day,
    )
    .unwrap();
    let got = store.stats(&pid("p"), &days).await.unwrap();
    assert_eq!(
        got.iter().map(counts).collect::<Vec<_>>(),
        [
            ("2026-11-20T00:00:00.000Z".to_owned(), 0, 0, 0),
            ("2026-11-21T00:00:00.000Z".to_owned(), 5, 2, 2),
            ("2026-11-22T00:00:00.000Z".to_owned(), 1, 1, 0),
        ]
    );
    assert_eq!(got[1].reasons["webdriver"], 1);
    assert_eq!(got[2].reasons["webdriver"], 1);

    // The sums over hours equal the day's, and another project counts apart.
    let q = store.stats(&pid("q"), &days).await.unwrap();
    assert_eq!(q.iter().map(|b| b.visits).sum::<u64>(), 1);
    let none = store.stats(&pid("nobody"), &hours).await.unwrap();
    assert!(none.iter().all(|b| b.visits == 0) && none.len() == 3);
}

async fn concurrent_events_are_all_counted<S: Store>(store: S) {
    let store = Arc::new(store);
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let r = evaluated(
                "p",
                &format!("s{}", i % 7),
                0.9,
                0.1,
                "2026-11-21T10:00:00Z",
                &[vigil_detect::Code::Webdriver],
            );
            store.add_result(&r).await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let day = StatsRange::new(
        ts("2026-11-21T00:00:00Z"),
        ts("2026-11-22T00:00:00Z"),
        Granularity::Day,
    )
    .unwrap();
    let got = store.stats(&pid("p"), &day).await.unwrap();
    assert_eq!(
        (got[0].visits, got[0].bots, got[0].reasons["webdriver"]),
        (40, 40, 40)
    );
    let sessions = all_pages(&*store, "p", query(3, None, None)).await;
    assert_eq!(sessions.len(), 7);
    assert_eq!(sessions.iter().map(|s| s.events).sum::<u64>(), 40);
}

async fn sessions_and_stats_belong_to_the_project_owner<S: Store>(store: S) {
    store.put_account(&account("acc_1")).await.unwrap();
    store.put_account(&account("acc_2")).await.unwrap();
    store.put_project(&project("p", "acc_1")).await.unwrap();
    store
        .add_result(&result("p", "s", 0.9, 0.9, "2026-11-21T10:00:00Z"))
        .await
        .unwrap();
    let app = Vigil::new(store, UrlPolicy::default());
    let (owner, stranger) = (
        AccountId::parse("acc_1").unwrap(),
        AccountId::parse("acc_2").unwrap(),
    );
    let day = StatsRange::new(
        ts("2026-11-21T00:00:00Z"),
        ts("2026-11-22T00:00:00Z"),
        Granularity::Day,
    )
    .unwrap();
    assert_eq!(
        app.sessions(&owner, &pid("p"), &query(10, None, None))
            .await
            .unwrap()
            .sessions
            .len(),
        1
    );
    assert_eq!(
        app.stats(&owner, &pid("p"), &day).await.unwrap()[0].visits,
        1
    );
    assert!(matches!(
        app.sessions(&stranger, &pid("p"), &query(10, None, None))
            .await,
        Err(ServiceError::ProjectNotFound)
    ));
    assert!(matches!(
        app.stats(&stranger, &pid("p"), &day).await,
        Err(ServiceError::ProjectNotFound)
    ));
    assert!(matches!(
        app.stats(&owner, &pid("missing"), &day).await,
        Err(ServiceError::ProjectNotFound)
    ));
    // Ranges are validated before anything is read: empty, reversed, or longer than 744 hours or
    // 400 days.
    let range = |a: &str, b: &str, g| StatsRange::new(ts(a), ts(b), g);
    assert!(
        range(
            "2026-11-21T00:00:00Z",
            "2026-11-21T00:00:00Z",
            Granularity::Hour
        )
        .is_err()
    );
    assert!(
        range(
            "2026-11-22T00:00:00Z",
            "2026-11-21T00:00:00Z",
            Granularity::Day
        )
        .is_err()
    );
    assert!(
        range(
            "2026-10-01T00:00:00Z",
            "2026-11-01T00:00:00Z",
            Granularity::Hour
        )
        .is_ok()
    );
    assert!(
        range(
            "2026-10-01T00:00:00Z",
            "2026-11-01T00:00:01Z",
            Granularity::Hour
        )
        .is_err()
    );
    assert!(
        range(
            "2025-10-01T00:00:00Z",
            "2026-11-05T00:00:00Z",
            Granularity::Day
        )
        .is_ok()
    );
    assert!(
        range(
            "2025-10-01T00:00:00Z",
            "2026-11-06T00:00:00Z",
            Granularity::Day
        )
        .is_err()
    );
}

/// A large plan's counters are spread over items (DynamoDB: at most 250 writes a second each), and
/// the limits stay exact: concurrent requests over the limit are refused, exactly the limit is
/// allowed, and usage is the sum of every shard.
async fn large_plans_spread_counters_and_stay_exact<S: Store>(store: S) {
    let store = Arc::new(store);
    let acc = AccountId::parse("acc_large").unwrap();
    let p = period("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");
    // Concurrent, but no more at once than the emulator answers within the SDK's timeouts.
    let gate = Arc::new(tokio::sync::Semaphore::new(16));
    let burst = |n: usize, second: i64, max_rps: u32, max_requests: u64| {
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let (store, acc, gate) = (store.clone(), acc.clone(), gate.clone());
                tokio::spawn(async move {
                    let _turn = gate.acquire().await.unwrap();
                    store
                        .count_request(&acc, second, max_rps, &p, max_requests)
                        .await
                })
            })
            .collect();
        async move {
            let (mut allowed, mut rate, mut quota) = (0, 0, 0);
            for t in tasks {
                match t.await.unwrap().unwrap() {
                    Counted::Allowed { .. } => allowed += 1,
                    Counted::RateLimited => rate += 1,
                    Counted::QuotaExceeded => quota += 1,
                }
            }
            (allowed, rate, quota)
        }
    };
    // maxRps 1,000: four rate shards of 250. 1,100 requests in one second: exactly 1,000 pass.
    assert_eq!(
        burst(1_100, SECOND, 1_000, 1_000_000).await,
        (1_000, 100, 0)
    );
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 1_000);
    // A quota of 1,600 spread over eight usage shards: 700 more requests, exactly 600 pass.
    assert_eq!(burst(700, SECOND + 1, 1_000, 1_600).await, (600, 0, 100));
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 1_600);

    // Visits of a project allowed 1,000 a second, each from its own address: exactly 1,000 pass.
    let prj = pid("prj_large");
    let tasks: Vec<_> = (0..1_050)
        .map(|i| {
            let (store, acc, prj, gate) = (store.clone(), acc.clone(), prj.clone(), gate.clone());
            tokio::spawn(async move {
                let _turn = gate.acquire().await.unwrap();
                let visit = VisitCount {
                    account: &acc,
                    project: &prj,
                    source: format!("198.51.{}.{}", i / 250, i % 250),
                    second: SECOND + 2,
                    project_rps: 1_000,
                    source_rps: 20,
                    period: p,
                    max_requests: 1_000_000,
                    max_rps: 1_000,
                };
                store.count_visit(&visit).await
            })
        })
        .collect();
    let mut allowed = 0;
    for t in tasks {
        if let Counted::Allowed { .. } = t.await.unwrap().unwrap() {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 1_000);
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 2_600);
}

// ---- Velocity ------------------------------------------------------------------------------------

/// The service with the engine over `store`, its clock, and a project of its own.
async fn detecting<S: Store>(
    store: S,
    at: &str,
) -> (Vigil<S, vigil_core::service::vigil::Detecting>, ManualClock) {
    store.put_account(&account("acc_v")).await.unwrap();
    store.put_project(&project("pv", "acc_v")).await.unwrap();
    let clock = ManualClock::at(ts(at));
    let engine = Arc::new(vigil_detect::Engine::embedded().unwrap());
    let app = Vigil::new(store, UrlPolicy::default())
        .with_clock(clock.clone())
        .with_engine(engine);
    (app, clock)
}

/// A visit of the browser of `events/collect.json`'s signals (one device key) from `ip`.
fn browser_visit(ip: &str, zone: &str) -> vigil_core::domain::AddressedEvidence {
    let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
    let evidence: vigil_detect::Evidence = serde_json::from_value(serde_json::json!({
        "userAgent": chrome,
        "signals": {"userAgent": chrome, "webglVendor": "Google Inc. (Intel)",
            "webglRenderer": "ANGLE (Intel)", "screenWidth": 1920, "screenHeight": 1080,
            "hardwareConcurrency": 8, "maxTouchPoints": 0, "timeZone": zone,
            "languages": ["en-US", "en"], "evalLength": 33, "productSub": "20030107"}
    }))
    .unwrap();
    vigil_core::domain::AddressedEvidence::new(ip.parse().unwrap(), evidence)
}

fn secs(epoch: i64) -> Timestamp {
    Timestamp::from_unix_millis(epoch * 1000).unwrap()
}

/// The number a detail starts with, and the rest.
fn leading_count(detail: &str) -> (u64, &str) {
    let end = detail
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(detail.len());
    (detail[..end].parse().expect("a count"), &detail[end..])
}

fn reason<'a>(e: &'a vigil_core::domain::Event, code: &str) -> Option<&'a vigil_detect::Reason> {
    e.reasons.iter().find(|r| r.code.name() == code)
}

/// 200 sessions from one address within five minutes, each the same browser's: flagged by
/// `session_churn` and `address_velocity` with the counts in their details, where the first few
/// were not; after the windows have passed, the next is judged alone again.
async fn a_burst_of_sessions_from_one_address_is_flagged_and_forgotten<S: Store>(store: S) {
    let (app, clock) = detecting(store, "2026-11-24T10:00:00.000Z").await;
    let (acc, p) = (AccountId::parse("acc_v").unwrap(), pid("pv"));
    let mut scores = Vec::new();
    let mut last = None;
    for i in 0..200 {
        clock.set(secs(ts("2026-11-24T10:00:00.000Z").unix_seconds() + i / 2));
        let e = app
            .ingestion()
            .record_event(
                &acc,
                &p,
                &sid(&format!("burst-{i}")),
                &browser_visit("198.51.100.20", "America/New_York"),
                None,
            )
            .await
            .unwrap();
        scores.push(e.score_bot.get());
        last = Some(e);
    }
    let last = last.unwrap();
    assert!(scores[..3].iter().all(|s| *s < 0.5), "{:?}", &scores[..3]);
    assert!(last.score_bot.get() >= 0.9, "{last:?}");
    let churn = reason(&last, "session_churn").expect("session_churn");
    // Distinct sessions are a sketch's: within 3% of 200.
    let (n, rest) = leading_count(&churn.detail);
    assert!((194..=206).contains(&n), "{}", churn.detail);
    assert!(
        rest.starts_with(
            " sessions in 5 minutes from one device at this address (threshold 20; 200 events"
        ),
        "{}",
        churn.detail
    );
    let velocity = reason(&last, "address_velocity").expect("address_velocity");
    assert!(
        velocity
            .detail
            .starts_with("200 events in 5 minutes from one address"),
        "{}",
        velocity.detail
    );
    // The device's sessions, newest first, paged by the devices index.
    let device = vigil_core::domain::DeviceKey::parse(last.device.as_deref().unwrap()).unwrap();
    let mut q = query(100, None, None);
    q.device = Some(device);
    let page = app.sessions(&acc, &p, &q).await.unwrap();
    assert_eq!(page.sessions.len(), 100);
    assert_eq!(page.sessions[0].session_id.as_str(), "burst-199");
    q.after = page.next;
    let rest = app.sessions(&acc, &p, &q).await.unwrap();
    assert_eq!(rest.sessions.len(), 100);
    assert!(rest.next.is_none());
    // Another project's owner finds nothing of it.
    assert!(
        app.sessions(&AccountId::parse("acc_other").unwrap(), &p, &q)
            .await
            .is_err()
    );

    // Two days later the windows have let the burst go.
    clock.set(ts("2026-11-26T10:00:00.000Z"));
    let e = app
        .ingestion()
        .record_event(
            &acc,
            &p,
            &sid("after"),
            &browser_visit("198.51.100.20", "America/New_York"),
            None,
        )
        .await
        .unwrap();
    assert!(e.score_bot.get() < 0.5, "{e:?}");
    assert!(reason(&e, "session_churn").is_none(), "{e:?}");
}

/// One device key over 20 addresses in a few minutes: `address_churn`; a second device of the
/// same project from one address: nothing.
async fn one_device_over_many_addresses_is_address_churn<S: Store>(store: S) {
    let (app, clock) = detecting(store, "2026-11-24T11:00:00.000Z").await;
    let (acc, p) = (AccountId::parse("acc_v").unwrap(), pid("pv"));
    let mut last = None;
    for i in 0..20 {
        clock.set(secs(ts("2026-11-24T11:00:00.000Z").unix_seconds() + i * 5));
        let ip = format!("203.0.113.{}", 10 + i);
        last = Some(
            app.ingestion()
                .record_event(
                    &acc,
                    &p,
                    &sid(&format!("rot-{}", i % 3)),
                    &browser_visit(&ip, "Europe/Berlin"),
                    None,
                )
                .await
                .unwrap(),
        );
    }
    let last = last.unwrap();
    let churn = reason(&last, "address_churn").expect("address_churn");
    // Distinct addresses are a sketch's: 20 within 2.
    let detail = churn
        .detail
        .strip_prefix("one device from ")
        .expect("detail");
    let (n, rest) = leading_count(detail);
    assert!((18..=22).contains(&n), "{}", churn.detail);
    assert!(
        rest.starts_with(" addresses in 5 minutes"),
        "{}",
        churn.detail
    );
    assert!(last.score_bot.get() >= 0.8, "{last:?}");
    let other = app
        .ingestion()
        .record_event(
            &acc,
            &p,
            &sid("home"),
            &browser_visit("198.51.100.99", "Asia/Tokyo"),
            None,
        )
        .await
        .unwrap();
    assert_ne!(other.device, last.device);
    assert!(other.score_bot.get() < 0.5, "{other:?}");
    assert!(reason(&other, "address_churn").is_none(), "{other:?}");
}

/// Issue 52: velocity cannot be poisoned. 24 sessions from one address under a common browser's
/// device key leave a person with that browser elsewhere alone; 40 sessions sprayed from an
/// address without a device key weigh less against a person there whose browser has one.
async fn velocity_is_judged_by_the_visit_s_own_share<S: Store>(store: S) {
    let start = "2026-11-24T12:00:00.000Z";
    let (app, clock) = detecting(store, start).await;
    let (acc, p) = (AccountId::parse("acc_v").unwrap(), pid("pv"));
    for i in 0..24 {
        clock.set(secs(ts(start).unix_seconds() + i * 2));
        app.ingestion()
            .record_event(
                &acc,
                &p,
                &sid(&format!("poison-{i}")),
                &browser_visit("198.51.100.30", "Europe/Berlin"),
                None,
            )
            .await
            .unwrap();
    }
    let person = app
        .ingestion()
        .record_event(
            &acc,
            &p,
            &sid("person"),
            &browser_visit("203.0.113.77", "Europe/Berlin"),
            None,
        )
        .await
        .unwrap();
    assert!(reason(&person, "session_churn").is_none(), "{person:?}");
    assert!(person.score_bot.get() < 0.5, "{person:?}");
    // The burst's own address is still judged by it.
    let again = app
        .ingestion()
        .record_event(
            &acc,
            &p,
            &sid("poison-again"),
            &browser_visit("198.51.100.30", "Europe/Berlin"),
            None,
        )
        .await
        .unwrap();
    assert!(reason(&again, "session_churn").is_some(), "{again:?}");
    assert!(again.score_bot.get() >= 0.9, "{again:?}");

    // Sessions without a device key, sprayed from one address.
    let bare = |ip: &str| {
        let e: vigil_detect::Evidence = serde_json::from_value(serde_json::json!({
            "userAgent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
        }))
        .unwrap();
        vigil_core::domain::AddressedEvidence::new(ip.parse().unwrap(), e)
    };
    for i in 0..40 {
        app.ingestion()
            .record_event(
                &acc,
                &p,
                &sid(&format!("spray-{i}")),
                &bare("198.51.100.40"),
                None,
            )
            .await
            .unwrap();
    }
    let keyless = app
        .ingestion()
        .record_event(&acc, &p, &sid("spray-last"), &bare("198.51.100.40"), None)
        .await
        .unwrap();
    let full = reason(&keyless, "session_churn").expect("session_churn");
    let person = app
        .ingestion()
        .record_event(
            &acc,
            &p,
            &sid("neighbour"),
            &browser_visit("198.51.100.40", "Asia/Tokyo"),
            None,
        )
        .await
        .unwrap();
    let less = reason(&person, "session_churn").expect("session_churn");
    assert!(less.weight < full.weight, "{less:?} {full:?}");
    assert!(less.detail.contains("another client's"), "{}", less.detail);
    assert!(person.score_bot.get() < 0.9, "{person:?}");
}

/// Issue 52: test events have a budget per account (20 a minute over all its webhooks) beside the
/// one per webhook, counted in the store so that every instance shares it.
async fn test_events_have_a_budget_per_account<S: Store>(store: S) {
    let (app, clock) = detecting(store, "2026-11-24T13:00:10.000Z").await;
    let (acc, p) = (AccountId::parse("acc_v").unwrap(), pid("pv"));
    let mut hooks = Vec::new();
    for i in 0..5 {
        let url = WebhookUrl::parse(
            &format!("https://receiver.example/hook-{i}"),
            UrlPolicy::default(),
        )
        .unwrap();
        let w = app
            .webhooks()
            .create(&acc, &p, WebhookType::BotDetect, url)
            .await
            .unwrap();
        hooks.push(w.id);
    }
    let mut outcomes = Vec::new();
    for w in &hooks {
        for _ in 0..vigil_core::service::webhooks::TEST_BUDGET {
            outcomes.push(app.webhooks().test(&acc, &p, w).await);
        }
    }
    let accepted = outcomes.iter().filter(|o| o.is_ok()).count() as u64;
    assert_eq!(accepted, vigil_core::service::webhooks::ACCOUNT_TEST_BUDGET);
    for refused in &outcomes[accepted as usize..] {
        assert!(
            matches!(
                refused,
                Err(ServiceError::TestBudget(
                    vigil_core::service::error::TestBudget::Account,
                    50
                ))
            ),
            "{refused:?}"
        );
    }
    // Nothing was queued for the refused ones.
    let last = app
        .webhooks()
        .deliveries(&acc, &p, &hooks[4])
        .await
        .unwrap();
    assert!(last.is_empty(), "{last:?}");
    // The next minute has room again.
    clock.set(ts("2026-11-24T13:01:00.000Z"));
    assert!(app.webhooks().test(&acc, &p, &hooks[4]).await.is_ok());
}

/// Forty test events sent at once to a fresh webhook: its cap of five holds (it is counted in
/// the write that queues each, as the account's budget is), and exactly five are queued.
async fn a_webhooks_test_cap_holds_under_concurrency<S: Store>(store: S) {
    let (app, _clock) = detecting(store, "2026-11-24T13:00:10.000Z").await;
    let (acc, p) = (AccountId::parse("acc_v").unwrap(), pid("pv"));
    let url = WebhookUrl::parse("https://receiver.example/hook", UrlPolicy::default()).unwrap();
    let w = app
        .webhooks()
        .create(&acc, &p, WebhookType::BotDetect, url)
        .await
        .unwrap();
    let outcomes =
        futures_util::future::join_all((0..40).map(|_| app.webhooks().test(&acc, &p, &w.id))).await;
    let accepted = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(
        accepted,
        vigil_core::service::webhooks::TEST_BUDGET,
        "{outcomes:?}"
    );
    for refused in outcomes.iter().filter(|o| o.is_err()) {
        assert!(
            matches!(
                refused,
                Err(ServiceError::TestBudget(
                    vigil_core::service::error::TestBudget::Webhook,
                    _
                ))
            ),
            "{refused:?}"
        );
    }
    let queued = app.webhooks().deliveries(&acc, &p, &w.id).await.unwrap();
    assert_eq!(queued.len(), vigil_core::service::webhooks::TEST_BUDGET);
}

/// What a JOSE library makes of a sealed verdict (tests/open_sealed.py, tests/node/open_sealed.js):
/// its claims, or why it was refused.
fn opened(
    mut cmd: std::process::Command,
    input: &serde_json::Value,
) -> Result<serde_json::Value, String> {
    use std::io::Write as _;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the opener runs (make test installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    match text.strip_prefix("refused: ") {
        Some(why) => Err(why.to_owned()),
        None => Ok(serde_json::from_str(&text).unwrap_or_else(|_| panic!("{cmd:?}: {text:?}"))),
    }
}

/// Python's `jwcrypto` and Node's `jose`, each given the keys as the API lists them.
fn openers() -> [(&'static str, std::process::Command); 2] {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut python = std::process::Command::new(format!("{root}/.cache/venv-test/bin/python"));
    python.arg(format!("{root}/tests/open_sealed.py"));
    let mut node = std::process::Command::new("node");
    node.arg(format!("{root}/tests/node/open_sealed.js"))
        .env("NODE_PATH", format!("{root}/.cache/test-node/node_modules"));
    [("jwcrypto", python), ("jose", node)]
}

fn open_all(
    keys: &serde_json::Value,
    sealed: &str,
    expect: serde_json::Value,
) -> Vec<Result<serde_json::Value, String>> {
    let input = serde_json::json!({"keys": keys, "sealed": sealed, "expect": expect});
    openers()
        .into_iter()
        .map(|(_, cmd)| opened(cmd, &input))
        .collect()
}

/// Issue 49: a project that seals hands the page its visit's verdict encrypted under its key; the
/// official JOSE libraries of Python and Node open it with the keys as the API lists them, and
/// refuse it changed, expired, under another project's keys, or once its key has been rotated
/// out past the overlap. A project that does not seal answers as before.
async fn sealed_verdicts_open_with_the_projects_keys_only<S: Store>(store: S) {
    use vigil_core::domain::project::Origin;
    use vigil_core::service::projects::ProjectChanges;
    let now = Timestamp::now();
    let (app, clock) = detecting(store, &now.to_string()).await;
    let app = app.with_secret_overlap(std::time::Duration::from_secs(3600));
    let acc = AccountId::parse("acc_v").unwrap();
    app.put_project(&project("pw", "acc_v")).await.unwrap();
    let origin = Origin::parse("https://shop.example").unwrap();
    let seal_on = |p: &str| {
        let (app, acc, p) = (&app, &acc, pid(p));
        async move {
            let changes = ProjectChanges {
                sealed_results: Some(true),
                ..ProjectChanges::default()
            };
            app.projects().update(acc, &p, changes).await.unwrap()
        }
    };
    let keys_of = |p: &str| {
        let (app, acc, p) = (&app, &acc, pid(p));
        async move {
            serde_json::to_value(app.projects().sealing_keys(acc, &p).await.unwrap()).unwrap()["keys"].clone()
        }
    };
    let visit = |p: &str, session: &str| {
        let (app, origin, session) = (&app, &origin, sid(session));
        let key = format!("pk_{p}");
        async move {
            let site = app.ingestion().site(&key, origin).await.unwrap();
            app.ingestion()
                .record_visit(
                    &site,
                    origin,
                    &session,
                    None,
                    &browser_visit("81.2.69.142", "Europe/London"),
                )
                .await
                .unwrap()
        }
    };

    // Not sealing: the page's answer is the receipt alone, as before.
    assert_eq!(visit("pv", "plain").await.sealed, None);
    assert!(keys_of("pv").await.as_array().unwrap().is_empty());

    assert!(seal_on("pv").await.sealed_results);
    let sealed = visit("pv", "sealed-1")
        .await
        .sealed
        .expect("a sealed verdict");
    let keys = keys_of("pv").await;
    assert_eq!(keys.as_array().unwrap().len(), 1, "{keys}");
    let expect = serde_json::json!({"sessionId": "sealed-1", "origin": "https://shop.example", "projectId": "pv"});
    let stored = app
        .events(&acc, &pid("pv"), &sid("sealed-1"), 1, None)
        .await
        .unwrap()
        .results[0]
        .1
        .clone();
    for claims in open_all(&keys, &sealed, expect.clone()) {
        let claims = claims.expect("opened");
        assert_eq!(claims["eventId"], stored.id.to_string());
        assert_eq!(claims["scoreBot"], stored.score_bot.get());
        assert_eq!(claims["scoreProxyVpn"], stored.score_proxy_vpn.get());
        assert_eq!(claims["device"], serde_json::json!(stored.device));
        assert!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap() <= 600);
    }
    // Another session's backend, or a changed verdict: refused.
    let other = serde_json::json!({"sessionId": "sealed-2"});
    assert!(open_all(&keys, &sealed, other).iter().all(Result::is_err));
    let mut parts: Vec<String> = sealed.split('.').map(str::to_owned).collect();
    let flipped = if parts[3].starts_with('A') { "B" } else { "A" };
    parts[3].replace_range(0..1, flipped);
    let tampered = parts.join(".");
    for r in open_all(&keys, &tampered, expect.clone()) {
        assert!(r.is_err(), "tampered: {r:?}");
    }
    // Another project's keys open none of this project's verdicts.
    seal_on("pw").await;
    let foreign = keys_of("pw").await;
    assert!(
        open_all(&foreign, &sealed, expect.clone())
            .iter()
            .all(Result::is_err)
    );
    // Sealed eleven minutes ago: expired.
    clock.set(Timestamp::from_unix_millis(now.unix_millis() - 11 * 60_000).unwrap());
    let old = visit("pv", "sealed-old").await.sealed.unwrap();
    clock.set(now);
    for r in open_all(&keys, &old, serde_json::json!({})) {
        assert_eq!(r.unwrap_err(), "expired");
    }
    // Rotated: the replaced key is listed for the overlap and still opens what it sealed; once
    // the overlap has passed, the keys the API lists open it no more.
    app.projects()
        .rotate_sealing_key(&acc, &pid("pv"))
        .await
        .unwrap();
    let during = keys_of("pv").await;
    assert_eq!(during.as_array().unwrap().len(), 2, "{during}");
    assert!(
        open_all(&during, &sealed, expect.clone())
            .iter()
            .all(Result::is_ok)
    );
    let fresh = visit("pv", "sealed-1").await.sealed.unwrap();
    assert!(
        open_all(&during, &fresh, expect.clone())
            .iter()
            .all(Result::is_ok)
    );
    clock.set(Timestamp::from_unix_millis(now.unix_millis() + 2 * 3_600_000).unwrap());
    let after = keys_of("pv").await;
    assert_eq!(after.as_array().unwrap().len(), 1, "{after}");
    assert!(
        open_all(&after, &sealed, expect.clone())
            .iter()
            .all(Result::is_err)
    );
}

/// Issue 49: a kiosk shop whose people score as bots (software WebGL, no plugins, a frozen
/// embedded browser's client hints) labels 100 of them and 100 headless bots; calibrated, its
/// new people fall under 0.5 and its new bots stay at 0.9 or more, every event names the model
/// it was judged by, stored scores do not move, another project is untouched, and pinning
/// `shared` rolls back.
async fn calibration_learns_a_kiosk_shop_and_leaves_others_alone<S: Store>(store: S) {
    use vigil_core::domain::calibration::ModelChoice;
    use vigil_core::domain::label::{LabelSpec, Truth};
    use vigil_core::service::projects::ProjectChanges;
    let (app, _clock) = detecting(store, "2026-11-27T10:00:00.000Z").await;
    app.put_project(&project("po", "acc_v")).await.unwrap();
    let acc = AccountId::parse("acc_v").unwrap();
    const CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    // Each visitor its own address and screen (its own device key), so velocity stays quiet.
    let kiosk = |n: u32| {
        let evidence: vigil_detect::Evidence = serde_json::from_value(serde_json::json!({
            "userAgent": CHROME,
            "headers": {"user-agent": CHROME, "accept-language": "de-DE,de;q=0.9",
                "sec-ch-ua": "\"Chromium\";v=\"120\"", "sec-ch-ua-mobile": "?0",
                "sec-ch-ua-platform": "\"Linux\""},
            "signals": {"webdriver": false, "userAgent": CHROME, "languages": ["de-DE", "de"],
                "timeZone": "Europe/Berlin", "timezoneOffset": -60, "plugins": 0,
                "screenWidth": 1000 + n, "screenHeight": 1920, "outerWidth": 1080,
                "outerHeight": 1920, "innerWidth": 1080, "innerHeight": 1920,
                "webglVendor": "Mesa", "webglRenderer": "llvmpipe (LLVM 15.0.7, 256 bits)",
                "evalLength": 33, "productSub": "20030107", "automationGlobals": [],
                "hardwareConcurrency": 4, "maxTouchPoints": 10}
        }))
        .unwrap();
        let ip = format!("84.128.{}.{}", n / 200, n % 200 + 1);
        vigil_core::domain::AddressedEvidence::new(ip.parse().unwrap(), evidence)
    };
    let headless = |n: u32| {
        let ua = CHROME.replace("Chrome/", "HeadlessChrome/");
        let evidence: vigil_detect::Evidence = serde_json::from_value(serde_json::json!({
            "userAgent": ua,
            "headers": {"user-agent": ua, "accept-language": "de-DE"},
            "signals": {"webdriver": true, "userAgent": ua, "languages": ["de-DE"],
                "timeZone": "Europe/Berlin", "timezoneOffset": -60, "plugins": 0,
                "screenWidth": 3000 + n, "screenHeight": 720,
                "webglVendor": "Google Inc. (Google)",
                "webglRenderer": "ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero)))",
                "evalLength": 33, "productSub": "20030107", "hardwareConcurrency": 4}
        }))
        .unwrap();
        let ip = format!("84.129.{}.{}", n / 200, n % 200 + 1);
        vigil_core::domain::AddressedEvidence::new(ip.parse().unwrap(), evidence)
    };
    let visit = |p: &'static str, session: String, e: vigil_core::domain::AddressedEvidence| {
        let (app, acc) = (&app, &acc);
        async move {
            app.ingestion()
                .record_event(acc, &pid(p), &sid(&session), &e, None)
                .await
                .unwrap()
        }
    };
    let label = |session: String, truth| {
        let (app, acc) = (&app, &acc);
        async move {
            let spec = LabelSpec {
                label: truth,
                reason: None,
                note: None,
            };
            app.label_session(acc, &pid("pv"), &sid(&session), spec)
                .await
                .unwrap();
        }
    };

    // Today: the shop's people are flagged, as its labels will say.
    let before = visit("pv", "person-0".into(), kiosk(0)).await;
    assert!(before.score_bot.get() >= 0.5, "{before:?}");
    assert_eq!(before.model.as_deref(), Some("shared"));
    let elsewhere = visit("po", "other-0".into(), kiosk(0)).await;
    assert_eq!(elsewhere.score_bot, before.score_bot);

    // Too few labels: refused, nothing changed.
    for n in 0..10 {
        visit("pv", format!("person-{n}"), kiosk(n)).await;
        label(format!("person-{n}"), Truth::Human).await;
    }
    assert!(matches!(
        app.calibrate(&pid("pv")).await,
        Err(ServiceError::TooFewLabels {
            bots: 0,
            humans: 10
        })
    ));

    for n in 0..100 {
        visit("pv", format!("person-{n}"), kiosk(n)).await;
        visit("pv", format!("bot-{n}"), headless(n)).await;
        label(format!("person-{n}"), Truth::Human).await;
        label(format!("bot-{n}"), Truth::Bot).await;
    }
    let done = app.calibrate(&pid("pv")).await.unwrap();
    assert!(done.kept, "{done:?}");
    assert_eq!((done.admitted, done.used, done.waiting), (200, 200, 0));
    let c = &done.calibration;
    assert_eq!(c.version, 1);
    assert_eq!((c.comparison.trained_on, c.comparison.held_out), (150, 50));
    assert!(
        c.comparison.model_log_loss < c.comparison.shared_log_loss,
        "{c:?}"
    );
    assert_eq!(
        (c.comparison.shared_errors, c.comparison.model_errors),
        (25, 0)
    );

    // New visitors, never labelled: people under 0.5, bots at 0.9 or more, named `v1`.
    for n in 200..220 {
        let person = visit("pv", format!("new-person-{n}"), kiosk(n)).await;
        assert!(person.score_bot.get() < 0.5, "{person:?}");
        assert_eq!(person.model.as_deref(), Some("v1"));
        let bot = visit("pv", format!("new-bot-{n}"), headless(n)).await;
        assert!(bot.score_bot.get() >= 0.9, "{bot:?}");
        // What an event shows explains its score under the model.
        let sum: f64 = person
            .reasons
            .iter()
            .filter(|r| r.score == vigil_detect::Target::Bot)
            .map(|r| r.weight)
            .sum();
        let expect = 1.0 / (1.0 + (-(c.weights.bias() + sum)).exp());
        assert!((person.score_bot.get() - expect).abs() < 1e-3, "{person:?}");
    }
    // Stored scores did not move.
    let stored = app
        .events(&acc, &pid("pv"), &sid("person-0"), 100, None)
        .await
        .unwrap();
    assert!(
        stored
            .results
            .iter()
            .all(|(_, e)| e.score_bot == before.score_bot)
    );
    // Another project is judged as before.
    let other = visit("po", "other-1".into(), kiosk(300)).await;
    assert_eq!(other.score_bot, before.score_bot);
    assert_eq!(other.model.as_deref(), Some("shared"));

    // The project shows its model; pinning `shared` rolls back at once.
    let shown = serde_json::to_value(app.projects().get(&acc, &pid("pv")).await.unwrap()).unwrap();
    assert_eq!(shown["model"], "latest");
    assert_eq!(shown["calibration"]["version"], 1);
    let pin = ProjectChanges {
        model: Some(ModelChoice::Shared),
        ..ProjectChanges::default()
    };
    app.projects().update(&acc, &pid("pv"), pin).await.unwrap();
    let pinned = visit("pv", "pinned".into(), kiosk(400)).await;
    assert_eq!(pinned.score_bot, before.score_bot);
    assert_eq!(pinned.model.as_deref(), Some("shared"));

    // Calibrating again reads the v1-judged events back at their shared weights: the same fit.
    let again = app.calibrate(&pid("pv")).await.unwrap();
    assert_eq!(again.calibration.version, 2);
    assert_eq!(again.calibration.weights, c.weights);
    // The weekly run finds the project by its labels.
    let all = app.calibrate_all().await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].as_ref().unwrap().project_id, pid("pv"));
}

/// Issue 49: labels are kept one per session, paged by session id, and removed.
async fn labels_are_kept_paged_and_removed<S: Store>(store: S) {
    use vigil_core::domain::label::{Label, Truth};
    let p = pid("pl");
    let label = |s: &str, truth| Label {
        session_id: sid(s),
        label: truth,
        reason: None,
        note: None,
        labelled_at: ts("2026-11-24T10:00:00Z"),
        score_bot: Score::new(0.5).unwrap(),
        reasons: vec!["webdriver".into()],
    };
    for s in ["s3", "s1", "s5", "s2", "s4"] {
        store.put_label(&p, &label(s, Truth::Bot)).await.unwrap();
    }
    // Put again: replaced, not added.
    store
        .put_label(&p, &label("s2", Truth::Human))
        .await
        .unwrap();
    // Another project's label is not this one's.
    store
        .put_label(&pid("other"), &label("s9", Truth::Bot))
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = store.labels(&p, after.as_ref(), 2).await.unwrap();
        if page.is_empty() {
            break;
        }
        after = page.last().map(|l| l.session_id.clone());
        seen.extend(page);
    }
    let ids: Vec<&str> = seen.iter().map(|l| l.session_id.as_str()).collect();
    assert_eq!(ids, ["s1", "s2", "s3", "s4", "s5"]);
    // Both projects are listed for calibration, once each, paged by id.
    let first = store.labelled_projects(None, 1).await.unwrap();
    assert_eq!(first, [pid("other")]);
    let rest = store.labelled_projects(Some(&first[0]), 10).await.unwrap();
    assert_eq!(rest, [pid("pl")]);
    assert_eq!(seen[1].label, Truth::Human);
    assert!(store.delete_label(&p, &sid("s2")).await.unwrap());
    assert!(
        !store.delete_label(&p, &sid("s2")).await.unwrap(),
        "already gone"
    );
    assert_eq!(store.labels(&p, None, 100).await.unwrap().len(), 4);
}

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod sqlite_store {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let (store, _dir) = super::sqlite();
                    super::$name(store).await;
                }
            )*
        }
        mod dynamodb_store {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(super::common::fresh_dynamo(stringify!($name)).await).await;
                }
            )*
        }
    };
}

conformance!(
    visits_have_their_own_budget,
    a_new_visit_limit_is_one_more_step,
    a_new_developer_limit_is_one_more_step,
    accounts_keys_and_projects_round_trip,
    results_are_newest_first_with_write_order_tie_break,
    pages_cover_every_result_once,
    session_score_is_maximum_over_all_results,
    sessions_and_projects_are_isolated,
    webhooks_are_unique_limited_and_deletable,
    concurrent_writers_keep_the_summary_exact,
    deliveries_are_idempotent_leased_and_indexed,
    webhooks_can_be_disabled_and_checkpoints_kept,
    rate_windows_allow_exactly_max_rps,
    quota_allows_exactly_max_requests,
    concurrent_requests_allow_exactly_max_rps,
    projects_are_limited_listed_and_updated,
    the_service_enforces_plans_at_exact_boundaries,
    events_and_public_keys_round_trip,
    idempotency_keys_make_writes_happen_once,
    sessions_are_listed_by_last_activity_paged_and_filtered,
    stats_buckets_equal_the_events_written,
    concurrent_events_are_all_counted,
    sessions_and_stats_belong_to_the_project_owner,
    large_plans_spread_counters_and_stay_exact,
    a_burst_of_sessions_from_one_address_is_flagged_and_forgotten,
    one_device_over_many_addresses_is_address_churn,
    velocity_is_judged_by_the_visit_s_own_share,
    test_events_have_a_budget_per_account,
    a_webhooks_test_cap_holds_under_concurrency,
    sealed_verdicts_open_with_the_projects_keys_only,
    labels_are_kept_paged_and_removed,
    calibration_learns_a_kiosk_shop_and_leaves_others_alone,
    agents_policies_events_and_the_agent_filter_round_trip,
    signature_uses_and_directories_are_kept,
    a_sessions_path_is_kept_in_its_summary_and_judged_on_its_pages,
);

/// A page load of `browser_visit`'s browser saying how it was reached: `previous` is the agent's
/// summary of the page before (null: none in the tab).
fn page_load(previous: serde_json::Value, referrer: &str) -> vigil_core::domain::AddressedEvidence {
    let visit = browser_visit("198.51.100.20", "Europe/Berlin");
    let mut signals = visit.evidence().signals.clone().unwrap();
    signals.navigation = Some(
        serde_json::from_value(serde_json::json!({
            "type": "navigate", "referrer": referrer, "previous": previous
        }))
        .unwrap(),
    );
    visit.with_signals(Some(signals))
}

/// Pages of one session, each reached with no input on the page before: named on the third, and
/// the path it was judged on is the one the summary keeps (no other read); an action's second
/// look is the same page and adds none. A person's session, links clicked, is not named.
async fn a_sessions_path_is_kept_in_its_summary_and_judged_on_its_pages<S: Store + Clone>(
    store: S,
) {
    let (app, clock) = detecting(store.clone(), "2026-11-27T10:00:00.000Z").await;
    let (acc, p) = (AccountId::parse("acc_v").unwrap(), pid("pv"));
    let quiet = serde_json::json!({"presses": 0, "keys": 0, "visibleMs": 2000, "left": "unknown"});
    let clicked = serde_json::json!({"presses": 1, "clicks": 1, "visibleMs": 5000, "left": "link",
        "kin": {"holds": [86], "m": [[609, 479, 35, 2, 44, 31, 1, 1, 1, 1, 89, 51, 381, 86]]}});
    let mut scraper = Vec::new();
    let mut person = Vec::new();
    for i in 0..4 {
        clock.set(secs(ts("2026-11-27T10:00:00.000Z").unix_seconds() + i * 3));
        let (q, c) = if i == 0 {
            (serde_json::Value::Null, serde_json::Value::Null)
        } else {
            (quiet.clone(), clicked.clone())
        };
        let page = page_load(q, "none");
        scraper.push(
            app.ingestion()
                .record_event(&acc, &p, &sid("quiet"), &page, None)
                .await
                .unwrap(),
        );
        let page = page_load(c, "same-site");
        person.push(
            app.ingestion()
                .record_event(&acc, &p, &sid("reader"), &page, None)
                .await
                .unwrap(),
        );
    }
    let named: Vec<bool> = scraper
        .iter()
        .map(|e| reason(e, "navigation_without_input").is_some())
        .collect();
    assert_eq!(named, [false, false, true, true], "{scraper:?}");
    assert!(scraper[2].score_bot.get() >= 0.9, "{:?}", scraper[2]);
    let bot_reasons = |e: &vigil_core::domain::Event| {
        e.reasons
            .iter()
            .filter(|r| r.score == vigil_detect::Target::Bot)
            .count()
    };
    assert!(
        person
            .iter()
            .all(|e| e.score_bot.get() < 0.5 && bot_reasons(e) == 0),
        "{person:?}"
    );

    let kept = store
        .prior_summary(&p, &sid("quiet"))
        .await
        .unwrap()
        .path_after(None);
    assert_eq!((kept.pages, kept.unprompted, kept.summarised), (4, 3, 3));
    // An action on the last page: judged on the same path, which it leaves as it was.
    let mut action = page_load(quiet.clone(), "none");
    let mut signals = action.evidence().signals.clone().unwrap();
    signals.activity = Some(Default::default());
    action = action.with_signals(Some(signals));
    let e = app
        .ingestion()
        .record_event(&acc, &p, &sid("quiet"), &action, None)
        .await
        .unwrap();
    assert!(reason(&e, "navigation_without_input").is_some(), "{e:?}");
    let after = store
        .prior_summary(&p, &sid("quiet"))
        .await
        .unwrap()
        .path_after(None);
    assert_eq!(after, kept);
    let reader = store
        .prior_summary(&p, &sid("reader"))
        .await
        .unwrap()
        .path_after(None);
    assert_eq!(
        (reader.pages, reader.unprompted, reader.input_pages),
        (4, 0, 3)
    );
}

/// A project's agent policy round-trips; an allowed verified agent's event keeps its scoreBot,
/// shows `agent` and `allowed`, is no bot in the statistics, leaves the session's counted bot
/// score at zero, and the sessions list filters by the latest event's agent status.
async fn agents_policies_events_and_the_agent_filter_round_trip<S: Store>(store: S) {
    use vigil_core::domain::project::AgentPolicy;
    use vigil_detect::agents::{Category, Status, Via};
    let mut p = project("p", "acc");
    p.agents = AgentPolicy::parse(vec!["ai_agent".into(), "Google".into()]).unwrap();
    store.put_project(&p).await.unwrap();
    assert_eq!(
        store.project(&p.id).await.unwrap().unwrap().agents,
        p.agents
    );

    let verified = vigil_detect::Agent {
        status: Status::Verified,
        operator: Some("OpenAI".into()),
        name: Some("ChatGPT agent".into()),
        category: Some(Category::AiAgent),
        via: Some(Via::Signature),
    };
    assert!(p.agents.allows(&verified));
    let mut agent_event = evaluated(
        "p",
        "s_agent",
        0.99,
        0.1,
        "2026-11-21T10:00:00Z",
        &[vigil_detect::Code::SignedAgent],
    );
    if let Some(e) = agent_event.evaluation.as_mut() {
        e.agent = verified.clone();
        e.allowed = true;
        e.flagged.bot = false;
    }
    let at = store.add_result(&agent_event).await.unwrap();
    let bot = evaluated(
        "p",
        "s_bot",
        0.99,
        0.1,
        "2026-11-21T10:00:01Z",
        &[vigil_detect::Code::Webdriver],
    );
    store.add_result(&bot).await.unwrap();

    let e = store
        .event(&pid("p"), &sid("s_agent"), at)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(e.agent.as_ref(), Some(&verified));
    assert!(e.allowed);
    assert_eq!(e.score_bot.get(), 0.99, "scoreBot kept as evidence");

    let mut q = query(10, None, None);
    q.agent = Some(Status::Verified);
    let listed = all_pages(&store, "p", q).await;
    assert_eq!(
        listed
            .iter()
            .map(|s| s.session_id.as_str())
            .collect::<Vec<_>>(),
        ["s_agent"]
    );
    assert_eq!(listed[0].agent, Some(Status::Verified));
    let mut q = query(10, None, None);
    q.agent = Some(Status::Unsigned);
    let listed = all_pages(&store, "p", q).await;
    assert_eq!(
        listed
            .iter()
            .map(|s| s.session_id.as_str())
            .collect::<Vec<_>>(),
        ["s_bot"]
    );

    let range = vigil_core::domain::insight::StatsRange::new(
        ts("2026-11-21T00:00:00Z"),
        ts("2026-11-22T00:00:00Z"),
        vigil_core::domain::insight::Granularity::Day,
    )
    .unwrap();
    let buckets = store.stats(&pid("p"), &range).await.unwrap();
    let visits: u64 = buckets.iter().map(|b| b.visits).sum();
    let bots: u64 = buckets.iter().map(|b| b.bots).sum();
    assert_eq!(
        (visits, bots),
        (2, 1),
        "the allowed agent is a visit, not a bot"
    );
}

/// A signature's first use is recorded once until it expires; a directory's keys are kept until
/// their lifetime ends.
async fn signature_uses_and_directories_are_kept<S: Store>(store: S) {
    use vigil_core::store::items::DirectoryItem;
    assert!(store.first_use("n:abc", 1_000, 500).await.unwrap());
    assert!(
        !store.first_use("n:abc", 1_000, 600).await.unwrap(),
        "a replay"
    );
    assert!(store.first_use("n:other", 1_000, 600).await.unwrap());
    assert!(
        store.first_use("n:abc", 2_000, 1_001).await.unwrap(),
        "expired: a new use"
    );
    let url = "https://agent.example";
    assert_eq!(store.cached_directory(url, 100).await.unwrap(), None);
    let item = DirectoryItem::new(url, r#"{"keys":[]}"#.into(), 1_000);
    store.cache_directory(&item).await.unwrap();
    assert_eq!(store.cached_directory(url, 999).await.unwrap(), Some(item));
    assert_eq!(
        store.cached_directory(url, 1_000).await.unwrap(),
        None,
        "past its lifetime"
    );
}

// ---- SQLite only ----------------------------------------------------------------------------------

/// Separate pools on one file lock like separate processes do.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_writers_in_separate_pools_keep_the_summary_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vigil.db");
    let mut tasks = Vec::new();
    for w in 0..4 {
        let store = SqliteStore::open(&path).unwrap();
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                let pv = if w == 3 && i == 5 { 0.97 } else { 0.3 };
                store
                    .add_result(&result("p", "s", 0.1, pv, &at(TEN_AM + i)))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let page = store
        .results(&pid("p"), &sid("s"), 100, None)
        .await
        .unwrap();
    assert_eq!(page.results.len(), 40);
    let s = store
        .session_score(&pid("p"), &sid("s"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s.score_proxy_vpn.get(), 0.97);
}

#[tokio::test]
async fn sqlite_change_feed_mirrors_dynamodb_streams() {
    use vigil_store_sqlite::changes::ChangeKind::{Insert, Modify, Remove};
    let (store, _dir) = sqlite();
    store
        .add_result(&result("p", "s", 0.1, 0.2, &at(TEN_AM)))
        .await
        .unwrap();
    store
        .add_result(&result("p", "s", 0.3, 0.9, &at(TEN_AM + 1)))
        .await
        .unwrap();
    let changes = store.changes(0, 100).await.unwrap();
    // Per write: the result (INSERT) and the session summary (INSERT, then MODIFY).
    let kinds: Vec<_> = changes.iter().map(|(_, r)| r.kind).collect();
    assert_eq!(kinds, vec![Insert, Insert, Insert, Modify]);
    let (seq, modify) = &changes[3];
    assert_eq!(*seq, changes[2].0 + 1);
    let (old, new) = (modify.old.as_ref().unwrap(), modify.new.as_ref().unwrap());
    assert_eq!(old["scoreProxyVpn"], 0.2);
    assert_eq!(new["scoreProxyVpn"], 0.9);
    assert_eq!(new["entity"], "session");
    assert_eq!(new["last"]["scoreProxyVpn"], 0.9);
    assert_eq!(new["seq"], 2);
    assert_eq!(
        (modify.pk.as_str(), modify.sk.as_str()),
        ("PROJECT#p", "SESSION#s")
    );
    // Reading after a position resumes there.
    assert_eq!(store.changes(changes[1].0, 100).await.unwrap().len(), 2);
    // A webhook removal is a REMOVE with the old image.
    let w = webhook(1, "https://hooks.example/x");
    store.insert_webhook(&pid("p"), &w).await.unwrap();
    store.delete_webhook(&pid("p"), &w.id).await.unwrap();
    let tail = store.changes(changes[3].0, 100).await.unwrap();
    let removed = tail.iter().find(|(_, r)| r.kind == Remove).unwrap();
    assert_eq!(
        removed.1.old.as_ref().unwrap()["url"],
        "https://hooks.example/x"
    );
    assert_eq!(removed.1.new, None);
}

/// Counters shared by separate pools (as by separate processes) on one file stay exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_counters_in_separate_pools_allow_exactly_max_rps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vigil.db");
    let acc = AccountId::parse("acc_pools").unwrap();
    let p = period("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (store, acc) = (SqliteStore::open(&path).unwrap(), acc.clone());
        tasks.push(tokio::spawn(async move {
            let mut allowed = 0;
            for _ in 0..10 {
                if let Counted::Allowed { .. } = store
                    .count_request(&acc, SECOND, 7, &p, 1000)
                    .await
                    .unwrap()
                {
                    allowed += 1;
                }
            }
            allowed
        }));
    }
    let mut allowed = 0;
    for t in tasks {
        allowed += t.await.unwrap();
    }
    assert_eq!(allowed, 7);
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 7);
}

/// A process that counts many requests claims blocks of the budget from the file: each position
/// still goes to one request, what it holds unused is not usage, and it goes back to the file when
/// the store closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_claimed_positions_go_to_one_request_each_and_unused_ones_are_not_usage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vigil.db");
    let acc = AccountId::parse("acc_claims").unwrap();
    let p = period("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");
    let store = SqliteStore::open(&path).unwrap();
    let mut positions = Vec::new();
    for _ in 0..3_000 {
        match store
            .count_request(&acc, SECOND, 1_000_000, &p, 10_000_000)
            .await
            .unwrap()
        {
            Counted::Allowed {
                in_second,
                in_period,
            } => positions.push((u64::from(in_second), in_period)),
            refused => panic!("{refused:?}"),
        }
    }
    assert_eq!(positions, (1..=3_000).map(|n| (n, n)).collect::<Vec<_>>());
    assert_eq!(store.period_usage(&acc, &p).await.unwrap(), 3_000);
    // The file's counter holds at least what was used (more while blocks are held unused).
    let held = {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.query_row(
            "SELECT count FROM counters WHERE key LIKE 'ACCOUNT#acc_claims/USAGE#%'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
    };
    assert!(held >= 3_000, "{held}");
    drop(store);
    let next = SqliteStore::open(&path).unwrap();
    assert_eq!(next.period_usage(&acc, &p).await.unwrap(), 3_000);
}

/// Two processes claiming blocks of one account's budget on one file: never more than the limit
/// between them, refused early by no more than an eighth of the second's budget (what one may
/// hold unused), and once both close, the period's usage is exactly what they admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_two_processes_claiming_blocks_never_pass_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vigil.db");
    let acc = AccountId::parse("acc_two").unwrap();
    let p = period("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");
    let (a, b) = (
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    );
    let mut allowed = 0;
    for i in 0..3_000 {
        let store = if i % 2 == 0 { &a } else { &b };
        if let Counted::Allowed { .. } = store
            .count_request(&acc, SECOND, 1_000, &p, 10_000_000)
            .await
            .unwrap()
        {
            allowed += 1;
        }
    }
    assert!((1_000 - 1_000 / 8..=1_000).contains(&allowed), "{allowed}");
    drop((a, b));
    let next = SqliteStore::open(&path).unwrap();
    assert_eq!(next.period_usage(&acc, &p).await.unwrap(), allowed);
}

// ---- DynamoDB only --------------------------------------------------------------------------------

/// A plan of 1,000 requests a second writes four rate items of at most 250 each (a partition takes
/// about 1,000 writes a second), and a small plan still writes one item under its plain key.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_rate_windows_of_large_plans_spread_over_items() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let store = common::fresh_dynamo("spread_items").await;
    let p = period("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z");
    let (large, small) = (
        AccountId::parse("acc_big").unwrap(),
        AccountId::parse("acc_small").unwrap(),
    );
    for _ in 0..1_000 {
        let c = store
            .count_request(&large, SECOND, 1_000, &p, 1_000_000)
            .await
            .unwrap();
        assert!(matches!(c, Counted::Allowed { .. }), "{c:?}");
    }
    store
        .count_request(&small, SECOND, 10, &p, 100)
        .await
        .unwrap();
    let counts = |account: &'static str| {
        let store = &store;
        async move {
            let out = store
                .client()
                .query()
                .table_name(store.table())
                .key_condition_expression("pk = :pk AND begins_with(sk, :rate)")
                .expression_attribute_values(":pk", AttributeValue::S(format!("ACCOUNT#{account}")))
                .expression_attribute_values(":rate", AttributeValue::S(format!("RATE#{SECOND}")))
                .send()
                .await
                .unwrap();
            out.items()
                .iter()
                .map(|i| {
                    let sk = i["sk"].as_s().unwrap().clone();
                    let n: u64 = i["count"].as_n().unwrap().parse().unwrap();
                    (sk, n)
                })
                .collect::<Vec<_>>()
        }
    };
    let big = counts("acc_big").await;
    assert_eq!(big.len(), 4, "{big:?}");
    assert!(big.iter().all(|(_, n)| *n == 250), "{big:?}");
    assert_eq!(
        counts("acc_small").await,
        [(format!("RATE#{SECOND}"), 1)],
        "one shard keeps the plain key"
    );
}
