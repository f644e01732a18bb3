//! What the collect route knows of a project ([`Site`]). Its own file because the service
//! ([`super::vigil::Vigil`]) caches sites, while `events.rs`, which reads them, uses the service.

use std::sync::Arc;
use std::time::Instant;

use crate::domain::Project;
use crate::domain::plan::Terms;

/// A site: a project as a public page reaches it (by its public key, from its domain), with its
/// account's plan terms, read once per [`VISITOR_CACHE_TTL`](super::project_cache::VISITOR_CACHE_TTL).
#[derive(Clone)]
pub struct Site {
    pub project: Arc<Project>,
    pub terms: Terms,
    pub(super) read_at: Instant,
}
