//! A STUN server (RFC 8489) for `vigil serve`: it answers binding requests with the address they
//! came from, which is all a browser's WebRTC needs to learn its server-reflexive address. A
//! browser behind an HTTP or SOCKS proxy sends this UDP around the proxy, so the agent's
//! `webrtcIps` then show the visitor's own public address beside the proxy's request address
//! (`webrtc_ip_mismatch`). Nothing is kept: the answer is the only output.

use std::net::{IpAddr, SocketAddr};

use tokio::net::UdpSocket;

/// The fixed value in every STUN message since RFC 5389.
const MAGIC_COOKIE: u32 = 0x2112_A442;
const BINDING_REQUEST: u16 = 0x0001;
const BINDING_SUCCESS: u16 = 0x0101;
const XOR_MAPPED_ADDRESS: u16 = 0x0020;
const FINGERPRINT: u16 = 0x8028;
/// XORed into the CRC-32 of a FINGERPRINT attribute ("STUN").
const FINGERPRINT_XOR: u32 = 0x5354_554e;
/// A request larger than this is not a binding request a browser sends.
const MAX_REQUEST: usize = 548;

/// A binding error response (RFC 8489 §6.3.4).
const BINDING_ERROR: u16 = 0x0111;
const ERROR_CODE: u16 = 0x0009;
const UNKNOWN_ATTRIBUTES: u16 = 0x000A;
/// Comprehension-required attributes (below 0x8000) a binding request may carry that this server
/// understands well enough to ignore: credentials it does not ask for (USERNAME,
/// MESSAGE-INTEGRITY, -SHA256, PASSWORD-ALGORITHM, REALM, NONCE) and ICE's PRIORITY and
/// USE-CANDIDATE (RFC 8445).
const UNDERSTOOD: &[u16] = &[
    0x0006, 0x0008, 0x001C, 0x001D, 0x0014, 0x0015, 0x0024, 0x0025,
];
/// Answers per source address per second; past it the server is silent to that source.
const PER_SOURCE_PER_SECOND: u32 = 20;
/// Sources remembered for the budget before the table starts anew.
const MAX_SOURCES: usize = 10_000;

/// The answer to `request` from `from`: a binding success response carrying `from` as the
/// XOR-MAPPED-ADDRESS and a FINGERPRINT; a 420 error response listing the comprehension-required
/// attributes it does not understand (RFC 8489 §7.3.1); None for anything that is not a
/// well-formed binding request (the server stays silent to whatever is not STUN, and to an
/// attribute whose length overruns the message).
pub fn answer(request: &[u8], from: SocketAddr) -> Option<Vec<u8>> {
    if request.len() < 20 || request.len() > MAX_REQUEST {
        return None;
    }
    let kind = u16::from_be_bytes([request[0], request[1]]);
    let length = usize::from(u16::from_be_bytes([request[2], request[3]]));
    let cookie = u32::from_be_bytes([request[4], request[5], request[6], request[7]]);
    if kind != BINDING_REQUEST
        || cookie != MAGIC_COOKIE
        || length % 4 != 0
        || length != request.len() - 20
    {
        return None;
    }
    let transaction = &request[8..20];
    let unknown = unknown_required(&request[20..])?;
    if !unknown.is_empty() {
        let reason = b"Unknown Attribute";
        let mut code = vec![0, 0, 4, 20];
        code.extend_from_slice(reason);
        let listed: Vec<u8> = unknown.iter().flat_map(|t| t.to_be_bytes()).collect();
        return Some(message(
            BINDING_ERROR,
            transaction,
            &[(ERROR_CODE, &code), (UNKNOWN_ATTRIBUTES, &listed)],
        ));
    }
    let mut value = Vec::with_capacity(20);
    value.push(0);
    let port = from.port() ^ (MAGIC_COOKIE >> 16) as u16;
    // A dual-stack socket's IPv4-mapped peer is answered as the IPv4 client it is.
    match from.ip().to_canonical() {
        IpAddr::V4(v4) => {
            value.push(0x01);
            value.extend_from_slice(&port.to_be_bytes());
            value.extend_from_slice(&(u32::from(v4) ^ MAGIC_COOKIE).to_be_bytes());
        }
        IpAddr::V6(v6) => {
            value.push(0x02);
            value.extend_from_slice(&port.to_be_bytes());
            let mut key = MAGIC_COOKIE.to_be_bytes().to_vec();
            key.extend_from_slice(transaction);
            value.extend(v6.octets().iter().zip(key).map(|(a, k)| a ^ k));
        }
    }
    Some(message(
        BINDING_SUCCESS,
        transaction,
        &[(XOR_MAPPED_ADDRESS, &value)],
    ))
}

