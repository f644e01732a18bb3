//! The directory fetching that Web Bot Auth's check (`check.rs`) relies on: the fetcher, the
//! instance's cache of key directories and its fetch budget. Its own file because the service
//! ([`crate::service::vigil::Vigil`]) holds these, while the check uses the service.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use crate::domain::ProjectId;
use vigil_detect::Headers;
use vigil_detect::signature::{DIRECTORY_PATH, Keys};

/// The shortest and longest a fetched directory is trusted, whatever its `Cache-Control` says.
pub const MIN_DIRECTORY_TTL: i64 = 300;
pub const MAX_DIRECTORY_TTL: i64 = 24 * 3600;
/// How long a directory is trusted when its answer gives no lifetime.
pub const DEFAULT_DIRECTORY_TTL: i64 = 3600;
/// How long an instance remembers that a directory could not be had, so that a flood of visits
/// naming it costs one fetch a minute, not one each.
pub const FAILED_DIRECTORY_TTL: i64 = 60;
/// Directories an instance remembers.
const DIRECTORY_CACHE_SIZE: usize = 1_000;
/// Directory fetches one source may cause a minute: an agent names one directory, so a handful
/// covers a real one, and a page that names a new host on every visit gets no further.
pub const SOURCE_FETCHES_PER_MINUTE: u32 = 4;
/// Directory fetches an instance makes a minute, whatever the sources: the most Vigil fetches
/// of the web on its visitors' say.
pub const FETCHES_PER_MINUTE: u32 = 60;

/// Who sent a signed visit, which decides what its signature must cover and whose budget a
/// directory fetch is charged to.
#[derive(Clone, Copy)]
pub enum Caller<'a> {
    /// The collect route: a page's visitor at `address`, on the site of a project whose domain is
    /// `domain`. A signature there must have been made for that site.
    Page { domain: &'a str, address: IpAddr },
    /// The events route: a project's backend, forwarding a request it received; the signature
    /// must cover the evidence's own request line, which is what it verifies against.
    Backend { project: &'a ProjectId },
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) enum Source {
    Address(IpAddr),
    Project(String),
}

impl Caller<'_> {
    pub(super) fn source(&self) -> Source {
        match self {
            Caller::Page { address, .. } => Source::Address(*address),
            Caller::Backend { project } => Source::Project(project.as_str().to_owned()),
        }
    }
}

/// Directory fetches counted in one-minute windows, per source and in all. Only fetches taken
/// are counted, so the map holds at most [`FETCHES_PER_MINUTE`] sources.
#[derive(Default)]
pub struct FetchBudget(Mutex<Window>);

#[derive(Default)]
struct Window {
    minute: i64,
    total: u32,
    by_source: HashMap<Source, u32>,
}

impl FetchBudget {
    /// Takes one fetch for `source` at `now` (Unix seconds), if both budgets allow it.
    pub(super) fn take(&self, source: Source, now: i64) -> bool {
        let Ok(mut w) = self.0.lock() else {
            return false;
        };
        let minute = now.div_euclid(60);
        if w.minute != minute {
            *w = Window {
                minute,
                ..Window::default()
            };
        }
        let spent = w.by_source.get(&source).copied().unwrap_or(0);
        if w.total >= FETCHES_PER_MINUTE || spent >= SOURCE_FETCHES_PER_MINUTE {
            return false;
        }
        w.total += 1;
        w.by_source.insert(source, spent + 1);
        true
    }
}

/// The origin (`scheme://host[:port]`) of the directory a `Signature-Agent` names: an origin
/// alone, or its well-known directory path. Any other path, a query, a fragment or credentials
/// are refused without a fetch: a visitor must not choose what Vigil asks of someone's host.
pub fn directory_origin(agent: &str) -> Result<String, String> {
    let url = url::Url::parse(agent).map_err(|_| "names no valid directory URL".to_owned())?;
    let plain = matches!(url.path(), "" | "/" | DIRECTORY_PATH)
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none()
        && matches!(url.scheme(), "https" | "http")
        && url.host().is_some();
    if !plain {
        return Err(
            "names a directory URL other than an origin's well-known path; none is fetched".into(),
        );
    }
    Ok(url.origin().ascii_serialization())
}

