//! Evidence from the wire: the TLS ClientHello's JA4 fingerprint and the HTTP request's version
//! and header order, as the server (or an edge in front of it) saw them. A script can copy a
//! browser's user agent, headers and agent body, but not the TLS stack and HTTP client that
//! open its connection, so these are the signals a recorded body cannot borrow.
//!
//! The table of known fingerprints (`data/wire-fingerprints.tsv`) is data, made by
//! `scripts/wire_capture.py` from the clients on the build machine; this module reads it and
//! answers "whose TLS stack is this".

use std::collections::HashMap;

use serde::{Deserialize, Deserializer, Serialize};
use sha2::{Digest, Sha256};

use crate::error::DataError;

/// The most header names an order may list (a request with more is cut, not refused).
pub const MAX_HEADER_NAMES: usize = 64;

/// What the wire said of one request. Every part is optional; absent, it is no evidence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Wire {
    /// The ClientHello's JA4 fingerprint (`t13d1516h2_8daaf6152771_d8a2da3f94cd`).
    #[serde(default, deserialize_with = "ja4_text")]
    pub ja4: Option<String>,
    /// `1.0`, `1.1`, `2` or `3`.
    #[serde(default, deserialize_with = "http_version")]
    pub http_version: Option<String>,
    /// The request's header names in the order sent, lower-cased, pseudo-headers left out.
    #[serde(default, deserialize_with = "header_order")]
    pub header_order: Option<Vec<String>>,
    /// The connection's round trips and SYN ([`crate::transport`]).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::de::object"
    )]
    pub transport: Option<crate::transport::Transport>,
}

impl Wire {
    /// Vigil's own hash of the HTTP request's shape: version, how many headers, and the first 12
    /// hex digits of SHA-256 over the comma-joined names in order (`h2_15_3f0c9a1b2c4d`).
    pub fn http_fingerprint(&self) -> Option<String> {
        let names = self.header_order.as_ref()?;
        let version = match self.http_version.as_deref() {
            Some("2") => "h2",
            Some("3") => "h3",
            Some("1.0") => "h10",
            _ => "h11",
        };
        Some(format!(
            "{version}_{:02}_{}",
            names.len().min(99),
            sha256_12(&names.join(","))
        ))
    }
}

/// The first 12 hex digits of `text`'s SHA-256, as JA4's parts and Vigil's HTTP print use it;
/// twelve zeros for empty text (JA4's rule for an empty list).
pub fn sha256_12(text: &str) -> String {
    if text.is_empty() {
        return "000000000000".to_owned();
    }
    Sha256::digest(text.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A JA4 string's shape: `{t|q|d}{version}{d|i}{ciphers:2}{extensions:2}{alpn:2}_{12 hex}_{12 hex}`.
pub fn is_ja4(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |p: &[u8]| {
        p.iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    };
    b.len() == 36
        && matches!(b[0], b't' | b'q' | b'd')
        && b[1..3].iter().all(u8::is_ascii_alphanumeric)
        && matches!(b[3], b'd' | b'i')
        && b[4..8].iter().all(u8::is_ascii_digit)
        && b[8..10].iter().all(u8::is_ascii_alphanumeric)
        && b[10] == b'_'
        && hex(&b[11..23])
        && b[23] == b'_'
        && hex(&b[24..36])
}

fn ja4_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let Some(s) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    if is_ja4(&s) {
        Ok(Some(s))
    } else {
        Err(serde::de::Error::custom(
            "expected a JA4 fingerprint such as t13d1516h2_8daaf6152771_d8a2da3f94cd",
        ))
    }
}

/// `1.0`, `1.1`, `2` or `3`, also written `HTTP/2.0`, `2.0` or `3.0` (CloudFront's form).
pub fn normalise_http_version(s: &str) -> Option<&'static str> {
    let s = s.trim();
    let s = s
        .strip_prefix("HTTP/")
        .or_else(|| s.strip_prefix("http/"))
        .unwrap_or(s);
    match s {
        "1.0" => Some("1.0"),
        "1.1" => Some("1.1"),
        "2" | "2.0" => Some("2"),
        "3" | "3.0" => Some("3"),
        _ => None,
    }
}

/// The API's form, exactly: `1.0`, `1.1`, `2` or `3`.
fn http_version<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let Some(s) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    match s.as_str() {
        "1.0" | "1.1" | "2" | "3" => Ok(Some(s)),
        _ => Err(serde::de::Error::custom(
            "expected an HTTP version: 1.0, 1.1, 2 or 3",
        )),
    }
}

/// A header name as HTTP allows it (a token), lower-cased.
fn header_name(s: &str) -> Option<String> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    ok.then(|| s.to_ascii_lowercase())
}

/// Header names in order, lower-cased: at most [`MAX_HEADER_NAMES`]; None if one is not a
/// header name (pseudo-headers such as `:method` are not).
pub fn header_order_of<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<Vec<String>> {
    names
        .into_iter()
        .take(MAX_HEADER_NAMES)
        .map(header_name)
        .collect()
}

