//! The [`Vigil`] service itself and how it is built; the files beside this one give it its
//! operations, a file per resource.

use std::sync::Arc;

use super::project_cache::ProjectCache;
use super::web_bot_auth::directories::{Directories, DirectoryFetcher, NoFetcher};
use crate::domain::webhook::UrlPolicy;
use crate::domain::{Clock, Score, SystemClock, Timestamp};
use vigil_detect::Engine;

/// The service over a store `S`, with the detection engine when `D` is [`Detecting`]. Built once
/// per process (per Lambda cold start). Its parts by concern: the store and the clock every
/// operation reads, the engine, what the instance remembers of projects, the webhook policy, and
/// Web Bot Auth's key directories.
pub struct Vigil<S, D = ()> {
    pub(super) store: S,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) engine: D,
    /// Projects' owners, projects read for ingestion, and sites by public key (`project_cache.rs`).
    pub(super) projects: ProjectCache,
    pub(super) webhooks: WebhookPolicy,
    /// Web Bot Auth's key directories (`web_bot_auth/directories.rs`).
    pub(super) directories: Directories,
}

/// What webhooks are held to: where they may point, the score that crosses, and how long a
/// rotated-out secret keeps signing.
pub(super) struct WebhookPolicy {
    pub(super) url_policy: UrlPolicy,
    /// The webhook threshold, which statistics, quality and calibration count by too.
    pub(super) threshold: Score,
    pub(super) secret_overlap: std::time::Duration,
}

/// The engine of a service that evaluates visits ([`Vigil::with_engine`]): the routes that
/// evaluate (events, collect) take a `Vigil<S, Detecting>`, so a process built without the engine
/// cannot serve them.
pub type Detecting = Arc<Engine>;

impl<S> Vigil<S> {
    pub fn new(store: S, url_policy: UrlPolicy) -> Self {
        Self {
            store,
            clock: Arc::new(SystemClock),
            engine: (),
            projects: ProjectCache::default(),
            webhooks: WebhookPolicy {
                url_policy,
                threshold: crate::domain::webhook::DEFAULT_THRESHOLD,
                secret_overlap: crate::config::DEFAULT_SECRET_OVERLAP,
            },
            directories: Directories::new(Arc::new(NoFetcher)),
        }
    }

    /// The same service evaluating visits with `engine` (the events and collect routes need it).
    pub fn with_engine(self, engine: Detecting) -> Vigil<S, Detecting> {
        Vigil {
            store: self.store,
            clock: self.clock,
            engine,
            projects: self.projects,
            webhooks: self.webhooks,
            directories: self.directories,
        }
    }
}

impl<S, D> Vigil<S, D> {
    /// The same service counting evaluated visits at or above `threshold` as bots and proxies in
    /// the statistics (the composition roots pass the webhook threshold).
    pub fn with_threshold(mut self, threshold: Score) -> Self {
        self.webhooks.threshold = threshold;
        self
    }

    /// The same service keeping a rotated-out webhook secret for `overlap`.
    pub fn with_secret_overlap(mut self, overlap: std::time::Duration) -> Self {
        self.webhooks.secret_overlap = overlap;
        self
    }

    /// The same service fetching Web Bot Auth key directories with `fetcher`.
    pub fn with_directory_fetcher(mut self, fetcher: impl DirectoryFetcher) -> Self {
        self.directories = Directories::new(Arc::new(fetcher));
        self
    }

    /// The same service reading the time from `clock` (tests set it to reach exact boundaries).
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    pub fn url_policy(&self) -> UrlPolicy {
        self.webhooks.url_policy
    }

    /// The engine this service evaluates with (another service on the same store may share it).
    pub fn engine(&self) -> &D {
        &self.engine
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }
}
