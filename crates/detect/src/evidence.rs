//! What the engine is told about one visit. Every part is optional: what is missing is never
//! evidence. Unknown members are ignored here (a browser agent may be newer than the server);
//! the routes that accept evidence decide about unknown top-level members themselves.

use std::collections::HashMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::de::{integral, object};

/// One visit: the request side (address, user agent, headers) and the browser side (signals).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub ip_address: Option<IpAddr>,
    pub user_agent: Option<String>,
    /// Request headers; names are matched case-insensitively.
    pub headers: Option<Headers>,
    pub signals: Option<Signals>,
    /// What the connection showed: TLS and HTTP fingerprints, from the server or an edge.
    pub wire: Option<crate::wire::Wire>,
    /// The request a signature covers: its method, authority and path (RFC 9421 derived
    /// components), as the customer's backend received it.
    pub request: Option<RequestLine>,
}

/// The signed request's derived components, as the backend that received it saw them: RFC
/// 9421's `@method`, `@authority` and `@path`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestLine {
    pub method: Option<String>,
    /// Host and port as the client addressed them (`shop.example`, `shop.example:8443`).
    pub authority: Option<String>,
    /// The path, without the query.
    pub path: Option<String>,
}

/// Request headers with lower-cased names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Headers(HashMap<String, String>);

impl Headers {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    pub fn from_pairs<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Self {
        Self(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'de> Deserialize<'de> for Headers {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = HashMap::<String, String>::deserialize(d)?;
        Ok(Self::from_pairs(map))
    }
}

/// What the browser agent reads in the page (camelCase, as it sends them).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Signals {
    pub webdriver: Option<bool>,
    /// `navigator.userAgent`, as JavaScript sees it.
    pub user_agent: Option<String>,
    #[serde(default, deserialize_with = "object")]
    pub ua_data: Option<UaData>,
    pub languages: Option<Vec<String>>,
    /// IANA zone name, e.g. `Europe/Berlin`.
    pub time_zone: Option<String>,
    /// `Date.getTimezoneOffset()`: minutes, positive west of UTC.
    #[serde(default, deserialize_with = "integral")]
    pub timezone_offset: Option<i32>,
    /// `navigator.plugins.length`.
    #[serde(default, deserialize_with = "integral")]
    pub plugins: Option<u32>,
    pub outer_width: Option<f64>,
    pub outer_height: Option<f64>,
    pub inner_width: Option<f64>,
    pub inner_height: Option<f64>,
    /// `screen.width` and `screen.height`.
    pub screen_width: Option<f64>,
    pub screen_height: Option<f64>,
    pub webgl_vendor: Option<String>,
    pub webgl_renderer: Option<String>,
    /// `eval.toString().length`: 33 in Blink and WebKit, 37 in Gecko.
    #[serde(default, deserialize_with = "integral")]
    pub eval_length: Option<u32>,
    pub product_sub: Option<String>,
    /// Names of automation globals found in the page.
    pub automation_globals: Option<Vec<String>>,
    /// Addresses in the browser's WebRTC candidates.
    pub webrtc_ips: Option<Vec<String>>,
    #[serde(default, deserialize_with = "integral")]
    pub hardware_concurrency: Option<u32>,
    #[serde(default, deserialize_with = "integral")]
    pub max_touch_points: Option<u32>,
    /// A DevTools Protocol client formatted the agent's console probe.
    pub cdp: Option<bool>,
    /// Drivers' page-world bindings, leftovers and injected-evaluation stack frames.
    pub framework_markers: Option<Vec<String>>,
    /// How `navigator.webdriver` departs from the engine's own: `missing`, `own`, `getter`,
    /// `iframe`.
    pub webdriver_tamper: Option<Vec<String>>,
    /// Fields a dedicated Worker reads differently from the window.
    pub context_mismatch: Option<Vec<String>>,
    /// Natives that are not what the engine ships (`Name.member:why`).
    pub tampered_functions: Option<Vec<String>>,
    /// `navigator.userAgentData.getHighEntropyValues(...)`.
    #[serde(default, deserialize_with = "object")]
    pub high_entropy: Option<HighEntropy>,
    /// The page's first mouse and pointer events.
    #[serde(default, deserialize_with = "object")]
    pub input: Option<Input>,
    /// Input between load and a meaningful action (`Vigil.action`), as counts.
    #[serde(default, deserialize_with = "object")]
    pub activity: Option<Activity>,
    /// How this page was reached, with the agent's summary of the page before it in the tab.
    #[serde(default, deserialize_with = "object")]
    pub navigation: Option<Navigation>,
}

/// How a page was reached (sent with its load's collect, never with an action's): the browser's
/// own navigation facts and, from `sessionStorage`, what the visitor did on the session's page
/// before it in the same tab. Judged across the session's pages (`crate::path`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Navigation {
    /// `PerformanceNavigationTiming.type`: `navigate`, `reload`, `back_forward`, `prerender`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// `document.referrer` against the page: `none`, `same-site` or `cross-site`.
    pub referrer: Option<String>,
    /// Milliseconds from the page before's last input to this page's navigation start.
    #[serde(default, deserialize_with = "integral")]
    pub since_input_ms: Option<i64>,
    /// The session's page before this one in the tab, as its agent summarised it; absent when
    /// the tab holds none (a first page, a new tab, storage cleared or blocked).
    #[serde(default, deserialize_with = "object")]
    pub previous: Option<PageSummary>,
}

