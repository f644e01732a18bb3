//! The SQLite change feed, read back: its records as what changed or as domain events, and the follower that hands them on in write order, resumed after the last one the
//! consumer finished, across restarts.

use rusqlite::params;
use vigil_core::domain::FeedEvent;
use vigil_core::report::Chain;
use vigil_core::store::feed::{BACKOFF, BATCH, ChangeFeed, FeedConsumer, POLL};
use vigil_core::store::{DeliveryStore, StoreError};

use crate::changes::{ChangeRecord, change_record, feed_event_of};
use crate::error::Db;
use crate::sqlite::SqliteStore;

/// The checkpoint name of the SQLite change feed's follower.
const SQLITE_CHECKPOINT: &str = "sqlite-feed";

impl SqliteStore {
    /// Change-feed records after `after` (exclusive), oldest first, at most `limit`.
    pub async fn changes(
        &self,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, ChangeRecord)>, StoreError> {
        self.read_changes(after, limit, |_, text| change_record(text))
            .await
    }

    /// Change-feed records after `after` (exclusive), oldest first, at most `limit`, as what
    /// each says in domain terms (what the follower below hands on).
    pub async fn feed(
        &self,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, FeedEvent)>, StoreError> {
        self.read_changes(after, limit, |seq, text| Ok(feed_event_of(seq, text)))
            .await
    }

    /// Records after `after`, oldest first, at most `limit`, each read by `read` from its text.
    async fn read_changes<T: Send + 'static>(
        &self,
        after: i64,
        limit: usize,
        read: fn(i64, &str) -> Result<T, Db>,
    ) -> Result<Vec<(i64, T)>, StoreError> {
        self.run(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT seq, record FROM changes WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )?;
            let mut rows = stmt.query(params![after, limit as i64])?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                let seq: i64 = row.get(0)?;
                let text = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
                out.push((seq, read(seq, text)?));
            }
            Ok(out)
        })
        .await
    }
}

