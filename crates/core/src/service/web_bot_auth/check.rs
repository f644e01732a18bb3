//! Web Bot Auth for the ingestion routes: a signed visit's key directory is found (this
//! instance's memory, then the store, then a fetch), its signature verified by the engine's
//! signature module, and its first use recorded so that a replay is noticed. Unsigned visits
//! cost nothing here: no read, no write.
//!
//! A visitor chooses which directory a visit names, so every fetch is bounded: only an origin's
//! well-known path is fetched, one fetch per origin at a time (the others wait for its answer),
//! answers and failures are remembered by origin, each source (a page's address, a backend's
//! project) has a small budget of fetches a minute and the instance a larger one, and the store
//! keeps a directory's parsed keys only once a signature has verified under them.

use std::sync::Arc;

use super::directories::{Found, Remembered};
use crate::domain::project::authority_allowed;
use crate::service::events::Ingestion;
use crate::store::AgentStore;
use crate::store::items::DirectoryItem;
use vigil_detect::Evidence;
use vigil_detect::signature::{
    self, DIRECTORY_PATH, DirectoryResponse, Keys, Outcome, SKEW_SECS, SignatureCheck,
};

use super::directories::{Caller, FAILED_DIRECTORY_TTL, directory_origin, directory_ttl};

impl<S: AgentStore> Ingestion<'_, S> {
    /// The check of a visit's Web Bot Auth signature; None when it carries none.
    pub(in crate::service) async fn check_signature(
        self,
        evidence: &Evidence,
        caller: Caller<'_>,
    ) -> Option<SignatureCheck> {
        if !signature::is_signed(evidence) {
            return None;
        }
        // Boxed: with the directory's fetch inside, this future is large, and it sits beside the
        // visit's other reads in one join; only signed visits pay for the allocation.
        Box::pin(self.check_signed(evidence, caller)).await
    }

    async fn check_signed(self, evidence: &Evidence, caller: Caller<'_>) -> Option<SignatureCheck> {
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
        let now = self.clock.now().unix_seconds();
        if let Err(r) = signed.check_time(now) {
            return Some(check(Outcome::Invalid(r.0)));
        }
        // A page's visit reaches Vigil with whatever `Host` its sender chose: a signature made
        // for another site, replayed here under that site's name, is no proof of anything.
        if let Caller::Page { domain, .. } = caller {
            let authority = evidence
                .request
                .as_ref()
                .and_then(|r| r.authority.as_deref());
            if !authority.is_some_and(|a| authority_allowed(domain, a)) {
                return Some(check(Outcome::Unverifiable(
                    "was made for another site than this project's".into(),
                )));
            }
        }
        let Some(agent) = &directory else {
            return Some(check(if signed.inline {
                Outcome::SelfSigned
            } else {
                Outcome::Unverifiable("names no key directory (no Signature-Agent)".into())
            }));
        };
        let origin = match directory_origin(agent) {
            Ok(o) => o,
            Err(why) => return Some(check(Outcome::Unverifiable(why))),
        };
        let found = match self.directory_keys(&origin, caller, now).await {
            Ok(k) => k,
            Err(why) => return Some(check(Outcome::Unverifiable(why))),
        };
        let (replay_key, until) = (signed.replay_key.clone(), signed.expires.unwrap_or(now));
        if let Err(r) = signed.verify(&found.keys) {
            return Some(check(Outcome::Invalid(r.0)));
        }
        // Only a signature that verifies is remembered, and only then are its directory's keys
        // shared with the other instances: forgeries cost no write.
        if !found.stored {
            self.keep_directory(&origin, &found).await;
        }
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

    /// An origin's directory keys: this instance's memory, else (one visit at a time per origin,
    /// the others waiting for its answer) the store's copy, else fetched within the budgets and
    /// its own signature checked. Answers and failures are remembered; a spent budget is not.
    async fn directory_keys(
        self,
        origin: &str,
        caller: Caller<'_>,
        now: i64,
    ) -> Result<Found, String> {
        // Twice at most: a remembered answer past its time is dropped and looked up again.
        for _ in 0..2 {
            match self
                .directories
                .found
                .get_value_or_guard_async(origin)
                .await
            {
                Ok(r) if r.until > now => return r.found(),
                Ok(_) => {
                    self.directories.found.remove_if(origin, |r| r.until <= now);
                }
                Err(guard) => {
                    let Some(r) = self.find_directory(origin, caller, now).await else {
                        return Err("its directory was not fetched: too many directory fetches \
                                    from this source or this server in the last minute"
                            .into());
                    };
                    let _ = guard.insert(r.clone());
                    return r.found();
                }
            }
        }
        Err("its directory is changing; try again".into())
    }

    /// The store's copy of an origin's directory, else the directory fetched; None when the fetch
    /// was not within the budgets.
    async fn find_directory(
        self,
        origin: &str,
        caller: Caller<'_>,
        now: i64,
    ) -> Option<Remembered> {
        match self.store.cached_directory(origin, now).await {
            Ok(Some(item)) => {
                if let Ok(keys) = Keys::from_jwks(item.jwks.as_bytes()) {
                    return Some(Remembered {
                        keys: Ok(Arc::new(keys)),
                        until: item.expires_at,
                        stored: true,
                    });
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "cached directory not read; fetching it"),
        }
        if !self.directories.budget.take(caller.source(), now) {
            tracing::info!(%origin, "directory fetch refused by the fetch budget");
            return None;
        }
        let failed = |why: String| Remembered {
            keys: Err(why),
            until: now + FAILED_DIRECTORY_TTL,
            stored: false,
        };
        let url = format!("{origin}{DIRECTORY_PATH}");
        let fetched = match self.directories.fetcher.fetch(&url).await {
            Ok(f) => f,
            Err(why) => return Some(failed(format!("its directory could not be fetched: {why}"))),
        };
        let response = DirectoryResponse {
            authority: &fetched.authority,
            headers: &fetched.headers,
            body: &fetched.body,
        };
        Some(match signature::directory_keys(&response, now) {
            Ok(keys) => Remembered {
                keys: Ok(Arc::new(keys)),
                until: now + directory_ttl(fetched.max_age),
                stored: false,
            },
            Err(r) => failed(format!("its directory {}", r.0)),
        })
    }

    /// Shares a directory's keys with the other instances through the store, once a signature
    /// verified under them.
    async fn keep_directory(self, origin: &str, found: &Found) {
        let item = DirectoryItem::new(origin, found.keys.jwks.clone(), found.until);
        if let Err(e) = self.store.cache_directory(&item).await {
            tracing::warn!(error = %e, "directory not cached in the store");
            return;
        }
        self.directories.found.insert(
            origin.to_owned(),
            Remembered {
                keys: Ok(found.keys.clone()),
                until: found.until,
                stored: true,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_origin_or_its_well_known_path_names_a_directory() {
        for (agent, origin) in [
            ("https://a.example", "https://a.example"),
            ("https://a.example/", "https://a.example"),
            ("https://A.example:8443/", "https://a.example:8443"),
            (
                "https://a.example/.well-known/http-message-signatures-directory",
                "https://a.example",
            ),
            ("http://127.0.0.1:9", "http://127.0.0.1:9"),
        ] {
            assert_eq!(directory_origin(agent).as_deref(), Ok(origin), "{agent}");
        }
        for bad in [
            "https://a.example/internal/admin?delete=1",
            "https://a.example/?delete=1",
            "https://a.example/keys.json",
            "https://a.example/#x",
            "https://user:pw@a.example/",
            "ftp://a.example/",
            "data:application/json,{}",
            "not a url",
        ] {
            assert!(directory_origin(bad).is_err(), "{bad}");
        }
    }
}
