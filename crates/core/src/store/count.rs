//! Count plans: the counters a developer's request or a visit must find room in, in which order
//! their refusals rank, and what a refused count leaves counted. Decided here once, like the
//! write plans of `plan.rs`; each store applies a plan's steps to its own layout
//! (`store-dynamo/src/counters.rs`: a conditional add per step on spread items, then
//! [`CountPlan::decide`]; `store-sqlite/src/counters.rs`: the steps checked in order, then added,
//! in one transaction, a developer's positions claimed in blocks while the plan is the second and
//! the period). A new limit is a new step.
//!
//! The rules, for every store:
//! - a count is refused by the first step, in plan order, that has no room, with that step's
//!   refusal;
//! - what the other steps counted is taken back, except where a step keeps it: a developer's
//!   request refused for the period still took its place in its second;
//! - visits are counted against the period by the total of developer requests and visits, and
//!   developer requests by their own count, so no number of visits refuses a developer.

use crate::domain::plan::{Counted, Period, VisitCount};
use crate::domain::time::Timestamp;

use super::keys::{
    account_pk, project_pk, rate_sk, usage_sk, visit_rate_sk, visit_source_sk, visits_sk,
};

/// Seconds a per-second window is kept after it starts (expired by the table's TTL).
pub const RATE_WINDOW_TTL: i64 = 120;
/// Days a period's counter is kept after the period ends, so a late reader still finds it.
pub const COUNTER_GRACE_SECONDS: i64 = 40 * 86_400;

/// Writes per second one counter item is built for. A DynamoDB partition takes about 1,000; a
/// quarter leaves room for bursts and for the other items of the account's partition.
pub const WRITES_PER_COUNTER: u64 = 250;
/// The most items one counter is spread over (a plan of 4,000 requests per second).
pub const MAX_COUNTER_SHARDS: u32 = 16;

/// How one limited counter is spread over items: `shards` items, each allowed its share of the
/// limit. The shares add up to the limit, so the counter never exceeds it; a request is refused
/// only once every shard has refused it, so the limit is also reached exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spread {
    pub shards: u32,
    pub limit: u64,
}

impl Spread {
    /// Enough shards for `writes_per_second` (one, for every plan up to 250 a second), never
    /// more shards than the limit has units.
    pub fn for_rate(writes_per_second: u64, limit: u64) -> Self {
        let wanted = writes_per_second.div_ceil(WRITES_PER_COUNTER).max(1);
        let shards = wanted.min(u64::from(MAX_COUNTER_SHARDS)).min(limit.max(1));
        Self {
            shards: u32::try_from(shards).unwrap_or(1),
            limit,
        }
    }

    /// A developer rate window of `max_rps`.
    pub fn rate(max_rps: u32) -> Self {
        Self::for_rate(u64::from(max_rps), u64::from(max_rps))
    }

    /// A billing period's usage: written by developer requests (up to `max_rps` a second) and as
    /// often again by visits.
    pub fn usage(max_rps: u32, max_requests: u64) -> Self {
        Self::for_rate(2 * u64::from(max_rps), max_requests)
    }

    /// Shard `i`'s part of the limit.
    pub fn share(&self, i: u32) -> u64 {
        let n = u64::from(self.shards.max(1));
        self.limit / n + u64::from(u64::from(i) < self.limit % n)
    }

    /// The whole counter as estimated from shard `i` holding `count`: exact with one shard;
    /// with more, the limit less what shard `i` has left times the shards (for the advisory
    /// RateLimit headers only).
    pub fn estimate(&self, i: u32, count: u64) -> u64 {
        let left = self.share(i).saturating_sub(count);
        self.limit
            .saturating_sub(left.saturating_mul(u64::from(self.shards)))
    }
}

/// What a count adds to in its counter item, and which of those its limit guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tally {
    /// A second's window: its count, guarded by it.
    Window,
    /// A developer request in the period's usage: its own count and the total, guarded by its
    /// own count (visits never refuse a developer request).
    Developer,
    /// A visit in the period's usage: the visits and the total, guarded by the total.
    Visits,
}

/// What an admitted count reports from a step: the RateLimit headers' figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reports {
    /// The requests of the second so far.
    Second,
    /// The requests of the period so far.
    Period,
    Nothing,
}

