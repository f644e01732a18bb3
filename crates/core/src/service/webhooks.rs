//! A project's webhooks: creating, listing and deleting them, their signing secrets, and the
//! test event (a delivery queued under its own budget).

use super::error::{ServiceError, ServiceResult, TestBudget};
use super::projects::Projects;
use crate::domain::Clock;
use crate::domain::webhook::UrlPolicy;
use crate::domain::webhook::{WebhookType, WebhookUrl};
use crate::domain::{AccountId, ProjectId, Score, SessionId, Timestamp, Webhook, WebhookId};
use crate::store::write::{TestAdmission, TestCaps};
use crate::store::{DeliveryStore, ProjectStore, WebhookInsert, WebhookStore};

/// The session a test event's delivery is listed under in the delivery log (what marks it as a
/// test is its own field, [`crate::domain::Delivery::test`]).
pub const TEST_SESSION: &str = "webhook-test";
/// Test events per webhook per minute: enough to try a receiver, too few to aim deliveries at
/// someone else's host (test deliveries are never retried either).
pub const TEST_BUDGET: usize = 5;
/// Test events per account per minute, over all its webhooks: without it, an account's projects
/// times their 10 webhooks each, all naming one receiver, multiplied the per-webhook budget.
pub const ACCOUNT_TEST_BUDGET: u64 = 20;
const TEST_WINDOW_MS: i64 = 60_000;

/// Most deliveries the log shows: the newest.
pub const MAX_DELIVERIES: usize = 100;

/// What webhooks are held to: where they may point, the score that crosses, and how long a
/// rotated-out secret keeps signing.
pub(super) struct WebhookPolicy {
    pub(super) url_policy: UrlPolicy,
    /// The webhook threshold, which statistics, quality and calibration count by too.
    pub(super) threshold: Score,
    pub(super) secret_overlap: std::time::Duration,
}

/// Webhooks, the part of [`Vigil`](super::vigil::Vigil) that keeps a project's webhooks and their
/// deliveries ([`Vigil::webhooks`](super::vigil::Vigil::webhooks)), under the webhook policy.
pub struct Webhooks<'a, S> {
    pub(super) store: &'a S,
    pub(super) clock: &'a dyn Clock,
    /// Whose project a webhook belongs to.
    pub(super) projects: Projects<'a, S>,
    pub(super) policy: &'a WebhookPolicy,
}

impl<S> Clone for Webhooks<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Webhooks<'_, S> {}

impl<S> Webhooks<'_, S> {
    /// Where a webhook may point.
    pub fn url_policy(self) -> UrlPolicy {
        self.policy.url_policy
    }
}

impl<S: ProjectStore + WebhookStore> Webhooks<'_, S> {
    pub async fn create(
        self,
        account: &AccountId,
        project: &ProjectId,
        kind: WebhookType,
        url: WebhookUrl,
    ) -> ServiceResult<Webhook> {
        self.projects.check_owner(account, project).await?;
        let webhook = Webhook {
            id: WebhookId::generate(),
            kind,
            url,
            created_at: self.clock.now(),
            secrets: crate::domain::webhook::Secrets::new(),
        };
        self.insert(project, webhook).await
    }

    /// A webhook's current signing secret; None for a webhook made before secrets per webhook
    /// (signed with the project's `apiKeyPrivate` until a rotation gives it one).
    /// Stores a fully formed webhook (seeding keeps the ids of its file) under the uniqueness and
    /// limit of the API's creation, whoever owns the project (trusted callers, and [`Self::create`]
    /// once it has checked the owner).
    pub async fn insert(self, project: &ProjectId, webhook: Webhook) -> ServiceResult<Webhook> {
        match self.store.insert_webhook(project, &webhook).await? {
            WebhookInsert::Created => Ok(webhook),
            WebhookInsert::Duplicate => Err(ServiceError::WebhookDuplicate),
            WebhookInsert::LimitReached => Err(ServiceError::WebhookLimit),
        }
    }

    pub async fn secret(
        self,
        account: &AccountId,
        project: &ProjectId,
        id: &WebhookId,
    ) -> ServiceResult<Option<crate::domain::webhook::WebhookSecret>> {
        self.projects.check_owner(account, project).await?;
        let w = self
            .store
            .webhook(project, id)
            .await?
            .ok_or(ServiceError::WebhookNotFound)?;
        Ok(w.secrets.current)
    }

    /// Gives a webhook a new secret; the one it replaces keeps signing beside it for the
    /// configured overlap. Concurrent rotations each start from the secret the other left.
    pub async fn rotate_secret(
        self,
        account: &AccountId,
        project: &ProjectId,
        id: &WebhookId,
    ) -> ServiceResult<crate::domain::webhook::WebhookSecret> {
        self.projects.check_owner(account, project).await?;
        for _ in 0..5 {
            let w = self
                .store
                .webhook(project, id)
                .await?
                .ok_or(ServiceError::WebhookNotFound)?;
            let next = w
                .secrets
                .rotated(self.clock.now(), self.policy.secret_overlap);
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

    pub async fn list(
        self,
        account: &AccountId,
        project: &ProjectId,
    ) -> ServiceResult<Vec<Webhook>> {
        self.projects.check_owner(account, project).await?;
        Ok(self.store.webhooks(project).await?)
    }

    pub async fn delete(
        self,
        account: &AccountId,
        project: &ProjectId,
        webhook: &WebhookId,
    ) -> ServiceResult<()> {
        self.projects.check_owner(account, project).await?;
        if self.store.delete_webhook(project, webhook).await? {
            Ok(())
        } else {
            Err(ServiceError::WebhookNotFound)
        }
    }
}

impl<S: ProjectStore + WebhookStore + DeliveryStore> Webhooks<'_, S> {
    /// Queues a `webhook.test` event for a webhook, signed and delivered like a crossing's (the
    /// dispatcher's sweep sends it), and recorded in its delivery log.
    pub async fn test(
        self,
        account: &AccountId,
        project: &ProjectId,
        webhook: &WebhookId,
    ) -> ServiceResult<crate::domain::DeliveryId> {
        self.projects.check_owner(account, project).await?;
        let w = self
            .store
            .webhook(project, webhook)
            .await?
            .ok_or(ServiceError::WebhookNotFound)?;
        let now = self.clock.now();
        // The budget is read off the webhook's own delivery log: no counter to keep, and the
        // same on every instance and store.
        let recent: Vec<Timestamp> = self
            .store
            .deliveries(project, webhook, MAX_DELIVERIES)
            .await?
            .into_iter()
            .filter(|d| d.test)
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
            test: true,
        };
        let caps = TestCaps {
            account: ACCOUNT_TEST_BUDGET,
            webhook: TEST_BUDGET as u64,
        };
        // Both budgets are counted by the minute, in the write that queues the delivery: a full
        // one has room again the next minute.
        let wait = (60 - now.unix_seconds().rem_euclid(60)) as u64;
        match self.store.create_test_delivery(account, &d, caps).await? {
            TestAdmission::Queued => Ok(d.id),
            TestAdmission::AccountFull => Err(ServiceError::TestBudget(TestBudget::Account, wait)),
            TestAdmission::WebhookFull => Err(ServiceError::TestBudget(TestBudget::Webhook, wait)),
        }
    }
}
