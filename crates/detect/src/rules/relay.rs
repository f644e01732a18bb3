//! Relays by physics: the connection's round trips and SYN against each other and against the
//! user agent ([`crate::transport`]). A relay ends TCP, so the kernel's round trip is the one to
//! the relay while the TLS handshake and HTTP/2 PINGs reach the real client; and the SYN is the
//! relay's operating system's. Thresholds and their lab measurements:
//! `docs/research/issue-47-relay-physics.md`.

use crate::engine::Engine;
use crate::networks::Basis;
use crate::reasons::{Code, Reason, visitor_text};
use crate::transport::{Family, Transport};
use crate::visit::Visit;

/// `relay_latency`'s weight on a network that splits TCP near its users.
const SPLITTING_WEIGHT: f64 = 3.0;
/// `tcp_os_mismatch`'s weight when the user agent claims Windows over another system's stack:
/// privacy modes claim Windows on every system (Firefox's resistFingerprinting, Tor Browser),
/// so people make this one; a Windows stack under another claim has no such cause.
const CLAIMS_WINDOWS_WEIGHT: f64 = 2.5;

/// The end-to-end excess over the TCP round trip that jitter and a client's own delay explain,
/// with one end-to-end sample (the TLS handshake alone: it carries the client's certificate
/// checks, and one sample of jitter against the kernel's minimum over many): a floor in
/// milliseconds and a share of the TCP round trip.
const ONE_SAMPLE: (f64, f64) = (25.0, 0.20);
/// The same with several samples (HTTP/2 PINGs, which a client answers at once).
const SEVERAL_SAMPLES: (f64, f64) = (20.0, 0.10);

pub fn reasons(engine: &Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let Some(t) = v.evidence.wire.as_ref().and_then(|w| w.transport.as_ref()) else {
        return;
    };
    if let Some(r) = relay_latency(engine, v, t) {
        out.push(r);
    }
    if let Some(r) = os_mismatch(v, t) {
        out.push(r);
    }
}

/// The excess over the TCP round trip that `samples` end-to-end exchanges may show unrelayed.
pub fn allowed_excess(tcp_ms: f64, samples: u16) -> f64 {
    let (floor, share) = if samples >= 3 {
        SEVERAL_SAMPLES
    } else {
        ONE_SAMPLE
    };
    floor + share * tcp_ms
}

fn relay_latency(engine: &Engine, v: &Visit<'_>, t: &Transport) -> Option<Reason> {
    let (tcp, e2e) = (t.tcp_rtt_ms?, t.end_to_end_rtt_ms?);
    let samples = t.end_to_end_samples.unwrap_or(1).max(1);
    let allowed = allowed_excess(tcp, samples);
    let excess = e2e - tcp;
    if excess <= allowed {
        return None;
    }
    let mut r = Reason::new(
        Code::RelayLatency,
        format!(
            "end-to-end round trip {e2e:.0} ms (minimum of {samples}), TCP round trip {tcp:.0} ms: \
             {excess:.0} ms beyond the connecting host, where {allowed:.0} ms is explained by \
             jitter and the client's own delay"
        ),
    );
    // A satellite service's accelerator ends TCP near its users: the same physics, no proxy.
    let splitting = v
        .evidence
        .ip_address
        .and_then(|ip| engine.networks().lookup(ip))
        .filter(|n| n.basis == Basis::Splitting);
    if let Some(n) = splitting {
        r.weight = SPLITTING_WEIGHT;
        r.detail.push_str(&format!(
            "; AS{} {} splits TCP near its users (a satellite accelerator), weighed less",
            n.asn,
            visitor_text(n.name, 60)
        ));
    }
    Some(r)
}

