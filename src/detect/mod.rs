//! The detection engine: evidence about one visit in, `scoreBot`, `scoreProxyVpn` and the named
//! reasons behind them out. Pure: no I/O, no clock, no store. Its data (bot patterns, operator
//! ranges, countries, zones; see `scripts/data.py`) is read once, by [`Engine::load`], per
//! process or Lambda cold start.

use std::net::IpAddr;
use std::path::Path;

use serde::Serialize;

pub mod batch;
pub mod evidence;
pub mod integrity;
pub mod networks;
pub mod places;
pub mod reasons;
pub mod ua;

pub use evidence::{Evidence, Headers, Signals};
pub use reasons::{Code, Reason, Target};

use networks::{Basis, Networks};
use places::{Geo, Kind, Ranges, country_name, language_region};
use ua::{BotPatterns, Claim, headless_marker};

/// The engine's own version; the data's is in [`Engine::data_version`].
pub const ENGINE_VERSION: &str = concat!("vigil-detect/", env!("CARGO_PKG_VERSION"));

#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("malformed data: {0}")]
    Format(String),
}

/// The verdict on one visit.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub score_bot: f64,
    pub score_proxy_vpn: f64,
    pub reasons: Vec<Reason>,
}

pub struct Engine {
    bots: BotPatterns,
    ranges: Ranges,
    networks: Networks,
    geo: Geo,
    data_version: String,
}

/// Crawlers that publish their ranges: a user-agent token, and the range provider it must come
/// from.
const OPERATORS: &[(&str, &str)] = &[
    ("googlebot", "Googlebot"),
    ("google-inspectiontool", "Googlebot"),
    ("bingbot", "Bingbot"),
    ("gptbot", "GPTBot"),
    ("chatgpt-user", "GPTBot"),
    ("oai-searchbot", "GPTBot"),
    ("claudebot", "ClaudeBot"),
    ("applebot", "Applebot"),
    ("duckduckbot", "DuckDuckBot"),
    ("duckassistbot", "DuckDuckBot"),
    ("perplexitybot", "PerplexityBot"),
    ("amazonbot", "Amazonbot"),
    ("facebookexternalhit", "Meta"),
    ("meta-externalagent", "Meta"),
    ("ccbot", "Common Crawl"),
    ("archive.org_bot", "Internet Archive"),
];

fn read(dir: &Path, name: &str) -> Result<Vec<u8>, DataError> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|source| DataError::Read {
        path: path.display().to_string(),
        source,
    })
}

fn text(bytes: Vec<u8>, name: &str) -> Result<String, DataError> {
    String::from_utf8(bytes).map_err(|_| DataError::Format(format!("{name} is not UTF-8")))
}

