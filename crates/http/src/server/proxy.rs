//! The proxies trusted to name the client, and how their `X-Forwarded-For` is read.

use std::net::IpAddr;

/// Proxy ranges whose `X-Forwarded-For` is believed. Empty: none, the peer is the client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<ipnet::IpNet>);

impl From<Vec<ipnet::IpNet>> for TrustedProxies {
    fn from(ranges: Vec<ipnet::IpNet>) -> Self {
        Self(ranges)
    }
}

impl TrustedProxies {
    pub fn trusts(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.0.iter().any(|n| n.contains(&peer))
    }

    /// The visitor's address: for a trusted peer, the right-most entry of the last
    /// `X-Forwarded-For` header (the one that proxy appended), with its port or brackets taken
    /// off; for any other peer, or an entry that does not parse, the peer itself.
    pub fn client(&self, peer: IpAddr, headers: &http::HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        headers
            .get_all("x-forwarded-for")
            .iter()
            .next_back()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .and_then(|entry| forwarded_address(entry.trim()))
            .map(|ip| ip.to_canonical())
            .unwrap_or(peer)
    }
}

/// An `X-Forwarded-For` entry: an address, `a.b.c.d:port`, `[v6]` or `[v6]:port`.
fn forwarded_address(entry: &str) -> Option<IpAddr> {
    if let Ok(ip) = entry.parse() {
        return Some(ip);
    }
    if let Ok(sock) = entry.parse::<std::net::SocketAddr>() {
        return Some(sock.ip());
    }
    entry
        .strip_prefix('[')
        .and_then(|e| e.strip_suffix(']'))
        .and_then(|e| e.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_a_trusted_peer_names_the_client_and_only_by_the_last_entry() {
        let proxies = TrustedProxies::from(vec!["10.0.0.0/8".parse().unwrap()]);
        let proxy: IpAddr = "10.1.2.3".parse().unwrap();
        let stranger: IpAddr = "198.51.100.9".parse().unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let cases: &[(&[&str], IpAddr)] = &[
            (&["203.0.113.7"], ip("203.0.113.7")),
            // The proxy appended the last entry; what the client wrote before it is not believed.
            (&["185.220.101.1, 203.0.113.7"], ip("203.0.113.7")),
            (&["185.220.101.1", "203.0.113.7:5555"], ip("203.0.113.7")),
            (&["[2001:db8::1]:443"], ip("2001:db8::1")),
            (&["[2001:db8::1]"], ip("2001:db8::1")),
            // The right-most entry does not parse: the peer, never an entry before it.
            (&["185.220.101.1, 10.0.0.1:5555:x"], proxy),
            (&["185.220.101.1, garbage"], proxy),
            (&["203.0.113.7", "garbage"], proxy),
            (&[], proxy),
        ];
        for (values, want) in cases {
            assert_eq!(proxies.client(proxy, &headers(values)), *want, "{values:?}");
            assert_eq!(
                proxies.client(stranger, &headers(values)),
                stranger,
                "{values:?}"
            );
        }
        assert_eq!(
            TrustedProxies::default().client(proxy, &headers(&["203.0.113.7"])),
            proxy
        );
    }
}
