//! Ingestion: a visit's evidence is evaluated by the engine and stored as an event of its session
//! (which is also a v1 result, so summaries and webhooks work as for any result). Two doors: the
//! server-side events route (developer key) and the browser's collect route (public key, origin),
//! each admitting a visit by its own rules and then handing it to the same `ingest`.

use std::sync::Arc;
use std::time::Instant;

use super::error::{ServiceError, ServiceResult};
use super::plans::Plans;
use super::projects::Projects;
use super::replay;
use super::site::Site;
use super::web_bot_auth::directories::{Caller, Directories};
use crate::domain::idempotency::{Once, Written};
use crate::domain::project::{Origin, origin_allowed};
use crate::domain::sealing::{MAX_SEALED_LIFETIME_SECS, SealingKeys, Verdict, seal};
use crate::domain::session_token;
use crate::domain::token::random_base62;
use crate::domain::velocity::Tick;
use crate::domain::{
    AccountId, AddressedEvidence, CheckResult, Clock, DeviceKey, Evaluation, Event, Flagged,
    NewResult, Project, ProjectId, Score, SessionId,
};
use crate::store::write::PriorSummary;
use crate::store::{
    AccountStore, AgentStore, IdempotencyStore, ProjectStore, ResultStore, UsageStore,
    VelocityStore,
};
use vigil_detect::SignatureCheck;
use vigil_detect::path::Page;
use vigil_detect::velocity::Velocity;
use vigil_detect::{ENGINE_VERSION, Engine};

/// Longest public key looked up; anything longer is not a key and costs no read.
const MAX_PUBLIC_KEY: usize = 128;

/// Ingestion, the part of [`Vigil`](super::vigil::Vigil) that evaluates visits
/// ([`Vigil::ingestion`](super::vigil::Vigil::ingestion), on a service built with the engine):
/// the engine, the projects and plans a visit is admitted by, Web Bot Auth's directories, and the
/// threshold a visit is flagged at.
pub struct Ingestion<'a, S> {
    pub(super) store: &'a S,
    pub(super) clock: &'a dyn Clock,
    pub(super) engine: &'a Engine,
    pub(super) projects: Projects<'a, S>,
    pub(super) plans: Plans<'a, S>,
    pub(super) directories: &'a Directories,
    /// The webhook threshold: a visit at or above it is flagged (and counted, and delivered).
    pub(super) threshold: Score,
}

impl<S> Clone for Ingestion<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Ingestion<'_, S> {}

impl<S: ProjectStore + ResultStore + IdempotencyStore + VelocityStore + AgentStore>
    Ingestion<'_, S>
{
    /// Evaluates a visit that a customer's backend reports and stores it as an event; once per
    /// idempotency key when `once` is given (a retry gets the event the key created).
    pub async fn record_event(
        self,
        account: &AccountId,
        project: &ProjectId,
        session: &SessionId,
        evidence: &AddressedEvidence,
        once: Option<&Once>,
    ) -> ServiceResult<Event> {
        // A used key is answered before anything else, as the first request was.
        if let Some(event) = replay::first(self.store, account, once).await? {
            return Ok(event);
        }
        let p = self.projects.fresh(project).await?;
        if &p.account_id != account {
            return Err(ServiceError::ProjectNotFound);
        }
        if p.disabled {
            return Err(ServiceError::ProjectDisabled);
        }
        let caller = Caller::Backend { project: &p.id };
        match self.ingest(&p, session, evidence, caller, once).await? {
            Written::New(event) => Ok(event),
            Written::Before(used) => replay::answer(self.store, once, used).await,
        }
    }
}

/// What a visit's evaluation and write need beside its evidence, gathered at once.
struct Found {
    device: Option<DeviceKey>,
    velocity: Option<Velocity>,
    prior: PriorSummary,
    signature: Option<SignatureCheck>,
}

/// The project's key for the visit's browser, when its signals are enough to make one.
fn device_of(p: &Project, evidence: &AddressedEvidence) -> Option<DeviceKey> {
    evidence
        .evidence()
        .signals
        .as_ref()
        .and_then(|s| DeviceKey::of(&p.api_key_private, s))
}

