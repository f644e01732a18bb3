//! DynamoDB stream records (Lambda's, or the Streams API's in Lambda's shape) to domain feed
//! events: the images are read here, and what a summary's change means is core's
//! ([`vigil_core::store::change::session_changed`]).

use aws_lambda_events::dynamodb::EventRecord;
use vigil_core::domain::FeedEvent;
use vigil_core::store::change::{EntityOnly, session_changed, unreadable};
use vigil_core::store::items::{Entity, SessionItem};

fn is_session(image: &serde_dynamo::Item) -> bool {
    serde_dynamo::from_item::<_, EntityOnly>(image.clone())
        .ok()
        .and_then(|e| e.entity)
        == Some(Entity::Session)
}

/// What one record says, in domain terms.
pub fn feed_event(record: &EventRecord) -> FeedEvent {
    let change = &record.change;
    if !matches!(record.event_name.as_str(), "INSERT" | "MODIFY") || !is_session(&change.new_image)
    {
        return FeedEvent::Other;
    }
    let id = &record.event_id;
    let after: SessionItem = match serde_dynamo::from_item(change.new_image.clone()) {
        Ok(item) => item,
        Err(e) => return unreadable(id, "new", e),
    };
    let before = if change.old_image.is_empty() {
        None
    } else {
        match serde_dynamo::from_item::<_, SessionItem>(change.old_image.clone()) {
            Ok(item) => Some(item),
            Err(e) => return unreadable(id, "old", e),
        }
    };
    session_changed(before.as_ref(), after)
}

/// Every record of a batch, in order.
pub fn feed_events(records: &[EventRecord]) -> Vec<FeedEvent> {
    records.iter().map(feed_event).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_core::domain::{CheckResult, NewResult, ProjectId, Score, SessionId, Timestamp};
    use vigil_core::store::change::feed_event_of_bodies;

    fn result(pv: f64, at: &str) -> NewResult {
        NewResult {
            project_id: ProjectId::parse("p").unwrap(),
            session_id: SessionId::parse("s").unwrap(),
            result: CheckResult {
                score_bot: Score::new(0.1).unwrap(),
                score_proxy_vpn: Score::new(pv).unwrap(),
                ip_address: "198.51.100.7".parse().unwrap(),
                created_at: at.parse::<Timestamp>().unwrap(),
            },
            evaluation: None,
        }
    }

    /// The stream record of writing `pvs` in order: the summary's change for the last one.
    fn record_after(pvs: &[f64]) -> EventRecord {
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

    #[test]
    fn a_summary_change_becomes_a_session_change() {
        let FeedEvent::SessionChanged(c) = feed_event(&record_after(&[0.2, 0.7])) else {
            panic!("not a session change")
        };
        assert_eq!(c.before.map(|b| b.score_proxy_vpn.get()), Some(0.2));
        assert_eq!(c.after.score_proxy_vpn.get(), 0.7);
        assert_eq!(c.last.score_proxy_vpn.get(), 0.7);
        assert_eq!((c.project.as_str(), c.session.as_str()), ("p", "s"));
        let FeedEvent::SessionChanged(first) = feed_event(&record_after(&[0.4])) else {
            panic!("not a session change")
        };
        assert_eq!(first.before, None);
    }

    #[test]
    fn the_change_names_the_written_event_and_its_reasons() {
        let mut r = result(0.9, "2026-11-21T10:00:00Z");
        let reason = vigil_detect::Reason::new(vigil_detect::Code::TorExit, "a Tor exit node");
        r.evaluation = Some(vigil_core::domain::Evaluation {
            reasons: vec![reason.clone()],
            engine_version: "vigil-detect/test".into(),
            model: "shared".into(),
            ja4: None,
            transport: None,
            device: None,
            flagged: Default::default(),
            agent: vigil_detect::Agent::NONE,
            allowed: false,
            page: None,
        });
        let mut rec = EventRecord::default();
        rec.event_name = "INSERT".into();
        rec.change.new_image = serde_dynamo::to_item(SessionItem::next(None, &r)).unwrap();
        let FeedEvent::SessionChanged(c) = feed_event(&rec) else {
            panic!("not a session change")
        };
        assert_eq!(c.last_reasons, vec![reason]);
        assert_eq!(c.last_id.to_string(), "evt_1795255200000_1");
        // Before reasons were kept, a summary has none: still readable, with no reasons.
        let FeedEvent::SessionChanged(old) = feed_event(&record_after(&[0.9])) else {
            panic!("not a session change")
        };
        assert!(old.last_reasons.is_empty());
    }

    #[test]
    fn bodies_read_as_the_stream_record_of_the_same_write_does() {
        let mut old = None;
        for (i, pv) in [0.2, 0.7, 0.95].iter().enumerate() {
            let new = SessionItem::next(
                old.as_ref(),
                &result(*pv, &format!("2026-11-21T10:00:0{i}Z")),
            );
            let mut rec = EventRecord::default();
            rec.event_name = if old.is_some() { "MODIFY" } else { "INSERT" }.to_owned();
            rec.change.new_image = serde_dynamo::to_item(&new).unwrap();
            if let Some(o) = &old {
                rec.change.old_image = serde_dynamo::to_item(o).unwrap();
            }
            let text = |s: &SessionItem| serde_json::to_string(s).unwrap();
            let (old_text, new_text) = (old.as_ref().map(text), text(&new));
            let of_bodies = feed_event_of_bodies("1", old_text.as_deref(), Some(&new_text));
            assert!(matches!(of_bodies, FeedEvent::SessionChanged(_)));
            assert_eq!(of_bodies, feed_event(&rec));
            // Removed, or not a summary: nothing to say.
            assert_eq!(
                feed_event_of_bodies("1", Some(&new_text), None),
                FeedEvent::Other
            );
            old = Some(new);
        }
        let result = r#"{"entity":"result","scoreProxyVpn":0.99}"#;
        assert_eq!(
            feed_event_of_bodies("2", None, Some(result)),
            FeedEvent::Other
        );
        let broken = r#"{"entity":"session","scoreProxyVpn":7}"#;
        assert!(matches!(
            feed_event_of_bodies("3", None, Some(broken)),
            FeedEvent::Unreadable(m) if m.starts_with("record 3: new image")
        ));
    }

    #[test]
    fn other_items_and_removals_are_other() {
        let mut rec = record_after(&[0.9]);
        rec.event_name = "REMOVE".into();
        assert_eq!(feed_event(&rec), FeedEvent::Other);
        let mut other = EventRecord::default();
        other.event_name = "INSERT".into();
        other.change.new_image =
            serde_dynamo::to_item(serde_json::json!({"entity": "result", "scoreProxyVpn": 0.99}))
                .unwrap();
        assert_eq!(feed_event(&other), FeedEvent::Other);
    }

    #[test]
    fn a_malformed_session_image_is_unreadable() {
        let mut rec = EventRecord::default();
        rec.event_name = "INSERT".into();
        rec.change.new_image =
            serde_dynamo::to_item(serde_json::json!({"entity": "session", "scoreProxyVpn": 7}))
                .unwrap();
        assert!(matches!(feed_event(&rec), FeedEvent::Unreadable(_)));
    }
}
