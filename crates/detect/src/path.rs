//! A session's path: how its visitor got from one page to the next. A person moves on by doing
//! something on the page they leave (a click on a link, Tab and Enter, a tap); a driver calls
//! `goto`, and the page it leaves saw no input at all. One such page proves nothing (people type
//! addresses and open bookmarks); pages in a row reached that way are a browser being driven.
//!
//! Each page's load carries its [`Navigation`]; the service turns it into a [`Page`] and folds
//! it into the session's [`Path`], which the session's summary keeps (a few counters, so judging
//! a page adds no read to the collect route). The rules in `rules/path.rs` read the result.

use serde::{Deserialize, Serialize};

use crate::evidence::{Evidence, Navigation};

/// What one page's load says of how it was reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Page {
    /// When the server received the load (Unix ms), where the caller knows: a page before
    /// cannot have been open longer than the session.
    pub at_ms: Option<i64>,
    /// Reloaded, or reached through the history (back, forward): the visitor used the
    /// browser's own controls, which a page never sees.
    pub history: bool,
    /// `document.referrer` is a page of the same site.
    pub same_site_referrer: bool,
    /// The page before it in the tab, as its agent summarised it.
    pub before: Option<Before>,
}

/// The summary of the page before, as far as the path needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Before {
    /// A press, key, wheel turn or touch from a device, backed by the events it makes (see
    /// [`crate::evidence::PageSummary::backed_input`]).
    pub input: bool,
    /// Input claimed that the agent's record of the page's events does not back.
    pub unbacked: bool,
    pub visible_ms: u64,
    pub dwell_ms: u64,
    /// The page's pointer movements, judged ([`crate::hand`]).
    pub strokes: crate::hand::Strokes,
    /// Input no device makes on the page ([`crate::hand::Hand::tells`], the tells that hold
    /// on any device).
    pub protocol: bool,
}

impl Page {
    /// The page a visit's evidence describes: only a load's collect says how its page was
    /// reached (an action's second look is the same page again, and says nothing new).
    pub fn of(e: &Evidence) -> Option<Self> {
        let s = e.signals.as_ref()?;
        if s.activity.is_some() {
            return None;
        }
        s.navigation.as_ref().map(Self::from_navigation)
    }

    fn from_navigation(n: &Navigation) -> Self {
        Self {
            at_ms: None,
            history: matches!(n.kind.as_deref(), Some("reload" | "back_forward")),
            same_site_referrer: n.referrer.as_deref() == Some("same-site"),
            before: n.previous.as_ref().map(|p| {
                let input = p.backed_input();
                Before {
                    input,
                    unbacked: p.contradicted(),
                    visible_ms: p.visible_ms.unwrap_or(0).min(MAX_PAGE_MS),
                    dwell_ms: p.dwell_ms.unwrap_or(0).min(MAX_PAGE_MS),
                    strokes: p
                        .input
                        .kin
                        .as_ref()
                        .map(|h| h.strokes())
                        .unwrap_or_default(),
                    // Keys without a code are left to the page's own judgement, which knows
                    // the device (a virtual keyboard sends none).
                    protocol: p.input.kin.as_ref().is_some_and(|h| {
                        !h.tells(p.input.foreign.as_deref().unwrap_or_default(), true)
                            .is_empty()
                    }),
                }
            }),
        }
    }

    /// The page as received at `ms` (Unix milliseconds, the server's clock).
    pub fn at(self, ms: i64) -> Self {
        Self {
            at_ms: Some(ms),
            ..self
        }
    }
}

/// How much longer than the session so far a page before may say it was open: its agent starts
/// before the session's first collect arrives.
const DWELL_SLACK_MS: u64 = 5_000;

/// One page's visible time counts for at most a day: a summary cannot inflate the session's.
const MAX_PAGE_MS: u64 = 86_400_000;

