//! The service's decisions: who may see what, and what each operation means. Handlers parse and
//! answer; this layer decides; stores persist.

use std::sync::Arc;
use std::time::Instant;

use quick_cache::sync::Cache;

use crate::detect::Engine;
use crate::domain::plan::{Principal, Refusal, Terms};
use crate::domain::token::ApiKey;
use crate::domain::webhook::{UrlPolicy, WebhookType, WebhookUrl};
use crate::domain::{
    AccountId, Plan, Project, ProjectId, ResultPosition, Score, SessionId, SessionScore, Timestamp,
    Webhook, WebhookId,
};
use crate::domain::{Clock, DeliveryView, SystemClock};
use crate::store::{
    AccountStore, DeliveryStore, KeyStore, ProjectStore, ResultPage, ResultStore, StoreError,
    WebhookStore,
};

pub mod admin;
pub mod agents;
pub mod calibration;
pub mod events;
pub mod insight;
pub mod labels;
pub mod plans;
pub mod projects;
mod replay;

/// How many project owners a warm instance remembers. Ownership never changes, so entries never go
/// stale; the bound only caps memory.
const OWNER_CACHE_SIZE: usize = 10_000;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("not authenticated")]
    Unauthorized,
    #[error("project not found")]
    ProjectNotFound,
    #[error("session not found")]
    SessionNotFound,
    #[error("label not found")]
    LabelNotFound,
    /// Calibration needs [`crate::domain::calibration::MIN_LABELS_EACH`] admitted labels of each
    /// kind.
    #[error(
        "calibration needs {min} admitted labels of each kind; the project has {bots} bots and {humans} humans",
        min = crate::domain::calibration::MIN_LABELS_EACH
    )]
    TooFewLabels { bots: usize, humans: usize },
    #[error("webhook not found")]
    WebhookNotFound,
    #[error("delivery not found")]
    DeliveryNotFound,
    #[error("the project already has this webhook")]
    WebhookDuplicate,
    #[error("the project has the most webhooks allowed")]
    WebhookLimit,
    /// The webhook's test events of the last minute are at [`TEST_BUDGET`], or its account's of
    /// this minute at [`ACCOUNT_TEST_BUDGET`]; retry after this many seconds.
    #[error("the {0:?} test budget is spent")]
    TestBudget(TestBudget, u64),
    #[error("refused by the plan: {0:?}")]
    Refused(Refusal),
    #[error("the account has the most projects its plan allows")]
    ProjectLimit,
    #[error("event not found")]
    EventNotFound,
    #[error("the idempotency key was used with another request")]
    IdempotencyMismatch,
    #[error("the project is disabled")]
    ProjectDisabled,
    #[error("no project has this public key")]
    UnknownPublicKey,
    #[error("the page's origin is not the project's domain")]
    OriginNotAllowed,
    #[error("the project requires a session token")]
    SessionTokenRequired,
    #[error(transparent)]
    SessionToken(#[from] crate::domain::session_token::TokenError),
    #[error("the engine gave a score outside [0, 1]: {0}")]
    EngineFault(f64),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type ServiceResult<T> = Result<T, ServiceError>;

/// The service over a store `S`, with the detection engine when `D` is [`Detecting`]. Built once
/// per process (per Lambda cold start).
pub struct Vigil<S, D = ()> {
    store: S,
    owners: Cache<ProjectId, AccountId>,
    url_policy: UrlPolicy,
    clock: Arc<dyn Clock>,
    engine: D,
    /// Projects as read for ingestion, with when they were read.
    projects: Cache<ProjectId, (Instant, Arc<Project>)>,
    /// Projects by public key, for the collect route.
    sites: Cache<String, events::Site>,
    /// Public keys that named no project, with when that was found: a flood of made-up keys
    /// costs one read per key and window, not one per request.
    unknown_keys: Cache<String, Instant>,
    threshold: Score,
    /// How long a rotated-out webhook secret keeps signing.
    secret_overlap: std::time::Duration,
    /// Fetches Web Bot Auth key directories.
    fetcher: Arc<dyn agents::DirectoryFetcher>,
    /// Key directories as this instance found them.
    directories: agents::DirectoryCache,
    /// Directory fetches this instance may still make this minute.
    fetch_budget: Arc<agents::FetchBudget>,
}

/// The engine of a service that evaluates visits ([`Vigil::with_engine`]): the routes that
/// evaluate (events, collect) take a `Vigil<S, Detecting>`, so a process built without the engine
/// cannot serve them.
pub type Detecting = Arc<Engine>;

/// The session a test event's delivery is listed under in the delivery log.
pub const TEST_SESSION: &str = "webhook-test";
/// Test events per webhook per minute: enough to try a receiver, too few to aim deliveries at
/// someone else's host (test deliveries are never retried either).
pub const TEST_BUDGET: usize = 5;
/// Test events per account per minute, over all its webhooks: without it, an account's projects
/// times their 10 webhooks each, all naming one receiver, multiplied the per-webhook budget.
pub const ACCOUNT_TEST_BUDGET: u64 = 20;
const TEST_WINDOW_MS: i64 = 60_000;

/// Which test-event budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestBudget {
    Webhook,
    Account,
}

