//! The normalised view of one visit that every rule reads: the user agents as received, the one
//! lower-cased copy the bot patterns and crawler claims share, and the address's country.

use crate::agents::{Catalogue, Known};
use crate::calibration::Weights;
use crate::engine::Engine;
use crate::evidence::{Evidence, Signals};
use crate::path::Path;
use crate::places::{Country, Place};
use crate::signature::SignatureCheck;
use crate::ua::Claim;
use crate::velocity::Velocity;

/// `s` in lower case; ASCII (nearly every user agent) without the Unicode tables, eight bytes at
/// a time.
fn lower_case(s: &str) -> String {
    if !s.is_ascii() {
        return s.to_lowercase();
    }
    let mut bytes = s.as_bytes().to_vec();
    let (words, rest) = bytes.as_chunks_mut::<8>();
    for word in words {
        let x = u64::from_ne_bytes(*word);
        // Per byte (all below 0x80): its top bit set from `A` on, and from past `Z` on; no
        // carry crosses bytes. An upper-case letter gains 0x20.
        let from_a = x.wrapping_add(0x3f3f_3f3f_3f3f_3f3f);
        let past_z = x.wrapping_add(0x2525_2525_2525_2525);
        let upper = from_a & !past_z & 0x8080_8080_8080_8080;
        *word = (x | upper >> 2).to_ne_bytes();
    }
    rest.make_ascii_lowercase();
    String::from_utf8(bytes).unwrap_or_else(|_| s.to_ascii_lowercase())
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
    /// The catalogue's agent that the user agent (`agent_lower`) names, read once for the
    /// address rule and the agent verdict.
    pub named: Option<&'a Known>,
    pub js_claim: Option<Claim>,
    /// What the address tables hold for the address (nothing without one).
    pub place: Place,
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
    pub fn of(engine: &'a Engine, e: &'a Evidence) -> Self {
        Self::with(engine, e, Beyond::default())
    }

    /// The visit with what the service found beyond its evidence.
    pub fn with(engine: &'a Engine, e: &'a Evidence, beyond: Beyond<'a>) -> Self {
        let signals = e.signals.as_ref();
        let ua = e
            .user_agent
            .as_deref()
            .or_else(|| e.headers.as_ref().and_then(|h| h.get("user-agent")))
            .map(str::trim);
        let js_ua = signals.and_then(|s| s.user_agent.as_deref());
        let place = e.ip_address.map(|ip| engine.place(ip)).unwrap_or_default();
        let agent_lower = ua.or(js_ua).map(lower_case);
        let named = (agent_lower.as_deref()).and_then(|lower| engine.agents.by_user_agent(lower));
        Self {
            evidence: e,
            signals,
            ua,
            js_ua,
            agent_lower,
            ua_claim: ua.map(Claim::of),
            named,
            js_claim: js_ua.map(Claim::of),
            place,
            country: place.country,
            velocity: beyond.velocity,
            signature: beyond.signature,
            path: beyond.path,
        }
    }

    /// The catalogue's agent with published ranges that the user agent names. Every token of
    /// such an agent is one of the catalogue's, so a user agent that names no agent (nearly
    /// every person's) is not scanned again.
    pub fn range_claim(&self, catalogue: &'a Catalogue) -> Option<&'a Known> {
        let lower = self.named.and(self.agent_lower.as_deref())?;
        catalogue.range_claim(lower)
    }

    /// The request's own user agent, lower-cased (none when only JavaScript's is known).
    pub fn ua_lower(&self) -> Option<&str> {
        self.ua.and(self.agent_lower.as_deref())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lower_case_is_the_standard_one() {
        let all: String = (0u8..0x80).map(char::from).collect();
        for s in [
            all.as_str(),
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko)",
            "@[`{ AZaz",
            "",
            "Ünïcödé MOZILLA",
        ] {
            for start in 0..s.len().min(9) {
                let Some(s) = s.get(start..) else { continue };
                assert_eq!(super::lower_case(s), s.to_lowercase(), "{s:?}");
            }
        }
    }
}
