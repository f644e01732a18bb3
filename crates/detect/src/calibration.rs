//! A project's own `scoreBot` weights, fitted on its labelled sessions.
//!
//! The shared table ([`crate::reasons::TABLE`]) is one set of weights for every customer. A project
//! whose people use a kiosk browser (software WebGL, no plugins, odd client hints) pays for it in
//! false positives forever. Calibration fits the project's bias and bot-reason weights by
//! L2-regularised logistic regression on the reasons of its labelled sessions, pulled towards the
//! shared weights, within [bounds](Bounds) that keep a reason's sign and a hard reason's strength.
//! `scoreProxyVpn` is never calibrated: whether a proxy is there is a fact a label does not change.
//!
//! Pure: labelled examples in, weights and their held-out comparison out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::reasons::{BIAS, Code, Reason, TABLE, Target, logistic};

/// How many reason codes there are: a weight table has one slot each, indexed by the code.
const CODES: usize = TABLE.len();

/// How far the prior pulls each weight back to its shared value: the penalty is
/// `PRIOR * (weight - shared)^2`. At 5, five labelled people who all show one reason move its
/// weight by under half a point, and a hundred move it as far as their evidence says.
pub const PRIOR: f64 = 5.0;

/// The bias is pulled back ten times harder: moving it moves every visit, those with reasons the
/// labels never showed too, so the fit explains what it can by the reasons the labels show.
pub const BIAS_PRIOR: f64 = 10.0 * PRIOR;

/// The bias may move within this range: a visit with no reason scores 0.25 % to 4.7 %, never
/// more than the 5 % the shared engine promises.
pub const BIAS_RANGE: (f64, f64) = (BIAS - 2.0, BIAS + 1.0);

/// Reasons that are proof rather than signs, and bots that say what they are: a label cannot
/// weaken them (a project allows a declared agent with `agents.allow`, not with labels).
pub const HARD: &[Code] = &[
    Code::TorExit,
    Code::BotUserAgent,
    Code::AiAgent,
    Code::VerifiedBot,
    Code::SignedAgent,
    Code::SpoofedAgent,
    Code::SpoofedBot,
    Code::TlsFingerprintMismatch,
    Code::Webdriver,
    Code::HeadlessBrowser,
    Code::AutomationGlobals,
    Code::AutomationFramework,
];

/// Why weights were refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WeightsError {
    #[error("the bias {0} is outside [{min}, {max}]", min = BIAS_RANGE.0, max = BIAS_RANGE.1)]
    Bias(f64),
    #[error("the weight {weight} of {code} is outside its bounds [{min}, {max}]")]
    Weight {
        code: &'static str,
        weight: f64,
        min: f64,
        max: f64,
    },
}

/// What a project's labels may do to one bot reason's weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Never below zero: a reason is a sign of automation or nothing, never a sign of a person.
    /// A hard reason never below its shared weight plus whatever the bias gave up, so that it
    /// alone scores at least what it scores with the shared weights.
    pub min: f64,
    /// At most twice the shared weight: labels can confirm a weak sign, not make it proof.
    pub max: f64,
}

impl Bounds {
    /// The bounds of `code` under a calibrated `bias`.
    pub fn of(code: Code, bias: f64) -> Self {
        let shared = code.weight();
        let min = if HARD.contains(&code) {
            shared + (BIAS - bias).max(0.0)
        } else {
            0.0
        };
        Self {
            min,
            max: (2.0 * shared).max(min),
        }
    }
}

/// A bias and one weight per reason: the shared table, or a project's calibration of it. Only
/// `bot` reasons ever differ from the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Weights {
    bias: f64,
    weights: [f64; CODES],
}

impl Default for Weights {
    fn default() -> Self {
        Self::shared()
    }
}

fn index(code: Code) -> usize {
    // The enum and the table come from one list, in one order.
    code as usize
}

impl Weights {
    /// The shared weights.
    pub fn shared() -> Self {
        let mut weights = [0.0; CODES];
        for (i, (_, _, w, _)) in TABLE.iter().enumerate() {
            weights[i] = *w;
        }
        Self {
            bias: BIAS,
            weights,
        }
    }

