//! What the engine said of a visit, as a result keeps it: a leaf of the domain, which the result
//! model, the API's events and the statistics all read.

use super::score::Score;
use super::webhook::reaches;
use std::net::IpAddr;

use vigil_detect::{Evidence, Reason};

/// What the engine said of a visit, kept with its result.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub reasons: Vec<Reason>,
    pub engine_version: String,
    /// The weights it was judged by: `shared`, or the project's calibration (`v3`).
    pub model: String,
    /// The JA4 fingerprint of the visit's TLS connection, where the wire was seen.
    pub ja4: Option<String>,
    /// The connection's round trips and SYN, where the server or an edge measured them.
    pub transport: Option<vigil_detect::transport::Transport>,
    /// The project's key for the visit's browser (see [`super::device::DeviceKey`]).
    pub device: Option<super::device::DeviceKey>,
    /// Whether the visit counts as a bot and as a proxy in the project's statistics.
    pub flagged: Flagged,
    /// Who the visit says it is, and whether that holds.
    pub agent: vigil_detect::Agent,
    /// A verified agent of a category or operator the project allows: its `scoreBot` is kept as
    /// evidence, but it counts as no bot (statistics, `bot_detect`).
    pub allowed: bool,
    /// How the visit's page was reached, for the session's path (none for an action, or a visit
    /// that did not say).
    pub page: Option<vigil_detect::path::Page>,
}

/// Whether an evaluated event counts as a bot and as a proxy: its scores against the threshold
/// (the webhook threshold), decided when it is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flagged {
    pub bot: bool,
    pub proxy: bool,
}

impl Flagged {
    pub fn at(threshold: Score, bot: Score, proxy_vpn: Score) -> Self {
        Self::of_visit(threshold, bot, proxy_vpn, false)
    }

    /// As [`Flagged::at`] for a visit that may be an agent the project allows: never a bot then.
    pub fn of_visit(threshold: Score, bot: Score, proxy_vpn: Score, allowed: bool) -> Self {
        Self {
            bot: counted_bot(bot, allowed).is_some_and(|b| reaches(b, threshold)),
            proxy: reaches(proxy_vpn, threshold),
        }
    }
}

/// A visit's `scoreBot` as it counts towards bots (statistics, its session's bot score,
/// `bot_detect`): None for a verified agent the project allows, which keeps its score as evidence
/// but counts as no bot. The one place that rule is written.
pub fn counted_bot(score_bot: Score, allowed: bool) -> Option<Score> {
    (!allowed).then_some(score_bot)
}

/// Evidence of a visit whose address is known, as both ingestion routes evaluate it: an event
/// always has an address, so the evidence cannot reach the service without one.
#[derive(Debug, Clone)]
pub struct AddressedEvidence {
    address: IpAddr,
    evidence: Evidence,
}

impl AddressedEvidence {
    /// `evidence` seen from `address` (which replaces any address the evidence named).
    pub fn new(address: IpAddr, mut evidence: Evidence) -> Self {
        evidence.ip_address = Some(address);
        Self { address, evidence }
    }

    /// The same evidence with the agent's `signals`.
    pub fn with_signals(mut self, signals: Option<vigil_detect::Signals>) -> Self {
        self.evidence.signals = signals;
        self
    }

    pub fn address(&self) -> IpAddr {
        self.address
    }

    pub fn evidence(&self) -> &Evidence {
        &self.evidence
    }
}
