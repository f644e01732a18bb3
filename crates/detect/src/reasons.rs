//! Reason codes, their weights, and how weights become scores.
//!
//! Each score is `logistic(bias + sum of the weights of the reasons that fired)`. With no reason
//! a score is `logistic(BIAS)` (about 0.018); a deterministic reason alone reaches 0.99 or more.

use serde::{Deserialize, Serialize};

/// Which score a reason counts towards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    #[serde(rename = "bot")]
    Bot,
    #[serde(rename = "proxyVpn")]
    ProxyVpn,
}

/// The starting point of both scores: logistic(-4) = 0.018.
pub const BIAS: f64 = -4.0;

macro_rules! reasons {
    ($($code:ident = $name:literal => $target:ident, $weight:expr, $why:literal;)*) => {
        /// A stable reason code, shown in snake_case.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        #[serde(rename_all = "snake_case")]
        pub enum Code {
            $($code),*
        }

        /// Every reason with its score, weight and the rationale for the weight: the one table.
        pub const TABLE: &[(Code, Target, f64, &str)] = &[
            $((Code::$code, Target::$target, $weight, $why)),*
        ];

        /// Every code's name as the API shows it, in the table's order.
        const NAMES: &[&str] = &[$($name),*];
    };
}

reasons! {
    // bot
    BotUserAgent = "bot_user_agent" => Bot, 6.5, "a known crawler, monitor, AI crawler or HTTP library names itself; browsers never match";
    HeadlessBrowser = "headless_browser" => Bot, 9.0, "a headless browser announces itself in its user agent or brands: deterministic";
    Webdriver = "webdriver" => Bot, 9.0, "navigator.webdriver is true only under automation: deterministic";
    AutomationGlobals = "automation_globals" => Bot, 9.0, "globals that only automation frameworks define: deterministic";
    UserAgentMismatch = "user_agent_mismatch" => Bot, 4.0, "the header and JavaScript disagree on the user agent: a spoofed header or a tampered page";
    ClientHintsMismatch = "client_hints_mismatch" => Bot, 3.95, "client hints contradict the user agent (brand, major version, platform, mobile) or are all empty, as a borrowed user agent leaves them; just under even odds alone (UA-switching extensions do the same)";
    NoLanguages = "no_languages" => Bot, 3.0, "real browsers always report at least one language";
    NoPlugins = "no_plugins" => Bot, 1.0, "headless Chrome lists no plugins, but neither does Chrome set to download PDFs: weak";
    ZeroWindow = "zero_window" => Bot, 3.0, "a window without outer size is not on any screen";
    SoftwareRenderer = "software_renderer" => Bot, 2.5, "software WebGL (SwiftShader, llvmpipe) is typical of headless servers; rare on real devices";
    EngineMismatch = "engine_mismatch" => Bot, 4.0, "the JavaScript engine's fingerprint (eval length, productSub) contradicts the claimed browser";
    MissingUserAgent = "missing_user_agent" => Bot, 4.5, "every browser sends a user agent; its absence is a script";
    VerifiedBot = "verified_bot" => Bot, 7.0, "a crawler from its operator's published ranges: certainly a bot, but an honest one";
    SpoofedBot = "spoofed_bot" => Bot, 7.0, "claims to be a known crawler from outside its operator's ranges: an impostor";
    DatacenterIp = "datacenter_ip" => Bot, 1.0, "people rarely browse from servers; weak alone";
    CdpAutomation = "cdp_automation" => Bot, 5.0, "a DevTools Protocol client formats the page's console: every Playwright and Puppeteer driver, but also a person's open DevTools";
    AutomationFramework = "automation_framework" => Bot, 9.0, "bindings and leftovers that only automation drivers put in a page: deterministic";
    WebdriverTampered = "webdriver_tampered" => Bot, 7.0, "navigator.webdriver deleted, redefined or shadowed: only automation hides it";
    ContextMismatch = "context_mismatch" => Bot, 6.0, "a Worker reads another browser than the window: the window's values were spoofed";
    FunctionTampering = "function_tampering" => Bot, 4.0, "natives wrapped as stealth kits wrap them; counted only beside another automation reason, since privacy extensions wrap natives too";
    ScriptedInput = "scripted_input" => Bot, 7.0, "input before an action that no device makes: characters typed with no key down, capitals without Shift, mouse presses without pressure, script clicks with no press, keys faster than 4 ms apart; drivers dispatch it through the DevTools Protocol or the page";
    TlsFingerprintMismatch = "tls_fingerprint_mismatch" => Bot, 6.5, "the TLS ClientHello is an HTTP library's or another browser's than the user agent claims: the client that opened the connection is not the browser it names (a TLS-intercepting middlebox does the same)";
    HttpFingerprintMismatch = "http_fingerprint_mismatch" => Bot, 3.0, "header order or HTTP version that the claimed browser never sends; alone short of even odds, since proxies and extensions can reorder headers";
    SyntheticInput = "synthetic_input" => Bot, 5.0, "pointer events dispatched by script, or at the equal coordinates of protocol-made events";
    SessionChurn = "session_churn" => Bot, 7.0, "one device key at one address, or one address with few devices, opening sessions faster than people open tabs (counted across visits); 3.0 for an address with many devices behind it or when the visit's own device key made few of them, 3.5 for a key identical iPhones share";
    AddressVelocity = "address_velocity" => Bot, 4.0, "one address sending more events than a person's browsing makes; 2.0 for an address with many devices behind it (carrier-grade NAT, an office, a relay) or when the visit's own device key made fewer than half of them";
    SignedAgent = "signed_agent" => Bot, 7.0, "a Web Bot Auth signature (RFC 9421) that verifies under the agent's key directory: certainly a bot, and one that says whose; shown as good, and a project may allow its category";
    SpoofedAgent = "spoofed_agent" => Bot, 9.0, "a signature that does not verify, is expired, replayed or not yet valid, or that claims a known agent's directory without its key: a forgery";
    AiAgent = "ai_agent" => Bot, 6.5, "declares an AI agent or AI crawler in its user agent, unsigned and outside any published range: a declared bot whose identity is unproven";
    NavigationWithoutInput = "navigation_without_input" => Bot, 7.0, "pages in a row reached with no input on the page before (no press, key, wheel, touch or click from a device) and no same-site link: a browser driven from page to page; a person typing addresses or opening bookmarks makes one such page, not three";
    NoInputSession = "no_input_session" => Bot, 4.5, "three or more pages visible for over a minute in all with no input of any kind from a device: read by something that never touches them; people reading without moving exist, so short of even odds alone";
    SyntheticPointer = "synthetic_pointer" => Bot, 7.0, "two or more of the session's pointer movements, and two in three of those long enough to judge, drawn by a generator: a flat speed profile, speed surging every few frames with no pause, or one move per frame to the press (no pause, at most one frame skipped) with a generator's tell (no time homing in, noise on one axis or on every few samples); 5.4% of people's movements have one, two in a row of the same person 0.28% (docs/detection.md, The hand)";
    ProtocolInput = "protocol_input" => Bot, 7.0, "input events no device makes, over a whole page: a press held under 20 ms within 60 ms of the pointer's arrival (3 of 11,047 people's presses), wheel turns with several ratios of wheelDelta to delta, mouse events at the screen's corner of a window with a toolbar, patched MouseEvent getters or a drawn cursor, printable keys without a code; the session keeps it on later pages";
    ForgedSummary = "forged_summary" => Bot, 7.0, "the page before's summary claims input that the agent's own record of its events does not back, or a page open longer than the session the server saw: the summary was edited; the session keeps it on later pages";
    AddressChurn = "address_churn" => Bot, 6.0, "one device key seen from many addresses or countries within a window: a device rotating through proxies; 3.5 for a key identical iPhones share";
    // proxy/VPN
    TorExit = "tor_exit" => ProxyVpn, 10.0, "a listed Tor exit: deterministic";
    VpnRange = "vpn_range" => ProxyVpn, 8.0, "a commercial VPN's exit range";
    Relay = "relay" => ProxyVpn, 5.0, "a privacy relay (iCloud Private Relay): a proxy, though a benign one";
    HostingIp = "hosting_ip" => ProxyVpn, 4.5, "a hosting, cloud or CDN address: most proxies and self-hosted VPNs live there";
    TimezoneMismatch = "timezone_mismatch" => ProxyVpn, 3.0, "the browser's time zone is not used in the address's country and its offsets differ";
    WebrtcIpMismatch = "webrtc_ip_mismatch" => ProxyVpn, 5.0, "WebRTC reveals another public address than the request's: traffic is relayed";
    ProxyHeaders = "proxy_headers" => ProxyVpn, 2.0, "the request carries proxy headers (Via, Forwarded, X-Forwarded-For)";
    RelayLatency = "relay_latency" => ProxyVpn, 6.5, "the end-to-end round trip (TLS handshake, HTTP/2 PING) exceeds the TCP round trip to the connecting host by more than jitter and a client's own delay explain: TCP ends at a relay between the server and the client; 3.0 on networks known to split TCP near their users (geostationary satellite accelerators, scripts/splitting-asns.tsv)";
    TcpOsMismatch = "tcp_os_mismatch" => ProxyVpn, 4.5, "the TCP SYN is another operating-system family's (initial TTL, option order) than the user agent's platform: the connection was opened by a relay's stack, or the user agent is not the device's; past even odds alone; 2.5 when the claim is Windows, as privacy modes claim it on every system";
    LanguageCountryMismatch = "language_country_mismatch" => ProxyVpn, 1.0, "the browser's language regions do not include the address's country; weak, travellers exist";
}

