//! The connection's physics, as the server (or an edge in front of it) measured it: the TCP round
//! trip its kernel saw, the end-to-end round trip of exchanges the client itself must answer (the
//! TLS handshake's last flight, HTTP/2 PINGs), and the TCP SYN that opened the connection.
//!
//! A relay (an HTTP CONNECT or SOCKS proxy, a residential exit) ends TCP: the kernel's round trip
//! is the one to the relay, while the TLS handshake and PINGs go on to the real client and back.
//! The SYN is the relay's own operating system's, whatever user agent the client claims. The
//! study behind the thresholds is `docs/research/issue-47-relay-physics.md`.

use serde::{Deserialize, Deserializer, Serialize};

use crate::de::{integral, object};

/// The longest round trip taken as a measurement (a minute); a longer one is a mistake.
pub const MAX_RTT_MS: f64 = 60_000.0;
/// The most TCP options a SYN can carry (40 bytes of options, one byte the shortest).
pub const MAX_SYN_OPTIONS: usize = 40;

/// What the transport said of one connection. Every part is optional; absent, it is no evidence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Transport {
    /// The smallest TCP round trip the server's kernel measured on the connection (Linux
    /// `TCP_INFO`'s `tcpi_min_rtt`), in milliseconds: the path to whoever ended the TCP
    /// connection, the client or a relay.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "rtt"
    )]
    pub tcp_rtt_ms: Option<f64>,
    /// The smallest end-to-end round trip, in milliseconds: from the server's TLS flight to the
    /// client's answer, and from an HTTP/2 PING to its acknowledgement. Only the client can
    /// answer these, so they travel the whole path, relay or not.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "rtt"
    )]
    pub end_to_end_rtt_ms: Option<f64>,
    /// How many end-to-end exchanges the minimum was taken over (1: the handshake alone).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "integral"
    )]
    pub end_to_end_samples: Option<u16>,
    /// The SYN that opened the connection.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object"
    )]
    pub syn: Option<Syn>,
}

fn rtt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let Some(ms) = Option::<f64>::deserialize(d)? else {
        return Ok(None);
    };
    if ms.is_finite() && (0.0..=MAX_RTT_MS).contains(&ms) {
        Ok(Some(ms))
    } else {
        Err(serde::de::Error::custom(
            "expected a round trip in milliseconds, from 0 to 60000",
        ))
    }
}

/// A TCP option, by the name this API gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TcpOption {
    /// End of options list (kind 0).
    Eol,
    /// No-operation padding (kind 1).
    Nop,
    /// Maximum segment size (kind 2).
    Mss,
    /// Window scale (kind 3).
    WindowScale,
    /// SACK permitted (kind 4).
    SackPermitted,
    /// Timestamps (kind 8).
    Timestamp,
    /// Any other kind (TCP Fast Open's cookie, MPTCP, experiments).
    Other,
}

impl TcpOption {
    fn of(kind: u8) -> Self {
        match kind {
            0 => Self::Eol,
            1 => Self::Nop,
            2 => Self::Mss,
            3 => Self::WindowScale,
            4 => Self::SackPermitted,
            8 => Self::Timestamp,
            _ => Self::Other,
        }
    }
}

/// The fields of a TCP SYN that its sender's operating system chose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Syn {
    /// The IP TTL (IPv4) or hop limit (IPv6) as it arrived: the sender's initial value less the
    /// routers on the way.
    #[serde(deserialize_with = "whole")]
    pub ttl: u8,
    /// The advertised receive window.
    #[serde(deserialize_with = "whole")]
    pub window: u16,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "integral"
    )]
    pub mss: Option<u16>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "integral"
    )]
    pub window_scale: Option<u8>,
    /// The options in the order sent.
    #[serde(default, deserialize_with = "options")]
    pub options: Vec<TcpOption>,
}

/// A required integer, also spelt `64.0` (see [`integral`]).
fn whole<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64>,
{
    integral(d)?.ok_or_else(|| serde::de::Error::custom("expected an integer, not null"))
}

fn options<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<TcpOption>, D::Error> {
    let list = Vec::<TcpOption>::deserialize(d)?;
    if list.len() > MAX_SYN_OPTIONS {
        return Err(serde::de::Error::custom(format!(
            "expected at most {MAX_SYN_OPTIONS} TCP options"
        )));
    }
    Ok(list)
}

/// The operating-system families a SYN tells apart (see [`Syn::family`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Windows: initial TTL 128.
    Windows,
    /// macOS and iOS: initial TTL 64, options led by MSS, NOP, window scale.
    Apple,
    /// Linux, Android and Chrome OS: initial TTL 64, options led by MSS then SACK permitted
    /// (or NOP, NOP, SACK permitted when timestamps are off).
    Linux,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Self::Windows => "Windows",
            Self::Apple => "macOS or iOS",
            Self::Linux => "Linux or Android",
        }
    }

    /// The family a user agent's platform (as client hints name platforms) runs on.
    pub fn of_platform(platform: &str) -> Option<Self> {
        match platform {
            "Windows" => Some(Self::Windows),
            "macOS" | "iOS" => Some(Self::Apple),
            "Linux" | "Android" | "Chrome OS" => Some(Self::Linux),
            _ => None,
        }
    }
}

