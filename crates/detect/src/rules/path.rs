//! The session's path (`crate::path`): pages in a row reached with no input on the page before
//! (`navigation_without_input`), a long session of pages nobody touched (`no_input_session`), and
//! the page before's input that no device makes (`scripted_input`, judged on the next page, since
//! a scraper never reaches an action). Thresholds and what people do that comes close:
//! docs/detection.md, "The session's path".

use super::integrity::{judged_as, scripted};
use crate::evidence::{Activity, PageSummary};
use crate::reasons::{Code, Reason};
use crate::visit::Visit;

/// Pages in a row reached with no input on the page before: the third page of a driven session
/// is the second. A person who types an address or opens a bookmark makes one; two in a row
/// need two pages left without a click, a key, a wheel turn or a touch.
const UNPROMPTED: u32 = 2;
/// Summarised pages, none with input, and their visible time, before `no_input_session`.
const QUIET_PAGES: u32 = 3;
const QUIET_MS: u64 = 60_000;

pub fn reasons(_: &crate::engine::Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    if let Some(p) = v.path {
        if p.unprompted >= UNPROMPTED {
            let missing = match p.unsummarised {
                0 => String::new(),
                n => format!(" ({n} with no summary of the page before and no same-site referrer)"),
            };
            out.push(Reason::new(
                Code::NavigationWithoutInput,
                format!(
                    "page {} of the session: the last {} pages were each reached with no press, key, wheel, touch or click on the page before{missing}",
                    p.pages, p.unprompted
                ),
            ));
        }
        if p.summarised >= QUIET_PAGES && p.input_pages == 0 && p.visible_ms >= QUIET_MS {
            out.push(Reason::new(
                Code::NoInputSession,
                format!(
                    "{} pages visible for {} s in all with no press, key, wheel, touch or click",
                    p.summarised,
                    p.visible_ms / 1_000
                ),
            ));
        }
    }
    let Some(s) = v.signals else {
        return;
    };
    // An action's own input is judged by `integrity`; the page before is judged at a load.
    if s.activity.is_some() || out.iter().any(|r| r.code == Code::ScriptedInput) {
        return;
    }
    if let Some(before) = s.navigation.as_ref().and_then(|n| n.previous.as_ref()) {
        let why = page_tells(before, v);
        if !why.is_empty() {
            out.push(Reason::new(
                Code::ScriptedInput,
                format!("on the page before: {}", why.join("; ")),
            ));
        }
    }
}

/// What in a whole page's input no device makes. Script clicks count only on the link that left
/// the page: a site's own scripts click elements (`element.click()`) on pages nobody touches.
fn page_tells(p: &PageSummary, v: &Visit<'_>) -> Vec<String> {
    let (mobile, chromium) = judged_as(v);
    let device_only = Activity {
        untrusted_clicks: None,
        untrusted_presses: None,
        ..p.input.clone()
    };
    let mut why = scripted(&device_only, mobile, chromium);
    if p.left.as_deref() == Some("script-link") && !p.had_input() {
        why.push(
            "left by a link clicked by script, with no press, key or touch from a device".into(),
        );
    }
    why
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::evidence::Evidence;

    const CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";

    fn load(previous: serde_json::Value, referrer: &str) -> Evidence {
        serde_json::from_value(json!({
            "userAgent": CHROME,
            "signals": {"userAgent": CHROME, "navigation": {
                "type": "navigate", "referrer": referrer, "previous": previous}}
        }))
        .unwrap()
    }

    fn session(pages: &[Evidence]) -> Vec<Vec<Reason>> {
        crate::tests::judged_session(reasons, pages)
    }

    fn codes(r: &[Reason]) -> Vec<Code> {
        r.iter().map(|r| r.code).collect()
    }

    #[test]
    fn a_driven_session_is_named_on_its_third_page() {
        let quiet =
            json!({"presses": 0, "keys": 0, "moves": 0, "visibleMs": 2000, "left": "unknown"});
        let pages = [
            load(serde_json::Value::Null, "none"),
            load(quiet.clone(), "none"),
            load(quiet.clone(), "none"),
            load(quiet, "none"),
        ];
        let judged = session(&pages);
        assert!(judged[0].is_empty() && judged[1].is_empty(), "{judged:?}");
        assert_eq!(codes(&judged[2]), [Code::NavigationWithoutInput]);
        assert!(
            judged[2][0]
                .detail
                .starts_with("page 3 of the session: the last 2 pages"),
            "{}",
            judged[2][0].detail
        );
        assert_eq!(codes(&judged[3]), [Code::NavigationWithoutInput]);
    }

    #[test]
    fn people_clicking_links_or_typing_one_address_are_not_named() {
        let clicked = json!({"presses": 1, "clicks": 1, "moves": 40, "visibleMs": 4000,
            "left": "link", "kin": {"holds": [85]}});
        let keyed = json!({"presses": 0, "keys": 6, "visibleMs": 4000, "left": "link",
            "kin": {"keys": 6, "keyHolds": [90, 80]}});
        let read = json!({"presses": 0, "keys": 0, "moves": 12, "visibleMs": 30000});
        let pages = [
            load(serde_json::Value::Null, "none"),
            load(clicked.clone(), "same-site"),
            load(keyed, "same-site"),
            load(read, "none"),
            load(clicked, "same-site"),
        ];
        assert!(session(&pages).iter().all(Vec::is_empty));
    }

    #[test]
    fn pages_nobody_touches_for_minutes_are_a_quiet_session() {
        // A same-site referrer with no summary (new tabs) keeps the run at zero; the summaries
        // that do arrive show long visible pages with no input.
        let long = json!({"presses": 0, "keys": 0, "visibleMs": 25000});
        let pages = [
            load(serde_json::Value::Null, "none"),
            load(long.clone(), "same-site"),
            load(long.clone(), "same-site"),
            load(long, "same-site"),
        ];
        let judged = session(&pages);
        assert!(judged[2].iter().all(|r| r.code != Code::NoInputSession));
        let r = judged[3]
            .iter()
            .find(|r| r.code == Code::NoInputSession)
            .unwrap();
        assert_eq!(
            r.detail,
            "3 pages visible for 75 s in all with no press, key, wheel, touch or click"
        );
    }

    #[test]
    fn the_page_befores_device_impossible_input_is_scripted_input() {
        let typed = json!({"presses": 1, "keys": 0, "charsWithoutKeydown": 11, "visibleMs": 3000});
        let judged = session(&[
            load(serde_json::Value::Null, "none"),
            load(typed, "same-site"),
        ]);
        assert_eq!(codes(&judged[1]), [Code::ScriptedInput]);
        assert!(
            judged[1][0]
                .detail
                .starts_with("on the page before: 11 characters")
        );
        // A link clicked by script, on a page with no device input.
        let scripted =
            json!({"presses": 0, "keys": 0, "untrustedClicks": 1, "left": "script-link"});
        let judged = session(&[
            load(serde_json::Value::Null, "none"),
            load(scripted, "same-site"),
        ]);
        assert!(
            judged[1][0]
                .detail
                .contains("left by a link clicked by script")
        );
        // A site's own script clicks on a page nobody touched, then a link a person clicked.
        let site = json!({"presses": 1, "clicks": 1, "untrustedClicks": 3, "left": "link"});
        let judged = session(&[
            load(serde_json::Value::Null, "none"),
            load(site, "same-site"),
        ]);
        assert!(judged[1].is_empty(), "{judged:?}");
    }
}
