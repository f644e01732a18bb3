//! Webhook deliveries: one per session crossing and webhook, attempted on a schedule until the
//! receiver answers 2xx, answers 410, or the schedule runs out.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ids::{DeliveryId, ProjectId, SessionId, WebhookId};
use super::time::Timestamp;
use super::webhook::WebhookUrl;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    Pending,
    Delivered,
    Failed,
}

/// How one attempt went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AttemptOutcome {
    /// A 2xx answer.
    Delivered,
    /// 410 Gone: the receiver asked us to stop; the webhook is disabled.
    Gone,
    /// Anything else: a non-2xx status (redirects included), a timeout, a refused address.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub at: Timestamp,
    pub outcome: AttemptOutcome,
    pub status_code: Option<u16>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub id: DeliveryId,
    pub project_id: ProjectId,
    pub webhook_id: WebhookId,
    pub session_id: SessionId,
    pub url: WebhookUrl,
    /// The exact body sent on every attempt, so retries are byte-identical and verify alike.
    pub body: String,
    /// When the crossing result was created: orders the delivery log.
    pub crossed_at: Timestamp,
    pub status: DeliveryStatus,
    pub attempts: Vec<Attempt>,
    /// When the next attempt is due (pending deliveries only). While an attempt is in flight it
    /// is the end of that attempt's lease, so another sweeper does not send it twice.
    pub next_attempt_at: Option<Timestamp>,
    pub created_at: Timestamp,
    /// A webhook's test event, not a crossing: tried once (retries would make it an amplifier
    /// aimed at any URL) and counted against the test budgets. Stored only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test: bool,
}

impl Delivery {
    /// Records an attempt and decides what follows: done, failed for good, or the next try after
    /// the schedule's delay for this attempt number.
    pub fn record(&mut self, attempt: Attempt, schedule: &[Duration]) {
        let at = attempt.at;
        let outcome = attempt.outcome.clone();
        self.attempts.push(attempt);
        match outcome {
            AttemptOutcome::Delivered => {
                self.status = DeliveryStatus::Delivered;
                self.next_attempt_at = None;
            }
            AttemptOutcome::Gone => {
                self.status = DeliveryStatus::Failed;
                self.next_attempt_at = None;
            }
            AttemptOutcome::Failed => match schedule.get(self.attempts.len() - 1) {
                Some(delay) => {
                    self.next_attempt_at = Some(at.plus(*delay));
                    self.status = DeliveryStatus::Pending;
                }
                None => {
                    self.status = DeliveryStatus::Failed;
                    self.next_attempt_at = None;
                }
            },
        }
    }

    pub fn last_attempt(&self) -> Option<&Attempt> {
        self.attempts.last()
    }
}

/// A delivery as the delivery log shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryView {
    pub id: DeliveryId,
    pub session_id: SessionId,
    pub status: DeliveryStatus,
    pub attempts: usize,
    pub last_status_code: Option<u16>,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

impl From<&Delivery> for DeliveryView {
    fn from(d: &Delivery) -> Self {
        Self {
            id: d.id.clone(),
            session_id: d.session_id.clone(),
            status: d.status,
            attempts: d.attempts.len(),
            last_status_code: d.last_attempt().and_then(|a| a.status_code),
            last_error: d.last_attempt().and_then(|a| a.error.clone()),
            next_attempt_at: if d.status == DeliveryStatus::Pending {
                d.next_attempt_at
            } else {
                None
            },
            created_at: d.created_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::webhook::UrlPolicy;

    fn delivery() -> Delivery {
        let (p, s, w) = (
            "p".parse().unwrap(),
            "s".parse().unwrap(),
            "w".parse().unwrap(),
        );
        Delivery {
            id: DeliveryId::for_crossing(&p, &s, &w),
            project_id: p,
            webhook_id: w,
            session_id: s,
            url: WebhookUrl::parse("https://h.example/", UrlPolicy::default()).unwrap(),
            body: "{}".into(),
            crossed_at: Timestamp::from_unix_millis(0).unwrap(),
            status: DeliveryStatus::Pending,
            attempts: vec![],
            next_attempt_at: None,
            created_at: Timestamp::from_unix_millis(0).unwrap(),
            test: false,
        }
    }

    fn attempt(ms: i64, outcome: AttemptOutcome, code: Option<u16>) -> Attempt {
        Attempt {
            at: Timestamp::from_unix_millis(ms).unwrap(),
            outcome,
            status_code: code,
            error: None,
        }
    }

    #[test]
    fn failures_follow_the_schedule_then_fail() {
        let schedule = [Duration::from_secs(5), Duration::from_secs(60)];
        let mut d = delivery();
        d.record(attempt(1000, AttemptOutcome::Failed, Some(500)), &schedule);
        assert_eq!(d.status, DeliveryStatus::Pending);
        assert_eq!(d.next_attempt_at.map(|t| t.unix_millis()), Some(6000));
        d.record(attempt(6000, AttemptOutcome::Failed, None), &schedule);
        assert_eq!(d.next_attempt_at.map(|t| t.unix_millis()), Some(66_000));
        d.record(
            attempt(66_000, AttemptOutcome::Failed, Some(503)),
            &schedule,
        );
        assert_eq!(d.status, DeliveryStatus::Failed);
        assert_eq!(d.next_attempt_at, None);
        let v = DeliveryView::from(&d);
        assert_eq!((v.attempts, v.last_status_code), (3, Some(503)));
    }

    #[test]
    fn success_and_gone_end_it() {
        let mut d = delivery();
        d.record(
            attempt(1, AttemptOutcome::Delivered, Some(204)),
            &[Duration::from_secs(1)],
        );
        assert_eq!(
            (d.status, d.next_attempt_at),
            (DeliveryStatus::Delivered, None)
        );
        let mut g = delivery();
        g.record(
            attempt(1, AttemptOutcome::Gone, Some(410)),
            &[Duration::from_secs(1)],
        );
        assert_eq!(g.status, DeliveryStatus::Failed);
    }
}