impl Syn {
    /// The SYN of a packet as Linux's `TCP_SAVED_SYN` hands it over: the IPv4 or IPv6 header
    /// and the TCP header with its options. None when it is not one.
    pub fn parse(packet: &[u8]) -> Option<Self> {
        let (ttl, tcp) = match packet.first()? >> 4 {
            4 => {
                let ihl = usize::from(packet[0] & 0x0f) * 4;
                if ihl < 20 || packet.get(9) != Some(&6) {
                    return None;
                }
                (packet[8], packet.get(ihl..)?)
            }
            // Extension headers before TCP are not followed: no stack puts one on a SYN.
            6 if packet.get(6) == Some(&6) => (*packet.get(7)?, packet.get(40..)?),
            _ => return None,
        };
        if tcp.len() < 20 {
            return None;
        }
        let offset = usize::from(tcp[12] >> 4) * 4;
        // A SYN, not an ACK of one.
        if offset < 20 || tcp[13] & 0x12 != 0x02 {
            return None;
        }
        let window = u16::from_be_bytes([tcp[14], tcp[15]]);
        let mut rest = tcp.get(20..offset)?;
        let (mut mss, mut window_scale, mut options) = (None, None, Vec::new());
        while let Some(&kind) = rest.first() {
            options.push(TcpOption::of(kind));
            if kind == 0 {
                break;
            }
            if kind == 1 {
                rest = &rest[1..];
                continue;
            }
            let len = usize::from(*rest.get(1)?);
            let body = rest.get(2..len.max(2))?;
            match (kind, body) {
                (2, [a, b]) => mss = Some(u16::from_be_bytes([*a, *b])),
                (3, [s]) => window_scale = Some(*s),
                _ => {}
            }
            rest = &rest[len.max(2)..];
        }
        Some(Self {
            ttl,
            window,
            mss,
            window_scale,
            options,
        })
    }

    /// The initial TTL the sender most likely used: the next of the values stacks use
    /// (64, 128, 255) at or above the TTL seen. Paths are rarely more than 30 hops long.
    pub fn initial_ttl(&self) -> u8 {
        match self.ttl {
            0..=64 => 64,
            65..=128 => 128,
            _ => 255,
        }
    }