fn header_order<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let Some(names) = Option::<Vec<String>>::deserialize(d)? else {
        return Ok(None);
    };
    if names.len() > MAX_HEADER_NAMES {
        return Err(serde::de::Error::custom(format!(
            "expected at most {MAX_HEADER_NAMES} header names"
        )));
    }
    header_order_of(names.iter().map(String::as_str))
        .map(Some)
        .ok_or_else(|| serde::de::Error::custom("expected header names (HTTP tokens)"))
}

/// A JA4 fingerprint's three parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ja4<'a> {
    /// `t13d1516h2`: protocol, TLS version, SNI, cipher and extension counts, ALPN.
    pub a: &'a str,
    /// Hash of the sorted cipher suites.
    pub b: &'a str,
    /// Hash of the sorted extensions and the signature algorithms.
    pub c: &'a str,
}

impl<'a> Ja4<'a> {
    pub fn parse(s: &'a str) -> Option<Self> {
        if !is_ja4(s) {
            return None;
        }
        Some(Self {
            a: &s[..10],
            b: &s[11..23],
            c: &s[24..],
        })
    }

    /// The highest TLS version offered: `13`, `12`, ...
    pub fn tls_version(&self) -> &'a str {
        &self.a[1..3]
    }

    /// The first ALPN value's first and last characters (`h2`, `h1`), `00` for none.
    pub fn alpn(&self) -> &'a str {
        &self.a[8..10]
    }

    /// The `a` part without its SNI flag, which says how the client was pointed at the server
    /// (a name or an address), not what the client is.
    fn shape(&self) -> (&'a str, &'a str) {
        (&self.a[..3], &self.a[4..])
    }
}

/// The TLS stacks browsers ship: what a browser's user agent commits its ClientHello to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stack {
    /// BoringSSL in Chrome, Edge, Opera, Brave, Samsung Internet and every Chromium.
    Chromium,
    /// NSS in Firefox (and its ESR) on every platform but iOS.
    Firefox,
    /// Apple's network stack: Safari, and every browser on iOS.
    Apple,
    /// Not a browser: an HTTP library or command-line client.
    Library,
}

impl Stack {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "chromium" => Some(Self::Chromium),
            "firefox" => Some(Self::Firefox),
            "apple" => Some(Self::Apple),
            "library" => Some(Self::Library),
            _ => None,
        }
    }
}

/// One known client's fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub stack: Stack,
    /// The client as a reason names it: `Python requests (urllib3, OpenSSL 3.0)`.
    pub client: String,
}

/// The known fingerprints, indexed for a lookup per request.
#[derive(Debug, Default)]
pub struct Fingerprints {
    /// By the whole JA4 less its SNI flag.
    exact: HashMap<String, Known>,
    /// By the cipher hash alone, for a ClientHello whose extensions vary (resumption, padding):
    /// kept only where every known client with that cipher list is of one stack.
    ciphers: HashMap<String, Option<Known>>,
    /// The cipher hashes each browser stack is known to send.
    browser_ciphers: HashMap<String, Stack>,
}

fn exact_key(j: &Ja4<'_>) -> String {
    let (head, tail) = j.shape();
    format!("{head}{tail}_{}_{}", j.b, j.c)
}

impl Fingerprints {
    /// `data/wire-fingerprints.tsv`: `ja4 <TAB> stack <TAB> client`, `#` comments.
    pub fn parse(text: &str) -> Result<Self, DataError> {
        let mut table = Self::default();
        for (n, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let bad = || DataError::Format(format!("wire-fingerprints.tsv line {}", n + 1));
            let mut cols = line.split('\t');
            let (Some(ja4), Some(stack), Some(client)) = (cols.next(), cols.next(), cols.next())
            else {
                return Err(bad());
            };
            let j = Ja4::parse(ja4).ok_or_else(bad)?;
            let stack = Stack::parse(stack).ok_or_else(bad)?;
            let known = Known {
                stack,
                client: client.to_owned(),
            };
            if stack != Stack::Library {
                table.browser_ciphers.insert(j.b.to_owned(), stack);
            }
            table
                .ciphers
                .entry(j.b.to_owned())
                .and_modify(|k| {
                    if k.as_ref().is_some_and(|k| k.stack != stack) {
                        *k = None;
                    }
                })
                .or_insert_with(|| Some(known.clone()));
            table.exact.entry(exact_key(&j)).or_insert(known);
        }
        Ok(table)
    }

    /// The known client behind `j`: by the whole fingerprint, else by its cipher list.
    pub fn client(&self, j: &Ja4<'_>) -> Option<&Known> {
        self.exact
            .get(&exact_key(j))
            .or_else(|| self.ciphers.get(j.b).and_then(Option::as_ref))
    }

