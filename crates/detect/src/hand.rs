//! The hand: what a page's pointer, wheel and keys looked like, as the agent summarises them
//! ([`Hand`]: one row of numbers per movement, the presses' holds, the wheel's ratios, the keys'
//! timing), judged against real people's recordings (SapiMouse, 60 people, 10,108 approach
//! movements; `scripts/hand/`, docs/research/issue-58-acting-scraper.md).
//!
//! Three judgements, each pure:
//! - [`Movement::machine`]: a movement a generator drew. A flat speed profile (peak under 1.5
//!   times the mean: WindMouse) or, without a pause, a speed surging every few frames (eight or
//!   more peaks: a path stepped by noise) names it whatever its timing. Otherwise every humanizer
//!   sends one move per frame from start to press, where a hand that slows to home in on a
//!   target pauses or skips frames; among the movements with no pause and at most one skipped
//!   frame, each generator leaves its own tell: a final approach that takes no time
//!   (ghost-cursor), noise on one axis only or on every few samples (pyclick, HumanCursor,
//!   botasaurus). 5.4% of people's approach movements are named so; two in a row of the same
//!   person, 0.28% of pairs.
//! - [`Hand::tells`]: input events no device makes: a press held under 20 ms within 60 ms of
//!   the pointer's arrival (a touchpad's tap is as short, but comes 150 ms or more after the
//!   pointer stopped), wheel turns with three or more ratios of `wheelDelta` to `delta`, the
//!   largest 1.5 times the smallest (one device has one, give or take rounding), mouse events whose screen position is the client position in a window with
//!   a toolbar, `MouseEvent` getters that are not native, a humanizer's drawn cursor, printable
//!   keys without a `code`.
//! - [`Hand::backs`]: whether a page summary's claimed input comes with the events a device makes
//!   (a press with its hold, a key with its hold, a wheel turn with its ratio).

use serde::Deserialize;

use crate::de::integral;

/// At most this many rows of each list are read: the agent sends 16.
const ROWS: usize = 32;

/// The agent's summary of a page's input (`kin`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hand {
    /// One row per movement (see [`Movement::of`]).
    #[serde(default)]
    pub m: Vec<Vec<f64>>,
    /// Press holds, in milliseconds.
    #[serde(default)]
    pub holds: Vec<f64>,
    /// Trusted wheel events, and the distinct ratios `100 * wheelDeltaY / deltaY` among them.
    #[serde(default, deserialize_with = "integral")]
    pub wheels: Option<u32>,
    #[serde(default)]
    pub ratios: Vec<f64>,
    /// Trusted keydowns.
    #[serde(default, deserialize_with = "integral")]
    pub keys: Option<u32>,
    /// Key holds (keydown to keyup of one code) and intervals between keydowns, in ms.
    #[serde(default)]
    pub key_holds: Vec<f64>,
    #[serde(default)]
    pub key_gaps: Vec<f64>,
    /// Printable keys whose keydown had no `code`.
    #[serde(default, deserialize_with = "integral")]
    pub no_code: Option<u32>,
    /// Trusted mouse events, and those whose screen position was their client position while
    /// the window had a toolbar.
    #[serde(default, deserialize_with = "integral")]
    pub mouse: Option<u32>,
    #[serde(default, deserialize_with = "integral")]
    pub screen_eq: Option<u32>,
}

/// One movement, from rest to a press or to a pause of 300 ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Movement {
    pub duration_ms: f64,
    pub distance: f64,
    pub samples: f64,
    pub speed_peaks: f64,
    /// Curvature sign flips per 100 turns.
    pub flips: f64,
    /// Percent of its time spent in the last 10% of its distance.
    pub final_share: f64,
    /// Gaps of 50 ms or more between moves, and of 25-50 ms (frames skipped).
    pub pauses: f64,
    pub skips: f64,
    /// Direction reversals on each axis.
    pub reversals_x: f64,
    pub reversals_y: f64,
    /// Distance over path length, percent.
    pub straightness: f64,
    /// Last move to the press, ms; negative when it ended at rest.
    pub press_gap: f64,
    /// Peak speed over mean speed, percent.
    pub peak_ratio: f64,
    /// The press's hold, ms, when it ended at a press that was released.
    pub hold: Option<f64>,
}

