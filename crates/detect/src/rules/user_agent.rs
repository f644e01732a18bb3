//! The user agent: empty or missing, a headless browser that says so, a known bot's pattern, and
//! the header and JavaScript disagreeing.

use crate::engine::Engine;
use crate::reasons::{Code, Reason, visitor_text};
use crate::ua::headless_marker;
use crate::visit::Visit;

/// The family's reasons for one visit.
pub fn reasons(engine: &Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let (ua, ua_lower, js_ua, e) = (v.ua, v.ua_lower(), v.js_ua, v.evidence);

    let headers_given = e.headers.as_ref().is_some_and(|h| !h.is_empty());
    match ua {
        Some("") => out.push(Reason::new(
            Code::MissingUserAgent,
            "the user agent is empty",
        )),
        None if headers_given => out.push(Reason::new(
            Code::MissingUserAgent,
            "the request has headers but no User-Agent",
        )),
        _ => {}
    }
    let headless_brand = e
        .signals
        .as_ref()
        .and_then(|s| s.ua_data.as_ref())
        .and_then(|d| d.brands.iter().find(|b| b.brand.contains("Headless")))
        .map(|b| b.brand.as_str());
    let marker = [ua, js_ua]
        .into_iter()
        .flatten()
        .find_map(headless_marker)
        .or(headless_brand);
    if let Some(marker) = marker {
        out.push(Reason::new(
            Code::HeadlessBrowser,
            format!("a headless browser says so ({})", visitor_text(marker, 40)),
        ));
    }
    let bot = ua
        .zip(ua_lower)
        .filter(|(u, _)| !u.is_empty())
        .and_then(|(u, lower)| engine.bots.category(u, lower));
    if let Some(category) = bot {
        // A headless browser is reported as such, not twice.
        if !out.iter().any(|r| r.code == Code::HeadlessBrowser) {
            out.push(Reason::new(
                Code::BotUserAgent,
                format!("the user agent matches a known {category} pattern"),
            ));
        }
    }
    if let (Some(h), Some(j)) = (ua, js_ua)
        && !h.is_empty()
        && h != j.trim()
    {
        out.push(Reason::new(
            Code::UserAgentMismatch,
            "the User-Agent header differs from navigator.userAgent",
        ));
    }
}
