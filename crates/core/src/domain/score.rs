//! Detection scores: a probability in [0, 1].

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize)]
#[serde(transparent)]
pub struct Score(f64);

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("must be a number from 0 to 1")]
pub struct ScoreError;

impl Score {
    pub const ZERO: Score = Score(0.0);
    pub const HALF: Score = Score(0.5);

    pub fn new(v: f64) -> Result<Self, ScoreError> {
        if v.is_finite() && (0.0..=1.0).contains(&v) {
            // Normalise -0.0 so that equal scores serialise identically.
            Ok(Self(v + 0.0))
        } else {
            Err(ScoreError)
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }

    /// The larger of two scores (scores are never NaN, so this is a total order).
    pub fn max(self, other: Score) -> Score {
        if other.0 > self.0 { other } else { self }
    }
}

impl fmt::Display for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de> Deserialize<'de> for Score {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Score::new(f64::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive() {
        assert!(Score::new(0.0).is_ok());
        assert!(Score::new(1.0).is_ok());
        assert_eq!(
            Score::new(-0.0).map(|s| s.get().to_bits()),
            Ok(0.0f64.to_bits())
        );
    }

    #[test]
    fn rejects_out_of_range_and_non_finite() {
        for v in [-0.01, 1.0001, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(Score::new(v).is_err(), "{v}");
        }
        assert!(serde_json::from_str::<Score>("1.5").is_err());
    }

    #[test]
    fn max_picks_larger() {
        let a = Score::new(0.2).unwrap();
        let b = Score::new(0.7).unwrap();
        assert_eq!(a.max(b), b);
        assert_eq!(b.max(a), b);
    }
}