impl Code {
    pub fn target(self) -> Target {
        self.entry().1
    }

    pub fn weight(self) -> f64 {
        self.entry().2
    }

    /// The code as the API shows it (snake_case), without allocating.
    pub fn name(self) -> &'static str {
        NAMES[self as usize]
    }

    /// The code named `name` (as the API shows it), if this build knows it.
    pub fn from_name(name: &str) -> Option<Self> {
        let i = NAMES.iter().position(|n| *n == name)?;
        Some(TABLE[i].0)
    }

    fn entry(self) -> &'static (Code, Target, f64, &'static str) {
        // The table is generated from the same list as the enum, in its order.
        &TABLE[self as usize]
    }
}

/// A reason that fired, with the evidence in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    pub code: Code,
    pub score: Target,
    pub weight: f64,
    pub detail: String,
}

impl Reason {
    pub fn new(code: Code, detail: impl Into<String>) -> Self {
        Self {
            code,
            score: code.target(),
            weight: code.weight(),
            detail: detail.into(),
        }
    }
}

pub fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The score of `target` from the reasons that fired.
pub fn score(reasons: &[Reason], target: Target) -> f64 {
    let sum: f64 = reasons
        .iter()
        .filter(|r| r.score == target)
        .map(|r| r.weight)
        .sum();
    logistic(BIAS + sum)
}

