//! What a warm instance remembers of projects, in one place: by id, a project's owner (every
//! developer request's ownership check) and the project as last read (ingestion); by public key,
//! the site a page reaches, or that the key named no project. A change made through this
//! instance forgets what it changed (`ProjectCache::forget`); other instances catch up within
//! the TTLs below.

use std::sync::Arc;
use std::time::{Duration, Instant};

use quick_cache::sync::Cache;

use super::site::Site;
use crate::domain::{AccountId, Project, ProjectId};

/// How long a warm instance trusts what it read of a project (its domain, whether it is disabled)
/// and of its account's plan: a change made through the API applies to new visits within this.
pub const VISITOR_CACHE_TTL: Duration = Duration::from_secs(60);
/// How long a public key that named no project is answered from memory: a flood of made-up keys
/// costs one read per key and window, not one per request.
pub const UNKNOWN_KEY_TTL: Duration = Duration::from_secs(10);
/// Entries a warm instance keeps by id and by public key. Ownership never changes, so an owner
/// never goes stale; the bound only caps memory.
const ENTRIES: usize = 10_000;

/// A project as this instance knows it by id.
#[derive(Clone)]
struct Known {
    owner: AccountId,
    /// The project and when it was read, once ingestion read it.
    read: Option<(Instant, Arc<Project>)>,
}

/// What a public key named, and since when.
#[derive(Clone)]
enum ByKey {
    Site(Site),
    Unknown(Instant),
}

/// The one cache of projects a service instance keeps.
pub(super) struct ProjectCache {
    by_id: Cache<ProjectId, Known>,
    by_key: Cache<String, ByKey>,
}

impl Default for ProjectCache {
    fn default() -> Self {
        Self {
            by_id: Cache::new(ENTRIES),
            by_key: Cache::new(ENTRIES),
        }
    }
}

impl ProjectCache {
    /// The project's owner, if this instance has seen the project.
    pub(super) fn owner(&self, id: &ProjectId) -> Option<AccountId> {
        self.by_id.get(id).map(|k| k.owner)
    }

    /// Remembers who owns a project (kept as long as the bound allows: it never changes).
    pub(super) fn remember_owner(&self, id: ProjectId, owner: AccountId) {
        if self.by_id.get(&id).is_none() {
            self.by_id.insert(id, Known { owner, read: None });
        }
    }

    /// The project as read within the last [`VISITOR_CACHE_TTL`].
    pub(super) fn fresh(&self, id: &ProjectId) -> Option<Arc<Project>> {
        match self.by_id.get(id)?.read {
            Some((at, p)) if at.elapsed() < VISITOR_CACHE_TTL => Some(p),
            _ => None,
        }
    }

    /// Remembers a project just read.
    pub(super) fn remember(&self, project: Arc<Project>) {
        self.by_id.insert(
            project.id.clone(),
            Known {
                owner: project.account_id.clone(),
                read: Some((Instant::now(), project)),
            },
        );
    }

    /// The site of a public key, as read within the last [`VISITOR_CACHE_TTL`].
    pub(super) fn site(&self, public_key: &str) -> Option<Site> {
        match self.by_key.get(public_key)? {
            ByKey::Site(s) if s.read_at.elapsed() < VISITOR_CACHE_TTL => Some(s),
            _ => None,
        }
    }

    /// Whether the key named no project within the last [`UNKNOWN_KEY_TTL`].
    pub(super) fn known_unknown(&self, public_key: &str) -> bool {
        matches!(self.by_key.get(public_key),
            Some(ByKey::Unknown(at)) if at.elapsed() < UNKNOWN_KEY_TTL)
    }

    pub(super) fn remember_site(&self, public_key: &str, site: Site) {
        self.by_key.insert(public_key.to_owned(), ByKey::Site(site));
    }

    pub(super) fn remember_unknown(&self, public_key: &str) {
        self.by_key
            .insert(public_key.to_owned(), ByKey::Unknown(Instant::now()));
    }

    /// Forgets what ingestion read of a project (its site and its copy), so that a change made
    /// through this instance applies to the next visit. Its owner stays known.
    pub(super) fn forget(&self, project: &Project) {
        self.by_key.remove(&project.api_key_public);
        if let Some(known) = self.by_id.get(&project.id) {
            self.by_id.insert(
                project.id.clone(),
                Known {
                    owner: known.owner,
                    read: None,
                },
            );
        }
    }

    /// Forgets every site, whose plan terms may have changed (an account's plan did).
    pub(super) fn forget_sites(&self) {
        self.by_key.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::PlanStatus;
    use crate::domain::plan::Terms;

    #[test]
    fn forgetting_a_project_keeps_its_owner_and_drops_its_site() {
        let cache = ProjectCache::default();
        let mut p = Project::example();
        p.api_key_public = "pk_test".into();
        let p = Arc::new(p);
        cache.remember(p.clone());
        let terms = Terms {
            status: PlanStatus::Active,
            expires_at: None,
            subscribed_at: p.created_at,
            max_rps: 5,
            max_requests: 100,
            max_projects: 3,
        };
        let site = Site {
            project: p.clone(),
            terms,
            read_at: Instant::now(),
        };
        cache.remember_site("pk_test", site);
        assert!(cache.fresh(&p.id).is_some() && cache.site("pk_test").is_some());
        cache.forget(&p);
        assert!(cache.fresh(&p.id).is_none() && cache.site("pk_test").is_none());
        assert_eq!(cache.owner(&p.id), Some(p.account_id.clone()));
        cache.remember_unknown("pk_none");
        assert!(cache.known_unknown("pk_none") && !cache.known_unknown("pk_test"));
        cache.forget_sites();
        assert!(!cache.known_unknown("pk_none"));
    }
}
