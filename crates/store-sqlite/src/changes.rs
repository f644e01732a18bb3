//! The change feed's records: how a write appends one, and how a stored one is read back, as the
//! stream record DynamoDB would have sent (for readers that want that shape) or as what it says
//! in domain terms (for the follower, read from the item's bodies by core).

use aws_lambda_events::dynamodb::{EventRecord, StreamRecord, StreamViewType};
use rusqlite::Connection;
use vigil_core::domain::FeedEvent;
use vigil_core::store::change::{EntityOnly, feed_event_of_bodies, unreadable};
use vigil_core::store::items::Entity;
use vigil_core::store::keys::{PK, SK};
use vigil_core::store::plan::Attributes;

use crate::error::{Db, corrupt};
use crate::sessions::is_summary_sk;

/// How a change record begins since records became compact: the item's key, when it changed
/// (Unix milliseconds), and its bodies before and after as the items table holds them (`null`
/// for none), e.g. `{"v":2,"at":1795255200000,"pk":"PROJECT#p","sk":"SESSION#s","old":null,
/// "new":{...}}`. The bodies go in as the items table holds them, with no conversion either way.
/// Older records are whole stream records (an `EventRecord` with DynamoDB-typed images); both
/// kinds are read.
const COMPACT: &str = "{\"v\":2,";

/// A compact change record, its bodies borrowed from the row's text.
#[derive(serde::Deserialize)]
struct Change<'a> {
    at: i64,
    pk: String,
    sk: String,
    #[serde(borrow)]
    old: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    new: Option<&'a serde_json::value::RawValue>,
}

/// Appends one compact record ([`COMPACT`]) to the change feed: `old` and `new` are the item's
/// bodies as the items table holds them (JSON objects that serde_json wrote), set in as they are.
pub(crate) fn record_change(
    tx: &Connection,
    pk: &str,
    sk: &str,
    old: Option<&str>,
    new: Option<&str>,
) -> Result<(), Db> {
    let key = |k: &str| serde_json::to_string(k).map_err(corrupt);
    let (pk, sk) = (key(pk)?, key(sk)?);
    let at = chrono::Utc::now().timestamp_millis();
    let (old, new) = (old.unwrap_or("null"), new.unwrap_or("null"));
    let record =
        format!("{COMPACT}\"at\":{at},\"pk\":{pk},\"sk\":{sk},\"old\":{old},\"new\":{new}}}");
    tx.prepare_cached("INSERT INTO changes (record) VALUES (?1)")?
        .execute([record])?;
    Ok(())
}

/// A stored change record as the stream record DynamoDB would have sent for it.
pub(crate) fn stream_record(seq: i64, text: &str) -> Result<EventRecord, Db> {
    let mut rec = if text.starts_with(COMPACT) {
        let c: Change = serde_json::from_str(text).map_err(corrupt)?;
        let typed = |body: Option<&serde_json::value::RawValue>| -> Result<_, Db> {
            match body {
                Some(b) => image(&serde_json::from_str(b.get()).map_err(corrupt)?),
                None => Ok(serde_dynamo::Item::default()),
            }
        };
        let mut change = StreamRecord::default();
        change.approximate_creation_date_time =
            chrono::DateTime::from_timestamp_millis(c.at).unwrap_or_default();
        change.keys =
            serde_dynamo::to_item(serde_json::json!({ PK: c.pk, SK: c.sk })).map_err(corrupt)?;
        change.stream_view_type = Some(StreamViewType::NewAndOldImages);
        let mut rec = EventRecord::default();
        rec.event_name = match (c.old, c.new) {
            (None, _) => "INSERT",
            (Some(_), Some(_)) => "MODIFY",
            (Some(_), None) => "REMOVE",
        }
        .to_owned();
        change.old_image = typed(c.old)?;
        change.new_image = typed(c.new)?;
        rec.change = change;
        rec.aws_region = "local".to_owned();
        rec.event_source = Some("vigil:sqlite".to_owned());
        rec.event_version = Some("1.1".to_owned());
        rec
    } else {
        serde_json::from_str(text).map_err(corrupt)?
    };
    rec.event_id = seq.to_string();
    rec.change.sequence_number = Some(format!("{seq:021}"));
    Ok(rec)
}

/// What a stored change record says, in domain terms; a record that cannot be read is said to be
/// unreadable (the follower reports it and goes on) rather than stopping the feed.
pub(crate) fn feed_event_of(seq: i64, text: &str) -> FeedEvent {
    if text.starts_with(COMPACT) {
        match serde_json::from_str::<Change>(text) {
            // Only session summaries make events; their bodies are not read for other items.
            Ok(c) if !is_summary_sk(&c.sk) => FeedEvent::Other,
            Ok(c) => feed_event_of_bodies(
                &seq.to_string(),
                c.old.map(|b| b.get()),
                c.new.map(|b| b.get()),
            ),
            Err(e) => FeedEvent::Unreadable(format!("record {seq}: {e}")),
        }
    } else {
        match stream_record(seq, text) {
            Ok(rec) => feed_event_of_legacy(&rec),
            Err(e) => FeedEvent::Unreadable(format!("record {seq}: {}", e.0)),
        }
    }
}

/// What an older, whole stream record says: its typed images back to the bodies they were written
/// from, read as a compact record's are (only a session summary's: other items may hold values
/// JSON has no form for).
pub(crate) fn feed_event_of_legacy(rec: &EventRecord) -> FeedEvent {
    let change = &rec.change;
    let entity = serde_dynamo::from_item::<_, EntityOnly>(change.new_image.clone())
        .ok()
        .and_then(|e| e.entity);
    if !matches!(rec.event_name.as_str(), "INSERT" | "MODIFY") || entity != Some(Entity::Session) {
        return FeedEvent::Other;
    }
    let id = &rec.event_id;
    let body = |image: &serde_dynamo::Item| {
        serde_dynamo::from_item::<_, serde_json::Value>(image.clone()).map(|v| v.to_string())
    };
    let new = match body(&change.new_image) {
        Ok(text) => text,
        Err(e) => return unreadable(id, "new", e),
    };
    let old = if change.old_image.is_empty() {
        None
    } else {
        match body(&change.old_image) {
            Ok(text) => Some(text),
            Err(e) => return unreadable(id, "old", e),
        }
    };
    feed_event_of_bodies(id, old.as_deref(), Some(&new))
}

fn image(item: &Attributes) -> Result<serde_dynamo::Item, Db> {
    serde_dynamo::to_item(item).map_err(corrupt)
}
