//! Webhook dispatch: from changes of the table (DynamoDB Streams, or the SQLite change feed) to
//! signed deliveries, retried on a schedule from durable state.
//!
//! - [`Dispatcher::create_deliveries`] reads a batch of feed events in order (the stores turn
//!   their records into [`FeedEvent`]s; nothing here knows an item layout). A session that
//!   crosses the threshold gets one delivery per active webhook, created with a deterministic id,
//!   so a replayed record finds its delivery instead of making another. New deliveries are leased
//!   to the creator and attempted at once, concurrently (bounded): within a time budget in Lambda
//!   ([`Dispatcher::handle`]), in background tasks in `vigil serve`.
//! - The sweep claims due deliveries (failed earlier, or whose lease ran out because a process
//!   died mid-attempt) and attempts them. It runs on a schedule.
//! - Only failures of our own storage fail a record; a receiver's failure is an attempt outcome.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde::Serialize;
use tokio::sync::Semaphore;

use vigil_core::config::Config;
use vigil_core::domain::delivery::{Attempt, AttemptOutcome};
use vigil_core::domain::{
    Clock, Delivery, DeliveryId, DeliveryStatus, FeedEvent, ProjectId, Score, SessionId,
    SystemClock, Timestamp, WebhookType,
};
use vigil_core::report::Chain;
use vigil_core::store::feed::FeedConsumer;
use vigil_core::store::{DeliveryStore, ProjectStore, StoreError};

pub mod crossing;
pub mod deliver;
pub mod directory;
pub mod signature;

pub use crossing::{Crossing, crossing, crossings};
pub use deliver::{Resolver, Sender, SystemResolver};
pub use directory::HttpDirectories;

/// How long an attempt holds its delivery: longer than an attempt can take, so a live attempt is
/// never sent twice, and short enough that a crashed one is retried soon.
pub const LEASE: Duration = Duration::from_secs(60);
/// Attempts in flight at once per process: one slow receiver cannot hold up the others.
pub const CONCURRENCY: usize = 32;
/// How often `vigil serve` looks for due deliveries.
pub const SWEEP_EVERY: Duration = Duration::from_millis(500);
/// Due deliveries queued per background sweep.
const SWEEP_BATCH: usize = 100;
/// How long the dispatch function gives first attempts before leaving them to the sweep.
pub const FIRST_ATTEMPT_BUDGET: Duration = Duration::from_secs(10);

/// The notification body.
#[derive(Serialize)]
struct Payload<'a> {
    #[serde(rename = "type")]
    kind: WebhookType,
    timestamp: Timestamp,
    data: PayloadData<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PayloadData<'a> {
    project_id: &'a ProjectId,
    session_id: &'a SessionId,
    #[serde(flatten)]
    result: &'a vigil_core::domain::CheckResult,
    /// The event that made the session cross, and why (empty for an unevaluated result).
    id: vigil_core::domain::EventId,
    reasons: &'a [vigil_detect::Reason],
}

/// The notification body. Serialising can only fail on a bug; the caller must then not send (a
/// body is never signed empty).
pub fn payload(c: &Crossing, now: Timestamp) -> Result<String, serde_json::Error> {
    let p = Payload {
        kind: c.kind,
        timestamp: now,
        data: PayloadData {
            project_id: &c.project_id,
            session_id: &c.session_id,
            result: &c.result,
            id: c.event_id,
            reasons: &c.reasons,
        },
    };
    serde_json::to_string(&p)
}

/// Why a feed event could not be turned into deliveries: our failure, so the event is retried.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot build the webhook body")]
    Payload(#[source] serde_json::Error),
}

/// What [`Dispatcher::create_deliveries`] did with a batch of feed events.
pub struct Batch {
    /// New deliveries, leased to the caller for their first attempt.
    pub created: Vec<Delivery>,
    /// The index of the event whose processing failed on our side, and why.
    pub failed: Option<(usize, DispatchError)>,
}

pub struct Dispatcher<S> {
    store: S,
    sender: Sender,
    threshold: Score,
    schedule: Vec<Duration>,
    /// Attempts running in the background (long-running processes), at most [`CONCURRENCY`].
    permits: Arc<Semaphore>,
    /// Deliveries a background task holds or waits to claim, so the sweep does not queue twice.
    in_flight: Mutex<HashSet<DeliveryId>>,
    /// Every time the dispatcher reads: leases, attempts, signatures, payloads.
    clock: Arc<dyn Clock>,
}

impl<S: ProjectStore + DeliveryStore> Dispatcher<S> {
    pub fn new(store: S, sender: Sender, config: &Config) -> Self {
        Self {
            store,
            sender,
            threshold: config.webhook_threshold,
            schedule: config.retry_schedule.clone(),
            permits: Arc::new(Semaphore::new(CONCURRENCY)),
            in_flight: Mutex::new(HashSet::new()),
            clock: Arc::new(SystemClock),
        }
    }

