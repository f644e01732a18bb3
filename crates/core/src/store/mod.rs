//! Storage: narrow traits the domain depends on, and the single-table item layout ([`items`])
//! that the two adapters (the `vigil-store-dynamo` and `vigil-store-sqlite` crates) share.

use std::future::Future;

use crate::domain::idempotency::{IdempotencyKey, Once, Used, Written};
use crate::domain::insight::{Bucket, SessionPage, SessionQuery, StatsRange};
use crate::domain::plan::{Counted, Period, VisitCount};
use crate::domain::velocity::{CounterWork, Counters};
use crate::domain::{
    Account, AccountId, Delivery, Event, NewResult, Project, ProjectId, ResultPosition, SessionId,
    SessionScore, Timestamp, Webhook, WebhookId,
};

pub mod change;
pub mod count;
mod error;
pub mod feed;
pub mod items;
pub mod keys;
mod outcome;
pub mod plan;
pub mod write;

pub use error::{Cause, OpFailed, StoreError};
pub use outcome::{ProjectInsert, WebhookInsert};

use plan::{Applied, StepName, When, WritePlan};
pub use plan::{ItemStore, Read};

/// A page of a session's results, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultPage {
    pub results: Vec<(ResultPosition, Event)>,
    /// Whether results exist beyond this page.
    pub more: bool,
}

impl ResultPage {
    /// A page from up to `limit + 1` rows read newest first: the extra row only says that more
    /// exist, without a second round trip.
    pub fn from_rows(mut rows: Vec<items::ResultItem>, limit: usize) -> Self {
        let more = rows.len() > limit;
        rows.truncate(limit);
        Self {
            results: rows
                .into_iter()
                .map(|r| (r.position(), r.event()))
                .collect(),
            more,
        }
    }

    /// Where the next page starts: after this page's last result, when more exist.
    pub fn next(&self) -> Option<ResultPosition> {
        self.results.last().filter(|_| self.more).map(|(at, _)| *at)
    }
}

type Res<T> = Result<T, StoreError>;

/// Looks up developer keys by their SHA-256 (the authorizer's one read).
pub trait KeyStore: ItemStore {
    /// The account of an unrevoked key.
    fn key_account(&self, key_hash: &str) -> impl Future<Output = Res<Option<AccountId>>> + Send {
        async move {
            let key: Option<items::KeyItem> = self
                .item(&keys::key_pk(key_hash), keys::KEY_SK, Read::Eventual)
                .await?;
            Ok(key.filter(|k| !k.revoked).map(|k| k.account_id))
        }
    }
}

/// What Web Bot Auth verification keeps across instances: key directories by their cache
/// lifetime, and the signatures already seen (replays). Called for signed requests only.
pub trait AgentStore: ItemStore {
    /// An origin's directory keys as cached, if still within their lifetime at `now`.
    fn cached_directory(
        &self,
        origin: &str,
        now: i64,
    ) -> impl Future<Output = Res<Option<items::DirectoryItem>>> + Send {
        async move {
            let item: Option<items::DirectoryItem> = self
                .item(
                    &items::directory_pk(origin),
                    items::DIRECTORY_SK,
                    Read::Eventual,
                )
                .await?;
            Ok(item.filter(|d| d.expires_at > now && d.origin == origin))
        }
    }

    fn cache_directory(&self, item: &items::DirectoryItem) -> impl Future<Output = Res<()>> + Send {
        async move { write::put_item(self, StepName::Directory, item).await }
    }

    /// Records a signature's use; false when it was used before and has not expired at `now`
    /// (the same nonce, or the same signature bytes).
    fn first_use(
        &self,
        replay_key: &str,
        until: i64,
        now: i64,
    ) -> impl Future<Output = Res<bool>> + Send {
        async move { write::put_once(self, &items::SignatureUseItem::new(replay_key, until), now).await }
    }
}

pub trait AccountStore: ItemStore {
    fn account(&self, id: &AccountId) -> impl Future<Output = Res<Option<Account>>> + Send {
        async move {
            let item: Option<items::AccountItem> = self
                .item(&keys::account_pk(id), keys::ACCOUNT_SK, Read::Eventual)
                .await?;
            Ok(item.map(Account::from))
        }
    }
}

pub trait ProjectStore: ItemStore {
    fn project(&self, id: &ProjectId) -> impl Future<Output = Res<Option<Project>>> + Send {
        async move {
            let item: Option<items::ProjectItem> = self
                .item(&keys::project_pk(id), keys::PROJECT_SK, Read::Eventual)
                .await?;
            Ok(item.map(Project::from))
        }
    }

