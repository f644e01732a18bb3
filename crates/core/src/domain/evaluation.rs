//! What the engine said of a visit, as a result keeps it: a leaf of the domain, which the result
//! model, the API's events and the statistics all read.

use super::score::Score;
use crate::detect::Reason;

/// What the engine said of a visit, kept with its result.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub reasons: Vec<Reason>,
    pub engine_version: String,
    /// Whether the visit counts as a bot and as a proxy in the project's statistics.
    pub flagged: Flagged,
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
        Self {
            bot: bot >= threshold,
            proxy: proxy_vpn >= threshold,
        }
    }
}
