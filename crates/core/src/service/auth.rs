//! Who a caller is and what it owns: a developer key's account and plan, and the check that a
//! project is the account's, which every per-project operation makes first.

use super::error::{ServiceError, ServiceResult};
use super::vigil::Vigil;
use crate::domain::plan::{Principal, Terms};
use crate::domain::token::ApiKey;
use crate::domain::{AccountId, Plan, Project, ProjectId};
use crate::store::{AccountStore, KeyStore, ProjectStore};

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
        if let Some(owner) = self.projects.owner(project) {
            return if &owner == account {
                Ok(())
            } else {
                Err(ServiceError::ProjectNotFound)
            };
        }
        let p = self.project(account, project).await?;
        self.projects.remember_owner(p.id, p.account_id);
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
