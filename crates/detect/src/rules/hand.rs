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
    if let Some((a, h)) = page.and_then(|a| a.kin.as_ref().map(|h| (a, h))) {
        let (mobile, _) = judged_as(v);
        let why = h.protocol(a.foreign.as_deref().unwrap_or_default(), mobile);
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
        }
    }
    if !own && v.path.is_some_and(|p| p.last_forged) {
        out.push(Reason::new(
            Code::ForgedSummary,
            "the page before's summary claims input its record of events does not back, or a visit longer than the session",
        ));
    }
}