    /// Whether `stack` is known to send the cipher list of `j`.
    pub fn stack_sends(&self, stack: Stack, j: &Ja4<'_>) -> bool {
        self.browser_ciphers.get(j.b) == Some(&stack)
    }

    /// Whether the table knows any cipher list of `stack` (a judgement of "not this stack" needs
    /// the stack's own fingerprints).
    pub fn knows(&self, stack: Stack) -> bool {
        self.browser_ciphers.values().any(|s| *s == stack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME: &str = "t13d1516h2_8daaf6152771_d8a2da3f94cd";

    #[test]
    fn ja4_shape_is_checked_and_split() {
        let j = Ja4::parse(CHROME).unwrap();
        assert_eq!(
            (j.a, j.b, j.c),
            ("t13d1516h2", "8daaf6152771", "d8a2da3f94cd")
        );
        assert_eq!((j.tls_version(), j.alpn()), ("13", "h2"));
        for bad in [
            "",
            "t13d1516h2_8daaf6152771",
            "t13d1516h2_8daaf6152771_d8a2da3f94cZ",
            "x13d1516h2_8daaf6152771_d8a2da3f94cd",
            "t13x1516h2_8daaf6152771_d8a2da3f94cd",
            "t13d15a6h2_8daaf6152771_d8a2da3f94cd",
            "t13d1516h2-8daaf6152771_d8a2da3f94cd",
        ] {
            assert!(Ja4::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn wire_evidence_is_validated_and_normalised() {
        let w: Wire = serde_json::from_value(serde_json::json!({
            "ja4": CHROME,
            "httpVersion": "2",
            "headerOrder": ["Host", "User-Agent"]
        }))
        .unwrap();
        assert_eq!(w.ja4.as_deref(), Some(CHROME));
        assert_eq!(w.http_version.as_deref(), Some("2"));
        assert_eq!(
            w.header_order,
            Some(vec!["host".to_owned(), "user-agent".to_owned()])
        );
        assert!(w.http_fingerprint().unwrap().starts_with("h2_02_"));
        assert_eq!(normalise_http_version("HTTP/2.0"), Some("2"));
        assert_eq!(normalise_http_version("3.0"), Some("3"));
        for bad in [
            serde_json::json!({"ja4": "chrome"}),
            serde_json::json!({"ja4": "T13D1516H2_8DAAF6152771_D8A2DA3F94CD"}),
            serde_json::json!({"httpVersion": "4"}),
            serde_json::json!({"httpVersion": "2.0"}),
            serde_json::json!({"headerOrder": [":method"]}),
            serde_json::json!({"other": 1}),
            serde_json::json!({"headerOrder": ["bad name"]}),
            serde_json::json!({"headerOrder": vec!["a"; 65]}),
            serde_json::json!({"headerOrder": "host:user-agent"}),
        ] {
            assert!(
                serde_json::from_value::<Wire>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn lookups_ignore_the_sni_flag_and_fall_back_to_ciphers_only_when_unambiguous() {
        let t = Fingerprints::parse(
            "# test\n\
             t13d1516h2_8daaf6152771_d8a2da3f94cd\tchromium\tChromium\n\
             t13d3113h2_e8f1e7e78f70_b26ce05bbdd6\tlibrary\tcurl\n\
             t13d3112h2_e8f1e7e78f70_aaaaaaaaaaaa\tlibrary\tPython\n\
             t13d1715h2_5b57614c22b0_bbbbbbbbbbbb\tlibrary\tsome tool\n\
             t13d1715h2_5b57614c22b0_cccccccccccc\tfirefox\tFirefox\n",
        )
        .unwrap();
        let get = |s: &str| t.client(&Ja4::parse(s).unwrap()).map(|k| k.client.as_str());
        assert_eq!(
            get("t13i1516h2_8daaf6152771_d8a2da3f94cd"),
            Some("Chromium")
        );
        // Another extension set, the same ciphers: still Chromium.
        assert_eq!(
            get("t13d1617h2_8daaf6152771_0123456789ab"),
            Some("Chromium")
        );
        // Two libraries share a cipher list: the stack is known, the first named.
        assert_eq!(get("t13i3110h2_e8f1e7e78f70_0123456789ab"), Some("curl"));
        // A cipher list two stacks send says nothing by itself.
        assert_eq!(get("t13d1714h2_5b57614c22b0_0123456789ab"), None);
        assert_eq!(get("t13d1715h2_5b57614c22b0_cccccccccccc"), Some("Firefox"));
        let j = Ja4::parse("t13d1715h2_5b57614c22b0_cccccccccccc").unwrap();
        assert!(t.stack_sends(Stack::Firefox, &j) && !t.stack_sends(Stack::Chromium, &j));
        assert!(t.knows(Stack::Chromium) && !t.knows(Stack::Apple));
        assert!(Fingerprints::parse("nonsense\tchromium\tx\n").is_err());
        assert!(Fingerprints::parse(&format!("{CHROME}\tnetscape\tx\n")).is_err());
    }
}