/// The webhook threshold's default.
const DEFAULT_THRESHOLD: Score = Score::HALF;

impl<S> Vigil<S> {
    pub fn new(store: S, url_policy: UrlPolicy) -> Self {
        Self {
            store,
            owners: Cache::new(OWNER_CACHE_SIZE),
            url_policy,
            clock: Arc::new(SystemClock),
            engine: (),
            projects: Cache::new(OWNER_CACHE_SIZE),
            sites: Cache::new(OWNER_CACHE_SIZE),
            unknown_keys: Cache::new(OWNER_CACHE_SIZE),
            threshold: DEFAULT_THRESHOLD,
            secret_overlap: crate::config::DEFAULT_SECRET_OVERLAP,
            fetcher: Arc::new(agents::NoFetcher),
            directories: agents::directory_cache(),
            fetch_budget: Arc::new(agents::FetchBudget::default()),
        }
    }

    /// The same service evaluating visits with `engine` (the events and collect routes need it).
    pub fn with_engine(self, engine: Detecting) -> Vigil<S, Detecting> {
        Vigil {
            store: self.store,
            owners: self.owners,
            url_policy: self.url_policy,
            clock: self.clock,
            engine,
            projects: self.projects,
            sites: self.sites,
            unknown_keys: self.unknown_keys,
            threshold: self.threshold,
            secret_overlap: self.secret_overlap,
            fetcher: self.fetcher,
            directories: self.directories,
            fetch_budget: self.fetch_budget,
        }
    }
}

impl<S, D> Vigil<S, D> {
    /// The same service counting evaluated visits at or above `threshold` as bots and proxies in
    /// the statistics (the composition roots pass the webhook threshold).
    pub fn with_threshold(mut self, threshold: Score) -> Self {
        self.threshold = threshold;
        self
    }

    /// The same service keeping a rotated-out webhook secret for `overlap`.
    pub fn with_secret_overlap(mut self, overlap: std::time::Duration) -> Self {
        self.secret_overlap = overlap;
        self
    }

    /// The same service fetching Web Bot Auth key directories with `fetcher`.
    pub fn with_directory_fetcher(mut self, fetcher: impl agents::DirectoryFetcher) -> Self {
        self.fetcher = Arc::new(fetcher);
        self
    }

    /// The same service reading the time from `clock` (tests set it to reach exact boundaries).
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    pub fn url_policy(&self) -> UrlPolicy {
        self.url_policy
    }

    /// The engine this service evaluates with (another service on the same store may share it).
    pub fn engine(&self) -> &D {
        &self.engine
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }
}

impl<S: KeyStore + AccountStore, D> Vigil<S, D> {
    /// The account that owns a developer key, with its plan's terms. Only the key's hash is
    /// looked up; a key whose account is gone authenticates nothing.
    pub async fn authenticate(&self, key: &ApiKey) -> ServiceResult<Principal> {
        let account = self
            .store
            .key_account(&key.hash())
            .await?
            .ok_or(ServiceError::Unauthorized)?;
        let plan = self.plan(&account).await?;
        Ok(Principal {
            account,
            terms: plan.terms(),
            plan: Some(plan),
        })
    }
}

impl<S: ProjectStore, D> Vigil<S, D> {
    /// Succeeds when `project` exists and belongs to `account`. Another account's project is
    /// indistinguishable from a missing one. Positive answers are cached.
    pub async fn check_owner(&self, account: &AccountId, project: &ProjectId) -> ServiceResult<()> {
        if let Some(owner) = self.owners.get(project) {
            return if &owner == account {
                Ok(())
            } else {
                Err(ServiceError::ProjectNotFound)
            };
        }
        let p = self.project(account, project).await?;
        self.owners.insert(p.id, p.account_id);
        Ok(())
    }