impl ChangeFeed for SqliteStore {
    async fn follow<C: FeedConsumer>(self, consumer: C) {
        let store = self;
        loop {
            let after = match store.checkpoint(SQLITE_CHECKPOINT).await {
                Ok(c) => c.and_then(|v| v.parse::<i64>().ok()).unwrap_or(0),
                Err(e) => {
                    tracing::error!(error = %Chain(&e), "cannot read the feed checkpoint");
                    tokio::time::sleep(BACKOFF).await;
                    continue;
                }
            };
            let batch = match store.feed(after, BATCH).await {
                Ok(b) if b.is_empty() => {
                    tokio::time::sleep(POLL).await;
                    continue;
                }
                Ok(b) => b,
                Err(e) => {
                    tracing::error!(error = %Chain(&e), "cannot read the change feed");
                    tokio::time::sleep(BACKOFF).await;
                    continue;
                }
            };
            let (seqs, events): (Vec<i64>, Vec<_>) = batch.into_iter().unzip();
            // Everything before a failed event is done; resume at the failed one.
            let done = match consumer.consume(&events).await {
                Ok(()) => seqs.last().copied(),
                Err(i) => {
                    tokio::time::sleep(BACKOFF).await;
                    i.checked_sub(1).map(|j| seqs[j])
                }
            };
            if let Some(seq) = done
                && let Err(e) = store
                    .set_checkpoint(SQLITE_CHECKPOINT, &seq.to_string())
                    .await
            {
                tracing::error!(error = %Chain(&e), "cannot save the feed checkpoint");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changes::ChangeKind;
    use aws_lambda_events::dynamodb::{EventRecord, StreamViewType};
    use rusqlite::Connection;
    use vigil_core::domain::SessionChanged;
    use vigil_core::store::ResultStore;
    use vigil_core::store::items::SessionItem;
    use vigil_core::store::keys::{PK, SK};

    use crate::testing::visit;

    /// The whole stream record a store wrote for a new item before records became compact.
    fn legacy_record(pk: &str, sk: &str, new: &impl serde::Serialize) -> String {
        let mut rec = EventRecord::default();
        rec.event_name = "INSERT".to_owned();
        rec.change.keys = serde_dynamo::to_item(serde_json::json!({ PK: pk, SK: sk })).unwrap();
        rec.change.new_image = serde_dynamo::to_item(new).unwrap();
        rec.change.stream_view_type = Some(StreamViewType::NewAndOldImages);
        rec.aws_region = "local".to_owned();
        serde_json::to_string(&rec).unwrap()
    }

    fn changed(e: &FeedEvent) -> &SessionChanged {
        match e {
            FeedEvent::SessionChanged(c) => c,
            other => panic!("not a session change: {other:?}"),
        }
    }

    #[tokio::test]
    async fn records_from_before_compact_ones_are_read_beside_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vigil.db");
        let store = SqliteStore::open(&path).unwrap();
        // A database that an older build wrote to: one summary's whole stream record.
        let old = SessionItem::next(None, &visit("old", 0.8, "2026-11-21T10:00:00Z"));
        let legacy = legacy_record("PROJECT#p", "SESSION#old", &old);
        let file = Connection::open(&path).unwrap();
        file.execute("INSERT INTO changes (record) VALUES (?1)", [legacy])
            .unwrap();
        // Then this build's writes: a result and its summary, then the summary again.
        store
            .add_result(&visit("new", 0.2, "2026-11-21T10:00:01Z"))
            .await
            .unwrap();
        store
            .add_result(&visit("new", 0.9, "2026-11-21T10:00:02Z"))
            .await
            .unwrap();

        let records = store.changes(0, 100).await.unwrap();
        let kinds: Vec<ChangeKind> = records.iter().map(|(_, r)| r.kind).collect();
        use ChangeKind::{Insert, Modify};
        assert_eq!(kinds, [Insert, Insert, Insert, Insert, Modify]);
        let legacy = &records[0].1;
        assert_eq!(
            (legacy.pk.as_str(), legacy.sk.as_str()),
            ("PROJECT#p", "SESSION#old")
        );
        assert_eq!(legacy.new.as_ref().unwrap()["scoreProxyVpn"], 0.8);
        assert_eq!(legacy.old, None);
        let modify = &records[4].1;
        assert_eq!(modify.old.as_ref().unwrap()["scoreProxyVpn"], 0.2);
        assert_eq!(modify.new.as_ref().unwrap()["scoreProxyVpn"], 0.9);
        assert_eq!(
            (modify.pk.as_str(), modify.sk.as_str()),
            ("PROJECT#p", "SESSION#new")
        );

        // The follower's reading: the summaries' changes, old and new kinds alike.
        let events = store.feed(0, 100).await.unwrap();
        let seqs: Vec<i64> = events.iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, records.iter().map(|(s, _)| *s).collect::<Vec<_>>());
        assert_eq!(changed(&events[0].1).session.as_str(), "old");
        assert_eq!(events[1].1, FeedEvent::Other);
        let first = changed(&events[2].1);
        assert_eq!((first.session.as_str(), first.before), ("new", None));
        let second = changed(&events[4].1);
        assert_eq!(second.before.map(|b| b.score_proxy_vpn.get()), Some(0.2));
        assert_eq!(second.after.score_proxy_vpn.get(), 0.9);
        // What the follower read is what the records' bodies say, legacy and compact alike.
        for (i, (seq, rec)) in records.iter().enumerate() {
            let body = |b: &Option<serde_json::Value>| b.as_ref().map(|v| v.to_string());
            let read = vigil_core::store::change::feed_event_of_bodies(
                &seq.to_string(),
                body(&rec.old).as_deref(),
                body(&rec.new).as_deref(),
            );
            assert_eq!(events[i].1, read, "record {i}");
        }

        // A record nothing can read is unreadable to the follower, and an error to a reader of
        // the records.
        file.execute(
            "INSERT INTO changes (record) VALUES (?1)",
            [r#"{"v":2,"at":"then"}"#],
        )
        .unwrap();
        let last = store.feed(records[4].0, 100).await.unwrap();
        assert!(matches!(&last[..], [(_, FeedEvent::Unreadable(_))]));
        assert!(store.changes(records[4].0, 100).await.is_err());
    }
}
