//! What the wire evidence costs (`cargo bench --bench wire`): the JA4 of a real ClientHello
//! (rustls' own, made here), paid once per connection, and what the wire adds to each request:
//! the header order read off the request and the two wire rules in the engine, measured as the
//! difference between evaluating the same visit with and without its wire, interleaved in one
//! run. Then the connection's physics (issue 47): the saved SYN and TCP_INFO read once per
//! connection, TCP_INFO again on each read, and what the transport adds to each request (its
//! snapshot and the relay rules), measured the same way. Fails loudly if the answers are not the
//! ones it claims to time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use vigil_detect::wire::header_order_of;
use vigil_detect::{Engine, Evidence, Wire};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn summary(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

/// A ClientHello as rustls sends it (TLS 1.3 and 1.2, ALPN h2 and http/1.1, SNI localhost),
/// without its 5-byte record header.
fn client_hello() -> Vec<u8> {
    use rustls::pki_types::ServerName;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let name = ServerName::try_from("localhost").expect("name");
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).expect("client");
    let mut records = Vec::new();
    conn.write_tls(&mut records).expect("ClientHello");
    assert_eq!(records[0], 0x16, "a handshake record");
    records[5..].to_vec()
}

fn main() {
    let hello = client_hello();
    let ja4 = vigil_http::server::tls::ja4(&hello).expect("rustls' ClientHello has a JA4");
    assert!(
        ja4.starts_with("t13d") && ja4[8..10] == *"h2",
        "unexpected JA4 {ja4}"
    );
    let mut per_connection = Vec::with_capacity(100_000);
    for _ in 0..100_000 {
        let t = Instant::now();
        std::hint::black_box(vigil_http::server::tls::ja4(std::hint::black_box(&hello)));
        per_connection.push(t.elapsed());
    }
    let (p50, p99) = summary(per_connection);
    println!(
        "JA4 of a {}-byte ClientHello ({ja4}), once per connection, 100,000 runs: p50 {p50:?}, p99 {p99:?}",
        hello.len()
    );

    let engine = Engine::embedded().expect("the built-in data loads");
    let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
    // Chromium 156's collect POST over HTTP/2, as the wire matrix captured it.
    let mut headers = http::HeaderMap::new();
    for name in [
        "content-length",
        "sec-ch-ua-platform",
        "user-agent",
        "sec-ch-ua",
        "content-type",
        "sec-ch-ua-mobile",
        "accept",
        "origin",
        "sec-fetch-site",
        "sec-fetch-mode",
        "sec-fetch-dest",
        "referer",
        "accept-encoding",
        "accept-language",
        "priority",
    ] {
        headers.insert(name, http::HeaderValue::from_static("x"));
    }
    let visit: Evidence = serde_json::from_value(serde_json::json!({
        "ipAddress": "84.128.0.1",
        "userAgent": chrome,
        "headers": {"user-agent": chrome, "accept-language": "de-DE,de;q=0.9"},
        "signals": {"webdriver": false, "userAgent": chrome, "languages": ["de-DE"],
                    "timeZone": "Europe/Berlin", "plugins": 5, "outerWidth": 1280,
                    "outerHeight": 900, "evalLength": 33, "productSub": "20030107"}
    }))
    .expect("evidence");
    let with_wire = |ja4: &str| {
        let mut v = visit.clone();
        v.wire = Some(Wire {
            ja4: Some(ja4.to_owned()),
            http_version: Some("2".to_owned()),
            header_order: header_order_of(headers.keys().map(|k| k.as_str())),
            transport: None,
        });
        v
    };
    // The answers the timing claims: the browser's own wire passes, a script's is named.
    let code = |v: &Evidence| {
        engine
            .evaluate(v)
            .reasons
            .iter()
            .any(|r| r.code == vigil_detect::Code::TlsFingerprintMismatch)
    };
    let browser = "t13d1517h2_8daaf6152771_cb7bf5808d99";
    assert!(!code(&with_wire(browser)), "Chromium's own TLS flagged");
    assert!(
        code(&with_wire("t13i1811h1_85036bcba153_b26ce05bbdd6")),
        "Python's TLS not flagged"
    );

    // The physics a relayed connection shows, as `vigil serve` hands it to each request.
    let physics = vigil_http::server::tcp::Physics::new(Some(
        serde_json::from_value(serde_json::json!({"ttl": 49, "window": 64240, "mss": 1460,
            "windowScale": 7, "options": ["mss", "sackPermitted", "timestamp", "nop", "windowScale"]}))
        .expect("a SYN"),
    ));
    physics.end_to_end(Duration::from_micros(96_500));
    let relayed = |t: Option<vigil_detect::transport::Transport>| {
        let mut v = visit.clone();
        v.wire = Some(Wire {
            ja4: Some(browser.to_owned()),
            http_version: Some("2".to_owned()),
            header_order: header_order_of(headers.keys().map(|k| k.as_str())),
            transport: t,
        });
        v
    };
    let mut tcp = vigil_detect::transport::Transport {
        tcp_rtt_ms: Some(21.0),
        ..physics.transport().expect("measured")
    };
    assert!(
        engine
            .evaluate(&relayed(Some(tcp.clone())))
            .reasons
            .iter()
            .any(|r| r.code == vigil_detect::Code::RelayLatency),
        "a 75 ms detour not named"
    );
    tcp.end_to_end_rtt_ms = Some(24.0);
    assert!(
        engine
            .evaluate(&relayed(Some(tcp)))
            .reasons
            .iter()
            .all(|r| r.code != vigil_detect::Code::RelayLatency),
        "a direct connection named a relay"
    );

    let (mut bare, mut wired) = (Vec::with_capacity(50_000), Vec::with_capacity(50_000));
    let mut physical = Vec::with_capacity(50_000);
    for _ in 0..50_000 {
        let t = Instant::now();
        std::hint::black_box(engine.evaluate(std::hint::black_box(&visit)));
        bare.push(t.elapsed());
        // The wire with the connection's physics: the snapshot each request takes, then the
        // same evaluation with the relay rules' work too.
        let t = Instant::now();
        let v = relayed(physics.transport());
        std::hint::black_box(engine.evaluate(std::hint::black_box(&v)));
        physical.push(t.elapsed());
        let t = Instant::now();
        // What a request on a fingerprinted connection adds: its header order and the wire
        // part of the evidence, then the same evaluation with the wire rules' work.
        let mut v = visit.clone();
        v.wire = Some(Wire {
            ja4: Some(browser.to_owned()),
            http_version: Some("2".to_owned()),
            header_order: header_order_of(headers.keys().map(|k| k.as_str())),
            transport: None,
        });
        std::hint::black_box(engine.evaluate(std::hint::black_box(&v)));
        wired.push(t.elapsed());
    }
    let clone_cost = {
        let mut c = Vec::with_capacity(50_000);
        for _ in 0..50_000 {
            let t = Instant::now();
            std::hint::black_box(visit.clone());
            c.push(t.elapsed());
        }
        summary(c)
    };
    let (b50, b99) = summary(bare);
    let (w50, w99) = summary(wired);
    let (p50, p99) = summary(physical);
    println!(
        "one evaluation with the wire and the connection's physics (snapshot, relay rules), interleaved: \
         p50 {p50:?} p99 {p99:?}; added to the wire alone p50 {:?} p99 {:?}",
        p50.saturating_sub(w50),
        p99.saturating_sub(w99)
    );
    connection_physics();
    println!(
        "one evaluation of a Chrome visit, 50,000 each, interleaved: without wire p50 {b50:?} p99 {b99:?}; \
         with its wire (header order read, evidence built, wire rules) p50 {w50:?} p99 {w99:?}; \
         added p50 {:?} p99 {:?} (the bench's own evidence clone: p50 {:?})",
        w50.saturating_sub(b50),
        w99.saturating_sub(b99),
        clone_cost.0
    );
}

