//! Webhook registration rules: the type, the target URL and what may be created.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use url::{Host, Url};

use super::ids::WebhookId;
use super::score::Score;
use super::time::Timestamp;
use vigil_detect::net;

/// Longest webhook URL accepted.
pub const MAX_URL_LEN: usize = 2048;
/// Most webhooks one project may have.
pub const MAX_WEBHOOKS_PER_PROJECT: usize = 10;
/// The webhook threshold when the deployment sets none (`VIGIL_WEBHOOK_THRESHOLD`): the service
/// flags visits by it and the dispatcher delivers crossings of it.
pub const DEFAULT_THRESHOLD: Score = Score::HALF;

/// Whether `score` is at the webhook threshold: what flags a visit, and what a session's score
/// crosses into.
pub fn reaches(score: Score, threshold: Score) -> bool {
    score >= threshold
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WebhookType {
    #[serde(rename = "proxy_vpn_detect")]
    ProxyVpnDetect,
    /// A session's `scoreBot` crossing the threshold, allowed agents' events left out.
    #[serde(rename = "bot_detect")]
    BotDetect,
}

impl WebhookType {
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookType::ProxyVpnDetect => "proxy_vpn_detect",
            WebhookType::BotDetect => "bot_detect",
        }
    }
}

/// Which targets are acceptable. Production allows only public https hosts; development may add
/// plain-http loopback receivers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UrlPolicy {
    pub allow_loopback: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("url must be at most {MAX_URL_LEN} characters")]
    TooLong,
    #[error("url must be an absolute URL")]
    Invalid,
    #[error("url must use https")]
    NotHttps,
    #[error("url must not contain a user name or password")]
    Credentials,
    #[error("url must point to a public host")]
    ForbiddenHost,
    #[error("url must use port 443 or a port from 1024 up")]
    Port,
}

/// A validated webhook target. Kept in the URL standard's normalised form, which is what is stored,
/// listed and compared for duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WebhookUrl(Url);

impl WebhookUrl {
    pub fn parse(s: &str, policy: UrlPolicy) -> Result<Self, UrlError> {
        if s.len() > MAX_URL_LEN {
            return Err(UrlError::TooLong);
        }
        let url = Url::parse(s).map_err(|_| UrlError::Invalid)?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(UrlError::Credentials);
        }
        let loopback = match url.host() {
            None => return Err(UrlError::Invalid),
            Some(Host::Domain(d)) => {
                let d = d.trim_end_matches('.');
                let is_local = d.eq_ignore_ascii_case("localhost")
                    || d.to_ascii_lowercase().ends_with(".localhost");
                if is_local && !policy.allow_loopback {
                    return Err(UrlError::ForbiddenHost);
                }
                is_local
            }
            Some(Host::Ipv4(v4)) => check_ip(IpAddr::V4(v4), policy)?,
            Some(Host::Ipv6(v6)) => check_ip(IpAddr::V6(v6), policy)?,
        };
        match url.scheme() {
            "https" => {}
            "http" if loopback && policy.allow_loopback => {}
            _ => return Err(UrlError::NotHttps),
        }
        // Well-known ports other than https's are other services (ssh, smtp, databases): never a
        // webhook receiver, and a way to probe them.
        if url
            .port_or_known_default()
            .is_none_or(|p| p != 443 && p < 1024)
        {
            return Err(UrlError::Port);
        }
        if url.as_str().len() > MAX_URL_LEN {
            return Err(UrlError::TooLong);
        }
        Ok(Self(url))
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    pub fn url(&self) -> &Url {
        &self.0
    }
}

/// Returns whether the address is a (permitted) loopback address, or the refusal.
fn check_ip(ip: IpAddr, policy: UrlPolicy) -> Result<bool, UrlError> {
    if policy.allow_loopback && net::is_loopback(ip) {
        return Ok(true);
    }
    if net::is_blocked(ip) {
        return Err(UrlError::ForbiddenHost);
    }
    Ok(false)
}

impl fmt::Display for WebhookUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for WebhookUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Stored URLs were validated when created, possibly by a development server that allowed loopback
/// targets; delivery re-checks every address anyway.
impl<'de> Deserialize<'de> for WebhookUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        WebhookUrl::parse(
            &s,
            UrlPolicy {
                allow_loopback: true,
            },
        )
        .map_err(serde::de::Error::custom)
    }
}

/// A registered webhook.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub id: WebhookId,
    #[serde(rename = "type")]
    pub kind: WebhookType,
    pub url: WebhookUrl,
    pub created_at: Timestamp,
    /// What its deliveries are signed with; never in a listing (the secret route reads it).
    #[serde(skip)]
    pub secrets: Secrets,
}