impl Movement {
    /// A row as the agent sends it; `None` for a row too short or not finite.
    pub fn of(row: &[f64]) -> Option<Self> {
        if row.len() < 13 || row.iter().any(|v| !v.is_finite()) {
            return None;
        }
        Some(Self {
            duration_ms: row[0],
            distance: row[1],
            samples: row[2],
            speed_peaks: row[3],
            flips: row[4],
            final_share: row[5],
            pauses: row[6],
            skips: row[7],
            reversals_x: row[8],
            reversals_y: row[9],
            straightness: row[10],
            press_gap: row[11],
            peak_ratio: row[12],
            hold: row.get(13).copied(),
        })
    }

    /// Whether it is long enough to judge: 40 px, four samples, a positive duration.
    pub fn judged(&self) -> bool {
        self.distance >= 40.0 && self.samples >= 4.0 && self.duration_ms > 0.0
    }

    /// The tell of a generator's path, if it has one (see the module's text for the data). A
    /// flat speed profile is one whatever the timing (0.8% of people's movements); surging speed
    /// (eight or more peaks) needs a movement without a pause; the other tells also need at most
    /// one skipped frame (a driver's timer on a busy machine misses one now and then).
    pub fn machine(&self) -> Option<&'static str> {
        if !self.judged() {
            return None;
        }
        if self.peak_ratio < 150.0 {
            return Some("a flat speed profile");
        }
        if self.pauses > 0.0 {
            return None;
        }
        // A hand's speed rises and falls a few times a movement (p99: 7 peaks); a generator
        // stepping by noise surges every few frames, however late its events arrive.
        if self.speed_peaks >= 8.0 {
            return Some("speed surging every few frames");
        }
        if self.skips > 1.0 {
            return None;
        }
        let turns = (self.samples - 2.0).max(1.0);
        if self.press_gap >= 0.0 && self.final_share < 12.0 {
            Some("no time spent homing in on the target")
        } else if (self.reversals_y + 1.0) / (self.reversals_x + 1.0) > 4.0
            || (self.reversals_x + 1.0) / (self.reversals_y + 1.0) > 4.0
        {
            Some("noise on one axis only")
        } else if (self.reversals_x + self.reversals_y) / turns > 0.12 {
            Some("noise on every few samples")
        } else {
            None
        }
    }

    /// A press a protocol made: held under 20 ms, within 60 ms of the pointer's arrival (3 of
    /// 11,047 people's presses; a touchpad's tap is as short, but 150 ms or more after the stop).
    pub fn protocol_press(&self) -> bool {
        self.press_gap >= 0.0 && self.press_gap < 60.0 && self.hold.is_some_and(|h| h < 20.0)
    }
}

/// What one page's movements add up to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Strokes {
    /// Movements long enough to judge, and those a generator drew.
    pub judged: u8,
    pub machine: u8,
    /// The first generator tell seen, for the reason's detail.
    pub tell: Option<&'static str>,
}

/// What on one page no device makes ([`Hand::tells`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tells<'a> {
    /// Presses held under 20 ms within 60 ms of the pointer's arrival.
    quick: usize,
    /// Wheel turns whose ratios of wheelDelta to delta spread: their count, least and most.
    wheels: Option<(usize, f64, f64)>,
    /// Mouse events at the screen's corner of a window with a toolbar, of all mouse events.
    corner: Option<(u32, u32)>,
    /// Printable keys without a key code (not counted on a mobile device).
    no_code: Option<u32>,
    /// What the agent found patched or drawn by a humanizer.
    foreign: &'a [String],
}

