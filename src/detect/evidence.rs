//! What the engine is told about one visit. Every part is optional: what is missing is never
//! evidence. Unknown members are ignored here (a browser agent may be newer than the server);
//! the routes that accept evidence decide about unknown top-level members themselves.

use std::collections::HashMap;
use std::net::IpAddr;

use serde::Deserialize;

/// One visit: the request side (address, user agent, headers) and the browser side (signals).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub ip_address: Option<IpAddr>,
    pub user_agent: Option<String>,
    /// Request headers; names are matched case-insensitively.
    pub headers: Option<Headers>,
    pub signals: Option<Signals>,
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
    pub ua_data: Option<UaData>,
    pub languages: Option<Vec<String>>,
    /// IANA zone name, e.g. `Europe/Berlin`.
    pub time_zone: Option<String>,
    /// `Date.getTimezoneOffset()`: minutes, positive west of UTC.
    pub timezone_offset: Option<i32>,
    /// `navigator.plugins.length`.
    pub plugins: Option<u32>,
    pub outer_width: Option<f64>,
    pub outer_height: Option<f64>,
    pub inner_width: Option<f64>,
    pub inner_height: Option<f64>,
    pub webgl_vendor: Option<String>,
    pub webgl_renderer: Option<String>,
    /// `eval.toString().length`: 33 in Blink and WebKit, 37 in Gecko.
    pub eval_length: Option<u32>,
    pub product_sub: Option<String>,
    /// Names of automation globals found in the page.
    pub automation_globals: Option<Vec<String>>,
    /// Addresses in the browser's WebRTC candidates.
    pub webrtc_ips: Option<Vec<String>>,
    pub hardware_concurrency: Option<u32>,
    pub max_touch_points: Option<u32>,
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
    fn wrong_types_are_errors() {
        for bad in [
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
