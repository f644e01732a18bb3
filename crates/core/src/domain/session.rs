//! A session after each of its results: what its summary says of it. Decided here once; the
//! storage layout (`store::items::SessionItem`) keeps it beside its keys at every write, and the
//! service judges a visit on the path it gives before the write.

use vigil_detect::agents::Status;
use vigil_detect::path::{Page, Path};

use super::evaluation::counted_bot;
use super::model::{NewResult, SessionScore};
use super::score::Score;
use super::time::Timestamp;

/// A session's state as of its latest write.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionState {
    /// Writes so far: the order of results with the same `createdAt`.
    pub seq: u64,
    /// The maximum of every result's scores (interface 2.2).
    pub score: SessionScore,
    /// `scoreBot` counting only events of agents the project does not allow; webhooks cross on it.
    pub score_bot_counted: Score,
    /// The device key of the latest event that had one.
    pub device: Option<String>,
    /// The agent status of the latest evaluated event.
    pub agent: Option<Status>,
    /// The latest `createdAt` of its results (a result may arrive out of order).
    pub last_seen_at: Timestamp,
    /// How its pages were reached, so far (None until a page says).
    pub path: Option<Path>,
}

impl SessionState {
    /// The session after `r` is written on top of `previous` (None for its first result).
    pub fn after(previous: Option<&SessionState>, r: &NewResult) -> Self {
        let evaluation = r.evaluation.as_ref();
        let allowed = evaluation.is_some_and(|e| e.allowed);
        let counted = counted_bot(r.result.score_bot, allowed).unwrap_or(Score::ZERO);
        Self {
            seq: previous.map_or(0, |p| p.seq) + 1,
            score: previous.map_or(SessionScore::of(&r.result), |p| p.score.with(&r.result)),
            score_bot_counted: previous.map_or(counted, |p| p.score_bot_counted.max(counted)),
            device: evaluation
                .and_then(|e| e.device.as_ref())
                .map(|d| d.as_str().to_owned())
                .or_else(|| previous.and_then(|p| p.device.clone())),
            agent: evaluation
                .map(|e| e.agent.status)
                .or_else(|| previous.and_then(|p| p.agent)),
            last_seen_at: previous
                .map(|p| p.last_seen_at)
                .filter(|t| *t > r.result.created_at)
                .unwrap_or(r.result.created_at),
            path: Self::path_after(
                previous.and_then(|p| p.path),
                evaluation.and_then(|e| e.page),
            ),
        }
    }

    /// The path with `page` added (unchanged by a result with no page): what the service judges
    /// a visit on, and what the summary's write keeps.
    pub fn path_after(before: Option<Path>, page: Option<Page>) -> Option<Path> {
        match page {
            Some(page) => Some(before.unwrap_or_default().after(page)),
            None => before,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::model::CheckResult;
    use crate::domain::{DeviceKey, Evaluation, ProjectId, SessionId};

    fn result(bot: f64, at: &str, allowed: bool, page: bool) -> NewResult {
        NewResult {
            project_id: ProjectId::parse("prj_1").unwrap(),
            session_id: SessionId::parse("s").unwrap(),
            result: CheckResult {
                score_bot: Score::new(bot).unwrap(),
                score_proxy_vpn: Score::new(0.1).unwrap(),
                ip_address: "192.0.2.1".parse().unwrap(),
                created_at: at.parse().unwrap(),
            },
            evaluation: Some(Evaluation {
                reasons: vec![],
                engine_version: "vigil-detect/test".into(),
                model: "shared".into(),
                ja4: None,
                transport: None,
                device: None,
                flagged: Default::default(),
                agent: vigil_detect::Agent::NONE,
                allowed,
                page: page.then(Page::default),
            }),
        }
    }

    #[test]
    fn a_session_keeps_its_maximum_its_latest_time_and_its_pages() {
        let first =
            SessionState::after(None, &result(0.2, "2026-11-21T10:00:05.000Z", false, true));
        assert_eq!((first.seq, first.score_bot_counted.get()), (1, 0.2));
        assert_eq!(first.path.map(|p| p.pages), Some(1));
        // An allowed agent's 0.99 raises scoreBot but not the counted score; an older result
        // leaves the latest time; a result without a page leaves the path.
        let second = SessionState::after(
            Some(&first),
            &result(0.99, "2026-11-21T10:00:01.000Z", true, false),
        );
        assert_eq!(second.seq, 2);
        assert_eq!(second.score.score_bot.get(), 0.99);
        assert_eq!(second.score_bot_counted.get(), 0.2);
        assert_eq!(second.last_seen_at, first.last_seen_at);
        assert_eq!(second.path, first.path);
    }

    #[test]
    fn a_session_keeps_the_latest_device_a_visit_named() {
        let with_device = |device: Option<&str>| {
            let mut r = result(0.2, "2026-11-21T10:00:05.000Z", false, false);
            if let Some(e) = r.evaluation.as_mut() {
                e.device = device.map(|d| DeviceKey::parse(d).unwrap());
            }
            r
        };
        let first = SessionState::after(None, &with_device(Some("dev_aaaaaaaaaaaaaaaaaaaa")));
        let second =
            SessionState::after(Some(&first), &with_device(Some("dev_bbbbbbbbbbbbbbbbbbbb")));
        assert_eq!(second.device.as_deref(), Some("dev_bbbbbbbbbbbbbbbbbbbb"));
        // A visit whose signals make no key leaves the device the session had.
        let third = SessionState::after(Some(&second), &with_device(None));
        assert_eq!(third.device, second.device);
    }
}