    /// Creates a project unless its account already has `max_projects`, exactly under
    /// concurrent creations; with `once`, only if its idempotency key is unused (see
    /// [`ResultStore::write_result`]).
    fn insert_project(
        &self,
        project: &Project,
        max_projects: u32,
        once: Option<&Once>,
    ) -> impl Future<Output = Res<Written<ProjectInsert>>> + Send {
        write::insert_project(self, project, max_projects, once)
    }

    /// [`ProjectStore::insert_project`] without a key.
    fn create_project(
        &self,
        project: &Project,
        max_projects: u32,
    ) -> impl Future<Output = Res<ProjectInsert>> + Send {
        async move { unkeyed(self.insert_project(project, max_projects, None).await?) }
    }

    /// [`ProjectStore::insert_project`] once per idempotency key.
    fn create_project_once(
        &self,
        project: &Project,
        max_projects: u32,
        once: &Once,
    ) -> impl Future<Output = Res<Written<ProjectInsert>>> + Send {
        self.insert_project(project, max_projects, Some(once))
    }

    /// The account's projects, in no particular order.
    fn account_projects(
        &self,
        account: &AccountId,
    ) -> impl Future<Output = Res<Vec<Project>>> + Send;

    /// The project whose `apiKeyPublic` is `key`.
    fn project_by_public_key(
        &self,
        key: &str,
    ) -> impl Future<Output = Res<Option<Project>>> + Send {
        async move {
            let pk = keys::public_key_pk(key);
            let item: Option<items::ProjectItem> =
                self.item(&pk, keys::PROJECT_SK, Read::Eventual).await?;
            // A copy left behind by a key a seed replaced never authenticates.
            Ok(item.map(Project::from).filter(|p| p.api_key_public == key))
        }
    }

    /// Replaces an existing project (same id and account); false when it does not exist.
    fn update_project(&self, project: &Project) -> impl Future<Output = Res<bool>> + Send {
        write::update_project(self, project)
    }
}

/// Request counters of accounts: one per second (`maxRps`) and one per billing period
/// (`maxRequests`), and the collect route's own windows. Past windows expire by the table's TTL.
/// What is counted where, and what a refusal leaves, is a [`count::CountPlan`] that core builds;
/// a store only applies it.
pub trait UsageStore: Send + Sync {
    /// Applies `plan` ([`count`]'s rules), exactly under concurrent requests and processes.
    fn count(&self, plan: &count::CountPlan) -> impl Future<Output = Res<Counted>> + Send;

    /// Counts one developer request of `account` in the second `second` (epoch seconds) unless it
    /// already has `max_rps`, and then in `period` unless the period's developer requests already
    /// reach `max_requests` (visits are not held against them): [`count::CountPlan::request`].
    fn count_request(
        &self,
        account: &AccountId,
        second: i64,
        max_rps: u32,
        period: &Period,
        max_requests: u64,
    ) -> impl Future<Output = Res<Counted>> + Send {
        let plan = count::CountPlan::request(account, second, max_rps, period, max_requests);
        async move { self.count(&plan).await }
    }

    /// Counts one visit of the collect route in its source's second, its project's second and
    /// the account's period (developer requests and visits together):
    /// [`count::CountPlan::visit`].
    fn count_visit(&self, visit: &VisitCount<'_>) -> impl Future<Output = Res<Counted>> + Send {
        let plan = count::CountPlan::visit(visit);
        async move { self.count(&plan).await }
    }

    /// The requests counted in `period` so far: developer requests and visits.
    fn period_usage(
        &self,
        account: &AccountId,
        period: &Period,
    ) -> impl Future<Output = Res<u64>> + Send;
}

/// Counters across visits (velocity; see [`crate::domain::velocity`]): each visit adds to its
/// address's, device's and project's current items and reads their previous ones.
pub trait VelocityStore: Send + Sync {
    /// Applies every update of `work` (numbers added, members put in sets, the later expiry
    /// kept), each atomically, and returns the updated items as they stand after, in order, with
    /// the items of `work.reads` as they stand (empty when absent).
    fn count_velocity(
        &self,
        project: &ProjectId,
        work: &CounterWork,
    ) -> impl Future<Output = Res<(Vec<Counters>, Vec<Counters>)>> + Send;
}

pub trait ResultStore: ItemStore {
    /// Up to `limit` results strictly after `after` in newest-first order.
    fn results(
        &self,
        project: &ProjectId,
        session: &SessionId,
        limit: usize,
        after: Option<ResultPosition>,
    ) -> impl Future<Output = Res<ResultPage>> + Send;