impl Engine {
    /// Loads the data files of `dir` (the repository's `data/`).
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        let patterns = text(read(dir, "bot-patterns.tsv")?, "bot-patterns.tsv")?;
        let ranges = text(read(dir, "ip-ranges.tsv")?, "ip-ranges.tsv")?;
        let hosting = text(read(dir, "asn-hosting.tsv")?, "asn-hosting.tsv")?;
        let zones = text(read(dir, "zones.tsv")?, "zones.tsv")?;
        let manifest = text(read(dir, "MANIFEST")?, "MANIFEST")?;
        Self::from_data(
            &patterns,
            &ranges,
            &hosting,
            read(dir, "country.mmdb")?,
            &zones,
            &manifest,
        )
    }

    /// The engine over the data committed under `data/`, built into the binary: a Lambda function
    /// carries its data with it, and nothing is read from disk at a cold start.
    pub fn embedded() -> Result<Self, DataError> {
        const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/");
        Self::from_data(
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/data/bot-patterns.tsv"
            )),
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/data/ip-ranges.tsv")),
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/data/asn-hosting.tsv")),
            include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/data/country.mmdb")).to_vec(),
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/data/zones.tsv")),
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/data/MANIFEST")),
        )
        .map_err(|e| DataError::Format(format!("{DATA}: {e}")))
    }

    pub fn from_data(
        patterns: &str,
        ranges: &str,
        hosting: &str,
        mmdb: Vec<u8>,
        zones: &str,
        manifest: &str,
    ) -> Result<Self, DataError> {
        // The data's version: each package's version, as pinned by make data.
        let data_version = manifest
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let mut c = l.split('\t');
                Some(format!("{}@{}", c.next()?, c.next()?))
            })
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Self {
            bots: BotPatterns::parse(patterns)?,
            ranges: Ranges::parse(ranges)?,
            networks: Networks::parse(hosting)?,
            geo: Geo::load(mmdb, zones)?,
            data_version,
        })
    }

    pub fn data_version(&self) -> &str {
        &self.data_version
    }

    pub fn ranges(&self) -> &Ranges {
        &self.ranges
    }

    pub fn geo(&self) -> &Geo {
        &self.geo
    }

    pub fn networks(&self) -> &Networks {
        &self.networks
    }

    /// Scores one visit.
    pub fn evaluate(&self, e: &Evidence) -> Verdict {
        let mut reasons = Vec::new();
        let signals = e.signals.as_ref();
        let header = |name| e.headers.as_ref().and_then(|h| h.get(name));
        let ua = e
            .user_agent
            .as_deref()
            .or_else(|| header("user-agent"))
            .map(str::trim);
        let js_ua = signals.and_then(|s| s.user_agent.as_deref());
        let country = e.ip_address.and_then(|ip| self.geo.country(ip));

        // Lower-cased once: the bot patterns and the crawler claims both read it.
        let agent_lower = ua.or(js_ua).map(str::to_lowercase);
        let ua_lower = ua.and(agent_lower.as_deref());
        self.user_agent_reasons(ua, ua_lower, js_ua, e, &mut reasons);
        self.address_reasons(e.ip_address, agent_lower.as_deref(), &mut reasons);
        if let Some(s) = signals {
            browser_reasons(s, ua.or(js_ua), &mut reasons);
            // After every other bot rule of the browser side: function tampering counts only
            // beside another automation reason.
            integrity::integrity_reasons(s, &mut reasons);
            self.place_reasons(s, country, &mut reasons);
            webrtc_reasons(s, e.ip_address, &mut reasons);
        }
        client_hint_reasons(e, ua, &mut reasons);
        proxy_header_reasons(e, &mut reasons);
        self.language_reasons(e, country, &mut reasons);

        Verdict {
            score_bot: round(reasons::score(&reasons, Target::Bot)),
            score_proxy_vpn: round(reasons::score(&reasons, Target::ProxyVpn)),
            reasons,
        }
    }

    fn user_agent_reasons(
        &self,
        ua: Option<&str>,
        ua_lower: Option<&str>,
        js_ua: Option<&str>,
        e: &Evidence,
        out: &mut Vec<Reason>,
    ) {
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
            .and_then(|(u, lower)| self.bots.category(u, lower));
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

    /// `agent_lower`: the user agent (header, else JavaScript's), lower-cased.
    fn address_reasons(
        &self,
        ip: Option<IpAddr>,
        agent_lower: Option<&str>,
        out: &mut Vec<Reason>,
    ) {
        let label = ip.and_then(|ip| self.ranges.lookup(ip));
        let claimed = agent_lower.and_then(|lower| {
            OPERATORS
                .iter()
                .find(|(token, _)| lower.contains(token))
                .map(|(_, operator)| *operator)
        });
        if let (Some(operator), Some(_)) = (claimed, ip) {
            match label {
                Some(l) if l.kind == Kind::Crawler && l.provider == operator => {
                    out.push(Reason::new(
                        Code::VerifiedBot,
                        format!("{operator} from {operator}'s published crawler ranges"),
                    ));
                    return;
                }
                _ => out.push(Reason::new(
                    Code::SpoofedBot,
                    format!("claims to be {operator} but is outside {operator}'s published ranges"),
                )),
            }
        }
        let network = ip.and_then(|ip| self.networks.lookup(ip));
        let Some(label) = label else {
            // Not in an operator's published ranges, but announced by a hosting network.
            if let Some(n) = network {
                let how = match n.basis {
                    Basis::Listed => "a hosting network",
                    Basis::Named => "a hosting network by its registered name",
                };
                let name = visitor_text(&n.name, 60);
                out.push(Reason::new(
                    Code::HostingIp,
                    format!("an address of AS{} {name}, {how}", n.asn),
                ));
                out.push(Reason::new(
                    Code::DatacenterIp,
                    format!("a data centre address (AS{} {name})", n.asn),
                ));
            }
            return;
        };
        let p = &label.provider;
        let asn = network.map_or(String::new(), |n| {
            format!(", AS{} {}", n.asn, visitor_text(&n.name, 60))
        });
        match label.kind {
            Kind::Tor => out.push(Reason::new(Code::TorExit, "a Tor exit node")),
            Kind::Vpn if p.contains("Relay") => {
                out.push(Reason::new(Code::Relay, format!("an exit of {p}")));
            }
            Kind::Vpn => out.push(Reason::new(Code::VpnRange, format!("an exit of {p}"))),
            Kind::Hosting | Kind::Cdn => {
                out.push(Reason::new(
                    Code::HostingIp,
                    format!("an address of {p}{asn}"),
                ));
                out.push(Reason::new(
                    Code::DatacenterIp,
                    format!("a data centre address ({p})"),
                ));
            }
            // A crawler range without a matching claim: a server that does not say what it is.
            Kind::Crawler => {
                out.push(Reason::new(
                    Code::DatacenterIp,
                    format!("a crawler range of {p}"),
                ));
            }
        }
    }

    fn place_reasons(&self, s: &Signals, country: Option<places::Country>, out: &mut Vec<Reason>) {
        let Some(c) = country else {
            return;
        };
        let country_offsets = self.geo.offsets_of(c);
        if country_offsets.is_empty() {
            return;
        }
        if let Some(zone) = s.time_zone.as_deref()
            && let Some(info) = self.geo.zone(zone)
        {
            if !info.countries.contains(&c)
                && !info.offsets.iter().any(|o| country_offsets.contains(o))
            {
                out.push(Reason::new(
                    Code::TimezoneMismatch,
                    format!(
                        "the browser's time zone {zone} is not used in {}, the address's country",
                        country_name(c)
                    ),
                ));
            }
            return;
        }
        // No zone name: the browser's current offset against every offset of the country. Real
        // offsets are within a day; anything else says nothing about a place (and cannot be
        // negated safely: i32::MIN has no opposite).
        if let Some(minutes_west) = s.timezone_offset.filter(|m| (-1440..=1440).contains(m))
            && !country_offsets.contains(&-minutes_west)
        {
            out.push(Reason::new(
                Code::TimezoneMismatch,
                format!(
                    "the browser's UTC offset ({:+} min) is not used in {}, the address's country",
                    -minutes_west,
                    country_name(c)
                ),
            ));
        }
    }

    fn language_reasons(
        &self,
        e: &Evidence,
        country: Option<places::Country>,
        out: &mut Vec<Reason>,
    ) {
        let Some(c) = country else {
            return;
        };
        let from_signals = e.signals.as_ref().and_then(|s| s.languages.as_ref());
        let mut regions: Vec<places::Country> = match from_signals {
            Some(list) => list.iter().filter_map(|t| language_region(t)).collect(),
            None => e
                .headers
                .as_ref()
                .and_then(|h| h.get("accept-language"))
                .map(|v| {
                    v.split(',')
                        .filter_map(|part| language_region(part.split(';').next()?.trim()))
                        .collect()
                })
                .unwrap_or_default(),
        };
        regions.dedup();
        if !regions.is_empty() && !regions.contains(&c) {
            let named: Vec<String> = regions.iter().map(|r| country_name(*r)).collect();
            out.push(Reason::new(
                Code::LanguageCountryMismatch,
                format!(
                    "language regions {} do not include {}, the address's country",
                    named.join(", "),
                    country_name(c)
                ),
            ));
        }
    }
}

