//! The engine's tests over whole visits, and the repository's data loaded once for every
//! module's tests ([`ENGINE`]).

use std::path::Path;
use std::sync::LazyLock;

use crate::engine::Engine;
use crate::evidence::{Evidence, Headers, Signals};
use crate::reasons::{self, Code, visitor_text};

/// The repository's data, loaded once for these tests (read-only).
pub(crate) static ENGINE: LazyLock<Engine> = LazyLock::new(|| {
    Engine::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data")).expect("data/ loads")
});

const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
/// A German residential address (Deutsche Telekom), in no operator range.
const HOME_DE: &str = "84.128.0.1";

/// A session's pages judged by one rule, each on the session's path with it added, as the
/// service does.
pub(crate) fn judged_session(
    rule: fn(&Engine, &crate::visit::Visit<'_>, &mut Vec<reasons::Reason>),
    pages: &[Evidence],
) -> Vec<Vec<reasons::Reason>> {
    let mut path = crate::path::Path::default();
    pages
        .iter()
        .map(|e| {
            path = crate::path::Page::of(e).map_or(path, |p| path.after(p));
            let beyond = crate::visit::Beyond {
                path: Some(&path),
                ..Default::default()
            };
            let mut out = Vec::new();
            rule(
                &ENGINE,
                &crate::visit::Visit::with(&ENGINE, e, beyond),
                &mut out,
            );
            out
        })
        .collect()
}

fn codes(e: &Evidence) -> Vec<Code> {
    ENGINE.evaluate(e).reasons.iter().map(|r| r.code).collect()
}

fn ev(json: serde_json::Value) -> Evidence {
    serde_json::from_value(json).expect("evidence")
}

/// A consistent desktop Chrome visit from a German home line.
fn chrome_home() -> serde_json::Value {
    serde_json::json!({
        "ipAddress": HOME_DE,
        "userAgent": CHROME,
        "headers": {"user-agent": CHROME, "accept-language": "de-DE,de;q=0.9",
                    "sec-ch-ua": "\"Chromium\";v=\"131\", \"Google Chrome\";v=\"131\"",
                    "sec-ch-ua-mobile": "?0", "sec-ch-ua-platform": "\"Windows\""},
        "signals": {"webdriver": false, "userAgent": CHROME, "languages": ["de-DE", "de"],
                    "timeZone": "Europe/Berlin", "timezoneOffset": -60, "plugins": 5,
                    "outerWidth": 1920, "outerHeight": 1040, "innerWidth": 1920,
                    "innerHeight": 940, "webglVendor": "Google Inc. (Intel)",
                    "webglRenderer": "ANGLE (Intel, Intel(R) UHD Graphics 620 Direct3D11)",
                    "evalLength": 33, "productSub": "20030107", "automationGlobals": [],
                    "webrtcIps": ["192.168.1.20"], "hardwareConcurrency": 8,
                    "maxTouchPoints": 0,
                    "uaData": {"brands": [{"brand": "Google Chrome", "version": "131"}],
                               "mobile": false, "platform": "Windows"}}
    })
}

fn with(mut base: serde_json::Value, path: &[&str], value: serde_json::Value) -> Evidence {
    let mut at = &mut base;
    for p in &path[..path.len() - 1] {
        at = &mut at[*p];
    }
    at[path[path.len() - 1]] = value;
    ev(base)
}

#[test]
fn visitor_text_in_details_is_short_and_inert() {
    assert_eq!(
        visitor_text("SwiftShader (Google)", 60),
        "SwiftShader (Google)"
    );
    assert_eq!(
        visitor_text("<img src=x onerror=alert(1)>\"'`\\\n\u{202e}é", 60),
        "?img src=x onerror=alert(1)????????"
    );
    assert_eq!(visitor_text(&"x".repeat(500), 40).len(), 40);
    // Through the engine: every visitor-sourced detail.
    let hostile = "<script>alert(1)</script>\"&";
    let mut v = chrome_home();
    v["signals"]["automationGlobals"] = serde_json::json!([hostile]);
    v["signals"]["webglRenderer"] = serde_json::json!(format!("SwiftShader {hostile}"));
    v["signals"]["productSub"] = serde_json::json!(hostile);
    v["headers"]["sec-ch-ua"] = serde_json::json!(hostile);
    v["headers"]["sec-ch-ua-platform"] = serde_json::json!(hostile);
    v["signals"]["userAgent"] =
        serde_json::json!(CHROME.replace("Chrome/", &format!("HeadlessChrome{hostile}/")));
    let verdict = ENGINE.evaluate(&ev(v));
    assert!(verdict.reasons.len() >= 5, "{verdict:?}");
    for r in &verdict.reasons {
        assert!(
            !r.detail.contains(['<', '>', '"', '&', '\\']),
            "{:?}: {}",
            r.code,
            r.detail
        );
        assert!(r.detail.chars().count() <= 400, "{}", r.detail);
    }
}

#[test]
fn a_consistent_visit_from_a_home_line_has_no_reason() {
    let v = ENGINE.evaluate(&ev(chrome_home()));
    assert_eq!(v.reasons, vec![], "{v:?}");
    assert!(v.score_bot <= 0.05 && v.score_proxy_vpn <= 0.05);
    assert!(ENGINE.evaluate(&Evidence::default()).score_bot <= 0.05);
}

/// Each reason: evidence that fires it, from the consistent visit changed in one place.
#[test]
fn every_reason_fires_on_its_evidence_and_not_on_consistent_evidence() {
    use serde_json::json;
    let home = chrome_home;
    let cases: Vec<(Code, Evidence)> = vec![
        (
            Code::BotUserAgent,
            with(home(), &["userAgent"], json!("python-requests/2.32.3")),
        ),
        (
            Code::HeadlessBrowser,
            with(
                home(),
                &["signals", "userAgent"],
                json!(CHROME.replace("Chrome/", "HeadlessChrome/")),
            ),
        ),
        (
            Code::Webdriver,
            with(home(), &["signals", "webdriver"], json!(true)),
        ),
        (
            Code::AutomationGlobals,
            with(
                home(),
                &["signals", "automationGlobals"],
                json!(["callPhantom"]),
            ),
        ),
        (
            Code::UserAgentMismatch,
            with(home(), &["signals", "userAgent"], json!(FIREFOX)),
        ),
        (
            Code::ClientHintsMismatch,
            with(
                home(),
                &["headers", "sec-ch-ua-platform"],
                json!("\"Linux\""),
            ),
        ),
        (
            Code::NoLanguages,
            with(home(), &["signals", "languages"], json!([])),
        ),
        (
            Code::NoPlugins,
            with(home(), &["signals", "plugins"], json!(0)),
        ),
        (
            Code::ZeroWindow,
            with(home(), &["signals", "outerWidth"], json!(0)),
        ),
        (
            Code::SoftwareRenderer,
            with(
                home(),
                &["signals", "webglRenderer"],
                json!("Google SwiftShader"),
            ),
        ),
        (
            Code::EngineMismatch,
            with(home(), &["signals", "evalLength"], json!(37)),
        ),
        (
            Code::MissingUserAgent,
            with(
                with_headers_without_ua(home()),
                &["userAgent"],
                serde_json::Value::Null,
            ),
        ),
        (
            Code::VerifiedBot,
            ev(
                json!({"ipAddress": "66.249.66.1", "userAgent": "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"}),
            ),
        ),
        (
            Code::SpoofedBot,
            ev(
                json!({"ipAddress": HOME_DE, "userAgent": "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"}),
            ),
        ),
        (
            Code::DatacenterIp,
            with(home(), &["ipAddress"], json!("3.5.140.1")),
        ),
        (
            Code::TorExit,
            with(home(), &["ipAddress"], json!(tor_exit())),
        ),
        (
            Code::VpnRange,
            with(home(), &["ipAddress"], json!(provider_address("Mullvad"))),
        ),
        (
            Code::Relay,
            with(
                home(),
                &["ipAddress"],
                json!(provider_address("Apple Private Relay")),
            ),
        ),
        (
            Code::HostingIp,
            with(home(), &["ipAddress"], json!("3.5.140.1")),
        ),
        (
            Code::TimezoneMismatch,
            with(
                home(),
                &["signals", "timeZone"],
                json!("America/Los_Angeles"),
            ),
        ),
        (
            Code::WebrtcIpMismatch,
            with(
                home(),
                &["signals", "webrtcIps"],
                json!(["192.168.1.20", "81.2.69.160"]),
            ),
        ),
        (
            Code::ProxyHeaders,
            with(home(), &["headers", "via"], json!("1.1 squid")),
        ),
        (
            Code::CdpAutomation,
            with(home(), &["signals", "cdp"], json!(true)),
        ),
        (
            Code::AutomationFramework,
            with(
                home(),
                &["signals", "frameworkMarkers"],
                json!(["__ariaQuerySelector"]),
            ),
        ),
        (
            Code::WebdriverTampered,
            with(home(), &["signals", "webdriverTamper"], json!(["missing"])),
        ),
        (
            Code::ContextMismatch,
            with(
                home(),
                &["signals", "contextMismatch"],
                json!(["platform", "hardwareConcurrency"]),
            ),
        ),
        (Code::FunctionTampering, {
            let mut v = home();
            v["signals"]["cdp"] = json!(true);
            v["signals"]["tamperedFunctions"] = json!(["Function.toString:proxy"]);
            ev(v)
        }),
        (
            Code::SyntheticInput,
            with(
                home(),
                &["signals", "input"],
                json!({"events": 3, "untrusted": 1, "screenEqClient": 0, "chromeless": false}),
            ),
        ),
        (Code::LanguageCountryMismatch, {
            let mut v = home();
            v["signals"]["languages"] = json!(["en-GB"]);
            v["headers"]["accept-language"] = json!("en-GB");
            ev(v)
        }),
        (
            Code::AiAgent,
            with(
                home(),
                &["userAgent"],
                json!(
                    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)"
                ),
            ),
        ),
        (
            Code::TlsFingerprintMismatch,
            with(home(), &["wire"], json!({"ja4": PYTHON_REQUESTS_JA4})),
        ),
        (
            Code::RelayLatency,
            with(
                home(),
                &["wire"],
                json!({"transport": {"tcpRttMs": 21.0, "endToEndRttMs": 143.5,
                                     "endToEndSamples": 4}}),
            ),
        ),
        (
            // A Linux SYN (TTL 64, MSS then SACK permitted) under a Windows user agent.
            Code::TcpOsMismatch,
            with(
                home(),
                &["wire"],
                json!({"transport": {"syn": {"ttl": 61, "window": 64240, "mss": 1460,
                    "windowScale": 7,
                    "options": ["mss", "sackPermitted", "timestamp", "nop", "windowScale"]}}}),
            ),
        ),
        (
            Code::ScriptedInput,
            with(
                home(),
                &["signals", "activity"],
                json!({"action": "checkout", "keys": 0, "charsWithoutKeydown": 11}),
            ),
        ),
        (
            Code::SyntheticPointer,
            with(
                home(),
                &["signals", "activity"],
                json!({"action": "checkout", "presses": 2, "kin": {"holds": [90, 110], "m": [
                    [300, 410, 19, 1, 13, 4, 0, 0, 0, 1, 92, 80, 226, 90],
                    [420, 610, 25, 1, 20, 6, 0, 0, 0, 1, 95, 120, 210, 110]]}}),
            ),
        ),
        (
            Code::ProtocolInput,
            with(
                home(),
                &["signals", "activity"],
                json!({"action": "checkout", "presses": 1, "kin": {"holds": [2], "m": [
                    [609, 479, 35, 2, 44, 31, 1, 1, 1, 1, 89, 1, 381, 2]]}}),
            ),
        ),
        (
            Code::HttpFingerprintMismatch,
            with(
                home(),
                &["wire"],
                json!({"httpVersion": "1.1", "headerOrder": ["host", "user-agent",
                    "accept-encoding", "accept", "connection", "origin", "sec-fetch-site"]}),
            ),
        ),
    ];
    for (code, fires) in &cases {
        assert!(
            codes(fires).contains(code),
            "{code:?} did not fire: {:?}",
            codes(fires)
        );
        assert!(
            !codes(&ev(chrome_home())).contains(code),
            "{code:?} fired on a consistent visit"
        );
        let v = ENGINE.evaluate(fires);
        let r = v.reasons.iter().find(|r| r.code == *code).expect("fired");
        assert!(!r.detail.is_empty() && r.weight > 0.0);
    }
    // Every code of the table has a case, but those counted across visits (their evidence
    // is the store's counts, tested in `rules::velocity` and `rules::path`) and those of a signature's check
    // (the service's, tested in `agents`).
    let counted = [
        Code::NavigationWithoutInput,
        Code::NoInputSession,
        Code::ForgedSummary,
        Code::SessionChurn,
        Code::AddressVelocity,
        Code::AddressChurn,
        Code::SignedAgent,
        Code::SpoofedAgent,
    ];
    for (code, ..) in reasons::TABLE.iter().filter(|(c, ..)| !counted.contains(c)) {
        assert!(cases.iter().any(|(c, _)| c == code), "no case for {code:?}");
    }
    // Deterministic evidence alone: 0.99 or more.
    for (code, e) in &cases {
        if [
            Code::Webdriver,
            Code::HeadlessBrowser,
            Code::TorExit,
            Code::AutomationGlobals,
        ]
        .contains(code)
        {
            let v = ENGINE.evaluate(e);
            assert!(
                v.score_bot.max(v.score_proxy_vpn) >= 0.99,
                "{code:?}: {v:?}"
            );
        }
    }
}

