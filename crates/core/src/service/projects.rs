//! An account's projects: created under its plan's `maxProjects`, listed, and changed.

use super::error::{ServiceError, ServiceResult};
use super::vigil::Vigil;
use crate::domain::idempotency::{Once, Written};
use crate::domain::plan::Terms;
use crate::domain::project::{Domain, ProjectName};
use crate::domain::sealing::{SealingJwk, SealingKeys};
use crate::domain::token::random_base62;
use crate::domain::{AccountId, Project, ProjectId};
use crate::store::{IdempotencyStore, ProjectInsert, ProjectStore};

/// What a `PATCH` changes; absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectChanges {
    pub name: Option<ProjectName>,
    pub domain: Option<Domain>,
    pub disabled: Option<bool>,
    pub require_session_token: Option<bool>,
    pub webhook_legacy_signature: Option<bool>,
    pub agents: Option<crate::domain::project::AgentPolicy>,
    pub sealed_results: Option<bool>,
    pub model: Option<crate::domain::calibration::ModelChoice>,
}

/// What a new project is: its name and domain, and whether its visits need session tokens (on
/// unless the request turns it off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectSpec {
    pub name: ProjectName,
    pub domain: Domain,
    pub require_session_token: bool,
}

impl<S: ProjectStore + IdempotencyStore, D> Vigil<S, D> {
    /// Creates a project with fresh id and keys, unless the account has its plan's most; once per
    /// idempotency key when `once` is given (a retry gets the project the key created).
    pub async fn create_project(
        &self,
        account: &AccountId,
        terms: &Terms,
        spec: ProjectSpec,
        once: Option<&Once>,
    ) -> ServiceResult<Project> {
        if let Some(project) = self.replay_first(account, once).await? {
            return Ok(project);
        }
        let ProjectSpec {
            name,
            domain,
            require_session_token,
        } = spec;
        let project = Project {
            id: ProjectId::generate(),
            account_id: account.clone(),
            name: name.into_string(),
            api_key_public: format!("pk_{}", random_base62(24)),
            api_key_private: format!("sk_{}", random_base62(32)),
            domain: domain.into_string(),
            disabled: false,
            require_session_token,
            webhook_legacy_signature: true,
            sealed_results: false,
            sealing_keys: None,
            model: Default::default(),
            calibration: None,
            agents: Default::default(),
            created_at: self.now(),
        };
        match self
            .store
            .insert_project(&project, terms.max_projects, once)
            .await?
        {
            Written::New(ProjectInsert::Created) => {
                self.projects
                    .remember_owner(project.id.clone(), account.clone());
                Ok(project)
            }
            Written::New(ProjectInsert::LimitReached) => Err(ServiceError::ProjectLimit),
            Written::Before(used) => self.replay(once, used).await,
        }
    }
}

impl<S: ProjectStore, D> Vigil<S, D> {
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
        if let Some(require) = changes.require_session_token {
            p.require_session_token = require;
        }
        if let Some(legacy) = changes.webhook_legacy_signature {
            p.webhook_legacy_signature = legacy;
        }
        if let Some(agents) = changes.agents {
            p.agents = agents;
        }
        if let Some(sealed) = changes.sealed_results {
            p.sealed_results = sealed;
            // The first time sealing is on, the project gets its keys.
            if sealed && p.sealing_keys.is_none() {
                p.sealing_keys = Some(crate::domain::sealing::SealingKeys::new());
            }
        }
        if let Some(model) = changes.model {
            p.model = model;
        }
        if self.store.update_project(&p).await? {
            // This instance refuses or admits visits by the change at once; other instances
            // within VISITOR_CACHE_TTL.
            self.forget_project(&p);
            Ok(p)
        } else {
            Err(ServiceError::ProjectNotFound)
        }
    }
}

/// A project's sealing keys as the API shows them: whether it seals, and the keys a backend
/// should hold (JWKs: the current one first, then those rotated out still in their overlap).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SealingKeysView {
    pub sealed_results: bool,
    pub keys: Vec<SealingJwk>,
}

impl<S: ProjectStore, D> Vigil<S, D> {
    /// The project's sealing keys (none before sealing was first turned on or a key rotated).
    pub async fn sealing_keys(
        &self,
        account: &AccountId,
        project: &ProjectId,
    ) -> ServiceResult<SealingKeysView> {
        let p = self.project(account, project).await?;
        Ok(self.sealing_view(&p))
    }

    /// A new sealing key (the first one when the project has none); the replaced one stays
    /// listed for the overlap webhook secrets have, so verdicts sealed just before still open.
    pub async fn rotate_sealing_key(
        &self,
        account: &AccountId,
        project: &ProjectId,
    ) -> ServiceResult<SealingKeysView> {
        let mut p = self.project(account, project).await?;
        p.sealing_keys = Some(match &p.sealing_keys {
            Some(keys) => keys.rotated(self.now(), self.webhooks.secret_overlap),
            None => SealingKeys::new(),
        });
        if !self.store.update_project(&p).await? {
            return Err(ServiceError::ProjectNotFound);
        }
        self.forget_project(&p);
        Ok(self.sealing_view(&p))
    }

    fn sealing_view(&self, p: &Project) -> SealingKeysView {
        SealingKeysView {
            sealed_results: p.sealed_results,
            keys: p
                .sealing_keys
                .as_ref()
                .map(|k| k.listed(self.now()))
                .unwrap_or_default(),
        }
    }
}