    pub async fn project(
        &self,
        account: &AccountId,
        project: &ProjectId,
    ) -> ServiceResult<Project> {
        match self.store.project(project).await? {
            Some(p) if &p.account_id == account => Ok(p),
            _ => Err(ServiceError::ProjectNotFound),
        }
    }
}

impl<S: AccountStore, D> Vigil<S, D> {
    /// The terms of the account's plan, for a caller whose credentials did not carry them.
    pub async fn terms(&self, account: &AccountId) -> ServiceResult<Terms> {
        Ok(self.plan(account).await?.terms())
    }

    pub async fn plan(&self, account: &AccountId) -> ServiceResult<Plan> {
        // A key whose account is gone authenticates nothing.
        let account = self
            .store
            .account(account)
            .await?
            .ok_or(ServiceError::Unauthorized)?;
        Ok(account.plan)
    }
}

impl<S: ProjectStore + ResultStore, D> Vigil<S, D> {
    pub async fn results(
        &self,
        account: &AccountId,
        project: &ProjectId,
        session: &SessionId,
        limit: usize,
        after: Option<ResultPosition>,
    ) -> ServiceResult<ResultPage> {
        self.check_owner(account, project).await?;
        Ok(self.store.results(project, session, limit, after).await?)
    }

    pub async fn session_score(
        &self,
        account: &AccountId,
        project: &ProjectId,
        session: &SessionId,
    ) -> ServiceResult<SessionScore> {
        self.check_owner(account, project).await?;
        self.store
            .session_score(project, session)
            .await?
            .ok_or(ServiceError::SessionNotFound)
    }
}

impl<S: ProjectStore + WebhookStore, D> Vigil<S, D> {
    pub async fn create_webhook(
        &self,
        account: &AccountId,
        project: &ProjectId,
        kind: WebhookType,
        url: WebhookUrl,
    ) -> ServiceResult<Webhook> {
        self.check_owner(account, project).await?;
        let webhook = Webhook {
            id: WebhookId::generate(),
            kind,
            url,
            created_at: self.now(),
            secrets: crate::domain::webhook::Secrets::new(),
        };
        self.insert_webhook(project, webhook).await
    }

    /// A webhook's current signing secret; None for a webhook made before secrets per webhook
    /// (signed with the project's `apiKeyPrivate` until a rotation gives it one).
    pub async fn webhook_secret(
        &self,
        account: &AccountId,
        project: &ProjectId,
        id: &WebhookId,
    ) -> ServiceResult<Option<crate::domain::webhook::WebhookSecret>> {
        self.check_owner(account, project).await?;
        let w = self
            .store
            .webhook(project, id)
            .await?
            .ok_or(ServiceError::WebhookNotFound)?;
        Ok(w.secrets.current)
    }

    /// Gives a webhook a new secret; the one it replaces keeps signing beside it for the
    /// configured overlap. Concurrent rotations each start from the secret the other left.
    pub async fn rotate_webhook_secret(
        &self,
        account: &AccountId,
        project: &ProjectId,
        id: &WebhookId,
    ) -> ServiceResult<crate::domain::webhook::WebhookSecret> {
        self.check_owner(account, project).await?;
        for _ in 0..5 {
            let w = self
                .store
                .webhook(project, id)
                .await?
                .ok_or(ServiceError::WebhookNotFound)?;
            let next = w.secrets.rotated(self.now(), self.secret_overlap);
            let written = self
                .store
                .set_webhook_secrets(project, id, w.secrets.current.as_ref(), &next)
                .await?;
            if let (true, Some(secret)) = (written, next.current) {
                return Ok(secret);
            }
        }
        Err(ServiceError::Store(crate::store::StoreError::Throttled(
            "webhook secret too contended".into(),
        )))
    }

    pub async fn webhooks(
        &self,
        account: &AccountId,
        project: &ProjectId,
    ) -> ServiceResult<Vec<Webhook>> {
        self.check_owner(account, project).await?;
        Ok(self.store.webhooks(project).await?)
    }

    pub async fn delete_webhook(
        &self,
        account: &AccountId,
        project: &ProjectId,
        webhook: &WebhookId,
    ) -> ServiceResult<()> {
        self.check_owner(account, project).await?;
        if self.store.delete_webhook(project, webhook).await? {
            Ok(())
        } else {
            Err(ServiceError::WebhookNotFound)
        }
    }
}

