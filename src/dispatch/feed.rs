//! Running dispatch continuously in one process (`vigil serve`): a consumer of the store's change
//! feed that resumes after the last record it finished, and the retry sweep.

use std::future::Future;
use std::time::Duration;

use super::SharedDispatcher;
use crate::store::{DeliveryStore, SqliteStore, Store};

/// How often an idle consumer looks for new records.
pub const POLL: Duration = Duration::from_millis(25);
/// How often the sweep looks for due deliveries.
pub const SWEEP_EVERY: Duration = Duration::from_millis(500);
/// The pause after a storage failure before trying the same records again.
const BACKOFF: Duration = Duration::from_secs(1);
const BATCH: usize = 100;

/// A store whose changes can be followed: the SQLite change feed, or the table's DynamoDB stream.
pub trait ChangeFeed: Store + Sized {
    /// Feeds every change, from the last one finished, to the dispatcher; runs until cancelled.
    fn follow(dispatcher: SharedDispatcher<Self>) -> impl Future<Output = ()> + Send;
}

/// The checkpoint name of the SQLite change feed's consumer.
const SQLITE_CHECKPOINT: &str = "sqlite-feed";

impl ChangeFeed for SqliteStore {
    async fn follow(dispatcher: SharedDispatcher<Self>) {
        let store = dispatcher.store();
        loop {
            let after = match store.checkpoint(SQLITE_CHECKPOINT).await {
                Ok(c) => c.and_then(|v| v.parse::<i64>().ok()).unwrap_or(0),
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the feed checkpoint");
                    tokio::time::sleep(BACKOFF).await;
                    continue;
                }
            };
            let batch = match store.changes(after, BATCH).await {
                Ok(b) if b.is_empty() => {
                    tokio::time::sleep(POLL).await;
                    continue;
                }
                Ok(b) => b,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the change feed");
                    tokio::time::sleep(BACKOFF).await;
                    continue;
                }
            };
            let (seqs, records): (Vec<i64>, Vec<_>) = batch.into_iter().unzip();
            // Deliveries are durable once created; their attempts run in the background, so
            // no receiver holds the feed. Everything before a failed record is done; resume at
            // the failed one.
            let batch = dispatcher.create(&records).await;
            dispatcher.spawn_attempts(batch.created);
            let done = match batch.failed {
                None => seqs.last().copied(),
                Some((i, e)) => {
                    tracing::error!(error = %e, "dispatch failed; retrying");
                    tokio::time::sleep(BACKOFF).await;
                    i.checked_sub(1).map(|j| seqs[j])
                }
            };
            if let Some(seq) = done
                && let Err(e) = store
                    .set_checkpoint(SQLITE_CHECKPOINT, &seq.to_string())
                    .await
            {
                tracing::error!(error = %e, "cannot save the feed checkpoint");
            }
        }
    }
}

/// Sweeps due deliveries into background attempts forever; runs until cancelled.
pub async fn sweep_forever<S: Store>(dispatcher: SharedDispatcher<S>, every: Duration) {
    loop {
        if let Err(e) = dispatcher.sweep_in_background().await {
            tracing::error!(error = %e, "retry sweep failed");
        }
        tokio::time::sleep(every).await;
    }
}