/// JA4s from data/wire-fingerprints.tsv (captured on this machine).
const CHROMIUM_JA4: &str = "t13d1517h2_8daaf6152771_cb7bf5808d99";
const FIREFOX_JA4: &str = "t13d1617h2_86a278354501_3cbfd9057e0d";
const PYTHON_REQUESTS_JA4: &str = "t13i1811h1_85036bcba153_b26ce05bbdd6";

/// The wire against the claimed browser: a script's TLS stack is caught whatever body and
/// user agent it borrows; the browser's own is not, nor is a missing wire part.
#[test]
fn the_wire_tells_a_script_from_the_browser_it_claims() {
    use serde_json::json;
    let wire = |ja4: &str| with(chrome_home(), &["wire"], json!({"ja4": ja4}));
    let tls = |e: &Evidence| {
        ENGINE
            .evaluate(e)
            .reasons
            .into_iter()
            .find(|r| r.code == Code::TlsFingerprintMismatch)
    };
    // Chromium's own ClientHello, with another extension set (a resumed session): nothing.
    assert_eq!(tls(&wire(CHROMIUM_JA4)), None);
    assert_eq!(tls(&wire("t13i1518h2_8daaf6152771_0123456789ab")), None);
    // A known library, named; with the borrowed body's score at least 0.9.
    let r = tls(&wire(PYTHON_REQUESTS_JA4)).expect("fires");
    assert!(
        r.detail.starts_with("TLS of Python requests"),
        "{}",
        r.detail
    );
    assert!(
        r.detail.contains("user agent claims Chrome 131"),
        "{}",
        r.detail
    );
    assert!(ENGINE.evaluate(&wire(PYTHON_REQUESTS_JA4)).score_bot >= 0.9);
    // Another browser's stack, and an unknown client claiming Chromium.
    assert!(tls(&wire(FIREFOX_JA4)).unwrap().detail.contains("Firefox"));
    let unknown = tls(&wire("t13d1311h2_0123456789ab_0123456789ab")).expect("fires");
    assert!(
        unknown.detail.contains("not Chromium"),
        "{}",
        unknown.detail
    );
    // No TLS 1.3 or no HTTP/2 offered: no browser.
    assert!(tls(&wire("t12d1311h1_0123456789ab_0123456789ab")).is_some());
    // Firefox claims: its own stack passes; an unknown list is let be; a library's is caught.
    let firefox = |ja4: &str| {
        let mut v = chrome_home();
        v["userAgent"] = json!(FIREFOX);
        v["headers"] = json!({"user-agent": FIREFOX});
        v["signals"] = json!({});
        v["wire"] = json!({"ja4": ja4});
        ev(v)
    };
    assert_eq!(tls(&firefox(FIREFOX_JA4)), None);
    assert_eq!(tls(&firefox("t13d1715h2_5b57614c22b0_3d5424432f57")), None);
    assert!(tls(&firefox(PYTHON_REQUESTS_JA4)).is_some());
    // An agent that claims no browser (curl's own user agent) is not judged by its wire.
    let mut curl = json!({"ipAddress": HOME_DE, "userAgent": "curl/8.5.0"});
    curl["wire"] = json!({"ja4": PYTHON_REQUESTS_JA4});
    assert!(!codes(&ev(curl)).contains(&Code::TlsFingerprintMismatch));
    // No wire: the consistent visit stays clean.
    assert!(ENGINE.evaluate(&ev(chrome_home())).reasons.is_empty());
}

