//! The plan as the customer's contract: every request of an account is admitted, or refused with
//! the reason, under its plan's status, `maxRps` and `maxRequests`; and what the period has used.

use serde::Serialize;

use super::error::{ServiceError, ServiceResult};
use std::net::IpAddr;

use crate::domain::plan::{
    Counted, Period, Refusal, Standing, Terms, VISITS_PER_ADDRESS, VisitCount, seconds_until,
    source_key,
};
use crate::domain::{AccountId, Clock, Plan, Project, Timestamp};
use crate::store::count::CountPlan;
use crate::store::{AccountStore, UsageStore};

/// `GET /usage`: the current billing period and what it has used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub period_start: Timestamp,
    pub period_end: Timestamp,
    pub requests: u64,
    pub max_requests: u64,
    pub remaining: u64,
}

/// The refusal for a count that was not allowed, with when to retry.
fn refusal(now: Timestamp, period: &Period, counted: Counted) -> ServiceError {
    let next_second = Timestamp::from_unix_millis((now.unix_seconds() + 1) * 1000)
        .unwrap_or_else(|_| Timestamp::max());
    ServiceError::Refused(match counted {
        Counted::QuotaExceeded => Refusal::QuotaExceeded(seconds_until(now, period.end)),
        _ => Refusal::RateLimited(seconds_until(now, next_second)),
    })
}

/// Plans, the part of [`Vigil`](super::vigil::Vigil) that holds accounts to their terms
/// ([`Vigil::plans`](super::vigil::Vigil::plans)): the clock is read once per request, and the
/// period and every count decided here; the store only applies the [`CountPlan`].
pub struct Plans<'a, S> {
    pub(super) store: &'a S,
    pub(super) clock: &'a dyn Clock,
}

impl<S> Clone for Plans<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Plans<'_, S> {}

impl<S: AccountStore> Plans<'_, S> {
    /// The terms of the account's plan.
    pub async fn terms(self, account: &AccountId) -> ServiceResult<Terms> {
        Ok(self.plan(account).await?.terms())
    }

    /// The account's plan; `Unauthorized` when the account is gone.
    pub async fn plan(self, account: &AccountId) -> ServiceResult<Plan> {
        let account = self
            .store
            .account(account)
            .await?
            .ok_or(ServiceError::Unauthorized)?;
        Ok(account.plan)
    }
}

impl<S: UsageStore> Plans<'_, S> {
    /// Admits one request of `account` and counts it, or refuses it: a plan not in force refuses
    /// everything but reading the plan itself (`plan_read`), then the per-second rate, then the
    /// period's quota. One counter round trip per request.
    pub async fn admit(
        self,
        account: &AccountId,
        terms: &Terms,
        plan_read: bool,
    ) -> ServiceResult<Standing> {
        self.admit_at(account, terms, plan_read, self.clock.now())
            .await
    }

    /// As [`Plans::admit`] at `now`, the instant the caller read for the whole request (so that
    /// its period and its headers agree with what was counted).
    pub async fn admit_at(
        self,
        account: &AccountId,
        terms: &Terms,
        plan_read: bool,
        now: Timestamp,
    ) -> ServiceResult<Standing> {
        if !plan_read && !terms.in_force(now) {
            return Err(ServiceError::Refused(Refusal::PlanInactive));
        }
        let period = terms.period(now);
        // A zero limit refuses without counting anything.
        if terms.max_rps == 0 {
            return Err(refusal(now, &period, Counted::RateLimited));
        }
        if terms.max_requests == 0 {
            return Err(refusal(now, &period, Counted::QuotaExceeded));
        }
        let plan = CountPlan::request(
            account,
            now.unix_seconds(),
            terms.max_rps,
            &period,
            terms.max_requests,
        );
        let counted = self.store.count(&plan).await?;
        match counted {
            Counted::Allowed {
                in_second,
                in_period,
            } => Ok(Standing {
                rps_remaining: terms.max_rps.saturating_sub(in_second),
                period_remaining: terms.max_requests.saturating_sub(in_period),
                period_reset: seconds_until(now, period.end),
            }),
            refused => Err(refusal(now, &period, refused)),
        }
    }

    /// Admits one visit of the collect route and counts it, or refuses it: over the project's
    /// visit rate or its source's, or once the period's `maxRequests` is spent. The developer
    /// API's own rate is never touched, so visits cannot refuse a developer request.
    pub(super) async fn admit_visit(
        self,
        project: &Project,
        terms: &Terms,
        source: IpAddr,
    ) -> ServiceResult<()> {
        let now = self.clock.now();
        let period = terms.period(now);
        let visit = VisitCount {
            account: &project.account_id,
            project: &project.id,
            source: source_key(source),
            second: now.unix_seconds(),
            project_rps: terms.visit_rps(),
            source_rps: VISITS_PER_ADDRESS,
            period,
            max_requests: terms.max_requests,
            max_rps: terms.max_rps,
        };
        let counted = if visit.project_rps == 0 {
            Counted::RateLimited
        } else if terms.max_requests == 0 {
            Counted::QuotaExceeded
        } else {
            self.store.count(&CountPlan::visit(&visit)).await?
        };
        match counted {
            Counted::Allowed { .. } => Ok(()),
            refused => Err(refusal(now, &period, refused)),
        }
    }

    /// What the account's current billing period has used.
    pub async fn usage(self, account: &AccountId, terms: &Terms) -> ServiceResult<Usage> {
        let period = terms.period(self.clock.now());
        let requests = self.store.period_usage(account, &period).await?;
        Ok(Usage {
            period_start: period.start,
            period_end: period.end,
            requests,
            max_requests: terms.max_requests,
            remaining: terms.max_requests.saturating_sub(requests),
        })
    }
}