/// Most deliveries the log shows: the newest.
pub const MAX_DELIVERIES: usize = 100;

impl<S: ProjectStore + WebhookStore + DeliveryStore, D> Vigil<S, D> {
    /// A webhook's delivery log, newest first.
    /// Queues a `webhook.test` event for a webhook, signed and delivered like a crossing's (the
    /// dispatcher's sweep sends it), and recorded in its delivery log.
    pub async fn test_webhook(
        &self,
        account: &AccountId,
        project: &ProjectId,
        webhook: &WebhookId,
    ) -> ServiceResult<crate::domain::DeliveryId> {
        self.check_owner(account, project).await?;
        let w = self
            .store
            .webhook(project, webhook)
            .await?
            .ok_or(ServiceError::WebhookNotFound)?;
        let now = self.now();
        // The budget is read off the webhook's own delivery log: no counter to keep, and the
        // same on every instance and store.
        let recent: Vec<Timestamp> = self
            .store
            .deliveries(project, webhook, MAX_DELIVERIES)
            .await?
            .into_iter()
            .filter(|d| d.session_id.as_str() == TEST_SESSION)
            .map(|d| d.created_at)
            .filter(|at| now.unix_millis() - at.unix_millis() < TEST_WINDOW_MS)
            .collect();
        if recent.len() >= TEST_BUDGET {
            let oldest = recent.iter().map(|t| t.unix_millis()).min().unwrap_or(0);
            let wait_ms = (oldest + TEST_WINDOW_MS - now.unix_millis()).max(1) as u64;
            return Err(ServiceError::TestBudget(
                TestBudget::Webhook,
                wait_ms.div_ceil(1000),
            ));
        }
        let body = serde_json::json!({
            "type": "webhook.test",
            "timestamp": now,
            "data": {"projectId": project, "webhookId": webhook},
        });
        let d = crate::domain::Delivery {
            id: crate::domain::DeliveryId::generate(),
            project_id: project.clone(),
            webhook_id: webhook.clone(),
            session_id: SessionId::parse(TEST_SESSION).map_err(|e| {
                ServiceError::Store(crate::store::StoreError::Backend(e.to_string().into()))
            })?,
            url: w.url,
            body: body.to_string(),
            crossed_at: now,
            status: crate::domain::DeliveryStatus::Pending,
            attempts: Vec::new(),
            next_attempt_at: Some(now),
            created_at: now,
        };
        if !self
            .store
            .create_test_delivery(account, &d, ACCOUNT_TEST_BUDGET)
            .await?
        {
            // The account's budget is counted by the minute: its next one.
            let wait = 60 - now.unix_seconds().rem_euclid(60);
            return Err(ServiceError::TestBudget(TestBudget::Account, wait as u64));
        }
        Ok(d.id)
    }

    /// Sends a delivery again: the same body and `webhook-id` (receivers de-duplicate on it) as
    /// one more attempt in its log, due now. A delivery still pending is already queued.
    pub async fn redeliver(
        &self,
        account: &AccountId,
        project: &ProjectId,
        id: &crate::domain::DeliveryId,
    ) -> ServiceResult<crate::domain::DeliveryId> {
        self.check_owner(account, project).await?;
        let mut d = self
            .store
            .delivery(project, id)
            .await?
            .ok_or(ServiceError::DeliveryNotFound)?;
        if d.status != crate::domain::DeliveryStatus::Pending {
            d.status = crate::domain::DeliveryStatus::Pending;
            d.next_attempt_at = Some(self.now());
            // Finished deliveries carry no due time; a concurrent redelivery got there first
            // when this refuses, and the delivery is queued either way.
            self.store.update_delivery(&d, None).await?;
        }
        Ok(d.id)
    }

    pub async fn deliveries(
        &self,
        account: &AccountId,
        project: &ProjectId,
        webhook: &WebhookId,
    ) -> ServiceResult<Vec<DeliveryView>> {
        self.check_owner(account, project).await?;
        if !self
            .store
            .webhooks(project)
            .await?
            .iter()
            .any(|w| &w.id == webhook)
        {
            return Err(ServiceError::WebhookNotFound);
        }
        let list = self
            .store
            .deliveries(project, webhook, MAX_DELIVERIES)
            .await?;
        Ok(list.iter().map(DeliveryView::from).collect())
    }
}
