//! The SQLite change feed's follower: records in write order, resumed after the last one the
//! consumer finished, across restarts.

use vigil_core::report::Chain;
use vigil_core::store::DeliveryStore;
use vigil_core::store::feed::{BACKOFF, BATCH, ChangeFeed, FeedConsumer, POLL};

use crate::SqliteStore;

/// The checkpoint name of the SQLite change feed's follower.
const SQLITE_CHECKPOINT: &str = "sqlite-feed";

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