/// What a session's pages so far add up to; kept in the session's summary (members added since
/// read as zero from summaries written before them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Path {
    /// Pages whose load reported how it was reached.
    pub pages: u32,
    /// Pages in a row, ending with the latest, each reached with no input on the page before
    /// (reloads and history steps neither count nor break the run).
    pub unprompted: u32,
    /// Of those, the pages that came with no summary of the page before and no same-site
    /// referrer.
    pub unsummarised: u32,
    /// Pages whose summary arrived (with the page after them).
    pub summarised: u32,
    /// Of those, the ones with input.
    pub input_pages: u32,
    /// The summarised pages' visible time, in milliseconds.
    pub visible_ms: u64,
    /// The summarised pages' pointer movements long enough to judge, and of those the ones a
    /// generator drew ([`crate::hand::Movement::machine`]).
    pub movements: u32,
    pub machine: u32,
    /// Summaries that claimed input their events do not back, or a page open longer than the
    /// session; and whether the latest page's was one.
    pub forged: u32,
    pub last_forged: bool,
    /// Summarised pages with input no device makes: a protocol drove the session, and a later
    /// page whose timing happened to pass does not make it a person's.
    pub protocol: u32,
    /// When the session's first page arrived (Unix ms, the server's clock).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_at_ms: Option<i64>,
}

