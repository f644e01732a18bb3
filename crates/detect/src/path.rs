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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Reloaded, or reached through the history (back, forward): the visitor used the
    /// browser's own controls, which a page never sees.
    pub history: bool,
    /// `document.referrer` is a page of the same site.
    pub same_site_referrer: bool,
    /// The page before it in the tab, as its agent summarised it.
    pub before: Option<Before>,
}

/// The summary of the page before, as far as the path needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Before {
    /// A press, key, wheel turn, touch or click from a device (see
    /// [`crate::evidence::PageSummary::had_input`]).
    pub input: bool,
    pub visible_ms: u64,
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
            history: matches!(n.kind.as_deref(), Some("reload" | "back_forward")),
            same_site_referrer: n.referrer.as_deref() == Some("same-site"),
            before: n.previous.as_ref().map(|p| Before {
                input: p.had_input(),
                visible_ms: p.visible_ms.unwrap_or(0).min(MAX_PAGE_MS),
            }),
        }
    }
}

/// One page's visible time counts for at most a day: a summary cannot inflate the session's.
const MAX_PAGE_MS: u64 = 86_400_000;

/// What a session's pages so far add up to; kept in the session's summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
}

impl Path {
    /// The path once `page` is added.
    pub fn after(self, page: Page) -> Self {
        let mut p = self;
        p.pages = p.pages.saturating_add(1);
        if let Some(b) = page.before {
            p.summarised = p.summarised.saturating_add(1);
            p.input_pages = p.input_pages.saturating_add(u32::from(b.input));
            p.visible_ms = p.visible_ms.saturating_add(b.visible_ms);
        }
        // The session's first page, with nothing before it in the tab: a landing says nothing.
        if self.pages == 0 && page.before.is_none() {
            return p;
        }
        if page.history {
            return p;
        }
        // With a summary, what happened on the page before decides (a referrer is the client's
        // to set); without one (a new tab, storage cleared) a same-site referrer is a link.
        let prompted = match page.before {
            Some(b) => b.input,
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
            history: false,
            same_site_referrer: same_site,
            before: before.map(|input| Before {
                input,
                visible_ms: 2_000,
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
                "previous": {"presses": 0, "keys": 0, "clicks": 1, "visibleMs": 1500}}}
        }))
        .unwrap();
        let p = Page::of(&e).unwrap();
        assert!(p.same_site_referrer && !p.history);
        assert_eq!(
            p.before,
            Some(Before {
                input: true,
                visible_ms: 1_500
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
}
