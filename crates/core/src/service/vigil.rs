//! The [`Vigil`] service itself and how it is built; the files beside this one give it its
//! operations, a file per resource.

use std::sync::Arc;
use std::time::Instant;

use quick_cache::sync::Cache;

use super::site::Site;
use super::web_bot_auth::directories::{
    DirectoryCache, DirectoryFetcher, FetchBudget, NoFetcher, directory_cache,
};
use crate::domain::webhook::UrlPolicy;
use crate::domain::{AccountId, Clock, Project, ProjectId, Score, SystemClock, Timestamp};
use vigil_detect::Engine;

/// How many project owners a warm instance remembers. Ownership never changes, so entries never go
/// stale; the bound only caps memory.
const OWNER_CACHE_SIZE: usize = 10_000;

/// The service over a store `S`, with the detection engine when `D` is [`Detecting`]. Built once
/// per process (per Lambda cold start).
pub struct Vigil<S, D = ()> {
    pub(super) store: S,
    pub(super) owners: Cache<ProjectId, AccountId>,
    pub(super) url_policy: UrlPolicy,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) engine: D,
    /// Projects as read for ingestion, with when they were read.
    pub(super) projects: Cache<ProjectId, (Instant, Arc<Project>)>,
    /// Projects by public key, for the collect route.
    pub(super) sites: Cache<String, Site>,
    /// Public keys that named no project, with when that was found: a flood of made-up keys
    /// costs one read per key and window, not one per request.
    pub(super) unknown_keys: Cache<String, Instant>,
    pub(super) threshold: Score,
    /// How long a rotated-out webhook secret keeps signing.
    pub(super) secret_overlap: std::time::Duration,
    /// Fetches Web Bot Auth key directories.
    pub(super) fetcher: Arc<dyn DirectoryFetcher>,
    /// Key directories as this instance found them.
    pub(super) directories: DirectoryCache,
    /// Directory fetches this instance may still make this minute.
    pub(super) fetch_budget: Arc<FetchBudget>,
}

/// The engine of a service that evaluates visits ([`Vigil::with_engine`]): the routes that
/// evaluate (events, collect) take a `Vigil<S, Detecting>`, so a process built without the engine
/// cannot serve them.
pub type Detecting = Arc<Engine>;

impl<S> Vigil<S> {
    pub fn new(store: S, url_policy: UrlPolicy) -> Self {
        Self {
            store,
            owners: Cache::new(OWNER_CACHE_SIZE),
            url_policy,
            clock: Arc::new(SystemClock),
            engine: (),
            projects: Cache::new(OWNER_CACHE_SIZE),
            sites: Cache::new(OWNER_CACHE_SIZE),
            unknown_keys: Cache::new(OWNER_CACHE_SIZE),
            threshold: crate::domain::webhook::DEFAULT_THRESHOLD,
            secret_overlap: crate::config::DEFAULT_SECRET_OVERLAP,
            fetcher: Arc::new(NoFetcher),
            directories: directory_cache(),
            fetch_budget: Arc::new(FetchBudget::default()),
        }
    }

    /// The same service evaluating visits with `engine` (the events and collect routes need it).
    pub fn with_engine(self, engine: Detecting) -> Vigil<S, Detecting> {
        Vigil {
            store: self.store,
            owners: self.owners,
            url_policy: self.url_policy,
            clock: self.clock,
            engine,
            projects: self.projects,
            sites: self.sites,
            unknown_keys: self.unknown_keys,
            threshold: self.threshold,
            secret_overlap: self.secret_overlap,
            fetcher: self.fetcher,
            directories: self.directories,
            fetch_budget: self.fetch_budget,
        }
    }
}

impl<S, D> Vigil<S, D> {
    /// The same service counting evaluated visits at or above `threshold` as bots and proxies in
    /// the statistics (the composition roots pass the webhook threshold).
    pub fn with_threshold(mut self, threshold: Score) -> Self {
        self.threshold = threshold;
        self
    }

    /// The same service keeping a rotated-out webhook secret for `overlap`.
    pub fn with_secret_overlap(mut self, overlap: std::time::Duration) -> Self {
        self.secret_overlap = overlap;
        self
    }

    /// The same service fetching Web Bot Auth key directories with `fetcher`.
    pub fn with_directory_fetcher(mut self, fetcher: impl DirectoryFetcher) -> Self {
        self.fetcher = Arc::new(fetcher);
        self
    }

    /// The same service reading the time from `clock` (tests set it to reach exact boundaries).
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    pub fn url_policy(&self) -> UrlPolicy {
        self.url_policy
    }

    /// The engine this service evaluates with (another service on the same store may share it).
    pub fn engine(&self) -> &D {
        &self.engine
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }
}
