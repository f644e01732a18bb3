//! Device keys: what links one browser's sessions within one project, without tracking a person
//! across sites. The key is the HMAC-SHA256, under the project's own `apiKeyPrivate`, of the
//! agent's stable signals (those a browser keeps from one visit to the next: its user agent,
//! platform, WebGL strings, screen, cores, touch points, time zone, languages and engine
//! fingerprint; not its window, which a person resizes). The signals are never stored raw by
//! this, and two projects never share a key for the same browser.

use std::fmt::Write as _;

use hmac::{Hmac, Mac};
use serde::{Serialize, Serializer};
use sha2::Sha256;

use vigil_detect::Signals;

/// A project's key for one browser: `dev_` and 20 hex digits (80 bits).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeviceKey(String);

/// Fewer stable signals than this (the user agent among them) make no key: a near-empty visit
/// would link every such visit of the project.
const MIN_SIGNALS: usize = 6;

impl DeviceKey {
    /// The key of the browser behind `s` in the project whose private key is `project_secret`;
    /// None when the visit carries too few stable signals to tell browsers apart.
    pub fn of(project_secret: &str, s: &Signals) -> Option<Self> {
        let user_agent = s.user_agent.as_deref().filter(|u| !u.is_empty())?;
        let ua_platform = s.ua_data.as_ref().and_then(|d| d.platform.clone());
        let screen = match (s.screen_width, s.screen_height) {
            (Some(w), Some(h)) => Some(format!("{w}x{h}")),
            _ => None,
        };
        let fields: [(&str, Option<String>); 11] = [
            ("ua", Some(user_agent.to_owned())),
            ("platform", ua_platform),
            ("glVendor", s.webgl_vendor.clone()),
            ("glRenderer", s.webgl_renderer.clone()),
            ("screen", screen),
            ("cores", s.hardware_concurrency.map(|n| n.to_string())),
            ("touch", s.max_touch_points.map(|n| n.to_string())),
            ("zone", s.time_zone.clone()),
            ("languages", s.languages.as_ref().map(|l| l.join(","))),
            ("eval", s.eval_length.map(|n| n.to_string())),
            ("productSub", s.product_sub.clone()),
        ];
        if fields.iter().filter(|(_, v)| v.is_some()).count() < MIN_SIGNALS {
            return None;
        }
        // HMAC takes keys of any length: new_from_slice cannot fail for it.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(project_secret.as_bytes())
            .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
        // A prefix of its own keeps these messages apart from session tokens' under the same key.
        mac.update(b"device-key/v1");
        for (name, value) in &fields {
            // Name, length and value: no two sets of signals make the same message.
            let value = value.as_deref().unwrap_or("");
            mac.update(format!("\n{name}={}:{value}", value.len()).as_bytes());
        }
        let digest = mac.finalize().into_bytes();
        let mut key = String::with_capacity(24);
        key.push_str("dev_");
        for b in &digest[..10] {
            let _ = write!(key, "{b:02x}");
        }
        Some(Self(key))
    }

    /// A key as a client names it (a route's path): `dev_` and 20 lower-case hex digits.
    pub fn parse(s: &str) -> Result<Self, super::ids::IdError> {
        let ok = s.strip_prefix("dev_").is_some_and(|h| {
            h.len() == 20 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(super::ids::IdError::Malformed(
                "`dev_` and 20 lower-case hex digits",
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for DeviceKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signals(extra: serde_json::Value) -> Signals {
        let mut v = serde_json::json!({
            "userAgent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
            "uaData": {"brands": [], "mobile": false, "platform": "Linux"},
            "webglVendor": "Google Inc. (Google)", "webglRenderer": "ANGLE (SwiftShader)",
            "screenWidth": 1280, "screenHeight": 900, "hardwareConcurrency": 2,
            "maxTouchPoints": 0, "timeZone": "Etc/UTC", "languages": ["en-US"],
            "evalLength": 33, "productSub": "20030107",
            "outerWidth": 1280, "innerWidth": 1280
        });
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn one_browser_one_key_per_project() {
        let a = DeviceKey::of("sk_one", &signals(serde_json::json!({}))).unwrap();
        assert!(
            a.as_str().starts_with("dev_") && a.as_str().len() == 24,
            "{a:?}"
        );
        // The same browser in a resized window, a new session: the same key.
        let resized = signals(serde_json::json!({"outerWidth": 900, "innerWidth": 880}));
        assert_eq!(DeviceKey::of("sk_one", &resized), Some(a.clone()));
        // Another project: another key for the same browser.
        assert_ne!(
            DeviceKey::of("sk_two", &signals(serde_json::json!({}))),
            Some(a.clone())
        );
        // Another browser (another user agent, renderer or zone): another key.
        for other in [
            serde_json::json!({"userAgent": "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0"}),
            serde_json::json!({"webglRenderer": "llvmpipe"}),
            serde_json::json!({"timeZone": "Europe/Berlin"}),
            serde_json::json!({"languages": ["en-US", "de"]}),
        ] {
            assert_ne!(
                DeviceKey::of("sk_one", &signals(other.clone())),
                Some(a.clone()),
                "{other}"
            );
        }
    }

    #[test]
    fn too_few_signals_make_no_key() {
        let bare: Signals = serde_json::from_value(serde_json::json!({
            "userAgent": "Mozilla/5.0", "timeZone": "Etc/UTC", "languages": ["en"]
        }))
        .unwrap();
        assert_eq!(DeviceKey::of("sk_one", &bare), None);
        let no_ua = signals(serde_json::json!({"userAgent": null}));
        assert_eq!(DeviceKey::of("sk_one", &no_ua), None);
    }
}