/// One counter a count must find room in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountStep {
    /// The counter item's key (on DynamoDB, the first shard's; `keys::shard_sk` names the rest).
    pub pk: String,
    pub sk: String,
    pub tally: Tally,
    pub spread: Spread,
    /// When the counter expires (epoch seconds).
    pub expires: i64,
    /// What the count answers when this step is the first with no room.
    pub refusal: Counted,
    /// Whether this counter keeps its count when a later step refuses.
    pub kept_when_refused: bool,
    pub reports: Reports,
}

impl CountStep {
    /// The step's limit.
    pub fn limit(&self) -> u64 {
        self.spread.limit
    }
}

/// Which count a plan is: stores may apply the two differently (SQLite claims a developer's
/// positions in blocks), never to different answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountKind {
    Request,
    Visit,
}

/// Every counter one request or visit is counted in, in the order their refusals rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountPlan {
    pub kind: CountKind,
    /// The second counted in (epoch seconds).
    pub second: i64,
    pub steps: Vec<CountStep>,
    /// The period's visits' own counter, for a store that keeps them apart from the usage item
    /// (SQLite; DynamoDB keeps them as the usage item's attributes, where one condition reads
    /// both counts).
    pub visits_sk: Option<String>,
}

/// What a plan's count comes to once each step has said whether it had room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allowed(Counted),
    /// Refused with `answer`; the steps at `take_back` (indexes) counted and must give it back.
    Refused {
        answer: Counted,
        take_back: Vec<usize>,
    },
}

impl CountPlan {
    /// A developer request of `account` in `second`: its rate, then the period's developer
    /// requests.
    pub fn request(
        account: &crate::domain::AccountId,
        second: i64,
        max_rps: u32,
        period: &Period,
        max_requests: u64,
    ) -> Self {
        let pk = account_pk(account);
        Self {
            kind: CountKind::Request,
            second,
            steps: vec![
                CountStep {
                    pk: pk.clone(),
                    sk: rate_sk(second),
                    tally: Tally::Window,
                    spread: Spread::rate(max_rps),
                    expires: second + RATE_WINDOW_TTL,
                    refusal: Counted::RateLimited,
                    kept_when_refused: true,
                    reports: Reports::Second,
                },
                usage_step(pk, period, max_rps, max_requests, Tally::Developer),
            ],
            visits_sk: None,
        }
    }

    /// A visit: its source's second in its project, the project's second, then the period's
    /// total.
    pub fn visit(v: &VisitCount<'_>) -> Self {
        let ppk = project_pk(v.project);
        let window = |sk: String, spread: Spread, reports| CountStep {
            pk: ppk.clone(),
            sk,
            tally: Tally::Window,
            spread,
            expires: v.second + RATE_WINDOW_TTL,
            refusal: Counted::RateLimited,
            kept_when_refused: false,
            reports,
        };
        let project_rps = u64::from(v.project_rps);
        Self {
            kind: CountKind::Visit,
            second: v.second,
            steps: vec![
                window(
                    visit_source_sk(&v.source, v.second),
                    Spread::for_rate(0, u64::from(v.source_rps)),
                    Reports::Second,
                ),
                window(
                    visit_rate_sk(v.second),
                    Spread::for_rate(project_rps, project_rps),
                    Reports::Nothing,
                ),
                usage_step(
                    account_pk(v.account),
                    &v.period,
                    v.max_rps,
                    v.max_requests,
                    Tally::Visits,
                ),
            ],
            visits_sk: Some(visits_sk(v.period.start)),
        }
    }

    /// The count once each step said whether it had room: `counted[i]` is step `i`'s shard and
    /// its guarded count after adding, or None when it had none.
    pub fn decide(&self, counted: &[Option<(u32, u64)>]) -> Decision {
        let refusing = self
            .steps
            .iter()
            .zip(counted)
            .find(|(_, c)| c.is_none())
            .map(|(s, _)| s.refusal);
        match refusing {
            Some(answer) => Decision::Refused {
                answer,
                take_back: self
                    .steps
                    .iter()
                    .zip(counted)
                    .enumerate()
                    .filter(|(_, (s, c))| c.is_some() && !s.kept_when_refused)
                    .map(|(i, _)| i)
                    .collect(),
            },
            None => {
                let report = |r: Reports| {
                    self.steps
                        .iter()
                        .zip(counted)
                        .find(|(s, _)| s.reports == r)
                        .and_then(|(s, c)| c.map(|(i, n)| s.spread.estimate(i, n)))
                        .unwrap_or(0)
                };
                Decision::Allowed(Counted::Allowed {
                    in_second: u32::try_from(report(Reports::Second)).unwrap_or(u32::MAX),
                    in_period: report(Reports::Period),
                })
            }
        }
    }
}

