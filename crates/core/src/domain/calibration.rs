//! A project's model: the shared weights, or its own calibration of their `scoreBot` part on its
//! labels (the fit itself is the engine's, [`vigil_detect::calibration`]). What is kept, which
//! labels a fit may read, and which of them judge it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ids::SessionId;
use super::label::{Label, Truth};
use super::time::Timestamp;
use vigil_detect::calibration::{Comparison, Weights};

/// Labels of each kind a project needs before it is calibrated.
pub const MIN_LABELS_EACH: usize = 50;
/// Labels admitted to calibration per UTC day: a burst waits its turn, days later, so one day's
/// labels (a script gone wrong, a stolen key) cannot reshape a project's engine at once.
pub const LABELS_PER_DAY: usize = 200;
/// One labelled session in this many is held out to judge the fit, never fitted on.
pub const HOLD_OUT_EVERY: usize = 4;
/// The name events carry when they were judged by the shared weights.
pub const SHARED: &str = "shared";

/// Which weights judge a project's visits: its latest calibration when it has one (the default),
/// or the shared ones whatever it has (a roll back, `PATCH {"model": "shared"}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelChoice {
    #[default]
    Latest,
    Shared,
}

impl ModelChoice {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "latest" => Some(Self::Latest),
            "shared" => Some(Self::Shared),
            _ => None,
        }
    }
}

/// A kept calibration: its version, its weights and how they beat the shared ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    /// 1 for a project's first, one more for each kept after it.
    pub version: u32,
    pub fitted_at: Timestamp,
    /// The bias and the bot reasons' weights that differ from the shared table.
    pub weights: Weights,
    /// The fit against the shared weights on the held-out labels.
    pub comparison: Comparison,
}

impl Calibration {
    /// What events judged by it are marked: `v1`, `v2`, ...
    pub fn name(&self) -> String {
        format!("v{}", self.version)
    }
}

/// A stored calibration, or none when it cannot be read: a project always loads.
pub fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Calibration>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Read(Box<Calibration>),
        Unreadable(serde::de::IgnoredAny),
    }
    Ok(match Option::<Stored>::deserialize(d)? {
        Some(Stored::Read(c)) => Some(*c),
        Some(Stored::Unreadable(_)) => {
            tracing::warn!("a stored calibration could not be read; the shared weights judge");
            None
        }
        None => None,
    })
}

/// The labels a fit may read now: oldest first, at most [`LABELS_PER_DAY`] a day, a day's excess
/// carried to the days after it (as a queue drains), up to `today`.
pub fn admitted(mut labels: Vec<Label>, today: Timestamp) -> Vec<Label> {
    labels.sort_by(|a, b| (a.labelled_at, &a.session_id).cmp(&(b.labelled_at, &b.session_id)));
    let day = |t: Timestamp| t.unix_millis().div_euclid(86_400_000);
    let Some(first) = labels.first().map(|l| day(l.labelled_at)) else {
        return labels;
    };
    let mut admitted = 0usize;
    let mut next = 0usize;
    for d in first..=day(today) {
        // The labels made by the end of day d wait in the queue; the day admits its share.
        while next < labels.len() && day(labels[next].labelled_at) <= d {
            next += 1;
        }
        admitted = next.min(admitted + LABELS_PER_DAY);
        if admitted == labels.len() {
            break;
        }
    }
    labels.truncate(admitted);
    labels
}

/// How many labels of each kind.
pub fn counts(labels: &[Label]) -> (usize, usize) {
    let bots = labels.iter().filter(|l| l.label == Truth::Bot).count();
    (bots, labels.len() - bots)
}