    /// The same dispatcher reading the time from `clock`.
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The durable step: reads feed events in order and creates the deliveries of their
    /// crossings, each leased to the caller, who attempts them (at once, or left to the sweep).
    pub async fn create_deliveries(&self, events: &[FeedEvent]) -> Batch {
        let mut batch = Batch {
            created: Vec::new(),
            failed: None,
        };
        for (i, event) in events.iter().enumerate() {
            let change = match event {
                FeedEvent::SessionChanged(change) => change,
                FeedEvent::Other => continue,
                // Retrying cannot fix a record we cannot read; it must not block the feed.
                FeedEvent::Unreadable(why) => {
                    tracing::error!(error = %why, "skipping an unreadable feed record");
                    continue;
                }
            };
            let mut failed = None;
            for c in crossings(change, self.threshold) {
                match self.deliveries_for(&c).await {
                    Ok(mut created) => batch.created.append(&mut created),
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            if let Some(e) = failed {
                batch.failed = Some((i, e));
                break;
            }
        }
        batch
    }

    /// Creates the batch's deliveries and gives their first attempts at most `budget`, so that a
    /// slow receiver holds the stream for no longer than that: attempts still running then are
    /// abandoned and retried by the sweep when their lease ends (same `webhook-id`). On a storage
    /// failure, returns the index of the record that failed: it and everything after it must be
    /// delivered again (they are idempotent).
    pub async fn handle(
        &self,
        events: &[FeedEvent],
        budget: Duration,
    ) -> Result<usize, (usize, DispatchError)> {
        let batch = self.create_deliveries(events).await;
        let created = batch.created.len();
        if tokio::time::timeout(budget, self.attempt_all(batch.created))
            .await
            .is_err()
        {
            tracing::warn!("first attempts outlived their budget; the sweep will retry them");
        }
        match batch.failed {
            Some(f) => Err(f),
            None => Ok(created),
        }
    }

    async fn deliveries_for(&self, c: &Crossing) -> Result<Vec<Delivery>, DispatchError> {
        let hooks = self.store.active_webhooks(&c.project_id).await?;
        let now = self.now();
        let body = payload(c, now).map_err(DispatchError::Payload)?;
        let mut created = Vec::new();
        // Each webhook is told of its own type's crossings only.
        for hook in hooks.into_iter().filter(|h| h.kind == c.kind) {
            let delivery = Delivery {
                id: DeliveryId::for_crossing(&c.project_id, &c.session_id, &hook.id),
                project_id: c.project_id.clone(),
                webhook_id: hook.id,
                session_id: c.session_id.clone(),
                url: hook.url,
                body: body.clone(),
                crossed_at: c.result.created_at,
                status: DeliveryStatus::Pending,
                attempts: Vec::new(),
                // Created under our lease: if we die before recording the attempt, the sweep
                // picks it up when the lease ends.
                next_attempt_at: Some(now.plus(LEASE)),
                created_at: now,
                test: false,
            };
            if self.store.create_delivery(&delivery).await? {
                created.push(delivery);
            }
        }
        Ok(created)
    }

    /// Claims up to [`CONCURRENCY`] due deliveries and attempts them together; returns how many
    /// it attempted. Claiming no more than run at once keeps every attempt inside its lease.
    pub async fn sweep(&self) -> Result<usize, StoreError> {
        let now = self.now();
        let mut claimed = Vec::new();
        for d in self.store.due_deliveries(now, CONCURRENCY).await? {
            if let Some(d) = self.claim(d, now).await? {
                claimed.push(d);
            }
        }
        let n = claimed.len();
        self.attempt_all(claimed).await;
        Ok(n)
    }

    /// Takes the lease of a due delivery; None when another sweeper took it first.
    async fn claim(&self, mut d: Delivery, now: Timestamp) -> Result<Option<Delivery>, StoreError> {
        let seen = d.next_attempt_at;
        d.next_attempt_at = Some(now.plus(LEASE));
        Ok(self.store.update_delivery(&d, seen).await?.then_some(d))
    }

    async fn attempt_all(&self, deliveries: Vec<Delivery>) {
        futures_util::stream::iter(deliveries)
            .for_each_concurrent(CONCURRENCY, |d| self.attempt(d))
            .await;
    }

    /// One attempt of a delivery whose lease we hold, and its record. Storage failures are
    /// logged: the lease then runs out and the sweep tries again.
    async fn attempt(&self, mut d: Delivery) {
        let lease = d.next_attempt_at;
        let attempt = match self.receiver_key(&d).await {
            Ok(Some(keys)) => {
                self.sender
                    .send(self.now(), &d.url, &d.id, &keys, &d.body)
                    .await
            }
            Ok(None) => Attempt {
                at: self.now(),
                // Deleted or disabled since: stop without contacting anyone.
                outcome: AttemptOutcome::Gone,
                status_code: None,
                error: Some("webhook was deleted or disabled".into()),
            },
            Err(e) => {
                tracing::error!(error = %Chain(&e), delivery = %d.id, "cannot prepare delivery");
                return;
            }
        };
        let gone = attempt.outcome == AttemptOutcome::Gone && attempt.status_code.is_some();
        tracing::info!(delivery = %d.id, outcome = ?attempt.outcome, code = ?attempt.status_code, "delivery attempt");
        let outcome = match attempt.outcome {
            AttemptOutcome::Delivered => "delivered",
            AttemptOutcome::Gone => "gone",
            AttemptOutcome::Failed => "failed",
        };
        // A test event is tried once: retries would make it an amplifier aimed at any URL.
        let schedule: &[_] = if d.test { &[] } else { &self.schedule };
        d.record(attempt, schedule);
        vigil_core::metrics::delivery(outcome, d.attempts.len());
        if gone
            && let Err(e) = self
                .store
                .disable_webhook(&d.project_id, &d.webhook_id)
                .await
        {
            tracing::error!(error = %Chain(&e), webhook = %d.webhook_id, "cannot disable webhook");
        }
        match self.store.update_delivery(&d, lease).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(delivery = %d.id, "lease lost before the attempt was recorded")
            }
            Err(e) => {
                tracing::error!(error = %Chain(&e), delivery = %d.id, "cannot record attempt")
            }
        }
    }

