//! What a plan means: when it is in force, its billing periods, and the answer to one request under
//! its limits. Pure rules over values; the counting itself is the store's.

use chrono::{DateTime, Months, Utc};

use super::ids::AccountId;
use super::model::{Plan, PlanStatus};
use super::time::Timestamp;

/// An authenticated caller: the account, and the terms of its plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    pub account: AccountId,
    pub terms: Terms,
    /// The whole plan, when authenticating read it (`vigil serve`): `GET /plan` answers with it
    /// instead of reading the account again. The authorizer's context (Lambda) carries the terms.
    pub plan: Option<Plan>,
}

/// The part of a plan that every request is checked against. It travels with the authenticated
/// account (the authorizer's context), so enforcement needs no read of the account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terms {
    pub status: PlanStatus,
    pub expires_at: Option<Timestamp>,
    pub subscribed_at: Timestamp,
    pub max_rps: u32,
    pub max_requests: u64,
    pub max_projects: u32,
}

impl Plan {
    pub fn terms(&self) -> Terms {
        Terms {
            status: self.status,
            expires_at: self.expires_at,
            subscribed_at: self.subscribed_at,
            max_rps: self.max_rps,
            max_requests: self.max_requests,
            max_projects: self.max_projects,
        }
    }
}

impl Terms {
    /// In force: trialing, active or past due (a grace period), and not expired at `now`.
    pub fn in_force(&self, now: Timestamp) -> bool {
        let status_ok = matches!(
            self.status,
            PlanStatus::Trialing | PlanStatus::Active | PlanStatus::PastDue
        );
        status_ok && self.expires_at.is_none_or(|e| now < e)
    }

    /// The billing period that contains `now`: from one monthly anniversary of `subscribed_at` to
    /// the next, in UTC. An anniversary on a day a month lacks falls on its last day (a plan
    /// subscribed on the 31st renews on February's last day, then on March 31st).
    pub fn period(&self, now: Timestamp) -> Period {
        let start = self.subscribed_at.datetime();
        let now_dt = now.datetime();
        // Months between the two dates, then one back if that anniversary is still ahead.
        let diff = |a: DateTime<Utc>, b: DateTime<Utc>| {
            use chrono::Datelike;
            (b.year() - a.year()) * 12 + b.month() as i32 - a.month() as i32
        };
        let mut k = diff(start, now_dt).max(0) as u32;
        if k > 0 && anniversary(start, k) > now_dt {
            k -= 1;
        }
        Period {
            start: stamp(anniversary(start, k)),
            end: stamp(anniversary(start, k + 1)),
        }
    }
}

/// `start` plus `k` months, always counted from the first date so that short months do not
/// shift later anniversaries.
fn anniversary(start: DateTime<Utc>, k: u32) -> DateTime<Utc> {
    start
        .checked_add_months(Months::new(k))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

fn stamp(dt: DateTime<Utc>) -> Timestamp {
    Timestamp::from_datetime(dt).unwrap_or_else(|_| Timestamp::max())
}

/// One billing period: `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub start: Timestamp,
    pub end: Timestamp,
}

/// What the counters said of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// Counted: the requests of its second and of its period so far, itself included.
    Allowed { in_second: u32, in_period: u64 },
    /// The second already had `max_rps` requests; nothing was counted.
    RateLimited,
    /// The period already had `max_requests` requests; nothing was counted against it.
    QuotaExceeded,
}

/// The collect route's own budget. Visits never spend the developer API's `maxRps`: a project
/// takes up to this multiple of it in visits per second, and one source address (an IPv6 /64
/// counts as one) up to [`VISITS_PER_ADDRESS`] per second of each project. Visits do count towards
/// the period's `maxRequests`, but only visits are refused once it is spent.
pub const VISIT_RPS_MULTIPLE: u32 = 10;
/// Visits one source address may send to one project in a second: a person's pages send one per
/// page view; an office or a carrier's NAT, a few at a time.
pub const VISITS_PER_ADDRESS: u32 = 20;

/// One visit to count: its project, where it came from, and the limits it is counted under.
#[derive(Debug, Clone)]
pub struct VisitCount<'a> {
    pub account: &'a AccountId,
    pub project: &'a super::ids::ProjectId,
    /// The source's key: an IPv4 address, or an IPv6 address's /64 network.
    pub source: String,
    pub second: i64,
    pub project_rps: u32,
    pub source_rps: u32,
    pub period: Period,
    pub max_requests: u64,
    /// The account's developer rate, which sizes the spread of its usage counter.
    pub max_rps: u32,
}