/// A key directory's answer.
pub struct Fetched {
    /// `host[:port]` of the URL fetched, which the directory's signature covers.
    pub authority: String,
    pub headers: Headers,
    pub body: Vec<u8>,
    /// `Cache-Control: max-age`, in seconds.
    pub max_age: Option<i64>,
}

pub type FetchFuture<'a> = Pin<Box<dyn Future<Output = Result<Fetched, String>> + Send + 'a>>;

/// Fetches key directories. The real one (in `vigil-dispatch`) goes out over HTTPS to public
/// addresses only, as webhook deliveries do; a process without one verifies no signature.
pub trait DirectoryFetcher: Send + Sync + 'static {
    fn fetch<'a>(&'a self, url: &'a str) -> FetchFuture<'a>;
}

/// The fetcher of a process that fetches nothing: signed visits are `signed_unknown`.
pub struct NoFetcher;

impl DirectoryFetcher for NoFetcher {
    fn fetch<'a>(&'a self, _url: &'a str) -> FetchFuture<'a> {
        Box::pin(async { Err("this process fetches no key directory".to_owned()) })
    }
}

/// A directory as this instance remembers it: its keys (and whether the store has them), or why
/// it could not be had, until when.
#[derive(Clone)]
pub struct Remembered {
    pub(super) keys: Result<Arc<Keys>, String>,
    pub(super) until: i64,
    pub(super) stored: bool,
}

impl Remembered {
    pub(super) fn found(self) -> Result<Found, String> {
        let (until, stored) = (self.until, self.stored);
        self.keys.map(|keys| Found {
            keys,
            until,
            stored,
        })
    }
}

/// What a visit's check learns of its directory.
pub(super) struct Found {
    pub(super) keys: Arc<Keys>,
    pub(super) until: i64,
    pub(super) stored: bool,
}

pub type DirectoryCache = quick_cache::sync::Cache<String, Remembered>;

/// Web Bot Auth's key directories as one service instance has them: how they are fetched, what
/// was found (or not) per origin, and the fetches left this minute.
pub struct Directories {
    pub(super) fetcher: Arc<dyn DirectoryFetcher>,
    pub(super) found: DirectoryCache,
    pub(super) budget: FetchBudget,
}

impl Directories {
    pub fn new(fetcher: Arc<dyn DirectoryFetcher>) -> Self {
        Self {
            fetcher,
            found: quick_cache::sync::Cache::new(DIRECTORY_CACHE_SIZE),
            budget: FetchBudget::default(),
        }
    }
}

/// The lifetime a directory's `max-age` asks for, bounded.
pub fn directory_ttl(max_age: Option<i64>) -> i64 {
    max_age
        .unwrap_or(DEFAULT_DIRECTORY_TTL)
        .clamp(MIN_DIRECTORY_TTL, MAX_DIRECTORY_TTL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fetch_budget_is_per_source_and_in_all_per_minute() {
        let budget = FetchBudget::default();
        let a = || Source::Address("203.0.113.1".parse().unwrap());
        for _ in 0..SOURCE_FETCHES_PER_MINUTE {
            assert!(budget.take(a(), 60));
        }
        assert!(!budget.take(a(), 119), "the source's minute is spent");
        assert!(budget.take(a(), 120), "a new minute");
        let mut granted = 0;
        for i in 0..FETCHES_PER_MINUTE * 2 {
            granted += u32::from(budget.take(Source::Project(format!("prj_{i}")), 150));
        }
        assert_eq!(
            granted + 1,
            FETCHES_PER_MINUTE,
            "the instance's minute is spent"
        );
    }
}
