//! What a proxy in front of us measured of its own client, in the fields it forwards: the one
//! place both doors read them (the Lambda functions behind CloudFront, `vigil serve` behind a
//! `--trust-proxy` peer). The callers decide whether the sender is trusted; a field from anyone
//! else is the client's own word and never read.
//!
//! The field names are CloudFront's (`CloudFront-Viewer-*`), which any proxy can set: nginx and
//! HAProxy with a JA4 module, or CloudFront itself in front of `vigil serve`. A proxy's own
//! connection (its TLS, HTTP version and header order, its SYN, round trips and PINGs) is never
//! the visitor's, so a forwarded visit without these fields is judged with no wire at all.

use std::net::IpAddr;

use vigil_detect::Wire;
use vigil_detect::wire::{header_order_of, is_ja4, normalise_http_version};

/// The visitor's JA4 (FoxIO's TLS client fingerprint), as the proxy computed it.
pub const JA4: &str = "cloudfront-viewer-ja4-fingerprint";
/// The visitor's HTTP version (`HTTP/2.0`, `2`, `1.1`, ...).
pub const HTTP_VERSION: &str = "cloudfront-viewer-http-version";
/// The visitor's header names in the order sent, separated by colons.
pub const HEADER_ORDER: &str = "cloudfront-viewer-header-order";
/// The visitor's address and port (`198.51.100.10:46532`, `[2001:db8::1]:443`).
pub const ADDRESS: &str = "cloudfront-viewer-address";

fn text<'h>(headers: &'h http::HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// The visitor's wire as forwarded: each field checked as the server's own would be (a JA4 of
/// the right shape, a known HTTP version, header names that are tokens). No transport: a proxy
/// ends the visitor's TCP, and no round trip or SYN is forwarded (docs/detection.md, "What the
/// AWS path measures"). None when nothing usable was forwarded.
pub fn wire(headers: &http::HeaderMap) -> Option<Wire> {
    let wire = Wire {
        ja4: text(headers, JA4)
            .map(str::to_ascii_lowercase)
            .filter(|j| is_ja4(j)),
        http_version: text(headers, HTTP_VERSION)
            .and_then(normalise_http_version)
            .map(str::to_owned),
        header_order: text(headers, HEADER_ORDER)
            .and_then(|order| header_order_of(order.split(':').map(str::trim))),
        transport: None,
    };
    (wire != Wire::default()).then_some(wire)
}

/// The visitor's address as forwarded in [`ADDRESS`], its port taken off.
pub fn address(headers: &http::HeaderMap) -> Option<IpAddr> {
    text(headers, ADDRESS)
        .and_then(|a| a.rsplit_once(':'))
        .and_then(|(ip, _)| ip.trim_matches(['[', ']']).parse::<IpAddr>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_well_formed_fields_are_read_and_never_a_transport() {
        let h = headers(&[
            (JA4, "T13D1517H2_8DAAF6152771_CB7BF5808D99"),
            (HTTP_VERSION, "HTTP/2.0"),
            (HEADER_ORDER, "host:user-agent:accept"),
        ]);
        let w = wire(&h).unwrap();
        assert_eq!(
            w.ja4.as_deref(),
            Some("t13d1517h2_8daaf6152771_cb7bf5808d99")
        );
        assert_eq!(w.http_version.as_deref(), Some("2"));
        assert!(w.header_order.is_some());
        assert!(w.transport.is_none());
        let junk = headers(&[(JA4, "not-a-ja4"), (HTTP_VERSION, "HTTP/9")]);
        assert_eq!(wire(&junk), None);
        assert_eq!(wire(&http::HeaderMap::new()), None);
    }

    #[test]
    fn the_address_loses_its_port_and_brackets() {
        let v4 = headers(&[(ADDRESS, "198.51.100.10:46532")]);
        assert_eq!(address(&v4), "198.51.100.10".parse().ok());
        let v6 = headers(&[(ADDRESS, "[2001:db8::1]:443")]);
        assert_eq!(address(&v6), "2001:db8::1".parse().ok());
        let v6_bare = headers(&[(ADDRESS, "2001:db8::1:443")]);
        assert_eq!(address(&v6_bare), "2001:db8::1".parse().ok());
        assert_eq!(address(&headers(&[(ADDRESS, "junk")])), None);
    }
}