    /// One result of the session, by its position.
    fn event(
        &self,
        project: &ProjectId,
        session: &SessionId,
        at: ResultPosition,
    ) -> impl Future<Output = Res<Option<Event>>> + Send {
        async move {
            let (pk, sk) = (keys::project_pk(project), keys::result_sk(session, at));
            let item: Option<items::ResultItem> = self.item(&pk, &sk, Read::Eventual).await?;
            Ok(item.map(items::ResultItem::event))
        }
    }

    /// The session's maintained overall score, or `None` when it has no results.
    fn session_score(
        &self,
        project: &ProjectId,
        session: &SessionId,
    ) -> impl Future<Output = Res<Option<SessionScore>>> + Send {
        async move {
            let (pk, sk) = (keys::project_pk(project), keys::session_sk(session));
            let item: Option<items::SessionItem> = self.item(&pk, &sk, Read::Eventual).await?;
            Ok(item.map(|s| s.score()))
        }
    }

    /// Writes one result and updates the session's overall score atomically, correct under
    /// concurrent writers, and returns the position the result was given. With `once`, the key's
    /// use is recorded in the same transaction, and when the key is already in use (unexpired),
    /// nothing is written.
    fn write_result(
        &self,
        result: &NewResult,
        once: Option<&Once>,
    ) -> impl Future<Output = Res<Written<ResultPosition>>> + Send {
        write::write_result(self, result, once, None)
    }

    /// The session's summary as it stands, for [`ResultStore::write_result_after`]: read beside
    /// other work, it saves the write its own read.
    fn prior_summary(
        &self,
        project: &ProjectId,
        session: &SessionId,
    ) -> impl Future<Output = Res<write::PriorSummary>> + Send {
        write::prior_summary(self, project, session)
    }

    /// [`ResultStore::write_result`], planned first on a summary read before.
    fn write_result_after(
        &self,
        result: &NewResult,
        once: Option<&Once>,
        prior: write::PriorSummary,
    ) -> impl Future<Output = Res<Written<ResultPosition>>> + Send {
        write::write_result(self, result, once, Some(prior))
    }

    /// [`ResultStore::write_result`] without a key.
    fn add_result(&self, result: &NewResult) -> impl Future<Output = Res<ResultPosition>> + Send {
        async move { unkeyed(self.write_result(result, None).await?) }
    }

    /// [`ResultStore::write_result`] once per idempotency key.
    fn add_result_once(
        &self,
        result: &NewResult,
        once: &Once,
    ) -> impl Future<Output = Res<Written<ResultPosition>>> + Send {
        self.write_result(result, Some(once))
    }
}

/// A project's traffic as a whole, kept by [`ResultStore::write_result`]: its sessions by when
/// they were last seen, and its statistics by hour and day.
pub trait InsightStore: Send + Sync {
    /// A page of the project's sessions that pass the query's filters, most recently seen first.
    /// DynamoDB reads the `sessions` index (never a scan); SQLite its `sessions` table's index.
    fn sessions(
        &self,
        project: &ProjectId,
        query: &SessionQuery,
    ) -> impl Future<Output = Res<SessionPage>> + Send;

    /// Every bucket of the range, in order, empty ones included: one query over the range's
    /// statistics items.
    fn stats(
        &self,
        project: &ProjectId,
        range: &StatsRange,
    ) -> impl Future<Output = Res<Vec<Bucket>>> + Send;
}

/// The buckets of `range` from the statistics items read for it (any shards, any order).
pub fn buckets(range: &StatsRange, rows: &[items::StatsItem]) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = range.starts().map(Bucket::empty).collect();
    let step = range.granularity().seconds();
    let from = range.from().unix_seconds();
    for row in rows {
        let offset = row.start.unix_seconds() - from;
        let slot = usize::try_from(offset / step)
            .ok()
            .filter(|_| offset % step == 0);
        if let Some(b) = slot.and_then(|i| out.get_mut(i)) {
            b.add(&row.counts());
        }
    }
    out
}

/// What a write without an idempotency key did: it cannot have found its key in use.
fn unkeyed<T>(written: Written<T>) -> Res<T> {
    match written {
        Written::New(value) => Ok(value),
        Written::Before(_) => Err(StoreError::Backend(
            "a write without an idempotency key was answered as a replay".into(),
        )),
    }
}

