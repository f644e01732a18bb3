//! Following a store's changes in one long-running process (`vigil serve`): what a follower feeds
//! and how it paces itself. The SQLite change feed and the table's DynamoDB stream implement
//! [`ChangeFeed`] in their adapters' crates. A follower turns records into
//! domain [`FeedEvent`]s, hands them to a [`FeedConsumer`] (the webhook dispatcher) in order, and
//! resumes after the last event the consumer finished, across restarts.

use std::future::Future;
use std::time::Duration;

use crate::domain::FeedEvent;

/// How often an idle follower looks for new records.
pub const POLL: Duration = Duration::from_millis(25);
/// The pause after a failure before trying the same records again.
pub const BACKOFF: Duration = Duration::from_secs(1);
/// Records a follower reads at a time.
pub const BATCH: usize = 100;

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
