//! What a project's traffic looks like as a whole: its sessions, most recent first, and its
//! statistics by hour or day. Both are kept as events are written (never computed by scanning
//! events): a session's summary carries when it was last seen and how many events it has, and each
//! written event adds itself to its hour's and its day's counts.

use std::collections::BTreeMap;

use serde::Serialize;

use super::evaluation::Evaluation;
use super::ids::SessionId;
use super::model::NewResult;
use super::score::Score;
use super::time::Timestamp;
use vigil_detect::Reason;

/// One session as the sessions list shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub session_id: SessionId,
    pub score_bot: Score,
    pub score_proxy_vpn: Score,
    /// The latest `createdAt` of the session's events.
    pub last_seen_at: Timestamp,
    /// How many events the session has.
    pub events: u64,
    /// The reasons of the session's latest event.
    pub last_reasons: Vec<Reason>,
    /// The agent status of the session's latest evaluated event.
    pub agent: Option<vigil_detect::agents::Status>,
}

/// Where a page of sessions ends: the list is ordered by `lastSeenAt`, then session id, both
/// descending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPosition {
    pub last_seen_at: Timestamp,
    pub session_id: SessionId,
}

/// Which sessions to list, and from where.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionQuery {
    pub limit: usize,
    pub after: Option<SessionPosition>,
    pub min_score_bot: Option<Score>,
    pub min_score_proxy_vpn: Option<Score>,
    /// Only the sessions whose latest device key is this one.
    pub device: Option<super::device::DeviceKey>,
    /// Only the sessions whose latest evaluated event's agent has this status.
    pub agent: Option<vigil_detect::agents::Status>,
}

impl SessionQuery {
    pub fn admits(&self, bot: Score, proxy_vpn: Score) -> bool {
        self.min_score_bot.is_none_or(|m| bot >= m)
            && self.min_score_proxy_vpn.is_none_or(|m| proxy_vpn >= m)
    }
}

/// A page of sessions and, when more follow, the position to continue after.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPage {
    pub sessions: Vec<SessionSummary>,
    pub next: Option<SessionPosition>,
}

/// The size of a statistics bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    Hour,
    Day,
}

impl Granularity {
    pub const ALL: [Granularity; 2] = [Granularity::Hour, Granularity::Day];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "hour" => Some(Self::Hour),
            "day" => Some(Self::Day),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hour => "hour",
            Self::Day => "day",
        }
    }

    pub fn seconds(self) -> i64 {
        match self {
            Self::Hour => 3_600,
            Self::Day => 86_400,
        }
    }

    /// The longest range one request may ask for.
    pub fn max_buckets(self) -> i64 {
        match self {
            Self::Hour => 31 * 24,
            Self::Day => 400,
        }
    }

    /// How long a bucket is kept after it starts: the longest range, and a day of grace.
    pub fn retention_seconds(self) -> i64 {
        self.max_buckets() * self.seconds() + 86_400
    }

    /// The start of the bucket that holds `t`.
    pub fn floor(self, t: Timestamp) -> Timestamp {
        let s = t.unix_seconds().div_euclid(self.seconds()) * self.seconds();
        Timestamp::from_unix_millis(s * 1000).unwrap_or(t)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("`from` must be before `to`")]
    Empty,
    #[error("the range may span at most {max} {unit}s for granularity={unit}")]
    TooLong { max: i64, unit: &'static str },
}

/// A validated statistics range: whole buckets from `from` (inclusive) to `to` (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatsRange {
    from: Timestamp,
    to: Timestamp,
    granularity: Granularity,
}

impl StatsRange {
    /// The buckets that hold any instant of `[from, to)`: `from` is rounded down to its bucket's
    /// start and `to` up to a bucket boundary.
    pub fn new(
        from: Timestamp,
        to: Timestamp,
        granularity: Granularity,
    ) -> Result<Self, RangeError> {
        if from >= to {
            return Err(RangeError::Empty);
        }
        let step = granularity.seconds();
        let start = granularity.floor(from).unix_seconds();
        // `to` rounded up to a bucket boundary (it is exclusive, so a boundary stays).
        let step_ms = step * 1000;
        let end = (to.unix_millis() + step_ms - 1).div_euclid(step_ms) * step;
        if (end - start) / step > granularity.max_buckets() {
            return Err(RangeError::TooLong {
                max: granularity.max_buckets(),
                unit: granularity.as_str(),
            });
        }
        let at = |s: i64| Timestamp::from_unix_millis(s * 1000).map_err(|_| RangeError::Empty);
        Ok(Self {
            from: at(start)?,
            to: at(end)?,
            granularity,
        })
    }

    /// The last `buckets` buckets up to and including the one that holds `now`.
    pub fn last(
        now: Timestamp,
        buckets: i64,
        granularity: Granularity,
    ) -> Result<Self, RangeError> {
        let end = granularity.floor(now).unix_seconds() + granularity.seconds();
        let start = end - buckets.max(1) * granularity.seconds();
        let at = |s: i64| Timestamp::from_unix_millis(s * 1000).map_err(|_| RangeError::Empty);
        Self::new(at(start)?, at(end)?, granularity)
    }

