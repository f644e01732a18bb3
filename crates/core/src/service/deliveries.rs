//! A webhook's delivery log, and sending a delivery again.

use super::error::{ServiceError, ServiceResult};
use super::webhooks::{MAX_DELIVERIES, Webhooks};
use crate::domain::{AccountId, DeliveryView, ProjectId, WebhookId};
use crate::store::{DeliveryStore, ProjectStore, WebhookStore};

impl<S: ProjectStore + WebhookStore + DeliveryStore> Webhooks<'_, S> {
    /// Sends a delivery again: the same body and `webhook-id` (receivers de-duplicate on it) as
    /// one more attempt in its log, due now. A delivery still pending is already queued.
    pub async fn redeliver(
        self,
        account: &AccountId,
        project: &ProjectId,
        id: &crate::domain::DeliveryId,
    ) -> ServiceResult<crate::domain::DeliveryId> {
        self.projects.check_owner(account, project).await?;
        let mut d = self
            .store
            .delivery(project, id)
            .await?
            .ok_or(ServiceError::DeliveryNotFound)?;
        if d.status != crate::domain::DeliveryStatus::Pending {
            d.status = crate::domain::DeliveryStatus::Pending;
            d.next_attempt_at = Some(self.clock.now());
            // Finished deliveries carry no due time; a concurrent redelivery got there first
            // when this refuses, and the delivery is queued either way.
            self.store.update_delivery(&d, None).await?;
        }
        Ok(d.id)
    }

    /// A webhook's delivery log, newest first.
    pub async fn deliveries(
        self,
        account: &AccountId,
        project: &ProjectId,
        webhook: &WebhookId,
    ) -> ServiceResult<Vec<DeliveryView>> {
        self.projects.check_owner(account, project).await?;
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