/// The period's usage item, counted as `tally`.
fn usage_step(
    pk: String,
    period: &Period,
    max_rps: u32,
    max_requests: u64,
    tally: Tally,
) -> CountStep {
    CountStep {
        pk,
        sk: usage_sk(period.start),
        tally,
        spread: Spread::usage(max_rps, max_requests),
        expires: expires_after(period.end),
        refusal: Counted::QuotaExceeded,
        kept_when_refused: false,
        reports: Reports::Period,
    }
}

fn expires_after(end: Timestamp) -> i64 {
    end.unix_seconds() + COUNTER_GRACE_SECONDS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AccountId, ProjectId};

    #[test]
    fn small_plans_keep_one_counter_and_large_ones_spread_their_limit() {
        assert_eq!(Spread::rate(250).shards, 1);
        assert_eq!(Spread::rate(10).estimate(0, 7), 7);
        let big = Spread::rate(2_000);
        assert_eq!(big.shards, 8);
        assert_eq!((0..8).map(|i| big.share(i)).sum::<u64>(), 2_000);
        let odd = Spread::for_rate(1_000, 1_003);
        assert_eq!(odd.shards, 4);
        assert_eq!(
            (0..4).map(|i| odd.share(i)).collect::<Vec<_>>(),
            [251, 251, 251, 250]
        );
        assert_eq!(Spread::for_rate(1_000_000, 3).shards, 3);
        assert_eq!(
            Spread::for_rate(1_000_000, 1_000_000).shards,
            MAX_COUNTER_SHARDS
        );
        assert_eq!(Spread::usage(2_000, 100).shards, 16);
    }

    fn period() -> Period {
        Period {
            start: "2026-11-01T00:00:00Z".parse().unwrap(),
            end: "2026-12-01T00:00:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn the_first_step_without_room_refuses_and_only_what_keeps_is_kept() {
        let acc = AccountId::parse("acc_1").unwrap();
        let request = CountPlan::request(&acc, 100, 10, &period(), 1_000);
        // The second is full: nothing counted is kept but the rate's own (it had no room).
        assert_eq!(
            request.decide(&[None, Some((0, 5))]),
            Decision::Refused {
                answer: Counted::RateLimited,
                take_back: vec![1]
            }
        );
        // The period is spent: the request keeps its place in its second.
        assert_eq!(
            request.decide(&[Some((0, 3)), None]),
            Decision::Refused {
                answer: Counted::QuotaExceeded,
                take_back: vec![]
            }
        );
        assert_eq!(
            request.decide(&[Some((0, 3)), Some((0, 40))]),
            Decision::Allowed(Counted::Allowed {
                in_second: 3,
                in_period: 40
            })
        );
        let project = ProjectId::parse("prj_1").unwrap();
        let visit = CountPlan::visit(&VisitCount {
            account: &acc,
            project: &project,
            source: "203.0.113.7".into(),
            second: 100,
            project_rps: 100,
            source_rps: 20,
            period: period(),
            max_requests: 1_000,
            max_rps: 10,
        });
        // A refused visit counts nowhere.
        assert_eq!(
            visit.decide(&[Some((0, 1)), Some((0, 9)), None]),
            Decision::Refused {
                answer: Counted::QuotaExceeded,
                take_back: vec![0, 1]
            }
        );
        assert_eq!(
            visit.decide(&[Some((0, 1)), None, None]),
            Decision::Refused {
                answer: Counted::RateLimited,
                take_back: vec![0]
            }
        );
        assert_eq!(
            visit.visits_sk.as_deref(),
            Some("VISITS#2026-11-01T00:00:00.000Z")
        );
    }
}
