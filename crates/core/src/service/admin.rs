//! Trusted operations for seeding, the demo data and the command line: they act on any account or
//! project, without authentication or tenancy, and write through the same paths as the API.

use super::error::{ServiceError, ServiceResult};
use super::vigil::Vigil;
use crate::domain::token::ApiKey;
use crate::domain::{Account, AccountId, NewResult, Project, ProjectId, ResultPosition, Webhook};
use crate::store::{AccountStore, AdminStore, ProjectStore, ResultStore, WebhookStore};

impl<S: AdminStore, D> Vigil<S, D> {
    /// Creates or replaces an account, and adds developer keys to it (only their hashes are kept).
    pub async fn put_account(&self, account: &Account, keys: &[ApiKey]) -> ServiceResult<()> {
        self.store.put_account(account).await?;
        // A changed plan applies to this instance's next visit.
        self.projects().forget_sites();
        for key in keys {
            self.store.put_key(&key.hash(), &account.id).await?;
        }
        Ok(())
    }

    /// Creates or replaces a project.
    pub async fn put_project(&self, project: &Project) -> ServiceResult<()> {
        self.store.put_project(project).await?;
        self.projects().forget(project);
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

impl<S: ProjectStore + ResultStore, D> Vigil<S, D> {
    /// Records a result of an existing project: the one write path of every result (the command
    /// line, seeds and demo data), which keeps the session summary and feeds webhooks.
    pub async fn add_result(&self, result: &NewResult) -> ServiceResult<ResultPosition> {
        if !self.projects().exists(&result.project_id).await? {
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
}