fn browser_reasons(s: &Signals, ua: Option<&str>, out: &mut Vec<Reason>) {
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
    let claim = ua.map(Claim::of);
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

fn webrtc_reasons(s: &Signals, ip: Option<IpAddr>, out: &mut Vec<Reason>) {
    let Some(request_ip) = ip else {
        return;
    };
    let other = s
        .webrtc_ips
        .iter()
        .flatten()
        .filter_map(|a| a.parse::<IpAddr>().ok())
        .find(|a| !crate::domain::net::is_blocked(*a) && *a != request_ip);
    if let Some(a) = other {
        out.push(Reason::new(
            Code::WebrtcIpMismatch,
            format!("WebRTC shows the public address {a}, the request came from {request_ip}"),
        ));
    }
}

fn client_hint_reasons(e: &Evidence, ua: Option<&str>, out: &mut Vec<Reason>) {
    let Some(claim) = ua.filter(|u| !u.is_empty()).map(Claim::of) else {
        return;
    };
    let header = |n| e.headers.as_ref().and_then(|h| h.get(n));
    let ua_data = e.signals.as_ref().and_then(|s| s.ua_data.as_ref());
    let brands: Option<String> = header("sec-ch-ua").map(str::to_owned).or_else(|| {
        ua_data.map(|d| {
            d.brands
                .iter()
                .map(|b| b.brand.as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
    });
    let platform = header("sec-ch-ua-platform")
        .map(|p| p.trim_matches('"').to_owned())
        .or_else(|| ua_data.and_then(|d| d.platform.clone()));
    let mobile = header("sec-ch-ua-mobile")
        .map(|m| m.trim() == "?1")
        .or_else(|| ua_data.and_then(|d| d.mobile));
    let mut why = Vec::new();
    if let Some(b) = brands.as_deref().filter(|b| !b.is_empty()) {
        let chromium = b.contains("Chromium") || b.contains("Google Chrome") || b.contains("Edge");
        match claim.browser {
            ua::Browser::Chrome | ua::Browser::Edge if !chromium => {
                why.push(format!(
                    "brands ({}) for a Chromium user agent",
                    visitor_text(b, 80)
                ));
            }
            ua::Browser::Firefox | ua::Browser::Safari if chromium => {
                why.push("Chromium brands for a non-Chromium user agent".to_owned());
            }
            _ => {}
        }
    }
    if let (Some(p), Some(claimed)) = (platform.as_deref(), claim.platform)
        && !p.is_empty()
        && !p.eq_ignore_ascii_case(claimed)
        && !(claimed == "Linux" && p.eq_ignore_ascii_case("Chrome OS"))
    {
        why.push(format!(
            "platform {} for a {claimed} user agent",
            visitor_text(p, 20)
        ));
    }
    if let Some(m) = mobile
        && m != claim.mobile
        && claim.platform != Some("iOS")
    {
        why.push(format!(
            "mobile {m} for a {} user agent",
            if claim.mobile { "mobile" } else { "desktop" }
        ));
    }
    let high = e.signals.as_ref().and_then(|s| s.high_entropy.as_ref());
    if let Some(h) = high {
        let empty = |v: &Option<String>| v.as_deref().is_none_or(str::is_empty);
        if empty(&h.platform_version)
            && empty(&h.architecture)
            && empty(&h.bitness)
            && empty(&h.ua_full_version)
            && h.full_version_list.is_empty()
        {
            why.push("the high-entropy client hints are all empty".to_owned());
        }
    }
    // The engine's major version by its brands, against the one the user agent claims.
    let brand_major = header("sec-ch-ua")
        .and_then(header_brand_major)
        .or_else(|| {
            ua_data.and_then(|d| {
                brand_major(
                    d.brands
                        .iter()
                        .map(|b| (b.brand.as_str(), b.version.as_str())),
                )
            })
        });
    if let (Some(b), Some(u)) = (brand_major, chromium_major(ua.unwrap_or_default()))
        && b != u
    {
        why.push(format!("brands say version {b}, the user agent {u}"));
    }
    if let (Some(d), Some(h)) = (ua_data, high)
        && !d.brands.is_empty()
        && !h.full_version_list.is_empty()
    {
        if brand_names(&d.brands) != brand_names(&h.full_version_list) {
            why.push("the brands and the full version list name different brands".to_owned());
        }
    }
    if !why.is_empty() {
        out.push(Reason::new(Code::ClientHintsMismatch, why.join("; ")));
    }
}

fn brand_names(list: &[evidence::Brand]) -> Vec<&str> {
    let mut v: Vec<&str> = list.iter().map(|b| b.brand.as_str()).collect();
    v.sort_unstable();
    v
}

/// The major version a Chromium user agent claims (`Chrome/131.0...`, `Edg/131...`).
fn chromium_major(ua: &str) -> Option<u32> {
    ["Edg/", "Chrome/", "CriOS/", "Chromium/"]
        .iter()
        .find_map(|t| ua.split_once(t))
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|d| d.parse().ok())
}

/// The major version of the Chromium brands in a list of (brand, version).
fn brand_major<'a>(brands: impl Iterator<Item = (&'a str, &'a str)>) -> Option<u32> {
    brands
        .filter(|(b, _)| matches!(*b, "Chromium" | "Google Chrome" | "Microsoft Edge"))
        .find_map(|(_, v)| v.split('.').next()?.parse().ok())
}

/// `Sec-CH-UA`'s brands: `"Chromium";v="131", "Not_A Brand";v="24"`.
fn header_brand_major(v: &str) -> Option<u32> {
    let pairs: Vec<(&str, &str)> = v
        .split(',')
        .filter_map(|item| {
            let (brand, version) = item.split_once(";v=")?;
            Some((
                brand.trim().trim_matches('"'),
                version.trim().trim_matches('"'),
            ))
        })
        .collect();
    brand_major(pairs.into_iter())
}

fn proxy_header_reasons(e: &Evidence, out: &mut Vec<Reason>) {
    let Some(h) = e.headers.as_ref() else {
        return;
    };
    let present: Vec<&str> = ["via", "forwarded", "x-forwarded-for"]
        .into_iter()
        .filter(|n| h.get(n).is_some_and(|v| !v.trim().is_empty()))
        .collect();
    if !present.is_empty() {
        out.push(Reason::new(
            Code::ProxyHeaders,
            format!("proxy headers: {}", present.join(", ")),
        ));
    }
}

/// Four decimals: finer digits mean nothing, and they make answers hard to read.
fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
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
    use std::sync::LazyLock;

    use super::*;

    /// The repository's data, loaded once for these tests (read-only).
    static ENGINE: LazyLock<Engine> = LazyLock::new(|| {
        Engine::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("data")).expect("data/ loads")
    });

    const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
    /// A German residential address (Deutsche Telekom), in no operator range.
    const HOME_DE: &str = "84.128.0.1";

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
        // Every code of the table has a case.
        for (code, ..) in reasons::TABLE {
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
                e.signals.get_or_insert_default().automation_globals =
                    Some(vec!["callPhantom".into()])
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
}
