//! The resources of the interface, as the API shows them.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::evaluation::Evaluation;
use super::ids::{AccountId, PlanId, ProjectId, SessionId};
use super::score::Score;
use super::time::Timestamp;

/// One detection result of a session (interface 2.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckResult {
    pub score_bot: Score,
    pub score_proxy_vpn: Score,
    pub ip_address: IpAddr,
    pub created_at: Timestamp,
}

/// A result together with the session it belongs to, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct NewResult {
    pub project_id: ProjectId,
    pub session_id: SessionId,
    pub result: CheckResult,
    /// The engine's reasons, when the result comes from evaluating a visit.
    pub evaluation: Option<Evaluation>,
}

/// The overall score of a session (interface 2.2): the maximum of every result's scores.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionScore {
    pub score_bot: Score,
    pub score_proxy_vpn: Score,
}

impl SessionScore {
    pub fn of(result: &CheckResult) -> Self {
        Self {
            score_bot: result.score_bot,
            score_proxy_vpn: result.score_proxy_vpn,
        }
    }

    /// The score after one more result.
    pub fn with(self, result: &CheckResult) -> Self {
        Self {
            score_bot: self.score_bot.max(result.score_bot),
            score_proxy_vpn: self.score_proxy_vpn.max(result.score_proxy_vpn),
        }
    }
}

/// Where a result stands in its session's order: newest `createdAt` first, then newest written
/// first. `seq` is the session's write counter, assigned under the same lock as the aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ResultPosition {
    pub created_at: Timestamp,
    pub seq: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Trialing,
    Active,
    PastDue,
    Canceled,
    Unpaid,
    Paused,
}

/// A subscription plan (interface 2.3). Every field is always present; the two end dates are null
/// when not applicable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Plan {
    pub id: PlanId,
    pub name: String,
    pub description: String,
    pub max_rps: u32,
    pub max_projects: u32,
    pub max_requests: u64,
    pub expires_at: Option<Timestamp>,
    pub subscribed_at: Timestamp,
    pub status: PlanStatus,
    pub unsubscribed_at: Option<Timestamp>,
}

/// An account: owns API keys, projects and one plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    pub id: AccountId,
    pub plan: Plan,
}

/// A project (interface 2.4). `account_id` is internal and never shown; it is read where projects
/// are loaded whole (seed files).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Project {
    pub id: ProjectId,
    #[serde(skip_serializing)]
    pub account_id: AccountId,
    pub name: String,
    pub api_key_public: String,
    pub api_key_private: String,
    pub domain: String,
    pub disabled: bool,
    /// Whether the collect route needs a session token minted by the customer's backend. On for
    /// projects created through the API; a project stored or seeded without it predates the
    /// setting, and is off until changed.
    #[serde(default)]
    pub require_session_token: bool,
    /// Whether webhook deliveries also carry a signature under `apiKeyPrivate` (its UTF-8
    /// bytes), as every delivery did before secrets per webhook. Deprecated: on until the project
    /// turns it off, so receivers that verify with the project's key keep working.
    #[serde(default = "legacy_signature_default")]
    pub webhook_legacy_signature: bool,
    /// Which verified agents count as no bot.
    #[serde(default)]
    pub agents: super::project::AgentPolicy,
    /// Whether the collect route hands the page a sealed verdict (off unless turned on).
    #[serde(default)]
    pub sealed_results: bool,
    /// The keys that seal them: none until sealing is first turned on or rotated. Never shown
    /// with the project (`GET /projects/{id}/sealing-key` lists them); stored with it, so the
    /// collect route seals with no read of its own.
    #[serde(default, skip_serializing)]
    pub sealing_keys: Option<super::sealing::SealingKeys>,
    /// Which weights judge its visits: its latest calibration (when it has one) or the shared.
    #[serde(default)]
    pub model: super::calibration::ModelChoice,
    /// Its latest kept calibration: none until one beat the shared weights on its labels. A
    /// stored one this build cannot read (bounds since tightened) is left out rather than failing
    /// the project: its visits are then judged by the shared weights.
    #[serde(default, deserialize_with = "super::calibration::lenient")]
    pub calibration: Option<super::calibration::Calibration>,
    pub created_at: Timestamp,
}

impl Project {
    /// The model its visits are judged by now: its name (`shared`, `v3`) and, when calibrated,
    /// the weights.
    pub fn judging_model(&self) -> (String, Option<&vigil_detect::calibration::Weights>) {
        match (&self.calibration, self.model) {
            (Some(c), super::calibration::ModelChoice::Latest) => (c.name(), Some(&c.weights)),
            _ => (super::calibration::SHARED.to_owned(), None),
        }
    }
}

fn legacy_signature_default() -> bool {
    true
}

/// A project for tests: `prj_1` of `acc_1`, on `shop.example`, with session tokens required.
#[cfg(test)]
impl Project {
    pub(crate) fn example() -> Self {
        Project {
            id: ProjectId::parse("prj_1").unwrap(),
            account_id: AccountId::parse("acc_1").unwrap(),
            name: "Shop".into(),
            api_key_public: "pk".into(),
            api_key_private: "sk".into(),
            domain: "shop.example".into(),
            disabled: false,
            require_session_token: true,
            webhook_legacy_signature: true,
            sealed_results: false,
            sealing_keys: None,
            model: Default::default(),
            calibration: None,
            agents: Default::default(),
            created_at: "2026-11-21T00:00:00Z".parse().unwrap(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_shows_exactly_thirteen_fields() {
        let p = Project::example();
        let v = serde_json::to_value(&p).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys.len(), 13, "{keys:?}");
        assert_eq!(v["model"], "latest");
        assert_eq!(v["calibration"], serde_json::Value::Null);
        assert_eq!(v["agents"], serde_json::json!({"allow": []}));
        assert_eq!(v["requireSessionToken"], true);
        assert_eq!(v["apiKeyPrivate"], "sk");
        assert_eq!(v["createdAt"], "2026-11-21T00:00:00.000Z");
    }

    #[test]
    fn plan_status_wire_names() {
        assert_eq!(
            serde_json::to_string(&PlanStatus::PastDue).unwrap(),
            "\"past_due\""
        );
        assert!(serde_json::from_str::<PlanStatus>("\"gold\"").is_err());
    }

    #[test]
    fn session_score_is_maximum() {
        let r = |b: f64, p: f64| CheckResult {
            score_bot: Score::new(b).unwrap(),
            score_proxy_vpn: Score::new(p).unwrap(),
            ip_address: "203.0.113.7".parse().unwrap(),
            created_at: Timestamp::now(),
        };
        let s = SessionScore::of(&r(0.1, 0.9)).with(&r(0.8, 0.2));
        assert_eq!(s.score_bot.get(), 0.8);
        assert_eq!(s.score_proxy_vpn.get(), 0.9);
    }
}
