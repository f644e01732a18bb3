//! What the wire evidence costs (`cargo bench --bench wire`): the JA4 of a real ClientHello
//! (rustls' own, made here), paid once per connection, and what the wire adds to each request:
//! the header order read off the request and the two wire rules in the engine, measured as the
//! difference between evaluating the same visit with and without its wire, interleaved in one
//! run. Fails loudly if the answers are not the ones it claims to time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use vigil::detect::wire::header_order_of;
use vigil::detect::{Engine, Evidence, Wire};

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
    let ja4 = vigil::http::tls::ja4(&hello).expect("rustls' ClientHello has a JA4");
    assert!(
        ja4.starts_with("t13d") && ja4[8..10] == *"h2",
        "unexpected JA4 {ja4}"
    );
    let mut per_connection = Vec::with_capacity(100_000);
    for _ in 0..100_000 {
        let t = Instant::now();
        std::hint::black_box(vigil::http::tls::ja4(std::hint::black_box(&hello)));
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
            .any(|r| r.code == vigil::detect::Code::TlsFingerprintMismatch)
    };
    let browser = "t13d1517h2_8daaf6152771_cb7bf5808d99";
    assert!(!code(&with_wire(browser)), "Chromium's own TLS flagged");
    assert!(
        code(&with_wire("t13i1811h1_85036bcba153_b26ce05bbdd6")),
        "Python's TLS not flagged"
    );

    let (mut bare, mut wired) = (Vec::with_capacity(50_000), Vec::with_capacity(50_000));
    for _ in 0..50_000 {
        let t = Instant::now();
        std::hint::black_box(engine.evaluate(std::hint::black_box(&visit)));
        bare.push(t.elapsed());
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
    println!(
        "one evaluation of a Chrome visit, 50,000 each, interleaved: without wire p50 {b50:?} p99 {b99:?}; \
         with its wire (header order read, evidence built, wire rules) p50 {w50:?} p99 {w99:?}; \
         added p50 {:?} p99 {:?} (the bench's own evidence clone: p50 {:?})",
        w50.saturating_sub(b50),
        w99.saturating_sub(b99),
        clone_cost.0
    );
}