/// A webhook's signing secret in the Standard Webhooks format: `whsec_` and the base64 of 24
/// random bytes. The HMAC key is the decoded bytes, as the official libraries read the string.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct WebhookSecret(String);

const SECRET_PREFIX: &str = "whsec_";
const SECRET_BYTES: usize = 24;

impl WebhookSecret {
    pub fn generate() -> Self {
        use base64::Engine as _;
        use rand::RngCore as _;
        let mut bytes = [0u8; SECRET_BYTES];
        rand::rng().fill_bytes(&mut bytes);
        Self(format!(
            "{SECRET_PREFIX}{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        ))
    }

    /// The HMAC key: the bytes the base64 after `whsec_` encodes.
    pub fn key(&self) -> Vec<u8> {
        use base64::Engine as _;
        let b64 = self.0.strip_prefix(SECRET_PREFIX).unwrap_or(&self.0);
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap_or_default()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for WebhookSecret {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        use base64::Engine as _;
        let ok = s.strip_prefix(SECRET_PREFIX).is_some_and(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b)
                .is_ok_and(|k| k.len() == SECRET_BYTES)
        });
        if ok {
            Ok(Self(s))
        } else {
            Err("a webhook secret is `whsec_` and the base64 of 24 bytes".into())
        }
    }
}

impl From<WebhookSecret> for String {
    fn from(s: WebhookSecret) -> String {
        s.0
    }
}

impl fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never in logs.
        f.write_str("WebhookSecret(..)")
    }
}

/// A webhook's secrets: none for a webhook made before secrets per webhook (signed with its
/// project's `apiKeyPrivate` alone); after a rotation, the previous one until `previous_until`;
/// after rotations in quick succession, the ones before it too, each until its own overlap ends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    pub current: Option<WebhookSecret>,
    pub previous: Option<WebhookSecret>,
    pub previous_until: Option<Timestamp>,
    /// Secrets replaced before `previous` whose overlaps had not ended at the rotation, newest
    /// first, at most [`MAX_EARLIER_SECRETS`].
    pub earlier: Vec<EarlierSecret>,
}

/// A secret that signs beside the current one until `until`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EarlierSecret {
    pub secret: WebhookSecret,
    pub until: Timestamp,
}

/// Secrets kept beyond `previous`: three rotations within one overlap keep four secrets signing;
/// a fourth ends the oldest's overlap early (each delivery carries one signature per secret).
pub const MAX_EARLIER_SECRETS: usize = 2;

impl Secrets {
    pub fn new() -> Self {
        Self {
            current: Some(WebhookSecret::generate()),
            ..Self::default()
        }
    }

    /// After a rotation at `now`: a new secret, the current one kept until `now + overlap`, and
    /// the previous ones still in their overlaps kept until theirs end: a second rotation soon
    /// after the first does not cut short the overlap the first promised.
    pub fn rotated(&self, now: Timestamp, overlap: std::time::Duration) -> Self {
        let live = |until: &Timestamp| now < *until;
        let mut earlier: Vec<EarlierSecret> = match (&self.previous, self.previous_until) {
            (Some(secret), Some(until)) if live(&until) => vec![EarlierSecret {
                secret: secret.clone(),
                until,
            }],
            _ => Vec::new(),
        };
        earlier.extend(self.earlier.iter().filter(|e| live(&e.until)).cloned());
        earlier.truncate(MAX_EARLIER_SECRETS);
        Self {
            current: Some(WebhookSecret::generate()),
            previous: self.current.clone(),
            previous_until: self.current.as_ref().map(|_| now.plus(overlap)),
            earlier,
        }
    }