/// Idempotency keys in use.
pub trait IdempotencyStore: ItemStore {
    /// The use of `key` by `account`, unless it has expired by `now`.
    fn used_key(
        &self,
        account: &AccountId,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> impl Future<Output = Res<Option<Used>>> + Send {
        async move {
            let (pk, sk) = (keys::account_pk(account), items::idempotency_sk(key));
            let item: Option<items::IdempotencyItem> =
                self.item(&pk, &sk, Read::Consistent).await?;
            Ok(item.and_then(|i| i.used(now)))
        }
    }
}

pub trait WebhookStore: ItemStore {
    /// Registers a webhook, enforcing per-project uniqueness of (type, url) and the per-project
    /// limit atomically.
    fn insert_webhook(
        &self,
        project: &ProjectId,
        webhook: &Webhook,
    ) -> impl Future<Output = Res<WebhookInsert>> + Send {
        write::insert_webhook(self, project, webhook)
    }

    /// The project's webhooks, oldest first.
    fn webhooks(&self, project: &ProjectId) -> impl Future<Output = Res<Vec<Webhook>>> + Send;

    /// One webhook of the project (disabled ones included).
    fn webhook(
        &self,
        project: &ProjectId,
        id: &WebhookId,
    ) -> impl Future<Output = Res<Option<Webhook>>> + Send {
        async move {
            let (pk, sk) = (keys::project_pk(project), keys::webhook_sk(id));
            let item: Option<items::WebhookItem> = self.item(&pk, &sk, Read::Consistent).await?;
            Ok(item.map(items::WebhookItem::webhook))
        }
    }

    /// Replaces a webhook's secrets if its current secret is still `expected`; false when it is
    /// gone or another rotation got there first.
    fn set_webhook_secrets(
        &self,
        project: &ProjectId,
        id: &WebhookId,
        expected: Option<&crate::domain::webhook::WebhookSecret>,
        secrets: &crate::domain::webhook::Secrets,
    ) -> impl Future<Output = Res<bool>> + Send {
        write::set_webhook_secrets(self, project, id, expected, secrets)
    }

    /// Removes a webhook; false when it did not exist.
    fn delete_webhook(
        &self,
        project: &ProjectId,
        id: &WebhookId,
    ) -> impl Future<Output = Res<bool>> + Send {
        write::delete_webhook(self, project, id)
    }
}

/// Writes used by seeding and the demo data: accounts, keys and projects.
pub trait AdminStore: ItemStore {
    fn put_account(&self, account: &Account) -> impl Future<Output = Res<()>> + Send {
        write::put_account(self, account)
    }
    fn put_key(&self, key_hash: &str, account: &AccountId) -> impl Future<Output = Res<()>> + Send {
        write::put_key(self, key_hash, account)
    }
    /// Writes a project whole (seeding): a replaced public key or a former account lets go of it.
    fn put_project(&self, project: &Project) -> impl Future<Output = Res<()>> + Send {
        write::seed_project(self, project)
    }
    /// True when the store holds no account at all (a fresh database).
    fn is_empty(&self) -> impl Future<Output = Res<bool>> + Send;
}

/// What webhook dispatch keeps: deliveries with their attempts, the due index the retry sweep
/// reads, disabled webhooks, and change-feed checkpoints.
pub trait DeliveryStore: ItemStore {
    /// The project's webhooks that still receive deliveries.
    fn active_webhooks(
        &self,
        project: &ProjectId,
    ) -> impl Future<Output = Res<Vec<Webhook>>> + Send;

    /// Stops deliveries to a webhook (its receiver answered 410 Gone).
    fn disable_webhook(
        &self,
        project: &ProjectId,
        id: &WebhookId,
    ) -> impl Future<Output = Res<()>> + Send {
        write::disable_webhook(self, project, id)
    }

    /// Creates a delivery; false when it already exists (a replayed record), which is not an error.
    fn create_delivery(&self, delivery: &Delivery) -> impl Future<Output = Res<bool>> + Send {
        write::create_delivery(self, delivery)
    }

    /// Queues a test event's delivery if its account's test events of the delivery's minute are
    /// below `max` (counted with it, atomically); false when they are not.
    fn create_test_delivery(
        &self,
        account: &AccountId,
        delivery: &Delivery,
        max: write::TestCaps,
    ) -> impl Future<Output = Res<write::TestAdmission>> + Send {
        write::create_test_delivery(self, account, delivery, max)
    }

