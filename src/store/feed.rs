//! Following a store's changes in one long-running process (`vigil serve`): the SQLite change
//! feed here, the table's DynamoDB stream in [`super::streams`]. A follower turns records into
//! domain [`FeedEvent`]s, hands them to a [`FeedConsumer`] (the webhook dispatcher) in order, and
//! resumes after the last event the consumer finished, across restarts.

use std::future::Future;
use std::time::Duration;

use super::change::feed_events;
use super::{DeliveryStore, SqliteStore};
use crate::domain::FeedEvent;
use crate::report::Chain;

/// How often an idle follower looks for new records.
pub const POLL: Duration = Duration::from_millis(25);
/// The pause after a failure before trying the same records again.
pub(crate) const BACKOFF: Duration = Duration::from_secs(1);
const BATCH: usize = 100;

/// What a follower feeds: batches of events, in order.
pub trait FeedConsumer: Send + Sync + 'static {
    /// Takes a batch; on a failure of its own, the index of the first event it did not finish
    /// (the follower keeps what came before and offers the rest again).
    fn consume(&self, events: &[FeedEvent]) -> impl Future<Output = Result<(), usize>> + Send;
}

/// A store whose changes can be followed.
pub trait ChangeFeed: Clone + Send + Sync + 'static {
    /// Feeds every change, from the last one finished, to `consumer`; runs until cancelled.
    fn follow<C: FeedConsumer>(self, consumer: C) -> impl Future<Output = ()> + Send;
}

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
            let batch = match store.changes(after, BATCH).await {
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
            let (seqs, records): (Vec<i64>, Vec<_>) = batch.into_iter().unzip();
            // Everything before a failed event is done; resume at the failed one.
            let done = match consumer.consume(&feed_events(&records)).await {
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
