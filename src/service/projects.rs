//! An account's projects: created under its plan's `maxProjects`, listed, and changed.

use super::{ServiceError, ServiceResult, Vigil};
use crate::domain::plan::Terms;
use crate::domain::project::{Domain, ProjectName};
use crate::domain::token::random_base62;
use crate::domain::{AccountId, Project, ProjectId};
use crate::store::{ProjectInsert, ProjectStore};

/// What a `PATCH` changes; absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectChanges {
    pub name: Option<ProjectName>,
    pub domain: Option<Domain>,
    pub disabled: Option<bool>,
}

impl<S: ProjectStore> Vigil<S> {
    /// Creates a project with fresh id and keys, unless the account has its plan's most.
    pub async fn create_project(
        &self,
        account: &AccountId,
        terms: &Terms,
        name: ProjectName,
        domain: Domain,
    ) -> ServiceResult<Project> {
        let project = Project {
            id: ProjectId::generate(),
            account_id: account.clone(),
            name: name.into_string(),
            api_key_public: format!("pk_{}", random_base62(24)),
            api_key_private: format!("sk_{}", random_base62(32)),
            domain: domain.into_string(),
            disabled: false,
            created_at: self.now(),
        };
        match self
            .store
            .create_project(&project, terms.max_projects)
            .await?
        {
            ProjectInsert::Created => {
                self.owners.insert(project.id.clone(), account.clone());
                Ok(project)
            }
            ProjectInsert::LimitReached => Err(ServiceError::ProjectLimit),
        }
    }

    /// The account's projects, oldest first.
    pub async fn projects(&self, account: &AccountId) -> ServiceResult<Vec<Project>> {
        let mut list = self.store.account_projects(account).await?;
        list.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(list)
    }

    /// Applies `changes` to one of the account's projects and returns it as it now is.
    pub async fn update_project(
        &self,
        account: &AccountId,
        project: &ProjectId,
        changes: ProjectChanges,
    ) -> ServiceResult<Project> {
        let mut p = self.project(account, project).await?;
        if let Some(name) = changes.name {
            p.name = name.into_string();
        }
        if let Some(domain) = changes.domain {
            p.domain = domain.into_string();
        }
        if let Some(disabled) = changes.disabled {
            p.disabled = disabled;
        }
        if self.store.update_project(&p).await? {
            Ok(p)
        } else {
            Err(ServiceError::ProjectNotFound)
        }
    }
}