/// The comprehension-required attribute types of `attributes` this server does not understand
/// (at most 8 listed); None when an attribute's length runs past the message.
fn unknown_required(mut attributes: &[u8]) -> Option<Vec<u16>> {
    let mut unknown = Vec::new();
    while !attributes.is_empty() {
        if attributes.len() < 4 {
            return None;
        }
        let kind = u16::from_be_bytes([attributes[0], attributes[1]]);
        let len = usize::from(u16::from_be_bytes([attributes[2], attributes[3]]));
        let padded = 4 + len.div_ceil(4) * 4;
        if padded > attributes.len() {
            return None;
        }
        if kind < 0x8000 && !UNDERSTOOD.contains(&kind) && unknown.len() < 8 {
            unknown.push(kind);
        }
        attributes = &attributes[padded..];
    }
    Some(unknown)
}

/// A STUN message of `kind` for `transaction` with `attributes` (each padded to four bytes) and
/// a FINGERPRINT, whose CRC counts the message with the fingerprint in its length.
fn message(kind: u16, transaction: &[u8], attributes: &[(u16, &[u8])]) -> Vec<u8> {
    let body: usize = attributes
        .iter()
        .map(|(_, v)| 4 + v.len().div_ceil(4) * 4)
        .sum();
    let mut out = Vec::with_capacity(20 + body + 8);
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&((body + 8) as u16).to_be_bytes());
    out.extend_from_slice(&MAGIC_COOKIE.to_be_bytes());
    out.extend_from_slice(transaction);
    for (t, v) in attributes {
        out.extend_from_slice(&t.to_be_bytes());
        out.extend_from_slice(&(v.len() as u16).to_be_bytes());
        out.extend_from_slice(v);
        out.resize(out.len() + (4 - v.len() % 4) % 4, 0);
    }
    let crc = crc32fast::hash(&out) ^ FINGERPRINT_XOR;
    out.extend_from_slice(&FINGERPRINT.to_be_bytes());
    out.extend_from_slice(&4u16.to_be_bytes());
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// How many answers each source has had this second: a source that sends more gets silence, so
/// the server cannot be made to reflect traffic at one address faster than this.
#[derive(Default)]
struct Budget {
    second: u64,
    answered: std::collections::HashMap<IpAddr, u32>,
}

impl Budget {
    fn allows(&mut self, from: IpAddr, second: u64) -> bool {
        if second != self.second || self.answered.len() >= MAX_SOURCES {
            self.second = second;
            self.answered.clear();
        }
        let n = self.answered.entry(from).or_insert(0);
        *n += 1;
        *n <= PER_SOURCE_PER_SECOND
    }
}

