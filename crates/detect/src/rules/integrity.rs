//! Browser integrity: what the agent's probes found of automation that does not announce itself
//! (a DevTools Protocol client, a driver's bindings, a patched `navigator.webdriver`, a window that
//! disagrees with its own Worker, wrapped natives, script-made input). Each probe was measured on
//! Debian's Chromium and Firefox against Playwright, Puppeteer with the stealth plugin and people
//! (docs/research/issue-14-stealth-probes.md).

use crate::engine::Engine;
use crate::evidence::Activity;
use crate::reasons::{Code, Reason, visitor_text};
use crate::ua;
use crate::visit::Visit;

/// What in `a` no device makes, in words; empty when nothing. On a mobile user agent capitals
/// without Shift are not counted (virtual keyboards capitalise by themselves). Key timing is
/// judged only on Chromium, whose events carry the operating system's timestamps: Firefox stamps
/// them when it handles them, so a busy Firefox delivers a person's queued keys 0-3 ms apart.
pub(super) fn scripted(a: &Activity, mobile: bool, chromium: bool) -> Vec<String> {
    let n = |v: Option<u32>| v.unwrap_or(0);
    let mut why = Vec::new();
    let keys = n(a.keys);
    if n(a.chars_without_keydown) >= 3 && keys == 0 {
        why.push(format!(
            "{} characters typed with no key pressed",
            n(a.chars_without_keydown)
        ));
    }
    if n(a.capitals_without_shift) > 0 && !mobile {
        why.push(format!(
            "{} capital letters keyed without Shift or Caps Lock",
            n(a.capitals_without_shift)
        ));
    }
    if n(a.zero_pressure) > 0 {
        why.push(format!(
            "{} mouse presses without pressure",
            n(a.zero_pressure)
        ));
    }
    // Script-made keys alone are not counted: password managers dispatch them into forms.
    if n(a.untrusted_clicks) + n(a.untrusted_presses) > 0 && n(a.presses) == 0 && keys == 0 {
        why.push(format!(
            "{} clicks dispatched by script, none pressed by a device",
            n(a.untrusted_clicks) + n(a.untrusted_presses)
        ));
    }
    // People's fastest rollovers and xdotool's default 12 ms delay (6-8 ms apart as the page
    // sees them) stay above 4 ms; drivers' keys come 1-4 ms apart. Modifiers are not timed.
    let (intervals, fast) = a.key_intervals();
    if chromium && intervals >= 4 && fast >= 3 && fast * 10 >= intervals * 3 {
        why.push(format!(
            "{fast} of {intervals} keys under 4 ms after the one before"
        ));
    }
    why
}

/// Whether `v` claims a mobile browser, and a Chromium whose key timing can be judged (see
/// [`scripted`]).
pub(super) fn judged_as(v: &Visit<'_>) -> (bool, bool) {
    let claim = v.ua_claim.or(v.js_claim);
    let chromium = claim.is_some_and(|c| {
        matches!(c.browser, ua::Browser::Chrome | ua::Browser::Edge) && c.platform != Some("iOS")
    });
    (claim.is_some_and(|c| c.mobile), chromium)
}

/// The reasons that name automation outright: function tampering counts only beside one of them,
/// because privacy extensions wrap natives too.
const AUTOMATION: &[Code] = &[
    Code::HeadlessBrowser,
    Code::Webdriver,
    Code::AutomationGlobals,
    Code::CdpAutomation,
    Code::AutomationFramework,
    Code::WebdriverTampered,
    Code::ContextMismatch,
    Code::SyntheticInput,
    Code::ScriptedInput,
];

fn listed(items: &[String], n: usize) -> String {
    items
        .iter()
        .take(n)
        .map(|i| visitor_text(i, 40))
        .collect::<Vec<_>>()
        .join(", ")
}

fn non_empty(v: &Option<Vec<String>>) -> Option<&[String]> {
    v.as_deref().filter(|l| !l.is_empty())
}

/// Runs after the user agent's and the browser's rules (see [`AUTOMATION`]).
pub fn reasons(_: &Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let Some(s) = v.signals else {
        return;
    };
    if s.cdp == Some(true) {
        out.push(Reason::new(
            Code::CdpAutomation,
            "a DevTools Protocol client is attached to the page",
        ));
    }
    if let Some(m) = non_empty(&s.framework_markers) {
        out.push(Reason::new(
            Code::AutomationFramework,
            format!("automation driver markers: {}", listed(m, 4)),
        ));
    }
    if let Some(t) = non_empty(&s.webdriver_tamper) {
        out.push(Reason::new(
            Code::WebdriverTampered,
            format!(
                "navigator.webdriver is not the engine's own ({})",
                listed(t, 4)
            ),
        ));
    }
    if let Some(d) = non_empty(&s.context_mismatch) {
        out.push(Reason::new(
            Code::ContextMismatch,
            format!(
                "a Worker reads other values than the window: {}",
                listed(d, 6)
            ),
        ));
    }
    if let Some(i) = &s.input {
        let untrusted = i.untrusted.unwrap_or(0);
        let equal = i.screen_eq_client.unwrap_or(0);
        if untrusted > 0 {
            out.push(Reason::new(
                Code::SyntheticInput,
                format!("{untrusted} of the page's first pointer events were dispatched by script"),
            ));
        } else if equal > 0 && i.chromeless == Some(false) {
            // Full screen, kiosk and resistFingerprinting windows have no chrome: equal
            // coordinates are normal there.
            out.push(Reason::new(
                Code::SyntheticInput,
                format!(
                    "{equal} pointer events at equal screen and client coordinates in a window"
                ),
            ));
        }
    }
    if let Some(a) = &s.activity {
        let (mobile, chromium) = judged_as(v);
        let why = scripted(a, mobile, chromium);
        if !why.is_empty() {
            let action = a
                .action
                .as_deref()
                .map_or("action".into(), |n| visitor_text(n, 40));
            out.push(Reason::new(
                Code::ScriptedInput,
                format!("before {action}: {}", why.join("; ")),
            ));
        }
    }
    if let Some(f) = non_empty(&s.tampered_functions)
        && out.iter().any(|r| AUTOMATION.contains(&r.code))
    {
        out.push(Reason::new(
            Code::FunctionTampering,
            format!("natives are wrapped: {}", listed(f, 4)),
        ));
    }
}
