//! When a session's overall proxy/VPN score crosses the threshold.
//!
//! The session summary's maxima only ever grow, so a session crosses at most once: from the old and
//! new images of its summary item, `old < threshold <= new` is that moment, and the summary's
//! `last` result is the one that made it cross. Results, webhooks and every other item are ignored.

use aws_lambda_events::dynamodb::EventRecord;
use serde::Deserialize;

use crate::domain::{CheckResult, ProjectId, Score, SessionId};
use crate::store::items::{Entity, SessionItem};

/// A session that has just crossed the threshold, with the result that made it cross.
#[derive(Debug, Clone, PartialEq)]
pub struct Crossing {
    pub project_id: ProjectId,
    pub session_id: SessionId,
    pub result: CheckResult,
}

/// Why a record could not be read. Records of other items are not errors: they are skipped.
#[derive(Debug, thiserror::Error)]
#[error("malformed stream record: {0}")]
pub struct RecordError(String);

#[derive(Deserialize)]
struct EntityOnly {
    entity: Option<Entity>,
}

fn is_session(image: &serde_dynamo::Item) -> bool {
    serde_dynamo::from_item::<_, EntityOnly>(image.clone())
        .ok()
        .and_then(|e| e.entity)
        == Some(Entity::Session)
}

/// The crossing this record represents, if any.
pub fn crossing(record: &EventRecord, threshold: Score) -> Result<Option<Crossing>, RecordError> {
    let change = &record.change;
    if !matches!(record.event_name.as_str(), "INSERT" | "MODIFY") || !is_session(&change.new_image)
    {
        return Ok(None);
    }
    let new: SessionItem = serde_dynamo::from_item(change.new_image.clone())
        .map_err(|e| RecordError(format!("new image: {e}")))?;
    let old = if change.old_image.is_empty() {
        None
    } else {
        Some(
            serde_dynamo::from_item::<_, SessionItem>(change.old_image.clone())
                .map_err(|e| RecordError(format!("old image: {e}")))?,
        )
    };
    let was_below = old.is_none_or(|o| o.score_proxy_vpn < threshold);
    if was_below && new.score_proxy_vpn >= threshold {
        Ok(Some(Crossing {
            project_id: new.project_id,
            session_id: new.session_id,
            result: new.last,
        }))
    } else {
        Ok(None)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::domain::{NewResult, Timestamp};

    pub fn result(pv: f64, at: &str) -> NewResult {
        NewResult {
            project_id: ProjectId::parse("p").unwrap(),
            session_id: SessionId::parse("s").unwrap(),
            result: CheckResult {
                score_bot: Score::new(0.1).unwrap(),
                score_proxy_vpn: Score::new(pv).unwrap(),
                ip_address: "198.51.100.7".parse().unwrap(),
                created_at: at.parse::<Timestamp>().unwrap(),
            },
        }
    }

    /// The stream record of writing `pvs` in order: the summary's change for the last one.
    pub fn record_after(pvs: &[f64]) -> EventRecord {
        let mut old: Option<SessionItem> = None;
        let mut new = None;
        for (i, pv) in pvs.iter().enumerate() {
            let next = SessionItem::next(
                new.as_ref(),
                &result(*pv, &format!("2026-11-21T10:00:0{i}Z")),
            );
            old = new.take();
            new = Some(next);
        }
        let mut rec = EventRecord::default();
        rec.event_name = if old.is_some() { "MODIFY" } else { "INSERT" }.to_owned();
        rec.change.new_image = serde_dynamo::to_item(new.unwrap()).unwrap();
        if let Some(o) = old {
            rec.change.old_image = serde_dynamo::to_item(o).unwrap();
        }
        rec
    }

    fn t(v: f64) -> Score {
        Score::new(v).unwrap()
    }

    #[test]
    fn below_at_and_above_the_threshold() {
        assert_eq!(crossing(&record_after(&[0.49]), t(0.5)).unwrap(), None);
        let at = crossing(&record_after(&[0.5]), t(0.5)).unwrap().unwrap();
        assert_eq!(at.result.score_proxy_vpn.get(), 0.5);
        assert!(crossing(&record_after(&[0.9]), t(0.5)).unwrap().is_some());
    }

    #[test]
    fn only_the_write_that_crosses_counts() {
        assert!(
            crossing(&record_after(&[0.1, 0.2]), t(0.5))
                .unwrap()
                .is_none()
        );
        let c = crossing(&record_after(&[0.1, 0.2, 0.7]), t(0.5))
            .unwrap()
            .unwrap();
        assert_eq!(c.result.score_proxy_vpn.get(), 0.7);
        // Already above: later results, higher or lower, never cross again.
        assert!(
            crossing(&record_after(&[0.7, 0.9]), t(0.5))
                .unwrap()
                .is_none()
        );
        assert!(
            crossing(&record_after(&[0.7, 0.1]), t(0.5))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn other_items_and_removals_are_ignored() {
        let mut rec = record_after(&[0.9]);
        rec.event_name = "REMOVE".into();
        assert!(crossing(&rec, t(0.5)).unwrap().is_none());
        let mut other = EventRecord::default();
        other.event_name = "INSERT".into();
        other.change.new_image =
            serde_dynamo::to_item(serde_json::json!({"entity": "result", "scoreProxyVpn": 0.99}))
                .unwrap();
        assert!(crossing(&other, t(0.5)).unwrap().is_none());
    }

    #[test]
    fn a_malformed_session_image_is_an_error() {
        let mut rec = EventRecord::default();
        rec.event_name = "INSERT".into();
        rec.change.new_image =
            serde_dynamo::to_item(serde_json::json!({"entity": "session", "scoreProxyVpn": 7}))
                .unwrap();
        assert!(crossing(&rec, t(0.5)).is_err());
    }
}
