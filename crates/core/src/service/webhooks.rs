//! A project's webhooks: creating, listing and deleting them, their signing secrets, and the
//! test event (a delivery queued under its own budget).

use super::deliveries::MAX_DELIVERIES;
use super::error::{ServiceError, ServiceResult, TestBudget};
use super::vigil::Vigil;
use crate::domain::webhook::{WebhookType, WebhookUrl};
use crate::domain::{AccountId, ProjectId, SessionId, Timestamp, Webhook, WebhookId};
use crate::store::write::{TestAdmission, TestCaps};
use crate::store::{DeliveryStore, ProjectStore, WebhookStore};

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
            let next = w.secrets.rotated(self.now(), self.webhooks.secret_overlap);
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

impl<S: ProjectStore + WebhookStore + DeliveryStore, D> Vigil<S, D> {
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
