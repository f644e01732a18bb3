//! The wire against the user agent: the TLS stack that opened the connection and the shape of
//! the HTTP request, against the browser the user agent claims. A missing wire part is no
//! evidence: nothing fires.

use crate::engine::Engine;
use crate::reasons::{Code, Reason, visitor_text};
use crate::ua::{self, Claim};
use crate::visit::Visit;
use crate::wire::{Ja4, Stack};

/// The TLS stack a user agent commits its ClientHello to; None where no one stack is implied.
fn claimed_stack(c: &Claim) -> Option<Stack> {
    if c.platform == Some("iOS") {
        // Every iOS browser, Chrome and Firefox included, uses Apple's network stack.
        return matches!(
            c.browser,
            ua::Browser::Safari | ua::Browser::Chrome | ua::Browser::Firefox | ua::Browser::Edge
        )
        .then_some(Stack::Apple);
    }
    match c.browser {
        ua::Browser::Chrome | ua::Browser::Edge => Some(Stack::Chromium),
        ua::Browser::Firefox => Some(Stack::Firefox),
        ua::Browser::Safari => Some(Stack::Apple),
        ua::Browser::Other => None,
    }
}

/// "Chrome 142" from the user agent, for a reason's detail.
fn claimed_browser(ua: &str, c: &Claim) -> String {
    let (name, token) = match c.browser {
        ua::Browser::Edge => ("Edge", "Edg/"),
        ua::Browser::Chrome => ("Chrome", "Chrome/"),
        ua::Browser::Firefox => ("Firefox", "Firefox/"),
        ua::Browser::Safari => ("Safari", "Version/"),
        ua::Browser::Other => return "a browser".to_owned(),
    };
    let major = ua
        .split(token)
        .nth(1)
        .map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .take(4)
                .collect::<String>()
        })
        .filter(|m| !m.is_empty());
    match major {
        Some(m) => format!("{name} {m}"),
        None => name.to_owned(),
    }
}

/// The family's reasons for one visit.
pub fn reasons(engine: &Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let Some(wire) = v.evidence.wire.as_ref() else {
        return;
    };
    let Some(ua) = v.ua.or(v.js_ua).filter(|u| !u.is_empty()) else {
        return;
    };
    let Some(claim) = v.ua_claim.or(v.js_claim) else {
        return;
    };
    let Some(stack) = claimed_stack(&claim) else {
        return;
    };
    let browser = claimed_browser(ua, &claim);
    if let Some(j) = wire.ja4.as_deref().and_then(Ja4::parse) {
        tls(engine, &j, stack, &browser, out);
    }
    if let Some(names) = wire.header_order.as_deref() {
        http(
            names,
            wire.http_version.as_deref(),
            stack,
            &browser,
            wire.http_fingerprint().unwrap_or_default(),
            out,
        );
    }
}

fn tls(engine: &Engine, j: &Ja4<'_>, stack: Stack, browser: &str, out: &mut Vec<Reason>) {
    let table = engine.fingerprints();
    let ja4 = format!("{}_{}_{}", j.a, j.b, j.c);
    let detail = |whose: &str| format!("TLS of {whose}, user agent claims {browser} (ja4 {ja4})");
    match table.client(j) {
        Some(k) if k.stack != stack => {
            out.push(Reason::new(
                Code::TlsFingerprintMismatch,
                detail(&visitor_text(&k.client, 120)),
            ));
            return;
        }
        Some(_) => return,
        None => {}
    }
    // Every browser offers TLS 1.3 and HTTP/2 by ALPN to an HTTPS site.
    if j.tls_version() != "13" || j.alpn() != "h2" {
        out.push(Reason::new(
            Code::TlsFingerprintMismatch,
            detail("a client that offers no TLS 1.3 with HTTP/2, as every browser does"),
        ));
        return;
    }
    // An unknown client claiming Chromium: BoringSSL sends one cipher list on every platform and
    // has for years, in every Chromium browser, so another list is another client. Firefox's NSS
    // list changes between releases (ESR 153 sends 16 suites where 128 sent 17) and Apple's is
    // not captured here, so an unknown list claiming either is let be: only a known library's
    // or another browser's (above) counts against them.
    if stack == Stack::Chromium && table.knows(stack) && !table.stack_sends(stack, j) {
        out.push(Reason::new(
            Code::TlsFingerprintMismatch,
            detail("a client that is not Chromium"),
        ));
    }
}

/// Positions of `names` in the order (the first occurrence of each).
fn position(order: &[String], name: &str) -> Option<usize> {
    order.iter().position(|n| n == name)
}

/// Whether the names present appear in this relative order.
fn in_order(order: &[String], names: &[&str]) -> bool {
    let at: Vec<usize> = names.iter().filter_map(|n| position(order, n)).collect();
    at.windows(2).all(|w| w[0] < w[1])
}

