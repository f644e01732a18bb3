//! The change feed as the domain sees it: what a write did to a session's overall score. The
//! stores turn their feed records (DynamoDB stream records, the SQLite change feed) into these;
//! nothing downstream knows an item layout.

use super::event::EventId;
use super::ids::{ProjectId, SessionId};
use super::model::{CheckResult, SessionScore};
use super::score::Score;
use super::webhook::reaches;
use vigil_detect::Reason;

/// A write to a session: its overall score before (None for its first result) and after, and the
/// result that was written.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionChanged {
    pub project: ProjectId,
    pub session: SessionId,
    pub before: Option<SessionScore>,
    pub after: SessionScore,
    pub last: CheckResult,
    /// The id of the written result's event, and the reasons the engine gave for it.
    pub last_id: EventId,
    pub last_reasons: Vec<Reason>,
    /// The session's `scoreBot` without allowed agents' events, before (None: new) and after.
    pub bot_before: Option<Score>,
    pub bot_after: Score,
}

/// One record of the change feed.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedEvent {
    SessionChanged(SessionChanged),
    /// A change of anything else (results, webhooks, deliveries, ...), or a removal.
    Other,
    /// A record that could not be read; it must not block the feed.
    Unreadable(String),
}

impl SessionChanged {
    /// Whether this write made the session's proxy/VPN score reach `threshold`. The maxima only
    /// grow, so a session crosses at most once: `before < threshold <= after`.
    pub fn crosses(&self, threshold: Score) -> bool {
        let was_below = self
            .before
            .is_none_or(|b| !reaches(b.score_proxy_vpn, threshold));
        was_below && reaches(self.after.score_proxy_vpn, threshold)
    }

    /// Whether this write made the session's `scoreBot`, allowed agents' events left out (their
    /// scores counted by [`super::evaluation::counted_bot`]), reach `threshold`: once per session,
    /// as for the proxy/VPN score.
    pub fn crosses_bot(&self, threshold: Score) -> bool {
        self.bot_before.is_none_or(|b| !reaches(b, threshold)) && reaches(self.bot_after, threshold)
    }
}