impl<S: ProjectStore + ResultStore + VelocityStore + AgentStore> Ingestion<'_, S> {
    /// What both doors do with a visit once they have admitted it (each by its own rules): the
    /// velocity counters, the summary's read and (signed visits only) the signature's check at
    /// once, one round trip between them; then the evaluation and its write.
    async fn ingest(
        self,
        p: &Project,
        session: &SessionId,
        evidence: &AddressedEvidence,
        caller: Caller<'_>,
        once: Option<&Once>,
    ) -> ServiceResult<Written<Event>> {
        let device = device_of(p, evidence);
        let (velocity, prior, signature) = tokio::join!(
            self.velocity(p, session, evidence, device.as_ref()),
            self.store.prior_summary(&p.id, session),
            self.check_signature(evidence.evidence(), caller),
        );
        let found = Found {
            device,
            velocity,
            prior: prior?,
            signature,
        };
        self.evaluate_and_store(p, session, evidence, found, once)
            .await
    }

    /// Counts the visit against its address, device and project, and returns the counts of the
    /// three windows. A store that fails to count costs the visit its velocity evidence, never
    /// the visit: the error is logged and the engine judges the visit alone.
    async fn velocity(
        self,
        p: &Project,
        session: &SessionId,
        evidence: &AddressedEvidence,
        device: Option<&DeviceKey>,
    ) -> Option<Velocity> {
        let address = evidence.address();
        let country = self
            .engine
            .geo()
            .country(address)
            .map(vigil_detect::places::country_name);
        let tick = Tick {
            project: &p.id,
            session,
            address,
            device,
            country: country.as_deref(),
            at: self.clock.now(),
        };
        let work = tick.work(crate::store::keys::velocity_sk);
        match self.store.count_velocity(&p.id, &work).await {
            Ok((updated, read)) => Some(tick.velocity(&updated, &read)),
            Err(e) => {
                tracing::warn!(error = %e, project = %p.id, "velocity not counted; the visit is judged alone");
                None
            }
        }
    }

    async fn evaluate_and_store(
        self,
        p: &Project,
        session: &SessionId,
        evidence: &AddressedEvidence,
        found: Found,
        once: Option<&Once>,
    ) -> ServiceResult<Written<Event>> {
        let Found {
            device,
            velocity,
            prior,
            signature,
        } = found;
        let project = &p.id;
        let wire = evidence.evidence().wire.as_ref();
        // The session's path with this page added, judged now and kept by the summary's write
        // (which adds the page again to the summary it writes over, should another write of
        // the session have landed meanwhile).
        let now = self.clock.now();
        let page = Page::of(evidence.evidence()).map(|pg| pg.at(now.unix_millis()));
        let path = prior.path_after(page);
        let (model, weights) = p.judging_model();
        let started = Instant::now();
        let verdict = self.engine.evaluate_with(
            evidence.evidence(),
            vigil_detect::Beyond {
                velocity: velocity.as_ref(),
                signature: signature.as_ref(),
                path: Some(&path),
                weights,
            },
        );
        let micros = started.elapsed().as_secs_f64() * 1e6;
        // The engine's scores are probabilities rounded to 4 places; outside [0, 1] is a bug.
        let score = |v: f64| Score::new(v).map_err(|_| ServiceError::EngineFault(v));
        let (score_bot, score_proxy_vpn) =
            (score(verdict.score_bot)?, score(verdict.score_proxy_vpn)?);
        let allowed = p.agents.allows(&verdict.agent);
        let flagged = Flagged::of_visit(self.threshold, score_bot, score_proxy_vpn, allowed);
        crate::metrics::evaluation(project.as_str(), micros, flagged.bot, flagged.proxy);
        let new = NewResult {
            project_id: project.clone(),
            session_id: session.clone(),
            result: CheckResult {
                score_bot,
                score_proxy_vpn,
                ip_address: evidence.address(),
                created_at: now,
            },
            evaluation: Some(Evaluation {
                reasons: verdict.reasons,
                engine_version: ENGINE_VERSION.to_owned(),
                model,
                ja4: wire.and_then(|w| w.ja4.clone()),
                transport: wire.and_then(|w| w.transport.clone()),
                device,
                flagged,
                agent: verdict.agent,
                allowed,
                page,
            }),
        };
        // The event is the result as written, made from it in one place ([`Event::written`]).
        let written = self.store.write_result_after(&new, once, prior).await?;
        Ok(match written {
            Written::New(at) => Written::New(Event::written(new, at)),
            Written::Before(used) => Written::Before(used),
        })
    }
}