/// What a visitor did on a page, as counts (no keys, no positions): the action-time counts of
/// [`Activity`] over the whole page, and the page's other input and time.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageSummary {
    #[serde(flatten)]
    pub input: Activity,
    /// Trusted clicks (a screen reader's activation is a click with no press before it).
    #[serde(default, deserialize_with = "integral")]
    pub clicks: Option<u32>,
    /// Trusted wheel events.
    #[serde(default, deserialize_with = "integral")]
    pub wheels: Option<u32>,
    /// Trusted touches.
    #[serde(default, deserialize_with = "integral")]
    pub touches: Option<u32>,
    /// Scroll events: counted, never taken for input (a script's `scrollTo` fires them too).
    #[serde(default, deserialize_with = "integral")]
    pub scrolls: Option<u32>,
    /// How long the page was open, visible and focused.
    #[serde(default, deserialize_with = "integral")]
    pub dwell_ms: Option<u64>,
    #[serde(default, deserialize_with = "integral")]
    pub visible_ms: Option<u64>,
    #[serde(default, deserialize_with = "integral")]
    pub focus_ms: Option<u64>,
    /// How the page was left, where the agent saw it: `link` (a trusted click on a link),
    /// `script-link` (a link clicked by script), `form`, or `unknown`.
    pub left: Option<String>,
}

impl Activity {
    /// Intervals between keydowns, and how many were under 4 ms: from the agent's record of
    /// them (`kin.keyGaps`, agents since version 6), else from its counts.
    pub fn key_intervals(&self) -> (u32, u32) {
        match self.kin.as_ref().filter(|h| !h.key_gaps.is_empty()) {
            Some(h) => {
                let gaps = h.key_gaps.iter().take(32);
                let n = gaps.clone().count() as u32;
                (n, gaps.filter(|g| **g < 4.0).count() as u32)
            }
            None => (
                self.key_intervals.unwrap_or(0),
                self.fast_key_intervals.unwrap_or(0),
            ),
        }
    }
}

impl PageSummary {
    /// Whether the summary says the visitor did anything on the page: a press, a key, a wheel
    /// turn, a touch or a click from a device. Pointer moves alone are not counted: a resting
    /// mouse under a page that loads, and a driver's protocol moves, make them too.
    pub fn had_input(&self) -> bool {
        self.claim().any()
    }

    /// The input the summary claims, as [`crate::hand::Hand::backs`] checks it. A click counts
    /// as the press or key that made it: alone, it is backed by nothing.
    pub fn claim(&self) -> crate::hand::Claim {
        let n = |v: Option<u32>| v.unwrap_or(0);
        let presses = n(self.input.presses);
        let keys = n(self.input.keys);
        crate::hand::Claim {
            presses: if presses + keys == 0 {
                n(self.clicks)
            } else {
                presses
            },
            keys,
            wheels: n(self.wheels),
            touches: n(self.touches),
        }
    }

    /// Whether the page had input that a device's events back: the claim, checked against the
    /// agent's own record of the events (`kin`). A summary without that record (an agent before
    /// version 6, or a forger who dropped it) backs nothing.
    pub fn backed_input(&self) -> bool {
        let claim = self.claim();
        claim.any() && self.input.kin.as_ref().is_some_and(|h| h.backs(&claim))
    }

    /// Whether the summary claims input that its own record of events contradicts. A summary
    /// with no record at all (an agent before version 6, still cached in a browser) contradicts
    /// nothing: its page only counts as reached without input.
    pub fn contradicted(&self) -> bool {
        self.input.kin.is_some() && self.had_input() && !self.backed_input()
    }
}