impl Path {
    /// The path once `page` is added.
    pub fn after(self, page: Page) -> Self {
        let mut p = self;
        p.pages = p.pages.saturating_add(1);
        p.first_at_ms = self.first_at_ms.or(page.at_ms);
        p.last_forged = false;
        if let Some(b) = page.before {
            p.summarised = p.summarised.saturating_add(1);
            p.input_pages = p.input_pages.saturating_add(u32::from(b.input));
            p.movements = p.movements.saturating_add(u32::from(b.strokes.judged));
            p.machine = p.machine.saturating_add(u32::from(b.strokes.machine));
            // The clock the server kept: the page before cannot have been open longer than the
            // session (its first page's arrival to this one's).
            let span = match (self.first_at_ms, page.at_ms) {
                (Some(first), Some(at)) => Some(u64::try_from(at - first).unwrap_or(0)),
                _ => None,
            };
            let too_long = span.is_some_and(|s| b.dwell_ms > s + DWELL_SLACK_MS);
            // The page's visible time is the client's figure: never more than the server's clock
            // allows it to have been.
            let visible = span.map_or(b.visible_ms, |s| b.visible_ms.min(s + DWELL_SLACK_MS));
            p.visible_ms = p.visible_ms.saturating_add(visible);
            p.last_forged = b.unbacked || too_long;
            p.forged = p.forged.saturating_add(u32::from(p.last_forged));
            p.protocol = p.protocol.saturating_add(u32::from(b.protocol));
        }
        // The session's first page, with nothing before it in the tab: a landing says nothing.
        if self.pages == 0 && page.before.is_none() {
            return p;
        }
        if page.history {
            return p;
        }
        // With a summary, what happened on the page before decides (a referrer is the client's
        // to set); without one (a new tab, storage cleared) a same-site referrer is a link. A
        // summary the clock contradicts proves nothing.
        let prompted = match page.before {
            Some(b) => b.input && !p.last_forged,
            None => page.same_site_referrer,
        };
        if prompted {
            p.unprompted = 0;
            p.unsummarised = 0;
        } else {
            p.unprompted = p.unprompted.saturating_add(1);
            p.unsummarised = p
                .unsummarised
                .saturating_add(u32::from(page.before.is_none()));
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(before: Option<bool>, same_site: bool) -> Page {
        Page {
            at_ms: None,
            history: false,
            same_site_referrer: same_site,
            before: before.map(|input| Before {
                input,
                unbacked: false,
                visible_ms: 2_000,
                dwell_ms: 2_000,
                strokes: Default::default(),
                protocol: false,
            }),
        }
    }

    fn walk(pages: &[Page]) -> Path {
        pages.iter().fold(Path::default(), |p, pg| p.after(*pg))
    }

    #[test]
    fn a_driver_going_from_page_to_page_runs_up_and_a_click_resets() {
        let quiet = walk(&[
            page(None, false),
            page(Some(false), false),
            page(Some(false), false),
        ]);
        assert_eq!((quiet.pages, quiet.unprompted, quiet.summarised), (3, 2, 2));
        assert_eq!((quiet.input_pages, quiet.visible_ms), (0, 4_000));
        // A same-site referrer does not vouch for a page whose summary shows no input.
        let forged = walk(&[
            page(None, false),
            page(Some(false), true),
            page(Some(false), true),
        ]);
        assert_eq!(forged.unprompted, 2);
        let person = walk(&[
            page(None, false),
            page(Some(true), true),
            page(Some(false), false),
        ]);
        assert_eq!(person.unprompted, 1);
    }

    #[test]
    fn without_a_summary_a_same_site_referrer_is_a_link_and_none_counts() {
        let new_tabs = walk(&[page(None, false), page(None, true), page(None, true)]);
        assert_eq!(new_tabs.unprompted, 0);
        let typed = walk(&[page(None, false), page(None, false), page(None, false)]);
        assert_eq!((typed.unprompted, typed.unsummarised), (2, 2));
    }

    #[test]
    fn reloads_and_history_steps_neither_count_nor_break_the_run() {
        let mut back = page(Some(false), false);
        back.history = true;
        let p = walk(&[
            page(None, false),
            page(Some(false), false),
            back,
            page(Some(false), false),
        ]);
        assert_eq!((p.pages, p.unprompted), (4, 2));
    }

    #[test]
    fn a_first_page_with_a_summary_before_it_is_judged() {
        // The page before was in this session but its own visit was not stored (refused).
        assert_eq!(walk(&[page(Some(false), false)]).unprompted, 1);
        assert_eq!(walk(&[page(None, false)]).unprompted, 0);
    }

    #[test]
    fn pages_are_read_from_a_loads_navigation_only() {
        let e: Evidence = serde_json::from_value(serde_json::json!({
            "signals": {"navigation": {"type": "navigate", "referrer": "same-site",
                "previous": {"presses": 1, "keys": 0, "clicks": 1, "visibleMs": 1500,
                    "dwellMs": 1600, "kin": {"holds": [84]}}}}
        }))
        .unwrap();
        let p = Page::of(&e).unwrap();
        assert!(p.same_site_referrer && !p.history);
        assert_eq!(
            p.before,
            Some(Before {
                input: true,
                unbacked: false,
                visible_ms: 1_500,
                dwell_ms: 1_600,
                strokes: Default::default(),
                protocol: false,
            })
        );
        let mut action = e.clone();
        if let Some(s) = action.signals.as_mut() {
            s.activity = Some(Default::default());
        }
        assert_eq!(Page::of(&action), None);
        let huge: Evidence = serde_json::from_value(serde_json::json!({
            "signals": {"navigation": {"type": "reload", "previous": {"visibleMs": 9_000_000_000u64}}}
        }))
        .unwrap();
        let p = Page::of(&huge).unwrap();
        assert!(p.history);
        assert_eq!(p.before.unwrap().visible_ms, MAX_PAGE_MS);
    }

    #[test]
    fn a_pages_visible_time_is_bounded_by_the_servers_clock() {
        let at = |ms: i64, visible: u64| Page {
            at_ms: Some(ms),
            before: Some(Before {
                visible_ms: visible,
                ..Default::default()
            }),
            ..Default::default()
        };
        let first = Path::default().after(Page {
            at_ms: Some(1_000_000),
            ..Default::default()
        });
        // Ten seconds after the first page, a summary claiming an hour's visible time counts
        // for at most the ten seconds and the slack.
        let p = first.after(at(1_010_000, 3_600_000));
        assert_eq!(p.visible_ms, 10_000 + DWELL_SLACK_MS);
        // Within the clock, the figure stands.
        assert_eq!(first.after(at(1_010_000, 4_000)).visible_ms, 4_000);
    }

    fn summary(previous: serde_json::Value) -> Page {
        let e: Evidence = serde_json::from_value(serde_json::json!({
            "signals": {"navigation": {"type": "navigate", "referrer": "same-site", "previous": previous}}
        }))
        .unwrap();
        Page::of(&e).unwrap()
    }

    #[test]
    fn a_click_claimed_without_its_events_is_no_input_and_is_counted_as_forged() {
        // The agent's record shows no press: the counts were edited (or the record dropped).
        let claimed = serde_json::json!({"presses": 1, "clicks": 1, "left": "link", "dwellMs": 2000,
            "kin": {"m": [], "holds": [], "keys": 0, "wheels": 0}});
        let clicked = serde_json::json!({"clicks": 1, "left": "link", "dwellMs": 2000,
            "kin": {"holds": []}});
        for previous in [claimed.clone(), clicked] {
            let b = summary(previous).before.unwrap();
            assert!(!b.input && b.unbacked);
        }
        // An agent before version 6 keeps no record: its page is reached without input, and
        // its summary is not called forged (a browser may keep the old script for a day).
        let old = summary(serde_json::json!({"presses": 1, "clicks": 1, "dwellMs": 2000}));
        let b = old.before.unwrap();
        assert!(!b.input && !b.unbacked);
        let first = summary(serde_json::Value::Null);
        let forged = summary(claimed);
        let p = walk(&[first, forged, forged]);
        assert_eq!((p.unprompted, p.forged, p.last_forged), (2, 2, true));
        // Keys are backed by their keydowns: the Enter that follows a link is released later.
        let keyed = summary(serde_json::json!({"keys": 2, "kin": {"keys": 2}}));
        assert!(keyed.before.unwrap().input);
    }

    #[test]
    fn a_page_open_longer_than_the_session_is_contradicted_by_the_clock() {
        let backed = serde_json::json!({"presses": 1, "dwellMs": 40_000, "kin": {"holds": [90]}});
        let first = summary(serde_json::Value::Null).at(1_000_000);
        // Ten seconds into the session, the page before says it was open for forty.
        let p = walk(&[first, summary(backed.clone()).at(1_010_000)]);
        assert!(p.last_forged);
        assert_eq!(p.unprompted, 1);
        // Forty-two seconds in, it may well have been.
        let p = walk(&[first, summary(backed).at(1_042_000)]);
        assert!(!p.last_forged);
        assert_eq!(p.unprompted, 0);
    }

    #[test]
    fn movements_add_up_over_the_session() {
        let ghost = serde_json::json!([300, 410, 19, 1, 13, 4, 0, 0, 0, 1, 92, 1, 226, 2]);
        let hand = serde_json::json!([609, 479, 35, 2, 44, 31, 1, 1, 1, 1, 89, 51, 381, 83]);
        let page = |m: serde_json::Value| {
            summary(serde_json::json!({"presses": 1, "kin": {"holds": [2], "m": m}}))
        };
        let p = walk(&[
            summary(serde_json::Value::Null),
            page(serde_json::json!([ghost])),
            page(serde_json::json!([ghost, hand])),
        ]);
        assert_eq!((p.movements, p.machine, p.unprompted), (3, 2, 0));
    }

    #[test]
    fn a_summary_written_before_the_hand_was_counted_reads_as_zero() {
        let old: Path = serde_json::from_value(serde_json::json!({"pages": 3, "unprompted": 1,
            "unsummarised": 0, "summarised": 2, "inputPages": 1, "visibleMs": 4000}))
        .unwrap();
        assert_eq!((old.pages, old.movements, old.first_at_ms), (3, 0, None));
    }
}
