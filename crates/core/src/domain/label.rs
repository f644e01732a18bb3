//! Labels: what a customer learned of a session afterwards (a chargeback, a support ticket from a
//! person who was refused), given back so that Vigil can say how right it was. A label never
//! changes a stored score; it keeps, beside the customer's word, what Vigil had said of the
//! session when it was labelled, so that quality is read from the labels alone.

use serde::{Deserialize, Serialize};

use super::ids::SessionId;
use super::score::Score;
use super::time::Timestamp;

/// The most characters of a label's note.
pub const MAX_NOTE_CHARS: usize = 500;

/// What the customer says a session was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Truth {
    Bot,
    Human,
}

/// The customer's own short code for why (`chargeback`, `support_ticket`): 1 to 64 lowercase
/// letters, digits and `_`, starting with a letter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct LabelReason(String);

impl TryFrom<String> for LabelReason {
    type Error = LabelError;
    fn try_from(s: String) -> Result<Self, LabelError> {
        let ok = (1..=64).contains(&s.len())
            && s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        ok.then_some(Self(s)).ok_or(LabelError::Reason)
    }
}

impl From<LabelReason> for String {
    fn from(r: LabelReason) -> String {
        r.0
    }
}

/// A note of at most [`MAX_NOTE_CHARS`] characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct LabelNote(String);

impl TryFrom<String> for LabelNote {
    type Error = LabelError;
    fn try_from(s: String) -> Result<Self, LabelError> {
        let ok = s.chars().count() <= MAX_NOTE_CHARS && !s.chars().any(char::is_control);
        ok.then_some(Self(s)).ok_or(LabelError::Note)
    }
}

impl From<LabelNote> for String {
    fn from(n: LabelNote) -> String {
        n.0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    #[error(
        "reason must be 1 to 64 lowercase letters, digits and underscores, starting with a letter"
    )]
    Reason,
    #[error("note must be at most 500 characters, without control characters")]
    Note,
}

/// What a backend says of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelSpec {
    pub label: Truth,
    pub reason: Option<LabelReason>,
    pub note: Option<LabelNote>,
}

/// A session's label, with what Vigil had said of the session when it was labelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Label {
    pub session_id: SessionId,
    pub label: Truth,
    pub reason: Option<LabelReason>,
    pub note: Option<LabelNote>,
    pub labelled_at: Timestamp,
    /// The session's overall `scoreBot` when it was labelled.
    pub score_bot: Score,
    /// The reasons of its events (newest hundred) when it was labelled, most frequent first.
    pub reasons: Vec<String>,
}

/// How right the engine was on a set of labels, at a threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Quality {
    pub labelled: usize,
    pub bots: usize,
    pub humans: usize,
    pub threshold: f64,
    /// Of the sessions flagged (`scoreBot` at or over the threshold), the share labelled bots;
    /// null when none was flagged.
    pub precision: Option<f64>,
    /// Of the sessions labelled bots, the share flagged; null when none was labelled a bot.
    pub recall: Option<f64>,
    pub false_positives: usize,
    pub missed_bots: usize,
    /// The reasons most often on people flagged as bots, with how many such sessions had each.
    pub false_positive_reasons: Vec<(String, usize)>,
    /// The reasons most often on bots that were not flagged.
    pub missed_bot_reasons: Vec<(String, usize)>,
}

/// The quality of `labels` at `threshold`.
pub fn quality(labels: &[Label], threshold: Score) -> Quality {
    let flagged = |l: &Label| l.score_bot >= threshold;
    let (mut tp, mut fp, mut missed, mut bots) = (0usize, 0usize, 0usize, 0usize);
    let mut fp_reasons = std::collections::BTreeMap::<&str, usize>::new();
    let mut missed_reasons = std::collections::BTreeMap::<&str, usize>::new();
    for l in labels {
        match (l.label, flagged(l)) {
            (Truth::Bot, true) => tp += 1,
            (Truth::Human, true) => {
                fp += 1;
                for r in &l.reasons {
                    *fp_reasons.entry(r).or_default() += 1;
                }
            }
            (Truth::Bot, false) => {
                missed += 1;
                for r in &l.reasons {
                    *missed_reasons.entry(r).or_default() += 1;
                }
            }
            (Truth::Human, false) => {}
        }
        bots += usize::from(l.label == Truth::Bot);
    }
    let share = |n: usize, of: usize| (of > 0).then(|| n as f64 / of as f64);
    let top = |m: std::collections::BTreeMap<&str, usize>| {
        let mut v: Vec<(String, usize)> = m.into_iter().map(|(k, n)| (k.to_owned(), n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.truncate(10);
        v
    };
    Quality {
        labelled: labels.len(),
        bots,
        humans: labels.len() - bots,
        threshold: threshold.get(),
        precision: share(tp, tp + fp),
        recall: share(tp, bots),
        false_positives: fp,
        missed_bots: missed,
        false_positive_reasons: top(fp_reasons),
        missed_bot_reasons: top(missed_reasons),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(truth: Truth, score: f64, reasons: &[&str]) -> Label {
        Label {
            session_id: SessionId::parse("s").unwrap(),
            label: truth,
            reason: None,
            note: None,
            labelled_at: Timestamp::from_unix_millis(0).unwrap(),
            score_bot: Score::new(score).unwrap(),
            reasons: reasons.iter().map(|r| r.to_string()).collect(),
        }
    }

    #[test]
    fn precision_recall_and_the_reasons_behind_the_mistakes() {
        let labels = [
            label(Truth::Bot, 0.99, &["webdriver"]),
            label(Truth::Bot, 0.97, &["headless_browser"]),
            label(Truth::Human, 0.92, &["software_renderer", "no_plugins"]),
            label(Truth::Human, 0.60, &["software_renderer"]),
            label(Truth::Human, 0.02, &[]),
            label(Truth::Bot, 0.10, &["hosting_ip"]),
        ];
        let q = quality(&labels, Score::HALF);
        assert_eq!((q.labelled, q.bots, q.humans), (6, 3, 3));
        assert_eq!(q.precision, Some(0.5));
        assert_eq!(q.recall, Some(2.0 / 3.0));
        assert_eq!((q.false_positives, q.missed_bots), (2, 1));
        assert_eq!(
            q.false_positive_reasons,
            [
                ("software_renderer".to_owned(), 2),
                ("no_plugins".to_owned(), 1)
            ]
        );
        assert_eq!(q.missed_bot_reasons, [("hosting_ip".to_owned(), 1)]);
        let none = quality(&[], Score::HALF);
        assert_eq!((none.precision, none.recall), (None, None));
    }

    #[test]
    fn reasons_and_notes_are_validated() {
        for ok in ["chargeback", "support_ticket_2"] {
            assert!(LabelReason::try_from(ok.to_owned()).is_ok(), "{ok}");
        }
        for bad in ["", "Chargeback", "2fa", "a-b", &"a".repeat(65)] {
            assert!(LabelReason::try_from(bad.to_owned()).is_err(), "{bad}");
        }
        assert!(LabelNote::try_from("é".repeat(500)).is_ok());
        assert!(LabelNote::try_from("é".repeat(501)).is_err());
        assert!(LabelNote::try_from("a\nb".to_owned()).is_err());
    }
}