/// What input looked like between load and an action: counts of the artefacts that
/// protocol-made input leaves and a device's never does.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Activity {
    /// The action's name (`checkout`, `submit`).
    pub action: Option<String>,
    #[serde(default, deserialize_with = "integral")]
    pub elapsed_ms: Option<u64>,
    #[serde(default, deserialize_with = "integral")]
    pub moves: Option<u32>,
    /// Trusted mouse presses.
    #[serde(default, deserialize_with = "integral")]
    pub presses: Option<u32>,
    #[serde(default, deserialize_with = "integral")]
    pub untrusted_presses: Option<u32>,
    /// Clicks dispatched by script (`element.click()`).
    #[serde(default, deserialize_with = "integral")]
    pub untrusted_clicks: Option<u32>,
    /// Mouse presses with buttons down and pressure 0 (a device reports 0.5 where it has none).
    #[serde(default, deserialize_with = "integral")]
    pub zero_pressure: Option<u32>,
    /// Trusted key presses.
    #[serde(default, deserialize_with = "integral")]
    pub keys: Option<u32>,
    #[serde(default, deserialize_with = "integral")]
    pub untrusted_keys: Option<u32>,
    /// Characters typed with no key down (keypress or text insertion without keydown).
    #[serde(default, deserialize_with = "integral")]
    pub chars_without_keydown: Option<u32>,
    /// Capital letters whose keydown had neither Shift nor Caps Lock.
    #[serde(default, deserialize_with = "integral")]
    pub capitals_without_shift: Option<u32>,
    /// Intervals between successive keydowns, and how many were under 4 ms.
    #[serde(default, deserialize_with = "integral")]
    pub key_intervals: Option<u32>,
    #[serde(default, deserialize_with = "integral")]
    pub fast_key_intervals: Option<u32>,
    /// Milliseconds from load to the first press or key; -1 for none.
    #[serde(default, deserialize_with = "integral")]
    pub first_input_ms: Option<i64>,
    /// The page's movements, presses, wheel and keys, as numbers (`crate::hand`); boxed, as
    /// most visits carry none and evidence is moved through deep futures.
    #[serde(default, deserialize_with = "object")]
    pub kin: Option<Box<crate::hand::Hand>>,
    /// Getters a humanizer patched and the cursor it drew, found when the page was summarised.
    pub foreign: Option<Vec<String>>,
}

/// High-entropy client hints, as the agent reads them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HighEntropy {
    pub platform_version: Option<String>,
    pub architecture: Option<String>,
    pub bitness: Option<String>,
    pub model: Option<String>,
    pub ua_full_version: Option<String>,
    #[serde(default)]
    pub full_version_list: Vec<Brand>,
}

/// Mouse and pointer events the agent saw before sending.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Input {
    #[serde(default, deserialize_with = "integral")]
    pub events: Option<u32>,
    /// Events whose `isTrusted` is false: dispatched by script.
    #[serde(default, deserialize_with = "integral")]
    pub untrusted: Option<u32>,
    /// Trusted events at equal screen and client coordinates.
    #[serde(default, deserialize_with = "integral")]
    pub screen_eq_client: Option<u32>,
    /// No browser chrome around the page (full screen, kiosk, resistFingerprinting).
    pub chromeless: Option<bool>,
}

/// `navigator.userAgentData`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct UaData {
    #[serde(default)]
    pub brands: Vec<Brand>,
    pub mobile: Option<bool>,
    pub platform: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Brand {
    pub brand: String,
    #[serde(default)]
    pub version: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_signals_are_ignored_and_headers_lower_cased() {
        let e: Evidence = serde_json::from_value(serde_json::json!({
            "ipAddress": "203.0.113.7",
            "headers": {"Accept-Language": "de-DE"},
            "signals": {"webdriver": true, "somethingNew": [1, 2]}
        }))
        .unwrap();
        assert_eq!(e.headers.unwrap().get("accept-language"), Some("de-DE"));
        assert_eq!(e.signals.unwrap().webdriver, Some(true));
    }

    #[test]
    fn object_members_are_objects_or_null() {
        let s: Signals = serde_json::from_value(serde_json::json!({
            "activity": null, "input": {"events": 2}, "navigation": {"type": "navigate", "previous": null}
        }))
        .unwrap();
        assert_eq!(s.activity, None);
        assert_eq!(s.input.unwrap().events, Some(2));
        assert_eq!(s.navigation.unwrap().kind.as_deref(), Some("navigate"));
    }

    #[test]
    fn integer_signals_may_be_written_as_whole_floats() {
        let s: Signals = serde_json::from_value(serde_json::json!({
            "plugins": 5.0, "evalLength": 33, "timezoneOffset": -60.0, "maxTouchPoints": null
        }))
        .unwrap();
        assert_eq!(
            (s.plugins, s.eval_length, s.timezone_offset),
            (Some(5), Some(33), Some(-60))
        );
        assert_eq!(s.max_touch_points, None);
        for bad in [
            serde_json::json!({"plugins": 5.5}),
            serde_json::json!({"plugins": -1}),
            serde_json::json!({"plugins": 1e20}),
            serde_json::json!({"timezoneOffset": "60"}),
        ] {
            assert!(
                serde_json::from_value::<Signals>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn wrong_types_are_errors() {
        for bad in [
            serde_json::json!({"signals": {"activity": [null, null]}}),
            serde_json::json!({"signals": {"input": [1, 2, 3]}}),
            serde_json::json!({"signals": {"navigation": {"previous": []}}}),
            serde_json::json!({"signals": {"uaData": "Linux"}}),
            serde_json::json!({"ipAddress": "not an ip"}),
            serde_json::json!({"signals": {"plugins": "five"}}),
            serde_json::json!({"headers": {"via": 1}}),
        ] {
            assert!(
                serde_json::from_value::<Evidence>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