/// The second look at an action: each artefact of protocol-made input fires alone and
/// reaches 0.9; input as a device (or xdotool, the operating system's) makes it does not.
#[test]
fn scripted_input_before_an_action_is_named_and_device_input_is_not() {
    use serde_json::json;
    let at_action = |activity: serde_json::Value| {
        ENGINE.evaluate(&with(chrome_home(), &["signals", "activity"], activity))
    };
    // A person under xdotool: two presses, Shift for the capitals, 12 ms between keys.
    let person = json!({"action": "checkout", "moves": 3, "presses": 2, "zeroPressure": 0,
        "keys": 13, "charsWithoutKeydown": 0, "capitalsWithoutShift": 0,
        "keyIntervals": 12, "fastKeyIntervals": 1, "untrustedClicks": 1});
    assert!(at_action(person.clone()).reasons.is_empty());
    for (field, value, words) in [
        (
            "charsWithoutKeydown",
            json!(11),
            "typed with no key pressed",
        ),
        ("capitalsWithoutShift", json!(2), "without Shift"),
        ("zeroPressure", json!(2), "without pressure"),
        ("fastKeyIntervals", json!(10), "under 4 ms"),
    ] {
        let mut a = person.clone();
        a[field] = value;
        if field == "charsWithoutKeydown" {
            a["keys"] = json!(0);
            a["keyIntervals"] = json!(0);
        }
        if field == "fastKeyIntervals" {
            a["keyIntervals"] = json!(12);
        }
        let v = at_action(a);
        let r = v
            .reasons
            .iter()
            .find(|r| r.code == Code::ScriptedInput)
            .unwrap_or_else(|| panic!("{field}: {v:?}"));
        assert!(r.detail.starts_with("before checkout: "), "{}", r.detail);
        assert!(r.detail.contains(words), "{field}: {}", r.detail);
        assert!(v.score_bot >= 0.9, "{field}: {v:?}");
    }
    // Script clicks count only where no device pressed anything.
    let clicks = json!({"presses": 0, "keys": 0, "untrustedClicks": 2});
    assert!(
        codes(&with(chrome_home(), &["signals", "activity"], clicks))
            .contains(&Code::ScriptedInput)
    );
    // Key timing counts only on Chromium: a busy Firefox stamps queued keys close together.
    let mut firefox = chrome_home();
    firefox["userAgent"] = json!(FIREFOX);
    firefox["headers"] = json!({"user-agent": FIREFOX});
    firefox["signals"] = json!({"userAgent": FIREFOX,
        "activity": {"keys": 11, "keyIntervals": 10, "fastKeyIntervals": 3, "presses": 2}});
    assert!(!codes(&ev(firefox)).contains(&Code::ScriptedInput));
    // A phone's keyboard capitalises by itself.
    let mut phone = chrome_home();
    let mobile = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36";
    phone["userAgent"] = json!(mobile);
    phone["signals"]["activity"] = json!({"keys": 5, "capitalsWithoutShift": 1});
    assert!(!codes(&ev(phone)).contains(&Code::ScriptedInput));
}