    /// Shared weights with `bias` and the given bot-reason weights, each within its bounds.
    pub fn new(bias: f64, bot: &BTreeMap<Code, f64>) -> Result<Self, WeightsError> {
        if !(BIAS_RANGE.0..=BIAS_RANGE.1).contains(&bias) {
            return Err(WeightsError::Bias(bias));
        }
        let mut w = Self::shared();
        w.bias = bias;
        for (&code, &weight) in bot {
            let b = Bounds::of(code, bias);
            if code.target() != Target::Bot || !(b.min..=b.max).contains(&weight) {
                return Err(WeightsError::Weight {
                    code: code.name(),
                    weight,
                    min: b.min,
                    max: b.max,
                });
            }
            w.weights[index(code)] = weight;
        }
        Ok(w)
    }

    pub fn bias(&self) -> f64 {
        self.bias
    }

    /// The weight of `code`'s reason at its shared strength.
    pub fn weight(&self, code: Code) -> f64 {
        self.weights[index(code)]
    }

    /// The bot reasons whose weight differs from the shared one, by code.
    pub fn changed(&self) -> BTreeMap<Code, f64> {
        TABLE
            .iter()
            .filter(|(c, t, w, _)| *t == Target::Bot && self.weight(*c) != *w)
            .map(|(c, ..)| (*c, self.weight(*c)))
            .collect()
    }

    /// Rewrites the weights of `reasons` (which the rules gave at the shared strength, or a
    /// documented fraction of it) to these weights, at the same fraction, to two places: what
    /// an event shows is what it was scored with.
    pub fn apply(&self, reasons: &mut [Reason]) {
        for r in reasons.iter_mut().filter(|r| r.score == Target::Bot) {
            let shared = r.code.weight();
            r.weight = round2(r.weight / shared * self.weight(r.code));
        }
    }

    /// The `target` score of `reasons` (weighted as [`Weights::apply`] left them).
    pub fn score(&self, reasons: &[Reason], target: Target) -> f64 {
        let bias = if target == Target::Bot {
            self.bias
        } else {
            BIAS
        };
        let sum: f64 = reasons
            .iter()
            .filter(|r| r.score == target)
            .map(|r| r.weight)
            .sum();
        logistic(bias + sum)
    }