    /// Writes a delivery's new state if its due time is still `expected` (None: not due), so two
    /// sweepers never both claim or finish the same attempt. False when someone else got there.
    fn update_delivery(
        &self,
        delivery: &Delivery,
        expected: Option<Timestamp>,
    ) -> impl Future<Output = Res<bool>> + Send {
        write::update_delivery(self, delivery, expected)
    }

    /// A delivery of the project by its id (deliveries made before references were kept are not
    /// found).
    fn delivery(
        &self,
        project: &ProjectId,
        id: &crate::domain::DeliveryId,
    ) -> impl Future<Output = Res<Option<Delivery>>> + Send {
        async move {
            let pk = keys::project_pk(project);
            let reference: Option<items::DeliveryRefItem> = self
                .item(&pk, &items::delivery_ref_sk(id), Read::Consistent)
                .await?;
            let Some(r) = reference else { return Ok(None) };
            let item: Option<items::DeliveryItem> =
                self.item(&pk, &r.delivery_sk, Read::Consistent).await?;
            Ok(item.map(|i| i.delivery))
        }
    }

    /// Pending deliveries due at or before `now`, earliest first.
    fn due_deliveries(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> impl Future<Output = Res<Vec<Delivery>>> + Send;

    /// A webhook's deliveries, newest crossing first.
    fn deliveries(
        &self,
        project: &ProjectId,
        webhook: &WebhookId,
        limit: usize,
    ) -> impl Future<Output = Res<Vec<Delivery>>> + Send;

    fn checkpoint(&self, name: &str) -> impl Future<Output = Res<Option<String>>> + Send;
    fn set_checkpoint(&self, name: &str, value: &str) -> impl Future<Output = Res<()>> + Send;
}

/// Customers' labels of sessions, one item each beside the session.
pub trait LabelStore: ItemStore {
    /// Writes (or replaces) a session's label, and lists its project among the labelled.
    fn put_label(
        &self,
        project: &ProjectId,
        label: &crate::domain::label::Label,
    ) -> impl Future<Output = Res<()>> + Send {
        let plan = WritePlan::new()
            .put(
                StepName::Label,
                &items::LabelItem::of(project, label.clone()),
                When::Always,
            )
            .and_then(|p| {
                p.put(
                    StepName::Labelled,
                    &items::LabelledItem::of(project),
                    When::Always,
                )
            });
        async move {
            match self.apply(plan?).await? {
                Applied::Done => Ok(()),
                Applied::Refused { step, .. } => Err(write::refused("an unconditional put", step)),
            }
        }
    }

    /// A session's label, if it has one.
    fn label(
        &self,
        project: &ProjectId,
        session: &SessionId,
    ) -> impl Future<Output = Res<Option<crate::domain::label::Label>>> + Send {
        let (pk, sk) = (keys::project_pk(project), keys::label_sk(session));
        async move {
            let item: Option<items::LabelItem> = self.item(&pk, &sk, Read::Consistent).await?;
            Ok(item.map(|i| i.value))
        }
    }

    /// Removes a session's label; false when it had none.
    fn delete_label(
        &self,
        project: &ProjectId,
        session: &SessionId,
    ) -> impl Future<Output = Res<bool>> + Send {
        let plan = WritePlan::new().delete(
            StepName::Label,
            keys::project_pk(project),
            keys::label_sk(session),
            When::Present,
        );
        async move { Ok(self.apply(plan).await? == Applied::Done) }
    }

    /// Up to `limit` labels by session id, after the session `after`.
    fn labels(
        &self,
        project: &ProjectId,
        after: Option<&SessionId>,
        limit: usize,
    ) -> impl Future<Output = Res<Vec<crate::domain::label::Label>>> + Send;

    /// Up to `limit` projects that have had labels, by id, after the project `after`.
    fn labelled_projects(
        &self,
        after: Option<&ProjectId>,
        limit: usize,
    ) -> impl Future<Output = Res<Vec<ProjectId>>> + Send;
}

/// Everything the service needs from a store.
pub trait Store:
    KeyStore
    + AccountStore
    + ProjectStore
    + ResultStore
    + WebhookStore
    + AdminStore
    + DeliveryStore
    + UsageStore
    + IdempotencyStore
    + InsightStore
    + VelocityStore
    + AgentStore
    + LabelStore
    + 'static
{
}

impl<T> Store for T where
    T: KeyStore
        + AccountStore
        + ProjectStore
        + ResultStore
        + WebhookStore
        + AdminStore
        + DeliveryStore
        + UsageStore
        + IdempotencyStore
        + InsightStore
        + VelocityStore
        + AgentStore
        + LabelStore
        + 'static
{
}
