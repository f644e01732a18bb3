//! The plan as the customer's contract: every request of an account is admitted, or refused with
//! the reason, under its plan's status, `maxRps` and `maxRequests`; and what the period has used.

use serde::Serialize;

use super::{ServiceError, ServiceResult, Vigil};
use crate::domain::plan::{Counted, Refusal, Standing, Terms, seconds_until};
use crate::domain::{AccountId, Timestamp};
use crate::store::UsageStore;

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

impl<S: UsageStore> Vigil<S> {
    /// Admits one request of `account` and counts it, or refuses it: a plan not in force refuses
    /// everything but reading the plan itself (`plan_read`), then the per-second rate, then the
    /// period's quota. One counter round trip per request.
    pub async fn admit(
        &self,
        account: &AccountId,
        terms: &Terms,
        plan_read: bool,
    ) -> ServiceResult<Standing> {
        let now = self.now();
        if !plan_read && !terms.in_force(now) {
            return Err(ServiceError::Refused(Refusal::PlanInactive));
        }
        let period = terms.period(now);
        let next_second = Timestamp::from_unix_millis((now.unix_seconds() + 1) * 1000)
            .unwrap_or_else(|_| Timestamp::max());
        let rate_limited =
            || ServiceError::Refused(Refusal::RateLimited(seconds_until(now, next_second)));
        let quota_exceeded =
            || ServiceError::Refused(Refusal::QuotaExceeded(seconds_until(now, period.end)));
        // A zero limit refuses without counting anything.
        if terms.max_rps == 0 {
            return Err(rate_limited());
        }
        if terms.max_requests == 0 {
            return Err(quota_exceeded());
        }
        let counted = self
            .store
            .count_request(
                account,
                now.unix_seconds(),
                terms.max_rps,
                &period,
                terms.max_requests,
            )
            .await?;
        match counted {
            Counted::Allowed {
                in_second,
                in_period,
            } => Ok(Standing {
                rps_remaining: terms.max_rps.saturating_sub(in_second),
                period_remaining: terms.max_requests.saturating_sub(in_period),
                period_reset: seconds_until(now, period.end),
            }),
            Counted::RateLimited => Err(rate_limited()),
            Counted::QuotaExceeded => Err(quota_exceeded()),
        }
    }

    /// What the account's current billing period has used.
    pub async fn usage(&self, account: &AccountId, terms: &Terms) -> ServiceResult<Usage> {
        let period = terms.period(self.now());
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