impl Tells<'_> {
    pub fn is_empty(&self) -> bool {
        self.quick == 0
            && self.wheels.is_none()
            && self.corner.is_none()
            && self.no_code.is_none()
            && self.foreign.is_empty()
    }

    /// The tells in words, for a reason's detail (empty when none).
    pub fn describe(&self) -> Vec<String> {
        let mut why = Vec::new();
        if self.quick > 0 {
            why.push(format!(
                "{} presses held under 20 ms within 60 ms of the pointer's arrival",
                self.quick
            ));
        }
        if let Some((n, lo, hi)) = self.wheels {
            why.push(format!(
                "wheel turns with {n} ratios of wheelDelta to delta from {lo} to {hi} (a wheel has one)"
            ));
        }
        if let Some((eq, mouse)) = self.corner {
            why.push(format!(
                "{eq} of {mouse} mouse events at the screen's corner of a window with a toolbar"
            ));
        }
        if let Some(n) = self.no_code {
            why.push(format!("{n} printable keys without a key code"));
        }
        if !self.foreign.is_empty() {
            let names: Vec<String> = self
                .foreign
                .iter()
                .take(4)
                .map(|f| crate::reasons::visitor_text(f, 40))
                .collect();
            why.push(format!(
                "patched or drawn by a humanizer: {}",
                names.join(", ")
            ));
        }
        why
    }
}

impl Hand {
    fn movements(&self) -> impl Iterator<Item = Movement> + '_ {
        self.m.iter().take(ROWS).filter_map(|r| Movement::of(r))
    }

    /// The page's movements, judged.
    pub fn strokes(&self) -> Strokes {
        let mut s = Strokes::default();
        for m in self.movements().filter(Movement::judged) {
            s.judged = s.judged.saturating_add(1);
            if let Some(t) = m.machine() {
                s.machine = s.machine.saturating_add(1);
                s.tell.get_or_insert(t);
            }
        }
        s
    }

    /// The input events no device makes on the page, counted (no words: a session's path only
    /// asks whether there were any). `foreign` is what the agent found patched or drawn when it
    /// summarised the page; `mobile` spares keys without a code (virtual keyboards send none).
    pub fn tells<'a>(&self, foreign: &'a [String], mobile: bool) -> Tells<'a> {
        let quick = self.movements().filter(Movement::protocol_press).count();
        // A device's ratio is one number, give or take wheelDelta's rounding to an integer (a
        // touchpad's small deltas); a generator's deltas drawn at random spread it widely.
        let (mut wheels, mut lo, mut hi) = (0, f64::MAX, 0.0f64);
        for r in self.ratios.iter().take(ROWS).map(|r| r.abs()) {
            if r.is_finite() && r > 0.0 {
                wheels += 1;
                (lo, hi) = (lo.min(r), hi.max(r));
            }
        }
        let (mouse, eq) = (self.mouse.unwrap_or(0), self.screen_eq.unwrap_or(0));
        let no_code = self.no_code.unwrap_or(0);
        Tells {
            quick,
            wheels: (wheels >= 3 && hi >= 1.5 * lo).then_some((wheels, lo, hi)),
            corner: (eq >= 3 && eq * 2 >= mouse).then_some((eq, mouse)),
            no_code: (no_code >= 3 && !mobile).then_some(no_code),
            foreign,
        }
    }

    /// Whether the claimed input comes with a device's events: a press or a tap with its hold,
    /// a key with its keydown (the Enter that follows a link is released on the next page), a
    /// wheel turn with its count.
    pub fn backs(&self, claim: &Claim) -> bool {
        ((claim.presses > 0 || claim.touches > 0) && !self.holds.is_empty())
            || (claim.keys > 0 && (self.keys.unwrap_or(0) > 0 || !self.key_holds.is_empty()))
            || (claim.wheels > 0 && self.wheels.unwrap_or(0) > 0)
    }
}

/// The input a page summary claims.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Claim {
    pub presses: u32,
    pub keys: u32,
    pub wheels: u32,
    pub touches: u32,
}

