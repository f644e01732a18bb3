//! Which network addresses a webhook may target. Used when a webhook is created (IP literals) and
//! again at delivery time for every resolved address, so a name that resolves inward is refused too.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use ipnet::{Ipv4Net, Ipv6Net};

/// IPv4 ranges no webhook may reach: unspecified, loopback, private, link-local, shared, multicast,
/// documentation, benchmarking and the other special-purpose blocks of the IANA registry.
const BLOCKED_V4: &[&str] = &[
    "0.0.0.0/8",       // "this network", unspecified
    "10.0.0.0/8",      // private
    "100.64.0.0/10",   // shared address space (carrier-grade NAT)
    "127.0.0.0/8",     // loopback
    "169.254.0.0/16",  // link-local, cloud metadata endpoints
    "172.16.0.0/12",   // private
    "192.0.0.0/24",    // IETF protocol assignments
    "192.0.2.0/24",    // documentation
    "192.88.99.0/24",  // deprecated 6to4 relay anycast
    "192.168.0.0/16",  // private
    "198.18.0.0/15",   // benchmarking
    "198.51.100.0/24", // documentation
    "203.0.113.0/24",  // documentation
    "224.0.0.0/4",     // multicast
    "240.0.0.0/4",     // reserved, including broadcast
];

/// IPv6 ranges no webhook may reach. IPv4-mapped addresses are judged by the IPv4 address they carry.
const BLOCKED_V6: &[&str] = &[
    "::/128",         // unspecified
    "::1/128",        // loopback
    "::/8", // reserved by the IETF: IPv4-compatible (::/96) and IPv4-translated (::ffff:0:0:0/96, SIIT) forms among them
    "64:ff9b::/96", // NAT64 well-known prefix
    "64:ff9b:1::/48", // NAT64 local use
    "100::/64", // discard
    "2001::/23", // IETF protocol assignments (Teredo, ORCHID, ...)
    "2001:db8::/32", // documentation
    "2002::/16", // 6to4: tunnels to arbitrary IPv4 addresses
    "3fff::/20", // documentation
    "5f00::/16", // SRv6 SIDs
    "fc00::/7", // unique local
    "fe80::/10", // link-local
    "fec0::/10", // deprecated site-local
    "ff00::/8", // multicast
];

static V4: LazyLock<Vec<Ipv4Net>> =
    LazyLock::new(|| BLOCKED_V4.iter().filter_map(|s| s.parse().ok()).collect());
static V6: LazyLock<Vec<Ipv6Net>> =
    LazyLock::new(|| BLOCKED_V6.iter().filter_map(|s| s.parse().ok()).collect());

/// True when `ip` lies in a range that a webhook must never reach.
pub fn is_blocked(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_blocked_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_blocked_v4(v4),
            None => V6.iter().any(|n| n.contains(&v6)),
        },
    }
}

fn is_blocked_v4(ip: Ipv4Addr) -> bool {
    V4.iter().any(|n| n.contains(&ip))
}

/// True for loopback addresses, which development mode may allow.
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6 == Ipv6Addr::LOCALHOST || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn tables_parse_completely() {
        assert_eq!(V4.len(), BLOCKED_V4.len());
        assert_eq!(V6.len(), BLOCKED_V6.len());
    }

    #[test]
    fn blocks_every_special_v4_range() {
        for s in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "100.127.255.255",
            "127.0.0.1",
            "127.255.0.9",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.51.100.2",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(is_blocked(ip(s)), "{s}");
        }
    }

    #[test]
    fn blocks_every_special_v6_range() {
        for s in [
            "::",
            "::1",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::808:808",
            "64:ff9b:1::1",
            "100::1",
            "2001::1",
            "2001:db8::1",
            "2002:7f00:1::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:0.0.0.0",
            // IPv4-translated (SIIT) forms of loopback and private addresses, and the rest of ::/8.
            "::ffff:0:7f00:1",
            "::ffff:0:a00:1",
            "::ff:1",
        ] {
            assert!(is_blocked(ip(s)), "{s}");
        }
    }

    #[test]
    fn allows_public_addresses() {
        for s in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_blocked(ip(s)), "{s}");
        }
    }

    #[test]
    fn loopback_detection() {
        assert!(is_loopback(ip("127.0.0.2")));
        assert!(is_loopback(ip("::1")));
        assert!(is_loopback(ip("::ffff:127.0.0.1")));
        assert!(!is_loopback(ip("10.0.0.1")));
    }
}
