//! When a session's overall proxy/VPN score, or its bot score without allowed agents' events,
//! crosses the threshold.
//!
//! The session summary's maxima only ever grow, so a session crosses at most once: the write whose
//! change has `before < threshold <= after` is that moment, and its result is the one that made it
//! cross. Changes of other items never cross.

use vigil_core::domain::{CheckResult, EventId, ProjectId, Score, SessionChanged, WebhookType};
use vigil_detect::Reason;

/// A session that has just crossed the threshold, with the result that made it cross.
#[derive(Debug, Clone, PartialEq)]
pub struct Crossing {
    pub project_id: ProjectId,
    pub session_id: vigil_core::domain::SessionId,
    pub result: CheckResult,
    pub event_id: EventId,
    pub reasons: Vec<Reason>,
    /// Which score crossed: the webhooks of this type are told.
    pub kind: WebhookType,
}

/// The proxy/VPN crossing this change represents, if any.
pub fn crossing(change: &SessionChanged, threshold: Score) -> Option<Crossing> {
    crossings(change, threshold)
        .into_iter()
        .find(|c| c.kind == WebhookType::ProxyVpnDetect)
}

/// Every crossing this change represents: proxy/VPN, bot, both or none.
pub fn crossings(change: &SessionChanged, threshold: Score) -> Vec<Crossing> {
    let of = |kind| Crossing {
        project_id: change.project.clone(),
        session_id: change.session.clone(),
        result: change.last.clone(),
        event_id: change.last_id,
        reasons: change.last_reasons.clone(),
        kind,
    };
    let mut out = Vec::new();
    if change.crosses(threshold) {
        out.push(of(WebhookType::ProxyVpnDetect));
    }
    if change.crosses_bot(threshold) {
        out.push(of(WebhookType::BotDetect));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_core::domain::{SessionId, SessionScore, Timestamp};

    fn score(v: f64) -> Score {
        Score::new(v).unwrap()
    }

    /// The change of writing `pvs` in order: the summary's change for the last one.
    fn change_after(pvs: &[f64]) -> SessionChanged {
        let results: Vec<CheckResult> = pvs
            .iter()
            .enumerate()
            .map(|(i, pv)| CheckResult {
                score_bot: score(0.1),
                score_proxy_vpn: score(*pv),
                ip_address: "198.51.100.7".parse().unwrap(),
                created_at: format!("2026-11-21T10:00:0{i}Z")
                    .parse::<Timestamp>()
                    .unwrap(),
            })
            .collect();
        let (last, earlier) = results.split_last().unwrap();
        let before = earlier.iter().fold(None, |acc: Option<SessionScore>, r| {
            Some(acc.map_or(SessionScore::of(r), |s| s.with(r)))
        });
        let bots = |s: &SessionScore| s.score_bot;
        SessionChanged {
            bot_before: before.as_ref().map(bots),
            bot_after: bots(&before.map_or(SessionScore::of(last), |s| s.with(last))),
            project: ProjectId::parse("p").unwrap(),
            session: SessionId::parse("s").unwrap(),
            after: before.map_or(SessionScore::of(last), |s| s.with(last)),
            before,
            last: last.clone(),
            last_id: vigil_core::domain::EventId::new(vigil_core::domain::ResultPosition {
                created_at: last.created_at,
                seq: pvs.len() as u64,
            }),
            last_reasons: Vec::new(),
        }
    }

    fn t(v: f64) -> Score {
        score(v)
    }

    #[test]
    fn below_at_and_above_the_threshold() {
        assert_eq!(crossing(&change_after(&[0.49]), t(0.5)), None);
        let at = crossing(&change_after(&[0.5]), t(0.5)).unwrap();
        assert_eq!(at.result.score_proxy_vpn.get(), 0.5);
        assert!(crossing(&change_after(&[0.9]), t(0.5)).is_some());
    }

    #[test]
    fn only_the_write_that_crosses_counts() {
        assert!(crossing(&change_after(&[0.1, 0.2]), t(0.5)).is_none());
        let c = crossing(&change_after(&[0.1, 0.2, 0.7]), t(0.5)).unwrap();
        assert_eq!(c.result.score_proxy_vpn.get(), 0.7);
        // Already above: later results, higher or lower, never cross again.
        assert!(crossing(&change_after(&[0.7, 0.9]), t(0.5)).is_none());
        assert!(crossing(&change_after(&[0.7, 0.1]), t(0.5)).is_none());
    }
}
