//! Speed and memory of the detection engine (`cargo bench --bench detect`): building the engine
//! from data/ (a Lambda cold start pays this once), one evaluation's latency over a mix of
//! visits, and the resident memory the loaded engine adds. The command-line comparison with the
//! npm isbot package is `benches/evaluate_vs_isbot.sh`.

use std::path::Path;
use std::time::{Duration, Instant};

use vigil_detect::path::{Page, Path as SessionPath};
use vigil_detect::{Beyond, Engine, Evidence};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    let before = rss_kib();
    let mut builds = Vec::new();
    let mut engine = None;
    let mut first = 0;
    for i in 0..10 {
        let t = Instant::now();
        engine = Some(Engine::load(&data).expect("data/ loads"));
        builds.push(t.elapsed());
        if i == 0 {
            first = rss_kib();
        }
    }
    let engine = engine.expect("built");
    builds.sort();
    println!(
        "engine build (read data/, parse ranges and zones, compile pattern sets), 10 runs: \
         median {:?}, min {:?}, max {:?}",
        percentile(&builds, 0.5),
        builds[0],
        builds[builds.len() - 1]
    );

    // What a Lambda cold start does (run_http_detecting): the data is in the binary, not on disk.
    let mut embedded = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        std::hint::black_box(Engine::embedded().expect("the built-in data loads"));
        embedded.push(t.elapsed());
    }
    embedded.sort();
    println!(
        "engine build from the data compiled into the binary (a Lambda cold start), 10 runs: \
         median {:?}, min {:?}, max {:?}",
        percentile(&embedded, 0.5),
        embedded[0],
        embedded[embedded.len() - 1]
    );

    let visits: Vec<Evidence> = [
        r#"{"ipAddress":"84.128.0.1","userAgent":"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36","headers":{"accept-language":"de-DE,de;q=0.9","sec-ch-ua":"\"Chromium\";v=\"131\", \"Google Chrome\";v=\"131\"","sec-ch-ua-platform":"\"Windows\"","sec-ch-ua-mobile":"?0"},"signals":{"webdriver":false,"languages":["de-DE"],"timeZone":"Europe/Berlin","plugins":5,"outerWidth":1920,"outerHeight":1040,"evalLength":33,"productSub":"20030107","webglRenderer":"ANGLE (Intel)","webrtcIps":["192.168.1.2"]}}"#,
        r#"{"ipAddress":"3.5.140.1","userAgent":"python-requests/2.32.3"}"#,
        r#"{"ipAddress":"66.249.66.1","userAgent":"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"}"#,
        r#"{"ipAddress":"2a02:8109::1","userAgent":"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1","signals":{"timeZone":"Asia/Tokyo","languages":["ja-JP"]}}"#,
        r#"{"userAgent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36","signals":{"webdriver":true,"plugins":0,"outerWidth":0}}"#,
    ]
    .iter()
    .map(|j| serde_json::from_str(j).expect("evidence"))
    .collect();
    // Warm the lazily built automata, as a warm Lambda instance has them.
    for v in &visits {
        std::hint::black_box(engine.evaluate(v));
    }
    let mut times = Vec::with_capacity(100_000);
    for i in 0..100_000 {
        let v = &visits[i % visits.len()];
        let t = Instant::now();
        std::hint::black_box(engine.evaluate(std::hint::black_box(v)));
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "one evaluation, 100,000 over {} kinds of visit: p50 {:?}, p99 {:?}, max {:?}",
        visits.len(),
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times[times.len() - 1]
    );
    path_cost(&engine);
    println!(
        "resident memory: {before} KiB before loading, {first} KiB with the engine loaded \
         (+{} KiB), {} KiB after 100,000 evaluations",
        first.saturating_sub(before),
        rss_kib()
    );
}

/// What judging a session's path adds to a page load's evaluation: the same visit with and
/// without its navigation and the session's path, alternated in one run (a ratio, not a time).
/// Fails if the path's page is not named `navigation_without_input`.
fn path_cost(engine: &Engine) {
    let plain: Evidence = serde_json::from_str(
        r#"{"ipAddress":"84.128.0.1","userAgent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36","signals":{"webdriver":false,"languages":["de-DE"],"timeZone":"Europe/Berlin","plugins":5,"evalLength":33}}"#,
    )
    .expect("evidence");
    let mut paged = plain.clone();
    if let Some(s) = paged.signals.as_mut() {
        s.navigation = Some(
            serde_json::from_str(
                r#"{"type":"navigate","referrer":"none","previous":{"presses":0,"keys":0,"moves":0,"visibleMs":2000,"left":"unknown"}}"#,
            )
            .expect("navigation"),
        );
    }
    let page = Page::of(&paged).expect("a page load");
    let path = SessionPath::default().after(page).after(page);
    let judged = engine.evaluate_with(
        &paged,
        Beyond {
            path: Some(&path),
            ..Default::default()
        },
    );
    assert!(
        judged
            .reasons
            .iter()
            .any(|r| r.code.name() == "navigation_without_input"),
        "the path bench's page is not named: {judged:?}"
    );
    assert!(engine.evaluate(&plain).reasons.is_empty());
    let (mut with, mut without) = (Vec::with_capacity(50_000), Vec::with_capacity(50_000));
    for _ in 0..50_000 {
        let t = Instant::now();
        let p = Page::of(std::hint::black_box(&paged)).map_or(path, |pg| path.after(pg));
        std::hint::black_box(engine.evaluate_with(
            &paged,
            Beyond {
                path: Some(&p),
                ..Default::default()
            },
        ));
        with.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(engine.evaluate(std::hint::black_box(&plain)));
        without.push(t.elapsed());
    }
    with.sort();
    without.sort();
    let (a, b) = (percentile(&with, 0.5), percentile(&without, 0.5));
    println!(
        "a page load with its navigation and the session's path, 50,000 alternated with the same \
         visit without: p50 {a:?} against {b:?} ({:.2}x), p99 {:?} against {:?}",
        a.as_secs_f64() / b.as_secs_f64(),
        percentile(&with, 0.99),
        percentile(&without, 0.99)
    );
}
