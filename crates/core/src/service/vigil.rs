//! The [`Vigil`] service itself, how it is built, and its parts by concern: [`Projects`] (with the
//! one cache of what this instance remembers of them), [`Plans`], [`Webhooks`] and [`Ingestion`],
//! each a borrowed view holding only what its concern reads and each operation bound by only the
//! stores it touches. The reads beside them (results, events, labels, insight, calibration) and
//! the trusted operations (`admin.rs`) are `Vigil`'s own, a file per resource.

use std::sync::Arc;

use super::events::Ingestion;
use super::plans::Plans;
use super::project_cache::ProjectCache;
use super::projects::Projects;
use super::web_bot_auth::directories::{Directories, DirectoryFetcher, NoFetcher};
use super::webhooks::{WebhookPolicy, Webhooks};
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
    pub(super) project_cache: ProjectCache,
    pub(super) webhook_policy: WebhookPolicy,
    /// Web Bot Auth's key directories (`web_bot_auth/directories.rs`).
    pub(super) directories: Directories,
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
            project_cache: ProjectCache::default(),
            webhook_policy: WebhookPolicy {
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
            project_cache: self.project_cache,
            webhook_policy: self.webhook_policy,
            directories: self.directories,
        }
    }
}

impl<S, D> Vigil<S, D> {
    /// The same service counting evaluated visits at or above `threshold` as bots and proxies in
    /// the statistics (the composition roots pass the webhook threshold).
    pub fn with_threshold(mut self, threshold: Score) -> Self {
        self.webhook_policy.threshold = threshold;
        self
    }

    /// The same service keeping a rotated-out webhook secret for `overlap`.
    pub fn with_secret_overlap(mut self, overlap: std::time::Duration) -> Self {
        self.webhook_policy.secret_overlap = overlap;
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

    /// The engine this service evaluates with (another service on the same store may share it).
    pub fn engine(&self) -> &D {
        &self.engine
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// An account's projects, and what this instance remembers of them.
    pub fn projects(&self) -> Projects<'_, S> {
        Projects {
            store: &self.store,
            clock: &*self.clock,
            cache: &self.project_cache,
            secret_overlap: self.webhook_policy.secret_overlap,
        }
    }

    /// Plans: the terms an account is held to, and the counters that admit its requests.
    pub fn plans(&self) -> Plans<'_, S> {
        Plans {
            store: &self.store,
            clock: &*self.clock,
        }
    }

    /// A project's webhooks and their deliveries, under the webhook policy.
    pub fn webhooks(&self) -> Webhooks<'_, S> {
        Webhooks {
            store: &self.store,
            clock: &*self.clock,
            projects: self.projects(),
            policy: &self.webhook_policy,
        }
    }
}

impl<S> Vigil<S, Detecting> {
    /// Visits: admitted by either door, evaluated by the engine, stored as events.
    pub fn ingestion(&self) -> Ingestion<'_, S> {
        Ingestion {
            store: &self.store,
            clock: &*self.clock,
            engine: &self.engine,
            projects: self.projects(),
            plans: self.plans(),
            directories: &self.directories,
            threshold: self.webhook_policy.threshold,
        }
    }
}
