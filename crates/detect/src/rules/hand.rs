//! The hand (`crate::hand`): movements a generator drew over the session (`synthetic_pointer`),
//! input events no device makes on a page (`protocol_input`), and a page summary whose claimed
//! input its own record of events does not back, or that the server's clock contradicts
//! (`forged_summary`). A load judges the page before (its summary travels with the next page);
//! an action judges its own page. Thresholds and the people data behind them:
//! docs/detection.md, "The hand".

use super::integrity::judged_as;
use crate::evidence::Activity;
use crate::reasons::{Code, Reason};
use crate::visit::Visit;

/// Movements a generator drew before `synthetic_pointer`, and their least share of the judged.
const MACHINE: u32 = 2;

pub fn reasons(_: &crate::engine::Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let Some(s) = v.signals else {
        return;
    };
    // An action judges its own page; a load, the page before.
    let (page, own): (Option<&Activity>, bool) = match &s.activity {
        Some(a) => (Some(a), true),
        None => (
            s.navigation
                .as_ref()
                .and_then(|n| n.previous.as_ref())
                .map(|p| &p.input),
            false,
        ),
    };
    let (mut judged, mut machine) = v.path.map_or((0, 0), |p| (p.movements, p.machine));
    let strokes = page.and_then(|a| a.kin.as_ref()).map(|h| h.strokes());
    if own && let Some(st) = strokes {
        judged += u32::from(st.judged);
        machine += u32::from(st.machine);
    }
    if machine >= MACHINE && machine * 3 >= judged * 2 {
        let tell = strokes
            .and_then(|st| st.tell)
            .map(|t| format!("; on this page: {t}"))
            .unwrap_or_default();
        out.push(Reason::new(
            Code::SyntheticPointer,
            format!(
                "{machine} of the session's {judged} pointer movements drawn by a generator (one move a frame, none skipped, to the press){tell}"
            ),
        ));
    }
    let why = page
        .and_then(|a| a.kin.as_ref().map(|h| (a, h)))
        .map(|(a, h)| {
            h.tells(a.foreign.as_deref().unwrap_or_default(), judged_as(v).0)
                .describe()
        })
        .unwrap_or_default();
    // Pages before in the session (a load's page before, judged here, is one of them).
    let earlier = v.path.map_or(0, |p| p.protocol);
    if !why.is_empty() {
        let whose = if own {
            "on this page"
        } else {
            "on the page before"
        };
        out.push(Reason::new(
            Code::ProtocolInput,
            format!("{whose}: {}", why.join("; ")),
        ));
    } else if earlier > 0 {
        // A protocol drove the session: a later page whose presses happened to be timed like a
        // hand's does not make it a person's.
        out.push(Reason::new(
            Code::ProtocolInput,
            format!(
                "earlier in the session: {} with input no device makes",
                pages(earlier)
            ),
        ));
    }
    let forged = v.path.map_or((0, false), |p| (p.forged, p.last_forged));
    if !own && forged.1 {
        out.push(Reason::new(
            Code::ForgedSummary,
            "the page before's summary claims input its record of events does not back, or a visit longer than the session",
        ));
    } else if forged.0 > 0 {
        // A summary forged once is a driver's: the session stays named.
        out.push(Reason::new(
            Code::ForgedSummary,
            format!(
                "earlier in the session: the summaries of {} claimed input their record of events does not back, or a visit longer than the session",
                pages(forged.0)
            ),
        ));
    }
}

fn pages(n: u32) -> String {
    if n == 1 {
        "1 page".into()
    } else {
        format!("{n} pages")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::evidence::Evidence;

    const CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";

    fn load(previous: serde_json::Value) -> Evidence {
        serde_json::from_value(json!({
            "userAgent": CHROME,
            "signals": {"userAgent": CHROME, "navigation": {
                "type": "navigate", "referrer": "same-site", "previous": previous}}
        }))
        .unwrap()
    }

    /// A page left by a click on a link, its press held `hold` ms, 16 ms after the pointer's
    /// last move (a short approach: too short to judge its path).
    fn clicked(hold: u32, claim_only: bool) -> serde_json::Value {
        let kin = if claim_only {
            json!({"holds": []})
        } else {
            json!({"holds": [hold], "m": [[120, 30, 8, 1, 0, 30, 0, 0, 0, 0, 95, 16, 200, hold]]})
        };
        json!({"presses": 1, "clicks": 1, "visibleMs": 2500, "dwellMs": 2600, "left": "link",
            "kin": kin})
    }

    fn named(judged: &[Vec<Reason>], code: Code) -> Vec<Option<String>> {
        judged
            .iter()
            .map(|r| r.iter().find(|r| r.code == code).map(|r| r.detail.clone()))
            .collect()
    }

    #[test]
    fn a_session_a_protocol_drove_stays_named_when_a_later_press_passes() {
        let judged = crate::tests::judged_session(
            reasons,
            &[
                load(serde_json::Value::Null),
                load(clicked(4, false)),
                load(clicked(45, false)),
                load(clicked(5, false)),
                load(clicked(60, false)),
            ],
        );
        let named = named(&judged, Code::ProtocolInput);
        assert_eq!(named[0], None);
        assert_eq!(
            named[1].as_deref(),
            Some(
                "on the page before: 1 presses held under 20 ms within 60 ms of the pointer's arrival"
            )
        );
        // The press timed like a hand's: still a protocol's session.
        assert_eq!(
            named[2].as_deref(),
            Some("earlier in the session: 1 page with input no device makes")
        );
        assert!(
            named[3]
                .as_deref()
                .unwrap()
                .starts_with("on the page before")
        );
        assert_eq!(
            named[4].as_deref(),
            Some("earlier in the session: 2 pages with input no device makes")
        );
        // A person's presses never start it.
        let person = crate::tests::judged_session(
            reasons,
            &[
                load(serde_json::Value::Null),
                load(clicked(85, false)),
                load(clicked(70, false)),
            ],
        );
        assert!(person.iter().all(Vec::is_empty), "{person:?}");
    }

    #[test]
    fn a_forged_summary_keeps_the_session_named() {
        let judged = crate::tests::judged_session(
            reasons,
            &[
                load(serde_json::Value::Null),
                load(clicked(0, true)),
                load(clicked(90, false)),
            ],
        );
        let named = named(&judged, Code::ForgedSummary);
        assert_eq!(named[0], None);
        assert!(
            named[1]
                .as_deref()
                .unwrap()
                .starts_with("the page before's summary")
        );
        assert!(
            named[2]
                .as_deref()
                .unwrap()
                .starts_with("earlier in the session: the summaries of 1 page claimed"),
            "{named:?}"
        );
    }
}