/// Answers binding requests on `socket` for as long as the process runs.
pub async fn serve(socket: UdpSocket) {
    let mut buf = [0u8; MAX_REQUEST + 1];
    let mut budget = Budget::default();
    let started = std::time::Instant::now();
    loop {
        let (n, from) = match socket.recv_from(&mut buf).await {
            Ok(got) => got,
            Err(e) => {
                // An ICMP error of an earlier answer and the like: the next datagram is another.
                tracing::debug!(error = %e, "STUN receive failed");
                continue;
            }
        };
        let Some(reply) = answer(&buf[..n], from) else {
            continue;
        };
        if budget.allows(from.ip().to_canonical(), started.elapsed().as_secs()) {
            let _ = socket.send_to(&reply, from).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(transaction: [u8; 12]) -> Vec<u8> {
        let mut r = vec![0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42];
        r.extend_from_slice(&transaction);
        r
    }

    /// RFC 5769's sample transaction and addresses: 192.0.2.1:32853 is X-Port 0xa147 and
    /// X-Address e1 12 a6 43; 2001:db8:1234:5678:11:2233:4455:6677 port 32853 as in its
    /// IPv6 sample.
    #[test]
    fn the_mapped_address_is_xored_as_rfc_5769_shows() {
        let tx = [
            0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae,
        ];
        let reply = answer(&request(tx), "192.0.2.1:32853".parse().unwrap()).unwrap();
        assert_eq!(&reply[..2], &[0x01, 0x01]);
        assert_eq!(
            usize::from(u16::from_be_bytes([reply[2], reply[3]])),
            reply.len() - 20
        );
        assert_eq!(&reply[8..20], &tx);
        assert_eq!(
            &reply[20..32],
            &[
                0x00, 0x20, 0x00, 0x08, 0x00, 0x01, 0xa1, 0x47, 0xe1, 0x12, 0xa6, 0x43
            ]
        );
        let v6 = answer(
            &request(tx),
            "[2001:db8:1234:5678:11:2233:4455:6677]:32853"
                .parse()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            &v6[20..44],
            &[
                0x00, 0x20, 0x00, 0x14, 0x00, 0x02, 0xa1, 0x47, 0x01, 0x13, 0xa9, 0xfa, 0xa5, 0xd3,
                0xf1, 0x79, 0xbc, 0x25, 0xf4, 0xb5, 0xbe, 0xd2, 0xb9, 0xd9
            ]
        );
        // The fingerprint: CRC-32 of everything before it, XOR "STUN".
        let (body, tail) = reply.split_at(reply.len() - 8);
        assert_eq!(&tail[..4], &[0x80, 0x28, 0x00, 0x04]);
        let crc = u32::from_be_bytes([tail[4], tail[5], tail[6], tail[7]]);
        assert_eq!(crc, crc32fast::hash(body) ^ 0x5354_554e);
        // A mapped IPv4 peer is answered as IPv4.
        let mapped = answer(&request(tx), "[::ffff:192.0.2.1]:32853".parse().unwrap()).unwrap();
        assert_eq!(mapped, reply);
    }

    #[test]
    fn only_binding_requests_are_answered() {
        let from: SocketAddr = "198.51.100.7:5000".parse().unwrap();
        let good = request([1; 12]);
        assert!(answer(&good, from).is_some());
        let mut response = good.clone();
        response[1] = 0x01;
        response[0] = 0x01;
        let mut old_cookie = good.clone();
        old_cookie[4] = 0;
        let mut long = good.clone();
        long[3] = 4; // says 4 bytes of attributes, has none
        for bad in [
            &good[..19],
            &response[..],
            &old_cookie[..],
            &long[..],
            &[0u8; 600][..],
            b"GET / HTTP/1.1\r\n\r\n\r\n",
        ] {
            assert_eq!(answer(bad, from), None, "{bad:?}");
        }
        let mut with_attr = good.clone();
        with_attr[3] = 8;
        with_attr.extend_from_slice(&[0x80, 0x22, 0x00, 0x04, b't', b'e', b's', b't']);
        let ok = answer(&with_attr, from).unwrap();
        assert_eq!(
            &ok[..2],
            &[0x01, 0x01],
            "comprehension-optional attributes are ignored"
        );
    }

    /// RFC 8489 §7.3.1: a comprehension-required attribute the server does not know gets a 420
    /// naming it; an attribute whose length runs past the message gets silence.
    #[test]
    fn unknown_required_attributes_get_420_and_broken_lengths_silence() {
        let from: SocketAddr = "198.51.100.7:5000".parse().unwrap();
        let mut unknown = request([2; 12]);
        unknown[3] = 8;
        unknown.extend_from_slice(&[0x00, 0x7f, 0x00, 0x04, 1, 2, 3, 4]);
        let reply = answer(&unknown, from).unwrap();
        assert_eq!(&reply[..2], &[0x01, 0x11], "a binding error response");
        assert_eq!(&reply[8..20], &[2; 12]);
        // ERROR-CODE: class 4, number 20, "Unknown Attribute" (17 bytes, padded to 20).
        assert_eq!(&reply[20..28], &[0x00, 0x09, 0x00, 21, 0, 0, 4, 20]);
        assert_eq!(&reply[28..45], b"Unknown Attribute");
        // UNKNOWN-ATTRIBUTES: 0x007f.
        assert_eq!(&reply[48..54], &[0x00, 0x0a, 0x00, 0x02, 0x00, 0x7f]);
        assert_eq!(
            usize::from(u16::from_be_bytes([reply[2], reply[3]])),
            reply.len() - 20
        );
        // ICE's PRIORITY is understood: answered with the address.
        let mut ice = request([3; 12]);
        ice[3] = 8;
        ice.extend_from_slice(&[0x00, 0x24, 0x00, 0x04, 1, 2, 3, 4]);
        assert_eq!(&answer(&ice, from).unwrap()[..2], &[0x01, 0x01]);
        // An attribute that says 64 bytes in a message of 8.
        let mut broken = request([4; 12]);
        broken[3] = 8;
        broken.extend_from_slice(&[0x80, 0x22, 0x00, 0x40, 1, 2, 3, 4]);
        assert_eq!(answer(&broken, from), None);
    }

    #[test]
    fn each_source_gets_a_budget_of_answers_a_second() {
        let mut b = Budget::default();
        let a: IpAddr = "198.51.100.7".parse().unwrap();
        let other: IpAddr = "198.51.100.8".parse().unwrap();
        let allowed = (0..100).filter(|_| b.allows(a, 5)).count();
        assert_eq!(allowed, PER_SOURCE_PER_SECOND as usize);
        assert!(b.allows(other, 5), "another source has its own");
        assert!(b.allows(a, 6), "and the next second a new one");
    }

    #[tokio::test]
    async fn a_client_learns_its_own_address() {
        let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let at = server.local_addr().unwrap();
        tokio::spawn(serve(server));
        let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        client.send_to(&request([7; 12]), at).await.unwrap();
        let mut buf = [0u8; 128];
        let (n, _) = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            client.recv_from(&mut buf),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(
            Some(buf[..n].to_vec()),
            answer(&request([7; 12]), client.local_addr().unwrap())
        );
    }
}