    /// `scoreBot` of one labelled example under these weights.
    pub fn score_bot(&self, e: &Example) -> f64 {
        logistic(self.bias + e.x.iter().map(|&(i, x)| self.weights[i] * x).sum::<f64>())
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Weights as a project keeps them: the bias and the bot reasons that differ from the table.
/// A code this build does not know (one retired since) is skipped, so a stored model never stops
/// a project from loading; weights out of bounds are refused.
impl Serialize for Weights {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            bias: f64,
            weights: BTreeMap<&'a str, f64>,
        }
        Out {
            bias: self.bias,
            weights: self
                .changed()
                .into_iter()
                .map(|(c, w)| (c.name(), w))
                .collect(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Weights {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct In {
            bias: f64,
            weights: BTreeMap<String, f64>,
        }
        let raw = In::deserialize(d)?;
        let known: BTreeMap<Code, f64> = raw
            .weights
            .into_iter()
            .filter_map(|(name, w)| Some((Code::from_name(&name)?, w)))
            .collect();
        Weights::new(raw.bias, &known).map_err(serde::de::Error::custom)
    }
}

/// One labelled session as calibration reads it: the bot reasons of the event that gave the
/// session its `scoreBot`, each as a share of its shared weight (1 for a reason at full
/// strength, 3/7 for `session_churn` at its shared-address weight), and the label.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    x: Vec<(usize, f64)>,
    pub bot: bool,
}

impl Example {
    /// `reasons` as `(code, shared weight)`: what the shared engine gave (a calibrated event's
    /// weights divided back by its model's, which the caller does).
    pub fn new(reasons: impl IntoIterator<Item = (Code, f64)>, bot: bool) -> Self {
        let mut x: Vec<(usize, f64)> = Vec::new();
        for (code, weight) in reasons {
            if code.target() != Target::Bot {
                continue;
            }
            let share = (weight / code.weight()).clamp(0.0, 1.0);
            match x.iter_mut().find(|(i, _)| *i == index(code)) {
                Some((_, s)) => *s = s.max(share),
                None => x.push((index(code), share)),
            }
        }
        Self { x, bot }
    }
}

/// Mean log loss of `weights` on `set` (natural log; lower is better).
pub fn log_loss(weights: &Weights, set: &[Example]) -> f64 {
    if set.is_empty() {
        return 0.0;
    }
    let eps = 1e-12;
    let total: f64 = set
        .iter()
        .map(|e| {
            let p = weights.score_bot(e).clamp(eps, 1.0 - eps);
            if e.bot { -p.ln() } else { -(1.0 - p).ln() }
        })
        .sum();
    total / set.len() as f64
}

/// Examples on the wrong side of `threshold`.
pub fn errors(weights: &Weights, set: &[Example], threshold: f64) -> usize {
    set.iter()
        .filter(|e| (weights.score_bot(e) >= threshold) != e.bot)
        .count()
}

/// The fit's objective: the examples' summed log loss plus the pull towards the shared weights.
fn objective(w: &Weights, shared: &Weights, train: &[Example]) -> f64 {
    let prior: f64 = (0..CODES)
        .map(|i| (w.weights[i] - shared.weights[i]).powi(2))
        .sum::<f64>()
        * PRIOR
        + BIAS_PRIOR * (w.bias - shared.bias).powi(2);
    log_loss(w, train) * train.len() as f64 + prior
}

fn gradient(w: &Weights, shared: &Weights, train: &[Example]) -> (f64, [f64; CODES]) {
    let mut g = [0.0; CODES];
    let mut gb = 2.0 * BIAS_PRIOR * (w.bias - shared.bias);
    for (i, gi) in g.iter_mut().enumerate() {
        *gi = 2.0 * PRIOR * (w.weights[i] - shared.weights[i]);
    }
    for e in train {
        let err = w.score_bot(e) - f64::from(u8::from(e.bot));
        gb += err;
        for &(i, x) in &e.x {
            g[i] += err * x;
        }
    }
    (gb, g)
}

/// `w` moved back inside the bounds: the bias first, then each bot weight under it; proxy
/// weights are never moved.
fn project(mut w: Weights) -> Weights {
    w.bias = w.bias.clamp(BIAS_RANGE.0, BIAS_RANGE.1);
    for (i, (code, target, shared, _)) in TABLE.iter().enumerate() {
        w.weights[i] = if *target == Target::Bot {
            let b = Bounds::of(*code, w.bias);
            w.weights[i].clamp(b.min, b.max)
        } else {
            *shared
        };
    }
    w
}

/// Fits weights to `train`: projected gradient descent with a backtracking step, from the shared
/// weights. Deterministic: the same examples give the same weights.
pub fn fit(train: &[Example]) -> Weights {
    let shared = Weights::shared();
    let mut w = shared.clone();
    let mut f = objective(&w, &shared, train);
    let mut step = 1.0 / (1.0 + train.len() as f64);
    for _ in 0..2_000 {
        let (gb, g) = gradient(&w, &shared, train);
        loop {
            let mut next = w.clone();
            next.bias -= step * gb;
            for (i, gi) in g.iter().enumerate() {
                next.weights[i] -= step * gi;
            }
            let next = project(next);
            // The projected step's sufficient decrease: f(next) <= f + g.d + |d|^2 / 2t.
            let mut slope = gb * (next.bias - w.bias);
            let mut moved = (next.bias - w.bias).powi(2);
            for ((gi, n), o) in g.iter().zip(&next.weights).zip(&w.weights) {
                let d = n - o;
                slope += gi * d;
                moved += d * d;
            }
            let fn_ = objective(&next, &shared, train);
            if fn_ <= f + slope + moved / (2.0 * step) || step < 1e-12 {
                let done = moved < 1e-14;
                w = next;
                f = fn_;
                step *= 2.0;
                if done {
                    return round_all(w);
                }
                break;
            }
            step /= 2.0;
        }
    }
    round_all(w)
}

/// Weights as they are kept and shown: four places, back inside the bounds.
fn round_all(mut w: Weights) -> Weights {
    let r4 = |x: f64| (x * 10_000.0).round() / 10_000.0;
    w.bias = r4(w.bias);
    for x in w.weights.iter_mut() {
        *x = r4(*x);
    }
    project(w)
}

/// How fitted weights did against the shared ones on labels the fit never saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// Labelled sessions the weights were fitted on.
    pub trained_on: usize,
    /// Labelled sessions held out to judge them.
    pub held_out: usize,
    pub shared_log_loss: f64,
    pub model_log_loss: f64,
    /// Held-out sessions on the wrong side of the threshold.
    pub shared_errors: usize,
    pub model_errors: usize,
    pub threshold: f64,
}

impl Comparison {
    /// Whether the fitted weights beat the shared ones: a lower held-out log loss, and no more
    /// mistakes at the threshold.
    pub fn better(&self) -> bool {
        self.model_log_loss < self.shared_log_loss && self.model_errors <= self.shared_errors
    }
}

/// Fits on `train` and compares the fit with the shared weights on `held_out`.
pub fn calibrate(train: &[Example], held_out: &[Example], threshold: f64) -> (Weights, Comparison) {
    let shared = Weights::shared();
    let fitted = fit(train);
    let r4 = |x: f64| (x * 10_000.0).round() / 10_000.0;
    let comparison = Comparison {
        trained_on: train.len(),
        held_out: held_out.len(),
        shared_log_loss: r4(log_loss(&shared, held_out)),
        model_log_loss: r4(log_loss(&fitted, held_out)),
        shared_errors: errors(&shared, held_out, threshold),
        model_errors: errors(&fitted, held_out, threshold),
        threshold,
    };
    (fitted, comparison)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kiosk_person() -> Example {
        Example::new(
            [
                (Code::SoftwareRenderer, 2.5),
                (Code::NoPlugins, 1.0),
                (Code::ClientHintsMismatch, 3.95),
            ],
            false,
        )
    }

    fn headless_bot() -> Example {
        Example::new(
            [
                (Code::Webdriver, 9.0),
                (Code::HeadlessBrowser, 9.0),
                (Code::SoftwareRenderer, 2.5),
                (Code::NoPlugins, 1.0),
            ],
            true,
        )
    }

    #[test]
    fn the_shared_weights_are_the_table() {
        let w = Weights::shared();
        assert_eq!(w.bias(), BIAS);
        assert!(w.changed().is_empty());
        for (code, _, weight, _) in TABLE {
            assert_eq!(w.weight(*code), *weight);
        }
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(json, serde_json::json!({"bias": -4.0, "weights": {}}));
    }

    #[test]
    fn a_handful_of_labels_moves_little_and_many_move_as_far_as_they_say() {
        let person = kiosk_person();
        let before = Weights::shared().score_bot(&person);
        assert!(before > 0.95, "{before}");
        let few = fit(&vec![kiosk_person(); 5]);
        assert!(few.score_bot(&person) > 0.85, "{few:?}");
        let mut many = vec![kiosk_person(); 100];
        many.extend(vec![headless_bot(); 100]);
        let w = fit(&many);
        assert!(w.score_bot(&person) < 0.5, "{w:?}");
        assert!(w.score_bot(&headless_bot()) >= 0.99, "{w:?}");
        // The harmless signs lost weight; the proof kept its own.
        assert!(w.weight(Code::SoftwareRenderer) < 2.5);
        assert!(w.weight(Code::Webdriver) >= 9.0);
    }

    #[test]
    fn labels_cannot_unlearn_a_declared_bot() {
        // 200 labels a day calling curl's visits people, against a handful of real bots.
        let mut hostile = vec![Example::new([(Code::BotUserAgent, 6.5)], false); 400];
        hostile.extend(vec![Example::new([(Code::Webdriver, 9.0)], true); 100]);
        hostile.extend(vec![Example::new([(Code::NoPlugins, 1.0)], false); 400]);
        let w = fit(&hostile);
        for code in [
            Code::BotUserAgent,
            Code::AiAgent,
            Code::VerifiedBot,
            Code::SignedAgent,
        ] {
            let alone = logistic(w.bias() + w.weight(code));
            assert!(alone >= logistic(BIAS + code.weight()) - 1e-9, "{code:?}");
        }
    }

    #[test]
    fn bounds_hold_whatever_the_labels_say() {
        // Bots labelled people: the labels would make webdriver a sign of a person.
        let mut wrong =
            vec![Example::new([(Code::Webdriver, 9.0), (Code::TorExit, 10.0)], false); 500];
        wrong.extend(vec![Example::new([(Code::NoLanguages, 3.0)], true); 500]);
        let w = fit(&wrong);
        assert!((BIAS_RANGE.0..=BIAS_RANGE.1).contains(&w.bias()));
        for (code, target, shared, _) in TABLE {
            let b = Bounds::of(*code, w.bias());
            let x = w.weight(*code);
            assert!(x >= 0.0 && x <= 2.0 * shared.max(b.min), "{code:?} {x}");
            if *target == Target::ProxyVpn {
                assert_eq!(x, *shared, "{code:?}");
            }
            if HARD.contains(code) && *target == Target::Bot {
                // Alone, a hard reason scores at least what it did.
                let alone = logistic(w.bias() + x);
                assert!(alone >= logistic(BIAS + shared) - 1e-9, "{code:?}");
            }
        }
        // And weights out of bounds cannot be built or read.
        let bad = BTreeMap::from([(Code::Webdriver, 1.0)]);
        assert!(Weights::new(BIAS, &bad).is_err());
        assert!(Weights::new(0.0, &BTreeMap::new()).is_err());
        let neg = serde_json::json!({"bias": -4.0, "weights": {"no_plugins": -1.0}});
        assert!(serde_json::from_value::<Weights>(neg).is_err());
        let proxy = serde_json::json!({"bias": -4.0, "weights": {"tor_exit": 1.0}});
        assert!(serde_json::from_value::<Weights>(proxy).is_err());
    }

    #[test]
    fn weights_round_trip_and_skip_codes_this_build_does_not_know() {
        let w = fit(&[kiosk_person(), kiosk_person(), headless_bot()]);
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(serde_json::from_value::<Weights>(json.clone()).unwrap(), w);
        let mut old = json;
        old["weights"]["a_retired_reason"] = serde_json::json!(1.0);
        assert_eq!(serde_json::from_value::<Weights>(old).unwrap(), w);
    }

    #[test]
    fn applied_weights_keep_a_reasons_fraction_and_explain_the_score() {
        let w = Weights::new(
            -4.5,
            &BTreeMap::from([(Code::SessionChurn, 3.5), (Code::NoPlugins, 0.5)]),
        )
        .unwrap();
        let mut reasons = vec![
            Reason {
                weight: 3.0,
                ..Reason::new(Code::SessionChurn, "shared address")
            },
            Reason::new(Code::NoPlugins, ""),
            Reason::new(Code::TorExit, ""),
        ];
        w.apply(&mut reasons);
        assert_eq!(reasons[0].weight, 1.5);
        assert_eq!(reasons[1].weight, 0.5);
        assert_eq!(
            reasons[2].weight, 10.0,
            "proxy weights are never calibrated"
        );
        assert_eq!(w.score(&reasons, Target::Bot), logistic(-4.5 + 2.0));
        assert_eq!(w.score(&reasons, Target::ProxyVpn), logistic(BIAS + 10.0));
    }

    #[test]
    fn a_fit_that_does_not_beat_the_shared_weights_says_so() {
        // Labels that agree with the shared engine leave nothing to gain.
        let mut agree = vec![Example::new([], false); 60];
        agree.extend(vec![headless_bot(); 60]);
        let (_, c) = calibrate(&agree[..90], &agree[90..], 0.5);
        assert_eq!((c.shared_errors, c.model_errors), (0, 0));
        let mut kiosk = vec![kiosk_person(); 80];
        kiosk.extend(vec![headless_bot(); 80]);
        let held: Vec<Example> = kiosk.iter().step_by(4).cloned().collect();
        let (_, c) = calibrate(&kiosk, &held, 0.5);
        assert!(c.better(), "{c:?}");
        assert_eq!(c.shared_errors, 20);
        assert_eq!(c.model_errors, 0);
    }
}
