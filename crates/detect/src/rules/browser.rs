//! The browser's announced automation and soft signals: webdriver, automation globals, languages,
//! plugins, window, software WebGL, and the JavaScript engine against the claimed browser.

use crate::engine::Engine;
use crate::reasons::{Code, Reason, visitor_text};
use crate::ua::{self, Claim};
use crate::visit::Visit;

/// The family's reasons for one visit.
pub fn reasons(_: &Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let Some(s) = v.signals else {
        return;
    };
    if s.webdriver == Some(true) {
        out.push(Reason::new(Code::Webdriver, "navigator.webdriver is true"));
    }
    if let Some(found) = s.automation_globals.as_ref().filter(|g| !g.is_empty()) {
        let names: Vec<String> = found.iter().take(5).map(|n| visitor_text(n, 40)).collect();
        out.push(Reason::new(
            Code::AutomationGlobals,
            format!("automation globals in the page: {}", names.join(", ")),
        ));
    }
    if s.languages.as_ref().is_some_and(Vec::is_empty) {
        out.push(Reason::new(
            Code::NoLanguages,
            "navigator.languages is empty",
        ));
    }
    let claim = v.ua_claim.or(v.js_claim);
    if let (Some(c), Some(0)) = (claim, s.plugins)
        && c.browser == ua::Browser::Chrome
        && !c.mobile
    {
        out.push(Reason::new(
            Code::NoPlugins,
            "desktop Chrome with no plugins",
        ));
    }
    if s.outer_width == Some(0.0) || s.outer_height == Some(0.0) {
        out.push(Reason::new(
            Code::ZeroWindow,
            "the window has no outer size",
        ));
    }
    if let Some(r) = s.webgl_renderer.as_deref() {
        let lower = r.to_ascii_lowercase();
        if [
            "swiftshader",
            "llvmpipe",
            "softpipe",
            "software rasterizer",
            "mesa offscreen",
        ]
        .iter()
        .any(|m| lower.contains(m))
        {
            out.push(Reason::new(
                Code::SoftwareRenderer,
                format!("WebGL renders in software ({})", visitor_text(r, 60)),
            ));
        }
    }
    if let Some((eval_len, product_sub)) = claim.and_then(Claim::engine) {
        let eval_off = s.eval_length.is_some_and(|l| l != eval_len);
        let sub_off = s.product_sub.as_deref().is_some_and(|p| p != product_sub);
        if eval_off || sub_off {
            out.push(Reason::new(
                Code::EngineMismatch,
                format!(
                    "the JavaScript engine (eval length {}, productSub {}) is not the claimed browser's",
                    s.eval_length.map_or("?".into(), |l| l.to_string()),
                    visitor_text(s.product_sub.as_deref().unwrap_or("?"), 20)
                ),
            ));
        }
    }
}
