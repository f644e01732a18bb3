//! The normalised view of one visit that every rule reads: the user agents as received, the one
//! lower-cased copy the bot patterns and crawler claims share, and the address's country.

use crate::calibration::Weights;
use crate::engine::Engine;
use crate::evidence::{Evidence, Signals};
use crate::path::Path;
use crate::places::Country;
use crate::signature::SignatureCheck;
use crate::ua::Claim;
use crate::velocity::Velocity;

/// `s` in lower case; ASCII (nearly every user agent) without the Unicode tables.
fn lower_case(s: &str) -> String {
    if s.is_ascii() {
        s.to_ascii_lowercase()
    } else {
        s.to_lowercase()
    }
}

/// What the service found out about a visit beyond its evidence, for the engine to judge: the
/// store's velocity counts, the outcome of checking its signature and the session's path so far.
/// None of them comes from the client as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct Beyond<'a> {
    pub velocity: Option<&'a Velocity>,
    pub signature: Option<&'a SignatureCheck>,
    /// The session's path with this visit's page added (the store keeps it in the session's
    /// summary).
    pub path: Option<&'a Path>,
    /// The project's own `scoreBot` weights, when it has calibrated ones (the shared table
    /// otherwise).
    pub weights: Option<&'a Weights>,
}

pub struct Visit<'a> {
    pub evidence: &'a Evidence,
    pub signals: Option<&'a Signals>,
    /// The request's user agent: the evidence's own, else its `User-Agent` header, trimmed.
    pub ua: Option<&'a str>,
    /// `navigator.userAgent`, as the agent read it.
    pub js_ua: Option<&'a str>,
    /// The user agent (the request's, else JavaScript's), lower-cased once.
    pub agent_lower: Option<String>,
    /// What each user agent claims to be, read once for the rules that ask.
    pub ua_claim: Option<Claim>,
    pub js_claim: Option<Claim>,
    /// The address's country.
    pub country: Option<Country>,
    /// What the store counted of the visit's address and device; never from the client.
    pub velocity: Option<&'a crate::velocity::Velocity>,
    /// How the service found the visit's signature; never from the client.
    pub signature: Option<&'a crate::signature::SignatureCheck>,
    /// The session's pages so far, this one included; kept by the store.
    pub path: Option<&'a crate::path::Path>,
}

impl<'a> Visit<'a> {
    pub fn of(engine: &Engine, e: &'a Evidence) -> Self {
        Self::with(engine, e, Beyond::default())
    }

    /// The visit with what the service found beyond its evidence.
    pub fn with(engine: &Engine, e: &'a Evidence, beyond: Beyond<'a>) -> Self {
        let signals = e.signals.as_ref();
        let ua = e
            .user_agent
            .as_deref()
            .or_else(|| e.headers.as_ref().and_then(|h| h.get("user-agent")))
            .map(str::trim);
        let js_ua = signals.and_then(|s| s.user_agent.as_deref());
        Self {
            evidence: e,
            signals,
            ua,
            js_ua,
            agent_lower: ua.or(js_ua).map(lower_case),
            ua_claim: ua.map(Claim::of),
            js_claim: js_ua.map(Claim::of),
            country: e.ip_address.and_then(|ip| engine.geo.country(ip)),
            velocity: beyond.velocity,
            signature: beyond.signature,
            path: beyond.path,
        }
    }

    /// The request's own user agent, lower-cased (none when only JavaScript's is known).
    pub fn ua_lower(&self) -> Option<&str> {
        self.ua.and(self.agent_lower.as_deref())
    }
}