/// Browser-integrity evidence as the matrix of issue 14 saw it, scored as it must be.
#[test]
fn hidden_automation_is_caught_and_soft_signals_alone_are_not() {
    use serde_json::json;
    let score = |v: serde_json::Value| ENGINE.evaluate(&ev(v)).score_bot;
    // Wrapped natives alone (a privacy extension): nothing; beside a protocol client: counted.
    let alone = with(
        chrome_home(),
        &["signals", "tamperedFunctions"],
        json!(["HTMLCanvasElement.toDataURL:source"]),
    );
    assert!(ENGINE.evaluate(&alone).reasons.is_empty());
    // Equal coordinates in a chromeless window (resistFingerprinting, full screen): nothing.
    let rfp = with(
        chrome_home(),
        &["signals", "input"],
        json!({"events": 17, "untrusted": 0, "screenEqClient": 17, "chromeless": true}),
    );
    assert!(ENGINE.evaluate(&rfp).reasons.is_empty());
    // chromium --headless=new --user-agent <Windows Chrome 138> on Linux, no client attached:
    // empty high-entropy hints, brands of another version and platform, software WebGL.
    let borrowed = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/138.0.0.0 Safari/537.36";
    let mut v = chrome_home();
    v["userAgent"] = json!(borrowed);
    v["headers"]["user-agent"] = json!(borrowed);
    v["headers"]["sec-ch-ua"] = json!("\"Chromium\";v=\"156\", \"Not:A-Brand\";v=\"24\"");
    v["headers"]["sec-ch-ua-platform"] = json!("\"Linux\"");
    v["signals"]["userAgent"] = json!(borrowed);
    v["signals"]["uaData"] = json!({"brands": [{"brand": "Chromium", "version": "156"}],
                                     "mobile": false, "platform": "Linux"});
    v["signals"]["highEntropy"] = json!({"platformVersion": "", "architecture": "",
                                          "bitness": "", "model": "", "uaFullVersion": "",
                                          "fullVersionList": []});
    v["signals"]["webglRenderer"] = json!("ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device))");
    assert!(score(v) >= 0.9);
    // Each soft signal alone stays under even odds.
    for (path, value) in [
        (&["signals", "plugins"][..], json!(0)),
        (&["signals", "webglRenderer"][..], json!("llvmpipe")),
        (&["signals", "outerWidth"][..], json!(0)),
        (&["signals", "languages"][..], json!([])),
        (&["headers", "sec-ch-ua-platform"][..], json!("\"Linux\"")),
    ] {
        let v = ENGINE.evaluate(&with(chrome_home(), path, value));
        assert!(v.score_bot < 0.5, "{path:?}: {v:?}");
    }
}