    /// The signing keys, if the project and the webhook still exist and the webhook is active.
    async fn receiver_key(&self, d: &Delivery) -> Result<Option<Vec<Vec<u8>>>, StoreError> {
        let Some(project) = self.store.project(&d.project_id).await? else {
            return Ok(None);
        };
        let active = self.store.active_webhooks(&d.project_id).await?;
        let now = self.now();
        Ok(active.iter().find(|w| w.id == d.webhook_id).map(|w| {
            w.secrets.keys(
                now,
                &project.api_key_private,
                project.webhook_legacy_signature,
            )
        }))
    }
}

/// A dispatcher shared by the tasks of one process.
pub type SharedDispatcher<S> = Arc<Dispatcher<S>>;

/// Background attempts, for long-running processes (`vigil serve`): the feed and the sweep hand
/// deliveries over and move on, so no receiver, however slow, holds them up.
impl<S: ProjectStore + DeliveryStore + 'static> Dispatcher<S> {
    /// Attempts deliveries this process already leased (just created) in the background.
    pub fn spawn_attempts(self: &Arc<Self>, deliveries: Vec<Delivery>) {
        for d in deliveries {
            let me = self.clone();
            tokio::spawn(async move {
                let Ok(_permit) = me.permits.clone().acquire_owned().await else {
                    return;
                };
                // A lease that ran out while waiting for a permit belongs to the sweep now.
                if d.next_attempt_at.is_some_and(|end| me.now() >= end) {
                    return;
                }
                me.attempt(d).await;
            });
        }
    }

    /// Queues every due delivery for a background attempt; each is claimed only once a permit is
    /// free, so its lease covers the attempt and not the wait. Returns how many were queued.
    pub async fn sweep_in_background(self: &Arc<Self>) -> Result<usize, StoreError> {
        let due = self.store.due_deliveries(self.now(), SWEEP_BATCH).await?;
        let mut queued = 0;
        for d in due {
            let fresh = self
                .in_flight
                .lock()
                .map(|mut set| set.insert(d.id.clone()))
                .unwrap_or(false);
            if !fresh {
                continue;
            }
            queued += 1;
            let me = self.clone();
            tokio::spawn(async move {
                let id = d.id.clone();
                if let Ok(_permit) = me.permits.clone().acquire_owned().await {
                    match me.claim(d, me.now()).await {
                        Ok(Some(d)) => me.attempt(d).await,
                        Ok(None) => {}
                        Err(e) => {
                            tracing::error!(error = %Chain(&e), delivery = %id, "cannot claim delivery")
                        }
                    }
                }
                if let Ok(mut set) = me.in_flight.lock() {
                    set.remove(&id);
                }
            });
        }
        Ok(queued)
    }
}

/// The dispatcher as a follower of the change feed in a long-running process: deliveries are
/// durable once created, and their attempts run in the background, so no receiver holds the feed.
pub struct Following<S>(pub Arc<Dispatcher<S>>);

impl<S: ProjectStore + DeliveryStore + 'static> FeedConsumer for Following<S> {
    async fn consume(&self, events: &[FeedEvent]) -> Result<(), usize> {
        let batch = self.0.create_deliveries(events).await;
        self.0.spawn_attempts(batch.created);
        match batch.failed {
            None => Ok(()),
            Some((i, e)) => {
                tracing::error!(error = %Chain(&e), "creating deliveries failed; retrying");
                Err(i)
            }
        }
    }
}

/// Sweeps due deliveries into background attempts forever; runs until cancelled.
pub async fn sweep_forever<S: ProjectStore + DeliveryStore + 'static>(
    dispatcher: SharedDispatcher<S>,
    every: Duration,
) {
    loop {
        if let Err(e) = dispatcher.sweep_in_background().await {
            tracing::error!(error = %Chain(&e), "retry sweep failed");
        }
        tokio::time::sleep(every).await;
    }
}