/// Visitor-supplied text quoted in a detail: at most `n` characters, each a letter, a digit, a
/// space or one of `. , : ; _ ( ) / + - = @ #`; any other character becomes `?`. A detail is
/// shown in dashboards and sent to webhooks, so it never carries markup, quotes, escapes or
/// control characters, whatever a visitor put in its signals.
pub fn visitor_text(s: &str, n: usize) -> String {
    s.chars()
        .take(n)
        .map(|c| {
            if c.is_ascii_alphanumeric() || " .,:;_()/+-=@#".contains(c) {
                c
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_snake_case_and_in_the_table_once() {
        assert_eq!(
            serde_json::to_string(&Code::WebrtcIpMismatch).unwrap(),
            "\"webrtc_ip_mismatch\""
        );
        for (i, (code, ..)) in TABLE.iter().enumerate() {
            assert_eq!(TABLE.iter().filter(|(c, ..)| c == code).count(), 1);
            assert_eq!(*code as usize, i, "the table is in the enum's order");
            assert!(code.weight() > 0.0);
            // The static name is serde's, both ways.
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json.as_str(), Some(code.name()));
            assert_eq!(Code::from_name(code.name()), Some(*code));
        }
        assert_eq!(Code::from_name("not_a_reason"), None);
    }

    #[test]
    fn no_evidence_is_at_most_five_percent_and_deterministic_evidence_at_least_99() {
        assert!(score(&[], Target::Bot) <= 0.05);
        for code in [
            Code::Webdriver,
            Code::HeadlessBrowser,
            Code::AutomationGlobals,
        ] {
            assert!(
                score(&[Reason::new(code, "")], Target::Bot) >= 0.99,
                "{code:?}"
            );
        }
        assert!(score(&[Reason::new(Code::TorExit, "")], Target::ProxyVpn) >= 0.99);
        // A reason counts only towards its own score.
        assert!(score(&[Reason::new(Code::TorExit, "")], Target::Bot) <= 0.05);
    }
}