fn http(
    order: &[String],
    version: Option<&str>,
    stack: Stack,
    browser: &str,
    print: String,
    out: &mut Vec<Reason>,
) {
    let mut why: Vec<&str> = Vec::new();
    if version == Some("1.0") {
        why.push("HTTP/1.0, which no browser sends");
    }
    // A browser sends the fetch metadata headers in its engine's fixed order, as captured here
    // for Chromium and Firefox; Safari's order is not captured, so it is not judged.
    let fetch_order: &[&str] = match stack {
        Stack::Chromium => &["sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest"],
        Stack::Firefox => &["sec-fetch-dest", "sec-fetch-mode", "sec-fetch-site"],
        Stack::Apple | Stack::Library => &[],
    };
    if !in_order(order, fetch_order) {
        why.push("Sec-Fetch headers out of the claimed browser's order");
    }
    match stack {
        // Chromium adds Accept-Encoding and Accept-Language last, after the request's own and
        // fetch metadata headers; HTTP libraries put their defaults first.
        Stack::Chromium => {
            if let Some(enc) = position(order, "accept-encoding")
                && [
                    "origin",
                    "sec-fetch-site",
                    "sec-fetch-mode",
                    "sec-fetch-dest",
                ]
                .iter()
                .filter_map(|n| position(order, n))
                .any(|p| p > enc)
            {
                why.push("Accept-Encoding before the fetch metadata, as no Chromium sends it");
            }
        }
        // Gecko sends User-Agent first of the request's own headers (after Host on HTTP/1.1).
        Stack::Firefox => {
            if let Some(ua) = position(order, "user-agent")
                && order[..ua].iter().any(|n| n != "host")
            {
                why.push("User-Agent after other headers, as no Firefox sends it");
            }
        }
        Stack::Apple | Stack::Library => {}
    }
    if !why.is_empty() {
        out.push(Reason::new(
            Code::HttpFingerprintMismatch,
            format!(
                "{}; user agent claims {browser} (http {print})",
                why.join("; ")
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Vec<String> {
        s.split(',').map(str::to_owned).collect()
    }

    fn http_reasons(order: &str, version: &str, stack: Stack) -> Vec<String> {
        let mut out = Vec::new();
        http(
            &names(order),
            Some(version),
            stack,
            "X",
            String::new(),
            &mut out,
        );
        out.into_iter().map(|r| r.detail).collect()
    }

    #[test]
    fn browsers_own_orders_pass_and_libraries_orders_do_not() {
        // Chromium 156's and Firefox ESR 153's collect POST over HTTP/2, as captured here.
        let chromium_h2 = "content-length,sec-ch-ua-platform,user-agent,sec-ch-ua,content-type,sec-ch-ua-mobile,accept,origin,sec-fetch-site,sec-fetch-mode,sec-fetch-dest,referer,accept-encoding,accept-language,priority";
        assert!(http_reasons(chromium_h2, "2", Stack::Chromium).is_empty());
        let firefox_h2 = "user-agent,accept,accept-language,accept-encoding,content-type,referer,content-length,origin,sec-fetch-dest,sec-fetch-mode,sec-fetch-site,priority,te";
        assert!(http_reasons(firefox_h2, "2", Stack::Firefox).is_empty());
        let firefox_h1 = format!("host,{firefox_h2}");
        assert!(http_reasons(&firefox_h1, "1.1", Stack::Firefox).is_empty());
        // Python requests with Chrome's headers added: its defaults come first.
        let requests = "host,user-agent,accept-encoding,accept,connection,origin,sec-fetch-site,sec-fetch-mode,sec-fetch-dest,content-type,content-length";
        assert_eq!(http_reasons(requests, "1.1", Stack::Chromium).len(), 1);
        assert_eq!(http_reasons(chromium_h2, "2", Stack::Firefox).len(), 1);
        assert!(!http_reasons("host,user-agent", "1.0", Stack::Chromium).is_empty());
        // Nothing to compare: no reason.
        assert!(http_reasons("host,user-agent,accept", "1.1", Stack::Chromium).is_empty());
        // Safari's order is not captured: only HTTP/1.0 counts against it.
        assert!(http_reasons(chromium_h2, "2", Stack::Apple).is_empty());
    }

    #[test]
    fn claims_map_to_the_stack_their_platform_ships() {
        let stack = |ua: &str| claimed_stack(&Claim::of(ua));
        assert_eq!(
            stack(
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1"
            ),
            Some(Stack::Apple)
        );
        assert_eq!(
            stack(
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36 Edg/142.0.0.0"
            ),
            Some(Stack::Chromium)
        );
        assert_eq!(stack("curl/8.5.0"), None);
        assert_eq!(
            claimed_browser(
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36",
                &Claim::of("Chrome/142.0")
            ),
            "Chrome 142"
        );
    }
}