impl<S: ProjectStore + AccountStore> Ingestion<'_, S> {
    /// The project a browser's request is for: its public key must be a project's, the page's
    /// origin one of the project's domain (judged before anything else about the project is
    /// said), and the project enabled. Warm instances answer from memory for
    /// [`VISITOR_CACHE_TTL`](super::project_cache::VISITOR_CACHE_TTL), and remember unknown keys for
    /// [`UNKNOWN_KEY_TTL`](super::project_cache::UNKNOWN_KEY_TTL).
    pub async fn site(self, public_key: &str, origin: &Origin) -> ServiceResult<Site> {
        let site = self.site_by_key(public_key).await?;
        if !origin_allowed(&site.project.domain, origin) {
            return Err(ServiceError::OriginNotAllowed);
        }
        if site.project.disabled {
            return Err(ServiceError::ProjectDisabled);
        }
        Ok(site)
    }

    async fn site_by_key(self, public_key: &str) -> ServiceResult<Site> {
        if let Some(site) = self.projects.cache.site(public_key) {
            return Ok(site);
        }
        if !is_public_key(public_key) {
            return Err(ServiceError::UnknownPublicKey);
        }
        if self.projects.cache.known_unknown(public_key) {
            return Err(ServiceError::UnknownPublicKey);
        }
        let Some(project) = self.store.project_by_public_key(public_key).await? else {
            self.projects.cache.remember_unknown(public_key);
            return Err(ServiceError::UnknownPublicKey);
        };
        let terms = self.plans.terms(&project.account_id).await?;
        let v = Site {
            project: Arc::new(project),
            terms,
            read_at: Instant::now(),
        };
        self.projects.cache.remember_site(public_key, v.clone());
        Ok(v)
    }
}

/// Whether `key` has the form of a public key: `pk_` and up to 125 letters, digits, `_` or `-`.
/// Anything else names no project and costs no read.
pub fn is_public_key(key: &str) -> bool {
    key.strip_prefix("pk_").is_some_and(|rest| {
        (1..=MAX_PUBLIC_KEY - 3).contains(&rest.len())
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

impl<S: ProjectStore + ResultStore + UsageStore + VelocityStore + AgentStore> Ingestion<'_, S> {
    /// Records a visit the browser agent reports for a site [`Ingestion::site`] admitted: the
    /// plan must be in force, the session vouched for by a token when the project requires one,
    /// and the visit within the collect route's own budget. The answer is a receipt: a random id,
    /// opaque to the page, that says nothing of the session's other visits.
    pub async fn record_visit(
        self,
        site: &Site,
        origin: &Origin,
        session: &SessionId,
        token: Option<&str>,
        evidence: &AddressedEvidence,
    ) -> ServiceResult<Visited> {
        let (project, now) = (&site.project, self.clock.now());
        // A page of a plan not in force is answered exactly as for an unknown key: it must not
        // learn its customer's billing state, nor when the period ends (a Retry-After).
        if !site.terms.in_force(now) {
            return Err(ServiceError::UnknownPublicKey);
        }
        if project.require_session_token {
            let token = token.ok_or(ServiceError::SessionTokenRequired)?;
            session_token::verify(token, &project.api_key_private, &project.id, session, now)?;
        }
        // The plan's counters first: a refused visit (429) is counted as an attempt and nothing
        // else, so a flood over the budget neither raises its address's velocity (poisoning the
        // people behind it) nor makes the server fetch a key directory.
        self.plans
            .admit_visit(project, &site.terms, evidence.address())
            .await?;
        let caller = Caller::Page {
            domain: &project.domain,
            address: evidence.address(),
        };
        let event = match self
            .ingest(project, session, evidence, caller, None)
            .await?
        {
            Written::New(event) => event,
            Written::Before(_) => return Err(ServiceError::IdempotencyMismatch),
        };
        let receipt = format!("evt_{}", random_base62(24));
        tracing::info!(%receipt, event = %event.id, project = %project.id, "visit recorded");
        let sealed = match (project.sealed_results, &project.sealing_keys) {
            (true, Some(keys)) => Some(seal_verdict(keys, project, origin, &event, now)?),
            _ => None,
        };
        Ok(Visited { receipt, sealed })
    }
}

/// What the page is told of its visit: a receipt, and the verdict sealed for its backend when
/// the project seals them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visited {
    pub receipt: String,
    pub sealed: Option<String>,
}

/// The event's verdict sealed under the project's current key, valid for 10 minutes.
fn seal_verdict(
    keys: &SealingKeys,
    project: &crate::domain::Project,
    origin: &Origin,
    event: &crate::domain::Event,
    now: crate::domain::Timestamp,
) -> ServiceResult<String> {
    let agent = event.agent.as_ref().map(|a| a.status.as_str().to_owned());
    let verdict = Verdict {
        event_id: event.id.to_string(),
        session_id: event.session_id.to_string(),
        project_id: project.id.to_string(),
        score_bot: event.score_bot.get(),
        score_proxy_vpn: event.score_proxy_vpn.get(),
        reasons: event
            .reasons
            .iter()
            .map(|r| r.code.name().to_owned())
            .collect(),
        device: event.device.clone(),
        agent,
        created_at: event.created_at,
        origin: origin.as_str().to_owned(),
        iat: now.unix_seconds(),
        exp: now.unix_seconds() + MAX_SEALED_LIFETIME_SECS,
    };
    seal(&keys.current, &verdict).map_err(ServiceError::Sealing)
}