fn with_headers_without_ua(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(h) = v["headers"].as_object_mut() {
        h.remove("user-agent");
    }
    v
}

fn provider_address(provider: &str) -> String {
    ENGINE
        .ranges()
        .samples()
        .find(|(_, l)| l.provider == provider)
        .map(|(ip, _)| ip.to_string())
        .expect("a range of the provider")
}

fn tor_exit() -> String {
    provider_address("Tor")
}

/// A named piece of evidence added to a visit.
type Injection = (&'static str, fn(&mut Evidence));

/// Pieces of evidence, each of which can only add reasons (or replace one by a heavier one).
fn injections() -> Vec<Injection> {
    vec![
        ("webdriver", |e| {
            e.signals.get_or_insert_default().webdriver = Some(true)
        }),
        ("automation global", |e| {
            e.signals.get_or_insert_default().automation_globals = Some(vec!["callPhantom".into()])
        }),
        // Where the browser said nothing of its languages: an empty list is new evidence.
        ("empty languages", |e| {
            let s = e.signals.get_or_insert_default();
            if s.languages.is_none() {
                s.languages = Some(vec![]);
            }
        }),
        ("zero window", |e| {
            e.signals.get_or_insert_default().outer_width = Some(0.0)
        }),
        ("software renderer", |e| {
            e.signals.get_or_insert_default().webgl_renderer = Some("llvmpipe".into())
        }),
        ("via header", |e| {
            let mut pairs: Vec<(String, String)> = Vec::new();
            if let Some(h) = &e.headers {
                for n in [
                    "user-agent",
                    "accept-language",
                    "sec-ch-ua-platform",
                    "x-forwarded-for",
                ] {
                    if let Some(v) = h.get(n) {
                        pairs.push((n.into(), v.into()));
                    }
                }
            }
            pairs.push(("via".into(), "1.1 proxy".into()));
            e.headers = Some(Headers::from_pairs(pairs));
        }),
        ("public webrtc address", |e| {
            e.signals.get_or_insert_default().webrtc_ips = Some(vec!["81.2.69.160".into()])
        }),
    ]
}

fn evidence_strategy() -> impl proptest::strategy::Strategy<Value = Evidence> {
    use proptest::prelude::*;
    let uas = prop::sample::select(vec![
        None,
        Some(CHROME.to_owned()),
        Some(FIREFOX.to_owned()),
        Some("curl/8.5.0".to_owned()),
        Some("Mozilla/5.0 (compatible; Googlebot/2.1)".to_owned()),
        Some(String::new()),
    ]);
    let ips = prop::sample::select(vec![
        None,
        Some(HOME_DE),
        Some("3.5.140.1"),
        Some("66.249.66.1"),
        Some("203.0.113.7"),
    ]);
    let zones = prop::sample::select(vec![
        None,
        Some("Europe/Berlin"),
        Some("Asia/Tokyo"),
        Some("Nowhere/Zone"),
    ]);
    (
        uas,
        ips,
        zones,
        any::<Option<bool>>(),
        proptest::option::of(0u32..8),
        proptest::option::of(prop::collection::vec("[a-z]{2}(-[A-Z]{2})?", 0..3)),
    )
        .prop_map(|(ua, ip, zone, webdriver, plugins, languages)| Evidence {
            ip_address: ip.map(|i| i.parse().expect("ip")),
            user_agent: ua.clone(),
            headers: ua.map(|u| Headers::from_pairs([("user-agent".to_owned(), u)])),
            signals: Some(Signals {
                time_zone: zone.map(str::to_owned),
                webdriver,
                plugins,
                languages,
                ..Signals::default()
            }),
            wire: None,
            request: None,
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

    /// Every number a signal can hold, extremes included (schemathesis found i32::MIN once).
    #[test]
    fn any_numbers_in_the_signals_never_panic(
        offset in proptest::prelude::any::<Option<i32>>(),
        n in proptest::prelude::any::<Option<u32>>(),
        w in proptest::prelude::any::<Option<f64>>(),
        zone in proptest::option::of("[A-Za-z/_]{0,20}"),
    ) {
        let e = Evidence {
            ip_address: Some(HOME_DE.parse().expect("ip")),
            signals: Some(Signals {
                timezone_offset: offset,
                time_zone: zone,
                plugins: n,
                eval_length: n,
                hardware_concurrency: n,
                max_touch_points: n,
                outer_width: w,
                outer_height: w,
                inner_width: w,
                inner_height: w,
                ..Signals::default()
            }),
            ..Evidence::default()
        };
        let v = ENGINE.evaluate(&e);
        proptest::prop_assert!((0.0..=1.0).contains(&v.score_bot));
        proptest::prop_assert!((0.0..=1.0).contains(&v.score_proxy_vpn));
    }

    #[test]
    fn scores_stay_in_range_and_evidence_only_ever_adds(e in evidence_strategy(), pick in 0usize..7) {
        let before = ENGINE.evaluate(&e);
        for s in [before.score_bot, before.score_proxy_vpn] {
            proptest::prop_assert!((0.0..=1.0).contains(&s));
        }
        let (name, inject) = injections()[pick];
        let mut more = e.clone();
        inject(&mut more);
        let after = ENGINE.evaluate(&more);
        // Adding a reason's evidence never lowers a score; removing it never raises one.
        proptest::prop_assert!(after.score_bot >= before.score_bot, "{name}: {before:?} -> {after:?}");
        proptest::prop_assert!(after.score_proxy_vpn >= before.score_proxy_vpn, "{name}: {before:?} -> {after:?}");
    }
}
