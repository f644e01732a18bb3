//! The change feed's records: how a write appends one, and how a stored one is read back, as
//! what changed (the item's key and its bodies before and after, for readers of the feed) or as
//! what it says in domain terms (for the follower, read from the item's bodies by core).

use rusqlite::Connection;
use serde::Deserialize;
use vigil_core::domain::FeedEvent;
use vigil_core::store::change::{EntityOnly, feed_event_of_bodies, unreadable};
use vigil_core::store::items::Entity;

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

/// What happened to an item, as DynamoDB Streams names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Insert,
    Modify,
    Remove,
}

/// One stored change record, read back: the item's key and its bodies before and after (None for
/// none), as the items table holds them.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeRecord {
    pub kind: ChangeKind,
    /// When it changed (Unix milliseconds; None on records older builds wrote).
    pub at_ms: Option<i64>,
    pub pk: String,
    pub sk: String,
    pub old: Option<serde_json::Value>,
    pub new: Option<serde_json::Value>,
}

impl ChangeRecord {
    fn of(
        at_ms: Option<i64>,
        pk: String,
        sk: String,
        old: Option<serde_json::Value>,
        new: Option<serde_json::Value>,
    ) -> Self {
        let kind = match (&old, &new) {
            (None, _) => ChangeKind::Insert,
            (Some(_), Some(_)) => ChangeKind::Modify,
            (Some(_), None) => ChangeKind::Remove,
        };
        Self {
            kind,
            at_ms,
            pk,
            sk,
            old,
            new,
        }
    }
}

/// A record written before records became compact: a whole DynamoDB stream record, its images
/// in DynamoDB's typed JSON (only what the feed reads of it).
#[derive(Deserialize)]
struct Legacy {
    dynamodb: LegacyImages,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct LegacyImages {
    #[serde(default)]
    keys: serde_dynamo::Item,
    #[serde(default)]
    old_image: serde_dynamo::Item,
    #[serde(default)]
    new_image: serde_dynamo::Item,
}

/// A legacy record's image as the body it was written from (None for an empty image).
fn legacy_body(
    image: serde_dynamo::Item,
) -> Result<Option<serde_json::Value>, serde_dynamo::Error> {
    if image.is_empty() {
        return Ok(None);
    }
    serde_dynamo::from_item(image).map(Some)
}

/// A stored change record, read back whichever kind it is.
pub(crate) fn change_record(text: &str) -> Result<ChangeRecord, Db> {
    if text.starts_with(COMPACT) {
        let c: Change = serde_json::from_str(text).map_err(corrupt)?;
        let body = |b: Option<&serde_json::value::RawValue>| {
            b.map(|b| serde_json::from_str(b.get()))
                .transpose()
                .map_err(corrupt)
        };
        return Ok(ChangeRecord::of(
            Some(c.at),
            c.pk,
            c.sk,
            body(c.old)?,
            body(c.new)?,
        ));
    }
    let l: Legacy = serde_json::from_str(text).map_err(corrupt)?;
    #[derive(Deserialize)]
    struct Key {
        pk: String,
        sk: String,
    }
    let key: Key = serde_dynamo::from_item(l.dynamodb.keys).map_err(corrupt)?;
    Ok(ChangeRecord::of(
        None,
        key.pk,
        key.sk,
        legacy_body(l.dynamodb.old_image).map_err(corrupt)?,
        legacy_body(l.dynamodb.new_image).map_err(corrupt)?,
    ))
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
        feed_event_of_legacy(seq, text)
    }
}

/// What an older, whole stream record says: its typed images back to the bodies they were written
/// from, read as a compact record's are (only a session summary's: other items may hold values
/// JSON has no form for).
fn feed_event_of_legacy(seq: i64, text: &str) -> FeedEvent {
    let id = seq.to_string();
    let l: Legacy = match serde_json::from_str(text) {
        Ok(l) => l,
        Err(e) => return FeedEvent::Unreadable(format!("record {seq}: {e}")),
    };
    let images = l.dynamodb;
    let entity = serde_dynamo::from_item::<_, EntityOnly>(images.new_image.clone())
        .ok()
        .and_then(|e| e.entity);
    if entity != Some(Entity::Session) {
        return FeedEvent::Other;
    }
    let text = |image| legacy_body(image).map(|b| b.map(|v| v.to_string()));
    let new = match text(images.new_image) {
        Ok(new) => new,
        Err(e) => return unreadable(&id, "new", e),
    };
    let old = match text(images.old_image) {
        Ok(old) => old,
        Err(e) => return unreadable(&id, "old", e),
    };
    feed_event_of_bodies(&id, old.as_deref(), new.as_deref())
}