    pub fn from(&self) -> Timestamp {
        self.from
    }

    pub fn to(&self) -> Timestamp {
        self.to
    }

    pub fn granularity(&self) -> Granularity {
        self.granularity
    }

    /// Every bucket's start, in order.
    pub fn starts(&self) -> impl Iterator<Item = Timestamp> + use<> {
        let step = self.granularity.seconds();
        let (a, b) = (self.from.unix_seconds(), self.to.unix_seconds());
        (0..)
            .map(move |i| a + i * step)
            .take_while(move |s| *s < b)
            .filter_map(|s| Timestamp::from_unix_millis(s * 1000).ok())
    }
}

/// One bucket of a project's statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bucket {
    pub start: Timestamp,
    /// Events written (every visit and every event a backend posted).
    pub visits: u64,
    /// Evaluated events whose `scoreBot` was at or above the threshold.
    pub bots: u64,
    /// Evaluated events whose `scoreProxyVpn` was at or above the threshold.
    pub proxies: u64,
    /// How many evaluated events each reason code fired in.
    pub reasons: BTreeMap<String, u64>,
}

impl Bucket {
    pub fn empty(start: Timestamp) -> Self {
        Self {
            start,
            visits: 0,
            bots: 0,
            proxies: 0,
            reasons: BTreeMap::new(),
        }
    }

    pub fn add(&mut self, other: &Counts) {
        self.visits += other.visits;
        self.bots += other.bots;
        self.proxies += other.proxies;
        for (code, n) in &other.reasons {
            *self.reasons.entry(code.clone()).or_default() += n;
        }
    }
}

/// Counts kept for a bucket (or one shard of it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub visits: u64,
    pub bots: u64,
    pub proxies: u64,
    pub reasons: BTreeMap<String, u64>,
}

/// What one written event adds to its buckets.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub bot: bool,
    pub proxy: bool,
    /// Each reason code once.
    pub reasons: Vec<&'static str>,
}

impl Tally {
    pub fn of(r: &NewResult) -> Self {
        let Some(Evaluation {
            reasons, flagged, ..
        }) = &r.evaluation
        else {
            return Self {
                bot: false,
                proxy: false,
                reasons: Vec::new(),
            };
        };
        let mut codes: Vec<&'static str> = reasons.iter().map(|x| x.code.name()).collect();
        codes.sort_unstable();
        codes.dedup();
        Self {
            bot: flagged.bot,
            proxy: flagged.proxy,
            reasons: codes,
        }
    }

    pub fn counts(&self) -> Counts {
        Counts {
            visits: 1,
            bots: self.bot.into(),
            proxies: self.proxy.into(),
            reasons: self.reasons.iter().map(|c| ((*c).to_owned(), 1)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_cover_whole_buckets() {
        let r = StatsRange::new(
            t("2026-11-01T10:30:00.000Z"),
            t("2026-11-01T12:00:00.000Z"),
            Granularity::Hour,
        )
        .unwrap();
        let starts: Vec<String> = r.starts().map(|s| s.to_string()).collect();
        assert_eq!(
            starts,
            ["2026-11-01T10:00:00.000Z", "2026-11-01T11:00:00.000Z"]
        );
        let r = StatsRange::new(
            t("2026-11-01T10:30:00.000Z"),
            t("2026-11-01T12:00:00.001Z"),
            Granularity::Hour,
        )
        .unwrap();
        assert_eq!(r.starts().count(), 3);
        let r = StatsRange::new(
            t("2026-11-01T00:00:00.000Z"),
            t("2026-11-03T00:00:00.000Z"),
            Granularity::Day,
        )
        .unwrap();
        assert_eq!(r.starts().count(), 2);
    }

    #[test]
    fn ranges_are_bounded_and_ordered() {
        let from = t("2026-01-01T00:00:00.000Z");
        let ok = t("2026-02-01T00:00:00.000Z");
        let long = t("2026-02-01T01:00:00.000Z");
        assert!(StatsRange::new(from, ok, Granularity::Hour).is_ok());
        assert_eq!(
            StatsRange::new(from, long, Granularity::Hour),
            Err(RangeError::TooLong {
                max: 744,
                unit: "hour"
            })
        );
        assert_eq!(
            StatsRange::new(ok, from, Granularity::Day),
            Err(RangeError::Empty)
        );
        assert_eq!(
            StatsRange::new(from, from, Granularity::Day),
            Err(RangeError::Empty)
        );
        let year = t("2027-02-05T00:00:00.000Z");
        assert!(StatsRange::new(from, year, Granularity::Day).is_ok());
        let too_long = t("2027-02-06T00:00:00.000Z");
        assert!(StatsRange::new(from, too_long, Granularity::Day).is_err());
    }

    #[test]
    fn the_last_buckets_end_with_the_current_one() {
        let r = StatsRange::last(t("2026-11-23T10:15:00.000Z"), 24, Granularity::Hour).unwrap();
        assert_eq!(r.to().to_string(), "2026-11-23T11:00:00.000Z");
        assert_eq!(r.from().to_string(), "2026-11-22T11:00:00.000Z");
        assert_eq!(r.starts().count(), 24);
    }
}