impl Claim {
    pub fn any(&self) -> bool {
        self.presses + self.keys + self.wheels + self.touches > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Rows as the agent sends them: [duration, distance, samples, peaks, flips, final %,
    // pauses, skips, reversals x, reversals y, straightness %, press gap, peak ratio %, hold].
    const PERSON: [f64; 14] = [
        609.0, 479.0, 35.0, 2.0, 44.0, 31.0, 1.0, 1.0, 1.0, 1.0, 89.0, 51.0, 381.0, 83.0,
    ];
    const GHOST: [f64; 14] = [
        300.0, 410.0, 19.0, 1.0, 13.0, 4.0, 0.0, 0.0, 0.0, 1.0, 92.0, 1.0, 226.0, 2.0,
    ];
    const WIND: [f64; 14] = [
        900.0, 504.0, 55.0, 1.0, 57.0, 19.0, 0.0, 0.0, 2.0, 2.0, 96.0, 259.0, 133.0, 124.0,
    ];
    const DISTORTED: [f64; 14] = [
        1650.0, 474.0, 100.0, 3.0, 77.0, 28.0, 0.0, 0.0, 0.0, 10.0, 95.0, 216.0, 253.0, 91.0,
    ];

    #[test]
    fn a_hand_that_pauses_is_never_a_machine_and_each_generator_shows_its_tell() {
        let person = Movement::of(&PERSON).unwrap();
        assert_eq!(person.machine(), None);
        assert!(!person.protocol_press());
        let ghost = Movement::of(&GHOST).unwrap();
        assert_eq!(
            ghost.machine(),
            Some("no time spent homing in on the target")
        );
        assert!(ghost.protocol_press());
        assert_eq!(
            Movement::of(&WIND).unwrap().machine(),
            Some("a flat speed profile")
        );
        assert_eq!(
            Movement::of(&DISTORTED).unwrap().machine(),
            Some("noise on one axis only")
        );
        // The same smooth path with two skipped frames, or a pause, is a hand's; one skipped
        // frame is a busy driver's.
        let mut skipped = GHOST;
        skipped[7] = 1.0;
        assert!(Movement::of(&skipped).unwrap().machine().is_some());
        skipped[7] = 2.0;
        assert_eq!(Movement::of(&skipped).unwrap().machine(), None);
        let mut surging = PERSON;
        surging[3] = 12.0;
        surging[6] = 0.0;
        surging[7] = 3.0;
        assert_eq!(
            Movement::of(&surging).unwrap().machine(),
            Some("speed surging every few frames")
        );
        let mut paused = GHOST;
        paused[6] = 1.0;
        assert_eq!(Movement::of(&paused).unwrap().machine(), None);
    }

    #[test]
    fn a_touchpad_tap_is_short_but_late_and_is_not_a_protocol_press() {
        let mut tap = PERSON;
        tap[11] = 180.0;
        tap[13] = 6.0;
        assert!(!Movement::of(&tap).unwrap().protocol_press());
    }

    #[test]
    fn rows_that_are_short_or_not_numbers_are_left_out() {
        assert_eq!(Movement::of(&[1.0, 2.0]), None);
        let mut bad = PERSON;
        bad[3] = f64::NAN;
        assert_eq!(Movement::of(&bad), None);
        let h = Hand {
            m: vec![PERSON.to_vec(), GHOST.to_vec(), vec![0.0; 3]],
            ..Default::default()
        };
        let s = h.strokes();
        assert_eq!((s.judged, s.machine), (2, 1));
    }

    #[test]
    fn protocol_tells_are_named_and_one_wheel_ratio_is_a_device() {
        let h = Hand {
            m: vec![GHOST.to_vec()],
            ratios: vec![-120.0, -60.0, -40.0],
            mouse: Some(10),
            screen_eq: Some(10),
            no_code: Some(5),
            ..Default::default()
        };
        let foreign = ["MouseEvent.screenX".to_owned()];
        let why = h.tells(&foreign, false).describe();
        assert_eq!(why.len(), 5, "{why:?}");
        assert_eq!(h.tells(&[], true).describe().len(), 3);
        assert!(!h.tells(&[], true).is_empty());
        let device = Hand {
            m: vec![PERSON.to_vec()],
            ratios: vec![-120.0],
            mouse: Some(40),
            screen_eq: Some(0),
            ..Default::default()
        };
        assert!(device.tells(&[], false).is_empty());
        assert!(device.tells(&[], false).describe().is_empty());
    }

    #[test]
    fn claimed_input_is_backed_only_by_its_events() {
        let press = Claim {
            presses: 1,
            ..Default::default()
        };
        let keys = Claim {
            keys: 3,
            ..Default::default()
        };
        assert!(!Hand::default().backs(&press));
        let pressed = Hand {
            holds: vec![80.0],
            ..Default::default()
        };
        assert!(pressed.backs(&press));
        assert!(!pressed.backs(&keys));
        let keyed = Hand {
            keys: Some(1),
            ..Default::default()
        };
        assert!(keyed.backs(&keys));
    }
}
