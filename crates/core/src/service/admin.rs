//! Trusted operations for seeding, the demo data and the command line: they act on any account or
//! project, without authentication or tenancy, and write through the same paths as the API.

use super::error::{ServiceError, ServiceResult};
use super::vigil::Vigil;
use crate::domain::token::ApiKey;
use crate::domain::{Account, AccountId, NewResult, Project, ProjectId, ResultPosition, Webhook};
use crate::store::{
    AccountStore, AdminStore, ProjectStore, ResultStore, WebhookInsert, WebhookStore,
};

impl<S: AdminStore, D> Vigil<S, D> {
    /// Creates or replaces an account, and adds developer keys to it (only their hashes are kept).
    pub async fn put_account(&self, account: &Account, keys: &[ApiKey]) -> ServiceResult<()> {
        self.store.put_account(account).await?;
        // A changed plan applies to this instance's next visit.
        self.forget_plans();
        for key in keys {
            self.store.put_key(&key.hash(), &account.id).await?;
        }
        Ok(())
    }

    /// Creates or replaces a project.
    pub async fn put_project(&self, project: &Project) -> ServiceResult<()> {
        self.store.put_project(project).await?;
        self.forget_project(project);
        Ok(())
    }

    /// True when the store holds no account at all (a fresh database).
    pub async fn is_empty(&self) -> ServiceResult<bool> {
        Ok(self.store.is_empty().await?)
    }
}

impl<S: AccountStore, D> Vigil<S, D> {
    pub async fn account_exists(&self, id: &AccountId) -> ServiceResult<bool> {
        Ok(self.store.account(id).await?.is_some())
    }
}

impl<S: ProjectStore, D> Vigil<S, D> {
    /// Whether the project exists, whoever owns it. Known projects are remembered, as by
    /// [`Vigil::check_owner`], so a run of writes to one project reads it once.
    pub async fn project_exists(&self, id: &ProjectId) -> ServiceResult<bool> {
        if self.projects.owner(id).is_some() {
            return Ok(true);
        }
        match self.store.project(id).await? {
            Some(p) => {
                self.projects.remember_owner(p.id, p.account_id);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

impl<S: ProjectStore + ResultStore, D> Vigil<S, D> {
    /// Records a result of an existing project: the one write path of every result (the command
    /// line, seeds and demo data), which keeps the session summary and feeds webhooks.
    pub async fn add_result(&self, result: &NewResult) -> ServiceResult<ResultPosition> {
        if !self.project_exists(&result.project_id).await? {
            return Err(ServiceError::ProjectNotFound);
        }
        Ok(self.store.add_result(result).await?)
    }
}

impl<S: WebhookStore, D> Vigil<S, D> {
    /// A project's webhooks, whoever owns it.
    pub async fn project_webhooks(&self, project: &ProjectId) -> ServiceResult<Vec<Webhook>> {
        Ok(self.store.webhooks(project).await?)
    }

    /// Stores a fully formed webhook (seeding keeps the ids of its file), under the same uniqueness
    /// and limit as the API's creation.
    pub async fn insert_webhook(
        &self,
        project: &ProjectId,
        webhook: Webhook,
    ) -> ServiceResult<Webhook> {
        match self.store.insert_webhook(project, &webhook).await? {
            WebhookInsert::Created => Ok(webhook),
            WebhookInsert::Duplicate => Err(ServiceError::WebhookDuplicate),
            WebhookInsert::LimitReached => Err(ServiceError::WebhookLimit),
        }
    }
}