    /// The sender's operating-system family, by the defaults each documents: Windows starts
    /// at TTL 128; macOS, iOS, Linux and Android at 64, where Apple's stacks lead with MSS,
    /// NOP, window scale and Linux's with MSS, SACK permitted (or NOP, NOP, SACK permitted when
    /// timestamps are off). None for anything else (TTL 255: network equipment, Solaris).
    pub fn family(&self) -> Option<Family> {
        use TcpOption::*;
        match self.initial_ttl() {
            128 => Some(Family::Windows),
            64 => match self.options.as_slice() {
                [Mss, Nop, WindowScale, ..] => Some(Family::Apple),
                [Mss, SackPermitted, ..] | [Mss, Nop, Nop, SackPermitted, ..] => {
                    Some(Family::Linux)
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// A short account for a reason's detail: `TTL 127 (128), window 64240, mss,nop,ws,...`.
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self
            .options
            .iter()
            .map(|o| match o {
                TcpOption::Eol => "eol",
                TcpOption::Nop => "nop",
                TcpOption::Mss => "mss",
                TcpOption::WindowScale => "ws",
                TcpOption::SackPermitted => "sok",
                TcpOption::Timestamp => "ts",
                TcpOption::Other => "?",
            })
            .collect();
        format!(
            "TTL {} (from {}), window {}, options {}",
            self.ttl,
            self.initial_ttl(),
            self.window,
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(",")
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 SYN with `ttl` and TCP options `opts` (already padded to a multiple of 4).
    pub(crate) fn ipv4_syn(ttl: u8, window: u16, opts: &[u8]) -> Vec<u8> {
        let mut p = vec![
            0x45, 0, 0, 0, 0, 0, 0x40, 0, ttl, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        let offset = (20 + opts.len()) / 4;
        let mut tcp = vec![0xc0, 0x01, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 0];
        tcp.push((offset as u8) << 4);
        tcp.push(0x02);
        tcp.extend_from_slice(&window.to_be_bytes());
        tcp.extend_from_slice(&[0, 0, 0, 0]);
        tcp.extend_from_slice(opts);
        p.extend_from_slice(&tcp);
        p
    }

    // Linux's default SYN options: MSS 1460, SACK permitted, timestamps, NOP, window scale 7.
    const LINUX: &[u8] = &[
        2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
    ];
    // Linux with timestamps off: MSS, NOP, NOP, SACK permitted, NOP, window scale.
    const LINUX_NO_TS: &[u8] = &[2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7];
    // Windows 10 and 11: MSS, NOP, window scale 8, NOP, NOP, SACK permitted.
    const WINDOWS: &[u8] = &[2, 4, 0x05, 0xb4, 1, 3, 3, 8, 1, 1, 4, 2];
    // macOS: MSS, NOP, window scale 6, NOP, NOP, timestamps, SACK permitted, EOL, EOL.
    const MACOS: &[u8] = &[
        2, 4, 0x05, 0xb4, 1, 3, 3, 6, 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 4, 2, 0, 0,
    ];

    #[test]
    fn each_family_by_its_documented_defaults() {
        let cases: &[(u8, &[u8], Option<Family>)] = &[
            (64, LINUX, Some(Family::Linux)),
            (61, LINUX_NO_TS, Some(Family::Linux)),
            (128, WINDOWS, Some(Family::Windows)),
            (117, WINDOWS, Some(Family::Windows)),
            // Linux set to TTL 128 (the lab's exit) is counted by its TTL.
            (128, LINUX_NO_TS, Some(Family::Windows)),
            (64, MACOS, Some(Family::Apple)),
            (250, LINUX, None),
            (64, &[], None),
        ];
        for (ttl, opts, want) in cases {
            let syn = Syn::parse(&ipv4_syn(*ttl, 64240, opts)).unwrap();
            assert_eq!(syn.family(), *want, "{}", syn.describe());
        }
        let linux = Syn::parse(&ipv4_syn(64, 64240, LINUX)).unwrap();
        assert_eq!((linux.mss, linux.window_scale), (Some(1460), Some(7)));
        assert_eq!(
            linux.describe(),
            "TTL 64 (from 64), window 64240, options mss,sok,ts,nop,ws"
        );
    }

    #[test]
    fn an_ipv6_syn_is_read_by_its_hop_limit() {
        let v4 = ipv4_syn(64, 65535, MACOS);
        let mut p = vec![0x60, 0, 0, 0, 0, 0, 6, 63];
        p.extend_from_slice(&[0u8; 32]);
        p.extend_from_slice(&v4[20..]);
        let syn = Syn::parse(&p).unwrap();
        assert_eq!((syn.ttl, syn.family()), (63, Some(Family::Apple)));
    }

    #[test]
    fn what_is_not_a_syn_is_none_and_never_a_panic() {
        let good = ipv4_syn(64, 1, LINUX);
        for cut in 0..good.len() - LINUX.len() {
            assert_eq!(Syn::parse(&good[..cut]), None, "cut at {cut}");
        }
        let mut ack = good.clone();
        ack[33] = 0x12; // SYN+ACK
        assert_eq!(Syn::parse(&ack), None);
        let mut udp = good.clone();
        udp[9] = 17;
        assert_eq!(Syn::parse(&udp), None);
        // An option whose length runs past the header.
        let bad = ipv4_syn(64, 1, &[2, 40, 0, 0]);
        assert_eq!(Syn::parse(&bad), None);
        // Length 0 or 1 cannot loop for ever.
        let zero = ipv4_syn(64, 1, &[3, 0, 1, 1]);
        assert!(Syn::parse(&zero).is_some());
        assert_eq!(Syn::parse(&[0xff; 80]), None);
    }

    #[test]
    fn round_trips_are_bounded_numbers() {
        let ok: Transport = serde_json::from_str(
            r#"{"tcpRttMs":20.5,"endToEndRttMs":140,"endToEndSamples":3,
                "syn":{"ttl":117,"window":64240,"mss":1460,"windowScale":8,
                       "options":["mss","nop","windowScale","nop","nop","sackPermitted"]}}"#,
        )
        .unwrap();
        assert_eq!(ok.syn.unwrap().family(), Some(Family::Windows));
        // JSON Schema's integers: 3.0 is 3.
        let spelt: Transport = serde_json::from_str(
            r#"{"endToEndSamples":3.0,"syn":{"ttl":64.0,"window":1024.0,"mss":1460.0}}"#,
        )
        .unwrap();
        assert_eq!(spelt.end_to_end_samples, Some(3));
        assert_eq!(
            spelt.syn.map(|s| (s.ttl, s.window, s.mss)),
            Some((64, 1024, Some(1460)))
        );
        for bad in [
            r#"{"syn":[64,1024]}"#,
            r#"{"endToEndSamples":3.5}"#,
            r#"{"endToEndSamples":70000}"#,
            r#"{"syn":{"ttl":null,"window":1}}"#,
            r#"{"tcpRttMs":-1}"#,
            r#"{"tcpRttMs":60001}"#,
            r#"{"endToEndRttMs":"5"}"#,
            r#"{"rtt":5}"#,
            r#"{"syn":{"ttl":300,"window":1}}"#,
            r#"{"syn":{"ttl":64,"window":1,"options":["sack"]}}"#,
        ] {
            assert!(serde_json::from_str::<Transport>(bad).is_err(), "{bad}");
        }
    }
}