/// Whether a labelled session is held out: one in [`HOLD_OUT_EVERY`] of each kind, chosen by a
/// hash of the session id (stable from run to run, unrelated to when it was labelled).
pub fn held_out(labels: &[Label]) -> BTreeMap<SessionId, bool> {
    use sha2::{Digest, Sha256};
    let mut out = BTreeMap::new();
    for truth in [Truth::Bot, Truth::Human] {
        let mut kind: Vec<([u8; 32], &SessionId)> = labels
            .iter()
            .filter(|l| l.label == truth)
            .map(|l| (Sha256::digest(l.session_id.as_str()).into(), &l.session_id))
            .collect();
        kind.sort();
        for (i, (_, s)) in kind.into_iter().enumerate() {
            out.insert(s.clone(), i.is_multiple_of(HOLD_OUT_EVERY));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::score::Score;

    fn label(i: usize, day: i64) -> Label {
        Label {
            session_id: SessionId::parse(format!("s{i:05}")).unwrap(),
            label: if i.is_multiple_of(2) {
                Truth::Bot
            } else {
                Truth::Human
            },
            reason: None,
            note: None,
            labelled_at: Timestamp::from_unix_millis(day * 86_400_000 + i as i64).unwrap(),
            score_bot: Score::HALF,
            reasons: vec![],
        }
    }

    fn on_day(d: i64) -> Timestamp {
        Timestamp::from_unix_millis(d * 86_400_000 + 3_600_000).unwrap()
    }

    #[test]
    fn a_burst_of_labels_is_admitted_a_day_at_a_time() {
        // 1,000 labels on day 10: 200 count that day, 200 more each day after.
        let burst: Vec<Label> = (0..1000).map(|i| label(i, 10)).collect();
        assert_eq!(admitted(burst.clone(), on_day(10)).len(), 200);
        assert_eq!(admitted(burst.clone(), on_day(11)).len(), 400);
        assert_eq!(admitted(burst.clone(), on_day(20)).len(), 1000);
        // A quiet month before it buys the burst nothing.
        let mut quiet = vec![label(5000, 0)];
        quiet.extend(burst);
        assert_eq!(admitted(quiet, on_day(10)).len(), 201);
        // The oldest labels are the ones admitted.
        let steady: Vec<Label> = (0..300).map(|i| label(i, i as i64 / 100)).collect();
        let got = admitted(steady, on_day(2));
        assert_eq!(got.len(), 300);
        assert!(admitted(vec![], on_day(2)).is_empty());
    }

    #[test]
    fn a_quarter_of_each_kind_is_held_out_and_the_choice_is_stable() {
        let labels: Vec<Label> = (0..400).map(|i| label(i, 0)).collect();
        let h = held_out(&labels);
        let held = |truth| {
            labels
                .iter()
                .filter(|l| l.label == truth && h[&l.session_id])
                .count()
        };
        assert_eq!((held(Truth::Bot), held(Truth::Human)), (50, 50));
        let mut reversed = labels.clone();
        reversed.reverse();
        assert_eq!(held_out(&reversed), h);
    }

    #[test]
    fn a_calibration_this_build_cannot_read_leaves_the_project_loadable() {
        #[derive(Deserialize)]
        struct Holder {
            #[serde(default, deserialize_with = "lenient")]
            calibration: Option<Calibration>,
        }
        let good = serde_json::json!({"calibration": {
            "version": 2, "fittedAt": "2026-11-27T10:00:00.000Z",
            "weights": {"bias": -4.1, "weights": {"no_plugins": 0.0}},
            "comparison": {"trainedOn": 150, "heldOut": 50, "sharedLogLoss": 1.7,
                           "modelLogLoss": 0.1, "sharedErrors": 25, "modelErrors": 0,
                           "threshold": 0.5}}});
        let read: Holder = serde_json::from_value(good.clone()).unwrap();
        assert_eq!(read.calibration.map(|c| c.version), Some(2));
        let mut bad = good;
        bad["calibration"]["weights"]["weights"]["no_plugins"] = serde_json::json!(-1.0);
        let read: Holder = serde_json::from_value(bad).unwrap();
        assert!(read.calibration.is_none());
        let none: Holder =
            serde_json::from_value(serde_json::json!({"calibration": null})).unwrap();
        assert!(none.calibration.is_none());
        let absent: Holder = serde_json::from_value(serde_json::json!({})).unwrap();
        assert!(absent.calibration.is_none());
    }

    #[test]
    fn the_model_choice_reads_two_words() {
        assert_eq!(ModelChoice::parse("shared"), Some(ModelChoice::Shared));
        assert_eq!(ModelChoice::parse("latest"), Some(ModelChoice::Latest));
        assert_eq!(ModelChoice::parse("v1"), None);
        assert_eq!(ModelChoice::default(), ModelChoice::Latest);
    }
}