/// The key a visit's source is counted under: an IPv4 address, or the /64 network of an IPv6 one
/// (one subscriber's allocation, which its holder can rotate through at will).
pub fn source_key(ip: std::net::IpAddr) -> String {
    match ip {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

impl Terms {
    /// The per-project visit rate: a multiple of `maxRps`, saturating.
    pub fn visit_rps(&self) -> u32 {
        self.max_rps.saturating_mul(VISIT_RPS_MULTIPLE)
    }
}

/// Where the account stands after an admitted request: what the rate-limit headers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    pub rps_remaining: u32,
    pub period_remaining: u64,
    /// Seconds until the period ends.
    pub period_reset: u64,
}

/// Why a request was refused by its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    PlanInactive,
    /// Retry after this many seconds.
    RateLimited(u64),
    QuotaExceeded(u64),
}

/// Whole seconds from `now` until `then`, at least 1 (a `Retry-After` of 0 invites a busy loop).
pub fn seconds_until(now: Timestamp, then: Timestamp) -> u64 {
    let ms = then.unix_millis().saturating_sub(now.unix_millis()).max(0) as u64;
    ms.div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::PlanId;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn terms(status: PlanStatus, expires: Option<&str>, subscribed: &str) -> Terms {
        Plan {
            id: PlanId::parse("p").unwrap(),
            name: "n".into(),
            description: "d".into(),
            max_rps: 5,
            max_projects: 3,
            max_requests: 100,
            expires_at: expires.map(at),
            subscribed_at: at(subscribed),
            status,
            unsubscribed_at: None,
        }
        .terms()
    }

    #[test]
    fn in_force_by_status_and_expiry() {
        let now = at("2026-11-22T12:00:00Z");
        for s in [
            PlanStatus::Trialing,
            PlanStatus::Active,
            PlanStatus::PastDue,
        ] {
            assert!(
                terms(s, None, "2026-01-01T00:00:00Z").in_force(now),
                "{s:?}"
            );
        }
        for s in [PlanStatus::Canceled, PlanStatus::Unpaid, PlanStatus::Paused] {
            assert!(
                !terms(s, None, "2026-01-01T00:00:00Z").in_force(now),
                "{s:?}"
            );
        }
        let t = terms(
            PlanStatus::Active,
            Some("2026-11-22T12:00:00Z"),
            "2026-01-01T00:00:00Z",
        );
        assert!(t.in_force(at("2026-11-22T11:59:59.999Z")));
        assert!(!t.in_force(now), "expiry is exclusive");
    }

    #[test]
    fn periods_follow_the_anniversary() {
        let t = terms(PlanStatus::Active, None, "2026-01-15T08:30:00Z");
        let p = t.period(at("2026-03-15T08:29:59.999Z"));
        assert_eq!(p.start, at("2026-02-15T08:30:00Z"));
        assert_eq!(p.end, at("2026-03-15T08:30:00Z"));
        let p = t.period(at("2026-03-15T08:30:00Z"));
        assert_eq!(p.start, at("2026-03-15T08:30:00Z"));
        assert_eq!(p.end, at("2026-04-15T08:30:00Z"));
        // Before the subscription: its first period.
        let p = t.period(at("2025-12-01T00:00:00Z"));
        assert_eq!(p.start, at("2026-01-15T08:30:00Z"));
    }

    #[test]
    fn the_31st_falls_on_month_ends_without_drifting() {
        let t = terms(PlanStatus::Active, None, "2025-01-31T00:00:00Z");
        let p = t.period(at("2025-02-28T00:00:00Z"));
        assert_eq!(p.start, at("2025-02-28T00:00:00Z"));
        assert_eq!(p.end, at("2025-03-31T00:00:00Z"));
        let p = t.period(at("2025-02-27T23:59:59.999Z"));
        assert_eq!(p.start, at("2025-01-31T00:00:00Z"));
        assert_eq!(p.end, at("2025-02-28T00:00:00Z"));
        // A leap year's February.
        let p = t.period(at("2028-02-29T00:00:00Z"));
        assert_eq!(p.start, at("2028-02-29T00:00:00Z"));
        assert_eq!(p.end, at("2028-03-31T00:00:00Z"));
        let p = t.period(at("2025-04-30T12:00:00Z"));
        assert_eq!(p.start, at("2025-04-30T00:00:00Z"));
        assert_eq!(p.end, at("2025-05-31T00:00:00Z"));
    }

    #[test]
    fn sources_are_addresses_or_ipv6_networks() {
        let k = |s: &str| source_key(s.parse().unwrap());
        assert_eq!(k("203.0.113.7"), "203.0.113.7");
        assert_eq!(k("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
        assert_eq!(k("2001:db8:1:2:ffff::1"), k("2001:db8:1:2::9"));
        assert_eq!(k("::ffff:203.0.113.7"), "203.0.113.7");
    }

    #[test]
    fn retry_after_rounds_up_and_is_never_zero() {
        let now = at("2026-11-22T12:00:00.200Z");
        assert_eq!(seconds_until(now, at("2026-11-22T12:00:01Z")), 1);
        assert_eq!(seconds_until(now, at("2026-11-22T12:00:02.100Z")), 2);
        assert_eq!(seconds_until(now, now), 1);
    }
}
