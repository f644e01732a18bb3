//! Deployment settings, read once from the environment by every function and by `vigil serve`.
//! A malformed value stops start-up with a clear error.

use std::time::Duration;

use crate::domain::Score;

pub const DEFAULT_TABLE: &str = "vigil";
pub const DEFAULT_RETRY_SCHEDULE: &str = "5s,5m,30m,2h,5h,10h,24h";
/// How long a rotated-out webhook secret keeps signing beside the new one.
pub const DEFAULT_SECRET_OVERLAP: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `VIGIL_TABLE`: the DynamoDB table.
    pub table: String,
    /// `VIGIL_WEBHOOK_THRESHOLD`: the overall proxy/VPN score whose crossing triggers a delivery.
    pub webhook_threshold: Score,
    /// `VIGIL_WEBHOOK_RETRY_SCHEDULE`: delays between delivery attempts.
    pub retry_schedule: Vec<Duration>,
    /// `VIGIL_ORIGIN_VERIFY`: the secret CloudFront adds to every request it forwards; only a
    /// request that carries it has its `CloudFront-Viewer-*` headers believed. Unset: none is.
    pub origin_verify: Option<String>,
    /// `VIGIL_WEBHOOK_SECRET_OVERLAP` (`24h`, `30m`): how long a webhook's previous secret keeps
    /// signing after a rotation.
    pub secret_overlap: Duration,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{name} is invalid: {reason}")]
pub struct ConfigError {
    pub name: &'static str,
    pub reason: String,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads settings through `get`, so tests need not touch the process environment.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let table = get("VIGIL_TABLE").unwrap_or_else(|| DEFAULT_TABLE.to_owned());
        if table.is_empty() || table.len() > 255 {
            return Err(ConfigError {
                name: "VIGIL_TABLE",
                reason: "must be 1 to 255 characters".into(),
            });
        }
        let webhook_threshold = match get("VIGIL_WEBHOOK_THRESHOLD") {
            None => crate::domain::webhook::DEFAULT_THRESHOLD,
            Some(v) => v
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(|f| Score::new(f).ok())
                .ok_or_else(|| ConfigError {
                    name: "VIGIL_WEBHOOK_THRESHOLD",
                    reason: format!("{v:?} is not a number from 0 to 1"),
                })?,
        };
        let schedule = get("VIGIL_WEBHOOK_RETRY_SCHEDULE")
            .unwrap_or_else(|| DEFAULT_RETRY_SCHEDULE.to_owned());
        let retry_schedule = parse_schedule(&schedule).map_err(|reason| ConfigError {
            name: "VIGIL_WEBHOOK_RETRY_SCHEDULE",
            reason,
        })?;
        let origin_verify = get("VIGIL_ORIGIN_VERIFY").filter(|s| !s.is_empty());
        if origin_verify.as_ref().is_some_and(|s| s.len() < 16) {
            return Err(ConfigError {
                name: "VIGIL_ORIGIN_VERIFY",
                reason: "must be at least 16 characters (a secret a client cannot guess)".into(),
            });
        }
        let secret_overlap = match get("VIGIL_WEBHOOK_SECRET_OVERLAP") {
            None => DEFAULT_SECRET_OVERLAP,
            Some(v) => humantime::parse_duration(v.trim())
                .ok()
                .filter(|d| *d <= Duration::from_secs(30 * 86_400))
                .ok_or_else(|| ConfigError {
                    name: "VIGIL_WEBHOOK_SECRET_OVERLAP",
                    reason: format!("{v:?} is not a duration of at most 30 days (24h, 30m)"),
                })?,
        };
        Ok(Self {
            table,
            webhook_threshold,
            retry_schedule,
            origin_verify,
            secret_overlap,
        })
    }
}

/// `5s,5m,30m,2h`: comma-separated durations with a unit (ms, s, m, h, d).
pub fn parse_schedule(s: &str) -> Result<Vec<Duration>, String> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    s.split(',')
        .map(|part| {
            let part = part.trim();
            humantime::parse_duration(part).map_err(|e| format!("{part:?}: {e}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_lookup(|k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn defaults() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.table, "vigil");
        assert_eq!(c.webhook_threshold.get(), 0.5);
        assert_eq!(c.retry_schedule.len(), 7);
        assert_eq!(c.retry_schedule[1], Duration::from_secs(300));
        assert_eq!(c.retry_schedule[6], Duration::from_secs(24 * 3600));
    }

    #[test]
    fn malformed_values_are_named() {
        assert_eq!(
            cfg(&[("VIGIL_WEBHOOK_THRESHOLD", "high")])
                .unwrap_err()
                .name,
            "VIGIL_WEBHOOK_THRESHOLD"
        );
        assert_eq!(
            cfg(&[("VIGIL_WEBHOOK_THRESHOLD", "1.5")]).unwrap_err().name,
            "VIGIL_WEBHOOK_THRESHOLD"
        );
        assert_eq!(
            cfg(&[("VIGIL_WEBHOOK_RETRY_SCHEDULE", "5s,soon")])
                .unwrap_err()
                .name,
            "VIGIL_WEBHOOK_RETRY_SCHEDULE"
        );
        assert_eq!(cfg(&[("VIGIL_TABLE", "")]).unwrap_err().name, "VIGIL_TABLE");
        assert_eq!(
            cfg(&[("VIGIL_ORIGIN_VERIFY", "short")]).unwrap_err().name,
            "VIGIL_ORIGIN_VERIFY"
        );
        assert_eq!(
            cfg(&[("VIGIL_ORIGIN_VERIFY", "")]).unwrap().origin_verify,
            None
        );
    }

    #[test]
    fn custom_schedule() {
        let c = cfg(&[("VIGIL_WEBHOOK_RETRY_SCHEDULE", "100ms, 1s")]).unwrap();
        assert_eq!(
            c.retry_schedule,
            vec![Duration::from_millis(100), Duration::from_secs(1)]
        );
    }
}
