//! The layout's own tests: keys, items and what reading them back gives.

use super::*;
use crate::store::keys::results_prefix;

#[test]
fn project_items_keep_the_owner_in_both_encodings() {
    let project = Project::example();
    let item = ProjectItem::from(&project);
    let dynamo: serde_dynamo::Item = serde_dynamo::to_item(&item).unwrap();
    assert!(dynamo.contains_key("accountId"), "{dynamo:?}");
    let back: ProjectItem = serde_dynamo::from_item(dynamo).unwrap();
    assert_eq!(Project::from(back), project);
    let json = serde_json::to_value(&item).unwrap();
    assert_eq!(json["accountId"], "acc_1");
    let back: ProjectItem = serde_json::from_value(json).unwrap();
    assert_eq!(Project::from(back), project);
}

#[test]
fn stats_items_keep_reason_counters_in_both_encodings() {
    let p = ProjectId::parse("prj_1").unwrap();
    let start: Timestamp = "2026-11-21T10:00:00.000Z".parse().unwrap();
    let mut item = StatsItem::empty(&p, Granularity::Hour, start, 3);
    let mut c = Counts {
        visits: 1,
        bots: 1,
        proxies: 0,
        ..Counts::default()
    };
    c.reasons.insert("cdp_automation".into(), 1);
    item.add(&c);
    item.add(&c);
    let dynamo: serde_dynamo::Item = serde_dynamo::to_item(&item).unwrap();
    assert!(dynamo.contains_key("r_cdp_automation"), "{dynamo:?}");
    let back: StatsItem = serde_dynamo::from_item(dynamo).unwrap();
    assert_eq!(back, item);
    assert_eq!(back.counts().reasons["cdp_automation"], 2);
    let json = serde_json::to_string(&item).unwrap();
    let back: StatsItem = serde_json::from_str(&json).unwrap();
    assert_eq!(back, item);
    assert_eq!(item.sk, "STATS#H#2026-11-21T10:00:00.000Z#3");
}

/// The events route answers with the event its write made ([`Event::written`]); a later read
/// builds it from the stored item ([`ResultItem::event`]). Both must show the same event.
#[test]
fn the_event_a_write_answers_is_the_event_a_read_gives() {
    let evaluation = |model: &str| crate::domain::Evaluation {
        reasons: vec![Reason::new(vigil_detect::Code::TorExit, "a Tor exit node")],
        engine_version: "vigil-detect/test".into(),
        model: model.into(),
        ja4: Some("t13d1516h2_8daaf6152771_02713d6af862".into()),
        transport: None,
        device: None,
        flagged: Default::default(),
        agent: vigil_detect::Agent::NONE,
        allowed: true,
        page: None,
    };
    for evaluation in [None, Some(evaluation("shared")), Some(evaluation("v3"))] {
        let new = NewResult {
            project_id: ProjectId::parse("prj_1").unwrap(),
            session_id: SessionId::parse("s").unwrap(),
            result: CheckResult {
                score_bot: Score::new(0.9).unwrap(),
                score_proxy_vpn: Score::new(0.1).unwrap(),
                ip_address: "192.0.2.1".parse().unwrap(),
                created_at: "2026-11-21T10:00:00.000Z".parse().unwrap(),
            },
            evaluation,
        };
        let read = ResultItem::new(&new, 7).event();
        assert_eq!(Event::written(new, read.position()), read);
    }
}

#[test]
fn result_sort_keys_order_like_positions() {
    let s = SessionId::parse("s").unwrap();
    let t1: Timestamp = "2026-11-21T10:00:00.000Z".parse().unwrap();
    let t2: Timestamp = "2026-11-21T10:00:00.001Z".parse().unwrap();
    let a = result_sk(
        &s,
        ResultPosition {
            created_at: t1,
            seq: 9,
        },
    );
    let b = result_sk(
        &s,
        ResultPosition {
            created_at: t1,
            seq: 10,
        },
    );
    let c = result_sk(
        &s,
        ResultPosition {
            created_at: t2,
            seq: 1,
        },
    );
    assert!(a < b && b < c);
    assert!(a.starts_with(&results_prefix(&s)));
}

#[test]
fn session_prefixes_do_not_overlap() {
    let a = SessionId::parse("abc").unwrap();
    let b = SessionId::parse("abcd").unwrap();
    let at = ResultPosition {
        created_at: Timestamp::now(),
        seq: 1,
    };
    assert!(!result_sk(&b, at).starts_with(&results_prefix(&a)));
}