fn os_mismatch(v: &Visit<'_>, t: &Transport) -> Option<Reason> {
    let syn = t.syn.as_ref()?;
    let stack = syn.family()?;
    let platform = v.ua_claim.or(v.js_claim)?.platform?;
    let claimed = Family::of_platform(platform)?;
    if stack == claimed {
        return None;
    }
    let mut r = Reason::new(
        Code::TcpOsMismatch,
        format!(
            "the connection's SYN is {}'s ({}), the user agent claims {platform}",
            stack.name(),
            syn.describe()
        ),
    );
    if claimed == Family::Windows {
        r.weight = CLAIMS_WINDOWS_WEIGHT;
        r.detail.push_str(
            "; privacy modes claim Windows on every system (Firefox's resistFingerprinting), weighed less",
        );
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowed_excess_grows_with_the_round_trip_and_shrinks_with_samples() {
        assert_eq!(allowed_excess(40.0, 1), 33.0);
        assert_eq!(allowed_excess(600.0, 1), 145.0);
        assert_eq!(allowed_excess(600.0, 4), 80.0);
        assert!(
            allowed_excess(20.0, 3) < 50.0,
            "a 50 ms detour near the server is seen"
        );
    }

    fn codes(ua: &str, wire: serde_json::Value) -> Vec<Code> {
        let e: crate::evidence::Evidence =
            serde_json::from_value(serde_json::json!({"userAgent": ua, "wire": wire})).unwrap();
        crate::tests::ENGINE
            .evaluate(&e)
            .reasons
            .iter()
            .map(|r| r.code)
            .collect()
    }

    const LINUX_UA: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36";
    const WINDOWS_UA: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36";

    #[test]
    fn a_slow_line_is_slow_both_ways_and_no_relay() {
        for (tcp, e2e, n) in [(40.0, 55.0, 1), (600.0, 700.0, 1), (300.0, 320.0, 4)] {
            let w = serde_json::json!({"transport": {"tcpRttMs": tcp, "endToEndRttMs": e2e,
                                                       "endToEndSamples": n}});
            assert!(
                !codes(LINUX_UA, w).contains(&Code::RelayLatency),
                "{tcp} {e2e}"
            );
        }
        // Half a measurement is no evidence.
        let w = serde_json::json!({"transport": {"endToEndRttMs": 900.0}});
        assert!(!codes(LINUX_UA, w).contains(&Code::RelayLatency));
    }

    #[test]
    fn a_satellite_accelerator_weighs_less_and_says_so() {
        // 5.8.184.1 is Viasat's (AS7155), 84.128.0.1 a German home line.
        let relayed = |ip: &str| -> crate::evidence::Evidence {
            serde_json::from_value(
                serde_json::json!({"ipAddress": ip, "userAgent": "curl/8.5.0",
                "wire": {"transport": {"tcpRttMs": 30.0, "endToEndRttMs": 640.0}}}),
            )
            .unwrap()
        };
        let reason = |ip: &str| {
            crate::tests::ENGINE
                .evaluate(&relayed(ip))
                .reasons
                .into_iter()
                .find(|r| r.code == Code::RelayLatency)
                .unwrap()
        };
        let home = reason("84.128.0.1");
        assert_eq!(home.weight, Code::RelayLatency.weight());
        let sat = reason("5.8.184.1");
        assert_eq!(sat.weight, SPLITTING_WEIGHT);
        assert!(sat.detail.contains("AS7155"), "{}", sat.detail);
        let v = crate::tests::ENGINE.evaluate(&relayed("5.8.184.1"));
        assert!(v.score_proxy_vpn < 0.5, "{v:?}");
        assert!(
            v.reasons.iter().all(|r| r.code != Code::HostingIp),
            "a satellite network is not hosting"
        );
    }

    #[test]
    fn the_stack_is_judged_against_the_claimed_platform_only() {
        let windows = serde_json::json!({"transport": {"syn": {"ttl": 127, "window": 64240,
            "options": ["mss", "nop", "windowScale", "nop", "nop", "sackPermitted"]}}});
        assert!(codes(LINUX_UA, windows.clone()).contains(&Code::TcpOsMismatch));
        // A Linux stack under a Windows claim, as resistFingerprinting makes: named, weighed less.
        let linux = serde_json::json!({"transport": {"syn": {"ttl": 64, "window": 64240,
            "options": ["mss", "sackPermitted", "timestamp", "nop", "windowScale"]}}});
        let e: crate::evidence::Evidence =
            serde_json::from_value(serde_json::json!({"userAgent": WINDOWS_UA, "wire": linux}))
                .unwrap();
        let v = crate::tests::ENGINE.evaluate(&e);
        let r = v
            .reasons
            .iter()
            .find(|r| r.code == Code::TcpOsMismatch)
            .unwrap();
        assert_eq!(r.weight, CLAIMS_WINDOWS_WEIGHT);
        assert!(v.score_proxy_vpn < 0.5, "{v:?}");
        assert!(!codes(WINDOWS_UA, windows.clone()).contains(&Code::TcpOsMismatch));
        // curl names no platform: nothing to contradict.
        assert!(!codes("curl/8.5.0", windows).contains(&Code::TcpOsMismatch));
    }
}
