//! Timestamps: UTC, millisecond precision, always written as `2026-11-21T10:00:00.123Z`.
//!
//! The fixed-width text form sorts lexicographically in time order, which the stores rely on for
//! their sort keys.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Datelike, SubsecRound, Timelike, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    #[error("must be an RFC 3339 date-time such as 2026-11-21T10:00:00.000Z")]
    Format,
    #[error("must be between the years 1970 and 9999")]
    Range,
}

impl Timestamp {
    pub fn now() -> Self {
        Self(Utc::now().trunc_subsecs(3))
    }

    pub fn from_datetime(dt: DateTime<Utc>) -> Result<Self, TimestampError> {
        if !(1970..=9999).contains(&dt.year()) {
            return Err(TimestampError::Range);
        }
        Ok(Self(dt.trunc_subsecs(3)))
    }

    pub fn from_unix_millis(ms: i64) -> Result<Self, TimestampError> {
        DateTime::from_timestamp_millis(ms)
            .ok_or(TimestampError::Range)
            .and_then(Self::from_datetime)
    }

    pub fn unix_millis(self) -> i64 {
        self.0.timestamp_millis()
    }

    pub fn unix_seconds(self) -> i64 {
        self.0.timestamp()
    }

    /// This moment plus `d`, saturating at the end of the representable range.
    pub fn plus(self, d: std::time::Duration) -> Self {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Self::from_unix_millis(self.unix_millis().saturating_add(ms))
            .unwrap_or(Self(DateTime::<Utc>::MAX_UTC.trunc_subsecs(3)))
    }

    pub fn datetime(self) -> DateTime<Utc> {
        self.0
    }

    /// The last representable moment.
    pub fn max() -> Self {
        Self(DateTime::<Utc>::MAX_UTC.trunc_subsecs(3))
    }
}

/// Where the service reads the time: the system clock, or one a test sets, so that window and
/// period boundaries can be tested exactly.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that stands still until set.
#[derive(Debug, Clone)]
pub struct ManualClock(std::sync::Arc<std::sync::atomic::AtomicI64>);

impl ManualClock {
    pub fn at(t: Timestamp) -> Self {
        Self(std::sync::Arc::new(t.unix_millis().into()))
    }

    pub fn set(&self, t: Timestamp) {
        self.0
            .store(t.unix_millis(), std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        let ms = self.0.load(std::sync::atomic::Ordering::SeqCst);
        Timestamp::from_unix_millis(ms).unwrap_or_else(|_| Timestamp::max())
    }
}

impl FromStr for Timestamp {
    type Err = TimestampError;
    fn from_str(s: &str) -> Result<Self, TimestampError> {
        let dt = DateTime::parse_from_rfc3339(s).map_err(|_| TimestampError::Format)?;
        Self::from_datetime(dt.with_timezone(&Utc))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        let year = u32::try_from(d.year()).unwrap_or(u32::MAX);
        if year > 9999 {
            // Only `Timestamp::max()` gets here: chrono writes its extended year.
            return write!(f, "{}", d.format("%Y-%m-%dT%H:%M:%S%.3fZ"));
        }
        // Written digit by digit: chrono's formatter interprets its pattern on every call, and
        // every stored item's keys and bodies carry timestamps (a visible share of a visit).
        let mut text = *b"0000-00-00T00:00:00.000Z";
        let mut put = |at: usize, width: usize, mut n: u32| {
            for i in (at..at + width).rev() {
                text[i] = b'0' + (n % 10) as u8;
                n /= 10;
            }
        };
        put(0, 4, year);
        put(5, 2, d.month());
        put(8, 2, d.day());
        put(11, 2, d.hour());
        put(14, 2, d.minute());
        put(17, 2, d.second());
        put(20, 3, d.timestamp_subsec_millis().min(999));
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_millis_and_z() {
        let t: Timestamp = "2026-11-21T10:00:00Z".parse().unwrap();
        assert_eq!(t.to_string(), "2026-11-21T10:00:00.000Z");
        let t: Timestamp = "2026-11-21T12:00:00.123456+02:00".parse().unwrap();
        assert_eq!(t.to_string(), "2026-11-21T10:00:00.123Z");
    }

    #[test]
    fn the_digit_writer_matches_chronos_pattern() {
        // Moments spread over 1970..=9999 (a fixed stride, no randomness), the edges, and max.
        let last = Timestamp::from_unix_millis(253_402_300_799_999).unwrap();
        let mut moments = vec![
            Timestamp::from_unix_millis(0).unwrap(),
            last,
            Timestamp::max(),
        ];
        let mut ms = 0i64;
        while ms < 253_402_300_799_999 {
            moments.push(Timestamp::from_unix_millis(ms).unwrap());
            ms += 98_765_432_101;
        }
        for t in moments {
            let chrono = t.0.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
            assert_eq!(t.to_string(), chrono);
        }
        assert_eq!(last.to_string(), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn rejects_garbage_and_out_of_range() {
        assert_eq!(
            "yesterday".parse::<Timestamp>(),
            Err(TimestampError::Format)
        );
        assert_eq!(
            "2026-11-21".parse::<Timestamp>(),
            Err(TimestampError::Format)
        );
        assert_eq!(
            "1969-12-31T23:59:59Z".parse::<Timestamp>(),
            Err(TimestampError::Range)
        );
    }

    #[test]
    fn text_order_is_time_order() {
        let a: Timestamp = "2026-01-02T03:04:05.006Z".parse().unwrap();
        let b: Timestamp = "2026-01-02T03:04:05.060Z".parse().unwrap();
        assert!(a < b);
        assert!(a.to_string() < b.to_string());
    }

    #[test]
    fn unix_millis_round_trip() {
        let t = Timestamp::now();
        assert_eq!(Timestamp::from_unix_millis(t.unix_millis()), Ok(t));
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_a_time_or_a_refusal(s in ".{0,40}") {
            if let Ok(t) = s.parse::<Timestamp>() {
                proptest::prop_assert_eq!(t.to_string().parse::<Timestamp>(), Ok(t));
            }
        }

        #[test]
        fn times_round_trip_through_their_text(ms in 0i64..253_402_300_799_000) {
            let t = Timestamp::from_unix_millis(ms).unwrap();
            proptest::prop_assert_eq!(t.to_string().parse::<Timestamp>(), Ok(t));
        }
    }
}
