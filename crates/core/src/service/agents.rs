//! Web Bot Auth for the ingestion routes: a signed visit's key directory is found (this
//! instance's memory, then the store, then a fetch), its signature verified by the engine's
//! signature module, and its first use recorded so that a replay is noticed. Unsigned visits
//! cost nothing here: no read, no write.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::Vigil;
use crate::detect::Evidence;
use crate::detect::Headers;
use crate::detect::signature::{self, DirectoryResponse, Keys, Outcome, SKEW_SECS, SignatureCheck};
use crate::store::AgentStore;
use crate::store::items::DirectoryItem;

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

/// A directory as this instance remembers it: its keys, or why it could not be had, until when.
#[derive(Clone)]
pub struct Remembered {
    keys: Result<Arc<Keys>, String>,
    until: i64,
}

pub type DirectoryCache = quick_cache::sync::Cache<String, Remembered>;

pub fn directory_cache() -> DirectoryCache {
    quick_cache::sync::Cache::new(DIRECTORY_CACHE_SIZE)
}

/// The lifetime a directory's `max-age` asks for, bounded.
pub fn directory_ttl(max_age: Option<i64>) -> i64 {
    max_age
        .unwrap_or(DEFAULT_DIRECTORY_TTL)
        .clamp(MIN_DIRECTORY_TTL, MAX_DIRECTORY_TTL)
}

impl<S: AgentStore, D> Vigil<S, D> {
    /// The check of a visit's Web Bot Auth signature; None when it carries none.
    pub(super) async fn check_signature(&self, evidence: &Evidence) -> Option<SignatureCheck> {
        if !signature::is_signed(evidence) {
            return None;
        }
        // Boxed: with the directory's fetch inside, this future is large, and it sits beside the
        // visit's other reads in one join; only signed visits pay for the allocation.
        Box::pin(self.check_signed(evidence)).await
    }

    async fn check_signed(&self, evidence: &Evidence) -> Option<SignatureCheck> {
        let signed = signature::read(evidence)?;
        let signed = match signed {
            Ok(s) => s,
            Err(refusal) => {
                return Some(SignatureCheck {
                    directory: None,
                    keyid: None,
                    outcome: Outcome::Invalid(refusal.0),
                });
            }
        };
        let directory = signed.directories.first().cloned();
        let keyid = signed.keyid.clone();
        let check = |outcome| SignatureCheck {
            directory: directory.clone(),
            keyid: keyid.clone(),
            outcome,
        };
        let now = self.now().unix_seconds();
        if let Err(r) = signed.check_time(now) {
            return Some(check(Outcome::Invalid(r.0)));
        }
        let Some(url) = &directory else {
            return Some(check(if signed.inline {
                Outcome::SelfSigned
            } else {
                Outcome::Unverifiable("names no key directory (no Signature-Agent)".into())
            }));
        };
        let keys = match self
            .directory_keys(&signature::directory_url(url), now)
            .await
        {
            Ok(k) => k,
            Err(why) => return Some(check(Outcome::Unverifiable(why))),
        };
        let (replay_key, until) = (signed.replay_key.clone(), signed.expires.unwrap_or(now));
        if let Err(r) = signed.verify(&keys) {
            return Some(check(Outcome::Invalid(r.0)));
        }
        // Only a signature that verifies is remembered: forgeries cost no write.
        match self
            .store
            .first_use(&replay_key, until + SKEW_SECS, now)
            .await
        {
            Ok(true) => Some(check(Outcome::Verified)),
            Ok(false) => Some(check(Outcome::Invalid(
                "was used before within its validity (a replay)".into(),
            ))),
            Err(e) => {
                tracing::warn!(error = %e, "signature use not recorded; replays of it go unnoticed");
                Some(check(Outcome::Verified))
            }
        }
    }

    /// A directory's verified keys: this instance's memory, else the store's copy, else fetched
    /// (and its own signature checked), then remembered for its lifetime.
    async fn directory_keys(&self, url: &str, now: i64) -> Result<Arc<Keys>, String> {
        if let Some(r) = self.directories.get(url)
            && r.until > now
        {
            return r.keys;
        }
        match self.store.cached_directory(url, now).await {
            Ok(Some(item)) => {
                if let Ok(keys) = Keys::from_jwks(item.jwks.as_bytes()) {
                    let keys = Arc::new(keys);
                    self.remember(url, Ok(keys.clone()), item.expires_at);
                    return Ok(keys);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "cached directory not read; fetching it"),
        }
        let fetched = match self.fetcher.fetch(url).await {
            Ok(f) => f,
            Err(why) => {
                let why = format!("its directory could not be fetched: {why}");
                self.remember(url, Err(why.clone()), now + FAILED_DIRECTORY_TTL);
                return Err(why);
            }
        };
        let response = DirectoryResponse {
            authority: &fetched.authority,
            headers: &fetched.headers,
            body: &fetched.body,
        };
        let keys = match signature::directory_keys(&response, now) {
            Ok(k) => Arc::new(k),
            Err(r) => {
                let why = format!("its directory {}", r.0);
                self.remember(url, Err(why.clone()), now + FAILED_DIRECTORY_TTL);
                return Err(why);
            }
        };
        let until = now + directory_ttl(fetched.max_age);
        let jwks = String::from_utf8_lossy(&fetched.body).into_owned();
        if let Err(e) = self
            .store
            .cache_directory(&DirectoryItem::new(url, jwks, until))
            .await
        {
            tracing::warn!(error = %e, "directory not cached in the store");
        }
        self.remember(url, Ok(keys.clone()), until);
        Ok(keys)
    }

    fn remember(&self, url: &str, keys: Result<Arc<Keys>, String>, until: i64) {
        self.directories
            .insert(url.to_owned(), Remembered { keys, until });
    }
}