/// What each connection pays for its physics: the saved SYN, parsed, and TCP_INFO once at accept
/// (2,000 loopback connections through a listener that saves SYNs), then TCP_INFO on each read.
#[cfg(target_os = "linux")]
fn connection_physics() {
    use vigil_http::server::tcp::{Metered, Physics, min_rtt_us, save_syns, saved_syn};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    save_syns(&listener).expect("TCP_SAVE_SYN");
    let at = listener.local_addr().expect("address");
    let mut accept = Vec::with_capacity(2_000);
    let mut kept = None;
    for _ in 0..2_000 {
        let client = std::net::TcpStream::connect(at).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        let t = Instant::now();
        let physics = Physics::new(saved_syn(&server));
        let metered = Metered::new(server, physics.clone());
        accept.push(t.elapsed());
        let measured = physics
            .transport()
            .expect("a loopback connection is measured");
        assert!(
            measured.syn.is_some() && measured.tcp_rtt_ms.is_some(),
            "{measured:?}"
        );
        kept = Some((client, metered));
    }
    let (a50, a99) = summary(accept);
    let (_client, metered) = kept.expect("a connection");
    let mut reads = Vec::with_capacity(100_000);
    for _ in 0..100_000 {
        let t = Instant::now();
        std::hint::black_box(min_rtt_us(metered.get_ref()));
        reads.push(t.elapsed());
    }
    let (r50, r99) = summary(reads);
    println!(
        "the connection's physics: saved SYN parsed and TCP_INFO at accept, 2,000 connections: p50 {a50:?} p99 {a99:?}; \
         TCP_INFO on each read, 100,000 reads: p50 {r50:?} p99 {r99:?}"
    );
}

#[cfg(not(target_os = "linux"))]
fn connection_physics() {
    println!("the connection's physics: Linux only");
}
