//! From feed records to domain events: the one place that reads the item layout out of a change.
//! Each adapter reads its own records (DynamoDB stream records in `vigil-store-dynamo`, the SQLite
//! change feed's JSON bodies) into summaries and hands them here; core knows no record format.

use serde::Deserialize;

use super::items::{Entity, SessionItem};
use crate::domain::{FeedEvent, SessionChanged};

/// The one attribute a change's item is told apart by, read before the rest of the item.
#[derive(Deserialize)]
pub struct EntityOnly {
    pub entity: Option<Entity>,
}

/// What a change says, read from its item's bodies as JSON text (as the SQLite feed keeps them):
/// `old` is None for a new item, `new` for a removed one.
pub fn feed_event_of_bodies(id: &str, old: Option<&str>, new: Option<&str>) -> FeedEvent {
    let Some(new) = new else {
        return FeedEvent::Other;
    };
    let entity = serde_json::from_str::<EntityOnly>(new)
        .ok()
        .and_then(|e| e.entity);
    if entity != Some(Entity::Session) {
        return FeedEvent::Other;
    }
    let after: SessionItem = match serde_json::from_str(new) {
        Ok(item) => item,
        Err(e) => return unreadable(id, "new", e),
    };
    let before = match old.map(serde_json::from_str::<SessionItem>).transpose() {
        Ok(before) => before,
        Err(e) => return unreadable(id, "old", e),
    };
    session_changed(before.as_ref(), after)
}

/// A record whose `which` image could not be read as a session summary.
pub fn unreadable(id: &str, which: &str, e: impl std::fmt::Display) -> FeedEvent {
    FeedEvent::Unreadable(format!("record {id}: {which} image: {e}"))
}

/// A session summary's write, from the summary before it (None: the session is new) and after.
pub fn session_changed(before: Option<&SessionItem>, after: SessionItem) -> FeedEvent {
    let last_id = after.last_id();
    FeedEvent::SessionChanged(SessionChanged {
        before: before.map(SessionItem::score),
        bot_before: before.map(SessionItem::bot_counted),
        bot_after: after.bot_counted(),
        after: after.score(),
        project: after.project_id,
        last_id,
        session: after.session_id,
        last: after.last,
        last_reasons: after.last_reasons,
    })
}