    /// The HMAC keys of a delivery made at `now`, one `v1,` signature each: the current secret,
    /// the previous one during its overlap, and the project's `apiKeyPrivate` (UTF-8) for a
    /// webhook without a secret, or while the project keeps the legacy signature.
    pub fn keys(&self, now: Timestamp, api_key_private: &str, legacy: bool) -> Vec<Vec<u8>> {
        let mut keys = Vec::with_capacity(3);
        if let Some(c) = &self.current {
            keys.push(c.key());
        }
        if let (Some(p), Some(until)) = (&self.previous, self.previous_until)
            && now < until
        {
            keys.push(p.key());
        }
        keys.extend(
            self.earlier
                .iter()
                .filter(|e| now < e.until)
                .map(|e| e.secret.key()),
        );
        if self.current.is_none() || legacy {
            keys.push(api_key_private.as_bytes().to_vec());
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: UrlPolicy = UrlPolicy {
        allow_loopback: false,
    };
    const DEV: UrlPolicy = UrlPolicy {
        allow_loopback: true,
    };

    #[test]
    fn secrets_sign_with_the_current_the_previous_in_its_overlap_and_the_legacy_key() {
        let t0: Timestamp = "2026-11-24T10:00:00.000Z".parse().unwrap();
        let day = std::time::Duration::from_secs(86_400);
        let first = Secrets::new();
        let key = |s: &Secrets| s.current.as_ref().unwrap().key();
        assert_eq!(key(&first).len(), 24);
        let text = first.current.as_ref().unwrap().as_str();
        assert!(text.starts_with("whsec_") && text.len() == 38, "{text}");
        assert_eq!(
            WebhookSecret::try_from(text.to_owned()).unwrap().key(),
            key(&first)
        );
        assert!(WebhookSecret::try_from("whsec_short".to_owned()).is_err());
        assert_eq!(format!("{:?}", first.current), "Some(WebhookSecret(..))");
        // Legacy on: the secret and the project's key; off: the secret alone.
        assert_eq!(
            first.keys(t0, "sk_1", true),
            vec![key(&first), b"sk_1".to_vec()]
        );
        assert_eq!(first.keys(t0, "sk_1", false), vec![key(&first)]);
        // A webhook without a secret is signed with the project's key whatever the setting.
        assert_eq!(
            Secrets::default().keys(t0, "sk_1", false),
            vec![b"sk_1".to_vec()]
        );
        // Rotated: both during the overlap, the new alone from its end.
        let second = first.rotated(t0, day);
        assert_eq!(
            second.keys(t0.plus(day / 2), "sk_1", false),
            vec![key(&second), key(&first)]
        );
        assert_eq!(second.keys(t0.plus(day), "sk_1", false), vec![key(&second)]);
        // A first rotation of a webhook without a secret has nothing to keep.
        let given = Secrets::default().rotated(t0, day);
        assert_eq!((given.previous, given.previous_until), (None, None));
    }

    /// Issue 52: a second rotation an hour after the first keeps the first secret signing until
    /// the end of the overlap the first rotation promised; a rotation after every overlap has
    /// ended keeps only the one it replaces.
    #[test]
    fn quick_rotations_keep_every_promised_overlap() {
        let t0: Timestamp = "2026-11-24T10:00:00.000Z".parse().unwrap();
        let (hour, day) = (
            std::time::Duration::from_secs(3_600),
            std::time::Duration::from_secs(86_400),
        );
        let key = |s: &Secrets| s.current.as_ref().unwrap().key();
        let s0 = Secrets::new();
        let s1 = s0.rotated(t0, day);
        let s2 = s1.rotated(t0.plus(hour), day);
        assert_eq!(
            s2.keys(t0.plus(hour * 2), "sk", false),
            vec![key(&s2), key(&s1), key(&s0)]
        );
        // The first secret's overlap ends when the first rotation said; the second's later.
        assert_eq!(s2.keys(t0.plus(day), "sk", false), vec![key(&s2), key(&s1)]);
        assert_eq!(s2.keys(t0.plus(day + hour), "sk", false), vec![key(&s2)]);
        // Long after: nothing earlier is carried.
        let s3 = s2.rotated(t0.plus(day * 3), day);
        assert!(s3.earlier.is_empty());
        // Four quick rotations keep four secrets; the fifth signer is the bound's.
        let mut s = Secrets::new();
        for i in 0..4 {
            s = s.rotated(t0.plus(hour * i), day);
        }
        assert_eq!(s.earlier.len(), MAX_EARLIER_SECRETS);
        assert_eq!(s.keys(t0.plus(hour * 4), "sk", false).len(), 4);
    }

    #[test]
    fn accepts_public_https() {
        let u = WebhookUrl::parse("https://Hooks.Example.com/vigil?x=1", STRICT).unwrap();
        assert_eq!(u.as_str(), "https://hooks.example.com/vigil?x=1");
        assert!(WebhookUrl::parse("https://8.8.8.8/", STRICT).is_ok());
        assert!(WebhookUrl::parse("https://[2606:4700::1111]/", STRICT).is_ok());
    }

    #[test]
    fn rejects_non_https_and_relative() {
        assert_eq!(
            WebhookUrl::parse("http://example.com/", STRICT),
            Err(UrlError::NotHttps)
        );
        assert_eq!(
            WebhookUrl::parse("ftp://example.com/", STRICT),
            Err(UrlError::NotHttps)
        );
        assert_eq!(
            WebhookUrl::parse("/relative", STRICT),
            Err(UrlError::Invalid)
        );
        assert_eq!(
            WebhookUrl::parse("not a url", STRICT),
            Err(UrlError::Invalid)
        );
        assert_eq!(
            WebhookUrl::parse("mailto:a@example.com", STRICT),
            Err(UrlError::Invalid)
        );
    }

    #[test]
    fn only_port_443_or_unprivileged_ports() {
        for ok in [
            "https://hooks.example.com/",
            "https://hooks.example.com:443/",
            "https://hooks.example.com:1024/",
            "https://hooks.example.com:8443/x",
            "https://hooks.example.com:65535/",
        ] {
            assert!(WebhookUrl::parse(ok, STRICT).is_ok(), "{ok}");
        }
        for bad in [
            "https://hooks.example.com:22/",
            "https://hooks.example.com:80/",
            "https://hooks.example.com:1/",
            "https://hooks.example.com:1023/",
        ] {
            assert_eq!(WebhookUrl::parse(bad, STRICT), Err(UrlError::Port), "{bad}");
        }
        assert_eq!(
            WebhookUrl::parse("http://127.0.0.1/", DEV),
            Err(UrlError::Port)
        );
        assert!(WebhookUrl::parse("http://127.0.0.1:8080/", DEV).is_ok());
    }

    #[test]
    fn rejects_credentials_and_length() {
        assert_eq!(
            WebhookUrl::parse("https://u:p@example.com/", STRICT),
            Err(UrlError::Credentials)
        );
        assert_eq!(
            WebhookUrl::parse("https://u@example.com/", STRICT),
            Err(UrlError::Credentials)
        );
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(WebhookUrl::parse(&long, STRICT), Err(UrlError::TooLong));
    }

    #[test]
    fn rejects_internal_hosts_in_every_spelling() {
        for s in [
            "https://localhost/",
            "https://LOCALHOST./",
            "https://api.localhost/",
            "https://127.0.0.1/",
            "https://2130706433/",
            "https://0x7f000001/",
            "https://0177.0.0.1/",
            "https://0x7f.1/",
            "https://127.1/",
            "https://10.0.0.1/",
            "https://012.0.0.1/",
            "https://192.168.0.1/",
            "https://169.254.169.254/latest",
            "https://100.64.0.1/",
            "https://0.0.0.0/",
            "https://[::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://[::ffff:a00:1]/",
            "https://[fe80::1]/",
            "https://[fd00::1]/",
            "https://[64:ff9b::a00:1]/",
            "https://[64:ff9b:1::a00:1]/",
            "https://[::ffff:0:7f00:1]/",
            "https://[::ffff:0:a00:1]/",
            "https://[::a9fe:a9fe]/",
            "https://224.0.0.1/",
            "https://[ff02::1]/",
        ] {
            assert_eq!(
                WebhookUrl::parse(s, STRICT),
                Err(UrlError::ForbiddenHost),
                "{s}"
            );
        }
    }

    #[test]
    fn development_policy_allows_loopback_http_only() {
        assert!(WebhookUrl::parse("http://127.0.0.1:9000/hook", DEV).is_ok());
        assert!(WebhookUrl::parse("http://localhost:9000/hook", DEV).is_ok());
        assert!(WebhookUrl::parse("http://[::1]:9000/hook", DEV).is_ok());
        assert_eq!(
            WebhookUrl::parse("http://example.com/", DEV),
            Err(UrlError::NotHttps)
        );
        assert_eq!(
            WebhookUrl::parse("https://10.0.0.1/", DEV),
            Err(UrlError::ForbiddenHost)
        );
    }

    #[test]
    fn webhook_type_wire_name() {
        assert_eq!(
            serde_json::to_string(&WebhookType::ProxyVpnDetect).unwrap(),
            "\"proxy_vpn_detect\""
        );
        assert_eq!(
            serde_json::from_str::<WebhookType>("\"bot_detect\"").unwrap(),
            WebhookType::BotDetect
        );
        assert!(serde_json::from_str::<WebhookType>("\"bot\"").is_err());
    }

    proptest::proptest! {
        // Accepted URLs are stored normalised: parsing the stored form gives the same URL.
        #[test]
        fn any_text_is_a_url_or_a_refusal(s in "(https?://)?[a-z0-9.:/@%\\[\\]-]{0,60}") {
            for policy in [UrlPolicy::default(), UrlPolicy { allow_loopback: true }] {
                if let Ok(url) = WebhookUrl::parse(&s, policy) {
                    proptest::prop_assert_eq!(WebhookUrl::parse(url.as_str(), policy), Ok(url.clone()));
                }
            }
        }

        #[test]
        fn arbitrary_unicode_never_panics(s in ".{0,120}") {
            let _ = WebhookUrl::parse(&s, UrlPolicy::default());
        }
    }
}
