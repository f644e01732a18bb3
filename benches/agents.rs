//! What a Web Bot Auth signature costs (`cargo bench --bench agents`): reading it from the
//! evidence, its time window and its Ed25519 verification against a directory's keys already in
//! memory (a warm instance's cache), and the engine's verdict with the check beside it, against
//! the same visit unsigned, interleaved in one run. Fails loudly if the answers are not the ones
//! it claims to time.

use std::time::{Duration, Instant};

use vigil_detect::signature::sign::{AgentForm, Key};
use vigil_detect::signature::{self, Keys, Outcome, SignatureCheck};
use vigil_detect::{Beyond, Engine, Evidence, RequestLine};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn summary(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this unoptimised only to
    // check its answers, where 20,000 Ed25519 verifications took four minutes.
    let runs = if std::env::args().any(|a| a == "--bench") {
        20_000
    } else {
        200
    };
    let key = Key::from_secret([7; 32]);
    let keys = Keys::from_jwks(key.jwks().as_bytes()).expect("the key's JWKS");
    let request = RequestLine {
        method: Some("GET".into()),
        authority: Some("shop.example".into()),
        path: Some("/checkout".into()),
    };
    let headers = key
        .sign_request(
            &request,
            "https://agent.example",
            AgentForm::Dictionary,
            "bench",
            Duration::from_secs(600),
        )
        .expect("signed");
    let ua = "Mozilla/5.0 (compatible; Claude-User/1.0; +Claude-User@anthropic.com)";
    let mut pairs = headers.clone();
    pairs.push(("user-agent".into(), ua.into()));
    let signed: Evidence = serde_json::from_value(serde_json::json!({
        "ipAddress": "84.128.0.1", "userAgent": ua,
        "headers": pairs.into_iter().collect::<std::collections::HashMap<_, _>>(),
        "request": {"method": "GET", "authority": "shop.example", "path": "/checkout"}
    }))
    .expect("evidence");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;

    // Verification with warm keys: read, window, Ed25519.
    let verify = || {
        let s = signature::read(&signed)
            .expect("signed")
            .expect("well-formed");
        s.check_time(now).expect("within its window");
        s.verify(&keys)
    };
    assert_eq!(verify(), Ok(()), "the signature must verify");
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let ok = std::hint::black_box(verify());
        times.push(t.elapsed());
        assert!(ok.is_ok());
    }
    let (p50, p99) = summary(times);
    println!(
        "verification with a warm directory (read, window, Ed25519), {runs} runs: p50 {p50:?}, p99 {p99:?}"
    );

    // The engine with the check beside it, against the same visit unsigned, interleaved.
    let engine = Engine::embedded().expect("the built-in data loads");
    let check = SignatureCheck {
        directory: Some("https://agent.example".into()),
        keyid: Some(key.thumbprint()),
        outcome: Outcome::Verified,
    };
    let unsigned: Evidence =
        serde_json::from_value(serde_json::json!({"ipAddress": "84.128.0.1", "userAgent": ua}))
            .expect("evidence");
    let with = Beyond {
        signature: Some(&check),
        ..Default::default()
    };
    let v = engine.evaluate_with(&signed, with);
    assert_eq!(v.agent.status.as_str(), "verified", "{v:?}");
    assert_eq!(engine.evaluate(&unsigned).agent.status.as_str(), "unsigned");
    let (mut a, mut b) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(engine.evaluate_with(std::hint::black_box(&signed), with));
        a.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(engine.evaluate(std::hint::black_box(&unsigned)));
        b.push(t.elapsed());
    }
    let ((sa, sa99), (ua50, ua99)) = (summary(a), summary(b));
    println!(
        "engine, signed and verified: p50 {sa:?} p99 {sa99:?}; the same user agent unsigned: p50 {ua50:?} p99 {ua99:?}"
    );
}
