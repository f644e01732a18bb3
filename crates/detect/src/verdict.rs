//! Scoring one visit: every rule family over its normalised view, the agent's verdict, and the
//! two scores (the shared weights, or a project's calibrated ones).

use serde::Serialize;

use crate::agents::{self, Agent};
use crate::engine::Engine;
use crate::evidence::Evidence;
use crate::reasons::{self, Reason, Target};
use crate::rules;
use crate::visit::{Beyond, Visit};

/// The verdict on one visit.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub score_bot: f64,
    pub score_proxy_vpn: f64,
    pub reasons: Vec<Reason>,
    /// Who the visit says it is, and whether that holds. Events show it; `vigil evaluate`'s lines
    /// keep their documented three members.
    #[serde(skip)]
    pub agent: Agent,
}

impl Engine {
    /// Scores one visit: every rule family of [`rules::RULES`] over its normalised view.
    pub fn evaluate(&self, e: &Evidence) -> Verdict {
        self.evaluate_with(e, Beyond::default())
    }

    /// [`Engine::evaluate`] with what the service found beyond the evidence: the store's counts
    /// of the visit's address and device across visits (the velocity rules read them) and its
    /// signature's check (the agent verdict reads it). Without them those rules find nothing.
    pub fn evaluate_with(&self, e: &Evidence, beyond: Beyond<'_>) -> Verdict {
        let visit = Visit::with(self, e, beyond);
        let mut reasons = Vec::new();
        for (_, rule) in rules::RULES {
            rule(self, &visit, &mut reasons);
        }
        let agent = agents::verdict::judge(&self.agents, &visit, &mut reasons);
        let (score_bot, score_proxy_vpn) = match beyond.weights {
            Some(w) => {
                w.apply(&mut reasons);
                (
                    w.score(&reasons, Target::Bot),
                    w.score(&reasons, Target::ProxyVpn),
                )
            }
            None => (
                reasons::score(&reasons, Target::Bot),
                reasons::score(&reasons, Target::ProxyVpn),
            ),
        };
        Verdict {
            score_bot: round(score_bot),
            score_proxy_vpn: round(score_proxy_vpn),
            reasons,
            agent,
        }
    }
}

/// Four decimals: finer digits mean nothing, and they make answers hard to read.
fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}
