//! An account's projects: created under its plan's `maxProjects`, listed, and changed; who owns
//! each; and what this instance remembers of them (one cache, `project_cache.rs`).

use std::sync::Arc;
use std::time::Duration;

use super::error::{ServiceError, ServiceResult};
use super::project_cache::ProjectCache;
use super::replay;
use crate::domain::Clock;
use crate::domain::SessionId;
use crate::domain::idempotency::{Once, Written};
use crate::domain::plan::Terms;
use crate::domain::project::{Domain, ProjectName};
use crate::domain::sealing::{SealingJwk, SealingKeys};
use crate::domain::session_token;
use crate::domain::token::random_base62;
use crate::domain::{AccountId, Project, ProjectId};
use crate::store::{IdempotencyStore, ProjectInsert, ProjectStore};

/// Projects, the part of [`Vigil`](super::vigil::Vigil) that keeps an account's projects
/// ([`Vigil::projects`](super::vigil::Vigil::projects)), with the instance's one project cache.
pub struct Projects<'a, S> {
    pub(super) store: &'a S,
    pub(super) clock: &'a dyn Clock,
    pub(super) cache: &'a ProjectCache,
    /// How long a rotated-out sealing key stays listed (webhook secrets' overlap).
    pub(super) secret_overlap: Duration,
}

impl<S> Clone for Projects<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Projects<'_, S> {}

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

impl<S: ProjectStore + IdempotencyStore> Projects<'_, S> {
    /// Creates a project with fresh id and keys, unless the account has its plan's most; once per
    /// idempotency key when `once` is given (a retry gets the project the key created).
    pub async fn create(
        self,
        account: &AccountId,
        terms: &Terms,
        spec: ProjectSpec,
        once: Option<&Once>,
    ) -> ServiceResult<Project> {
        if let Some(project) = replay::first(self.store, account, once).await? {
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
            created_at: self.clock.now(),
        };
        match self
            .store
            .insert_project(&project, terms.max_projects, once)
            .await?
        {
            Written::New(ProjectInsert::Created) => {
                self.cache
                    .remember_owner(project.id.clone(), account.clone());
                Ok(project)
            }
            Written::New(ProjectInsert::LimitReached) => Err(ServiceError::ProjectLimit),
            Written::Before(used) => replay::answer(self.store, once, used).await,
        }
    }
}

impl<S: ProjectStore> Projects<'_, S> {
    /// Passes when `account` owns `project`; `ProjectNotFound` otherwise (another account's
    /// project is not said to exist). An instance remembers owners it has read.
    pub async fn check_owner(self, account: &AccountId, project: &ProjectId) -> ServiceResult<()> {
        if let Some(owner) = self.cache.owner(project) {
            return if &owner == account {
                Ok(())
            } else {
                Err(ServiceError::ProjectNotFound)
            };
        }
        let p = self.get(account, project).await?;
        self.cache.remember_owner(p.id, p.account_id);
        Ok(())
    }

    /// One of the account's projects, as stored now.
    pub async fn get(self, account: &AccountId, project: &ProjectId) -> ServiceResult<Project> {
        match self.store.project(project).await? {
            Some(p) if &p.account_id == account => Ok(p),
            _ => Err(ServiceError::ProjectNotFound),
        }
    }

    /// Whether the project exists, whoever owns it (trusted callers only). Known projects are
    /// remembered, as by [`Projects::check_owner`], so a run of writes to one project reads it
    /// once.
    pub async fn exists(self, id: &ProjectId) -> ServiceResult<bool> {
        if self.cache.owner(id).is_some() {
            return Ok(true);
        }
        match self.store.project(id).await? {
            Some(p) => {
                self.cache.remember_owner(p.id, p.account_id);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The project, as read within the last
    /// [`VISITOR_CACHE_TTL`](super::project_cache::VISITOR_CACHE_TTL).
    pub(super) async fn fresh(self, id: &ProjectId) -> ServiceResult<Arc<Project>> {
        if let Some(p) = self.cache.fresh(id) {
            return Ok(p);
        }
        let p = Arc::new(
            self.store
                .project(id)
                .await?
                .ok_or(ServiceError::ProjectNotFound)?,
        );
        self.cache.remember(p.clone());
        Ok(p)
    }

    /// A session token for `session` of `project`, valid for `ttl_secs` (at most 24 hours), as
    /// the customer's backend would mint it (`vigil sessions token`, the demo page).
    pub async fn session_token(
        self,
        project: &ProjectId,
        session: &SessionId,
        ttl_secs: i64,
    ) -> ServiceResult<String> {
        let p = self.fresh(project).await?;
        let ttl = ttl_secs.clamp(1, session_token::MAX_LIFETIME_SECS);
        Ok(session_token::mint(
            &p.api_key_private,
            &p.id,
            session,
            self.clock.now().unix_seconds() + ttl,
        ))
    }

    /// The account's projects, oldest first.
    pub async fn list(self, account: &AccountId) -> ServiceResult<Vec<Project>> {
        let mut list = self.store.account_projects(account).await?;
        list.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(list)
    }

    /// Applies `changes` to one of the account's projects and returns it as it now is.
    pub async fn update(
        self,
        account: &AccountId,
        project: &ProjectId,
        changes: ProjectChanges,
    ) -> ServiceResult<Project> {
        let mut p = self.get(account, project).await?;
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
            self.forget(&p);
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

impl<S: ProjectStore> Projects<'_, S> {
    /// The project's sealing keys (none before sealing was first turned on or a key rotated).
    pub async fn sealing_keys(
        self,
        account: &AccountId,
        project: &ProjectId,
    ) -> ServiceResult<SealingKeysView> {
        let p = self.get(account, project).await?;
        Ok(self.sealing_view(&p))
    }

    /// A new sealing key (the first one when the project has none); the replaced one stays
    /// listed for the overlap webhook secrets have, so verdicts sealed just before still open.
    pub async fn rotate_sealing_key(
        self,
        account: &AccountId,
        project: &ProjectId,
    ) -> ServiceResult<SealingKeysView> {
        let mut p = self.get(account, project).await?;
        p.sealing_keys = Some(match &p.sealing_keys {
            Some(keys) => keys.rotated(self.clock.now(), self.secret_overlap),
            None => SealingKeys::new(),
        });
        if !self.store.update_project(&p).await? {
            return Err(ServiceError::ProjectNotFound);
        }
        self.forget(&p);
        Ok(self.sealing_view(&p))
    }

    fn sealing_view(self, p: &Project) -> SealingKeysView {
        SealingKeysView {
            sealed_results: p.sealed_results,
            keys: p
                .sealing_keys
                .as_ref()
                .map(|k| k.listed(self.clock.now()))
                .unwrap_or_default(),
        }
    }
}

impl<S> Projects<'_, S> {
    /// Forgets what this instance remembers of a project for ingestion, so that a change made
    /// through it (disabled, domain, token setting) applies to the next visit.
    pub fn forget(self, project: &Project) {
        self.cache.forget(project);
    }

    /// Forgets every project's plan terms this instance remembers (an account's plan changed).
    pub fn forget_sites(self) {
        self.cache.forget_sites();
    }
}
