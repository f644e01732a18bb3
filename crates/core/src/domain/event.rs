//! Events: one evaluated visit of a session. Every result is an event; a result written without
//! evaluation (seeds, `vigil results add`) is an event with no reasons and no engine version.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Serialize, Serializer};

use super::ids::{IdError, SessionId};
use super::model::{CheckResult, NewResult, ResultPosition};
use super::score::Score;
use super::time::Timestamp;
use vigil_detect::Reason;

/// An event's id: its position in the session (`createdAt` in epoch milliseconds, then the
/// session's write sequence), so that reading one event is a point lookup of its sort key and no
/// second key has to be stored or kept unique. Ids are unique within their session, whose path
/// they are always used under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventId(ResultPosition);

const PREFIX: &str = "evt_";

impl EventId {
    pub fn new(at: ResultPosition) -> Self {
        Self(at)
    }

    pub fn position(self) -> ResultPosition {
        self.0
    }

    /// Parses `evt_{millis}_{seq}`; anything else is not an event id.
    pub fn parse(s: &str) -> Result<Self, IdError> {
        let malformed = || IdError::Malformed("an event id such as evt_1763900000000_1");
        if s.len() > super::ids::MAX_ID_LEN {
            return Err(IdError::TooLong);
        }
        let rest = s.strip_prefix(PREFIX).ok_or_else(malformed)?;
        let (millis, seq) = rest.split_once('_').ok_or_else(malformed)?;
        let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
        if !digits(millis) || !digits(seq) {
            return Err(malformed());
        }
        let millis: i64 = millis.parse().map_err(|_| malformed())?;
        let seq: u64 = seq.parse().map_err(|_| malformed())?;
        let created_at = Timestamp::from_unix_millis(millis).map_err(|_| malformed())?;
        Ok(Self(ResultPosition { created_at, seq }))
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PREFIX}{}_{}",
            self.0.created_at.unix_millis(),
            self.0.seq
        )
    }
}

impl FromStr for EventId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, IdError> {
        Self::parse(s)
    }
}

impl Serialize for EventId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One event as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub id: EventId,
    pub session_id: SessionId,
    pub created_at: Timestamp,
    pub ip_address: IpAddr,
    pub score_bot: Score,
    pub score_proxy_vpn: Score,
    pub reasons: Vec<Reason>,
    /// Null for a result that was written without evaluation.
    pub engine_version: Option<String>,
    /// The weights it was judged by: `shared`, or the project's calibration (`v3`); null for a
    /// result written without evaluation.
    pub model: Option<String>,
    /// The JA4 fingerprint of the visit's TLS connection; null where the wire was not seen
    /// (plain HTTP, or an events call without `wire`).
    pub ja4: Option<String>,
    /// The visit's connection as measured: the TCP and end-to-end round trips and the SYN;
    /// null where they were not (AWS's edge, or an events call without them).
    pub transport: Option<vigil_detect::transport::Transport>,
    /// The project's key for the visit's browser, which links its sessions (null without enough
    /// of the agent's signals).
    pub device: Option<String>,
    /// Who the visit says it is and whether that holds (null for a result written without
    /// evaluation).
    pub agent: Option<vigil_detect::Agent>,
    /// A verified agent the project allows: counted as no bot.
    pub allowed: bool,
}

/// What an event shows of its evaluation; all empty for a result written without one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Judged {
    pub reasons: Vec<Reason>,
    pub engine_version: Option<String>,
    pub model: Option<String>,
    pub ja4: Option<String>,
    pub transport: Option<vigil_detect::transport::Transport>,
    pub device: Option<String>,
    pub agent: Option<vigil_detect::Agent>,
    pub allowed: bool,
}

impl Event {
    pub fn position(&self) -> ResultPosition {
        self.id.position()
    }

    /// The event at `at` (its position in the session) of `result`, showing `judged`: the one
    /// place an event's fields are set, for a write's answer ([`Event::written`]) and for a read
    /// of a stored result alike.
    pub fn of(
        at: ResultPosition,
        session_id: SessionId,
        result: CheckResult,
        judged: Judged,
    ) -> Self {
        Event {
            id: EventId::new(at),
            session_id,
            created_at: result.created_at,
            ip_address: result.ip_address,
            score_bot: result.score_bot,
            score_proxy_vpn: result.score_proxy_vpn,
            reasons: judged.reasons,
            engine_version: judged.engine_version,
            model: judged.model,
            ja4: judged.ja4,
            transport: judged.transport,
            device: judged.device,
            agent: judged.agent,
            allowed: judged.allowed,
        }
    }

    /// The event that writing `new` made at `at` (the position its write gave it).
    pub fn written(new: NewResult, at: ResultPosition) -> Self {
        // `flagged` and `page` feed the statistics and the session's path; an event shows neither.
        let judged = new.evaluation.map_or_else(Judged::default, |e| Judged {
            reasons: e.reasons,
            engine_version: Some(e.engine_version),
            model: Some(e.model),
            ja4: e.ja4,
            transport: e.transport,
            device: e.device.map(|d| d.as_str().to_owned()),
            agent: Some(e.agent),
            allowed: e.allowed,
        });
        Self::of(at, new.session_id, new.result, judged)
    }

    /// The event as a v1 result.
    pub fn result(&self) -> CheckResult {
        CheckResult {
            score_bot: self.score_bot,
            score_proxy_vpn: self.score_proxy_vpn,
            ip_address: self.ip_address,
            created_at: self.created_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_refuse_anything_else() {
        let at = ResultPosition {
            created_at: "2026-11-23T10:00:00.123Z".parse().unwrap(),
            seq: 42,
        };
        let id = EventId::new(at);
        assert_eq!(id.to_string(), "evt_1795428000123_42");
        assert_eq!(EventId::parse(&id.to_string()), Ok(id));
        for bad in [
            "",
            "evt_",
            "evt_1_",
            "evt__1",
            "evt_1_2_3",
            "evt_-1_2",
            "evt_1_+2",
            "x_1_2",
            "evt_99999999999999999999_1",
            "evt_1_99999999999999999999999",
        ] {
            assert!(EventId::parse(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics(s in "\\PC{0,140}") {
            let _ = EventId::parse(&s);
        }

        #[test]
        fn every_id_round_trips(ms in 0i64..4_102_444_800_000, seq in 0u64..u64::MAX) {
            let created_at = Timestamp::from_unix_millis(ms).unwrap();
            let id = EventId::new(ResultPosition { created_at, seq });
            proptest::prop_assert_eq!(EventId::parse(&id.to_string()), Ok(id));
        }
    }
}
