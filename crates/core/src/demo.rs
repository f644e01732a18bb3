//! The demo shop's day: what `vigil serve` shows on a fresh store. Every visit is a scripted
//! piece of evidence posted through the events route's own service call
//! ([`Ingestion::record_event`](crate::service::events::Ingestion::record_event)) at a back-dated time, so the engine judges each one, velocity counts
//! them as they come, and totals, charts, flagged sessions and their reasons all agree, as they
//! would for a real shop: people across the day's curve, a scraper burst, a credential-stuffing
//! run from hosting addresses, a few Tor and VPN visitors, AI agents (one declared and verified by
//! its operator's ranges, one signing its requests with Web Bot Auth).
//!
//! The script is seeded, so two fresh stores get the same day (up to the random ids).

use std::net::IpAddr;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::domain::{
    AccountId, AddressedEvidence, Clock, ManualClock, ProjectId, SessionId, Timestamp,
};
use crate::seed::{DEMO_ACCOUNT, DEMO_PROJECT, SeedError};
use crate::service::vigil::{Detecting, Vigil};
use crate::store::Store;
use crate::store::items::DirectoryItem;
use vigil_detect::Evidence;
use vigil_detect::RequestLine;
use vigil_detect::signature::sign::{AgentForm, Key};

/// People's sessions over the day.
const PEOPLE: usize = 420;
const HOUR_MS: i64 = 3_600_000;
const MINUTE_MS: i64 = 60_000;

/// The demo AI agent's key directory: its keys are put in the store as a fetched directory's
/// would be (the demo makes no fetch), and its key is a test key derived from a public phrase.
const AGENT_ORIGIN: &str = "https://agent.demo.example";
const AGENT_PHRASE: &str = "vigil demo agent";

/// What the day holds, for the banner and the tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Day {
    pub events: usize,
    pub sessions: usize,
}

/// Where people browse from: a residential address, its time zone and language.
const HOMES: [(&str, &str, &str); 6] = [
    ("84.128.0.", "Europe/Berlin", "de-DE"),
    ("81.2.69.", "Europe/London", "en-GB"),
    ("89.160.20.", "Europe/Stockholm", "sv-SE"),
    ("2.125.160.", "Europe/London", "en-GB"),
    ("216.160.83.", "America/Los_Angeles", "en-US"),
    ("175.16.199.", "Asia/Shanghai", "zh-CN"),
];

/// People's browsers: user agent, `navigator.platform`, touch points.
const BROWSERS: [(&str, &str, u32); 4] = [
    (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36",
        "Win32",
        0,
    ),
    (
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
        "MacIntel",
        0,
    ),
    (
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
        "iPhone",
        5,
    ),
    (
        "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
        "Linux x86_64",
        0,
    ),
];

const PAGES: [&str; 6] = [
    "/",
    "/tents",
    "/tents/ultralight-2p",
    "/boots",
    "/cart",
    "/checkout",
];

/// One scripted visit: when, which session, what evidence.
struct Visit {
    at_ms: i64,
    session: String,
    evidence: Value,
}

/// A person's visit: a residential address and a browser's signals, which make a device key.
fn person(rng: &mut StdRng, home: usize, browser: usize, host: u8, page: &str) -> Value {
    let (prefix, zone, lang) = HOMES[home % HOMES.len()];
    let (ua, platform, touch) = BROWSERS[browser % BROWSERS.len()];
    let (w, h) = [(1920, 1080), (1440, 900), (2560, 1440), (1366, 768)][rng.random_range(0..4)];
    let cores = [4, 8, 12, 16][rng.random_range(0..4)];
    json!({
        "ipAddress": format!("{prefix}{host}"),
        "userAgent": ua,
        "request": {"method": "GET", "authority": "shop.example", "path": page},
        "signals": {
            "webdriver": false, "userAgent": ua, "platform": platform, "languages": [lang],
            "timeZone": zone, "screenWidth": w, "screenHeight": h,
            "hardwareConcurrency": cores,
            "maxTouchPoints": touch,
        },
    })
}

/// The day's visits, in time order, ending at `end_ms`.
fn script(end_ms: i64, agent: &Key) -> Result<Vec<Visit>, String> {
    let mut rng = StdRng::seed_from_u64(7);
    let start = end_ms - 24 * HOUR_MS;
    let mut out = Vec::new();
    let mut add = |at_ms: i64, session: String, evidence: Value| {
        out.push(Visit {
            at_ms: at_ms.clamp(start, end_ms - 1_000),
            session,
            evidence,
        })
    };
    // The sessions the banner's examples name.
    add(
        end_ms - 40 * MINUTE_MS,
        "sess_clean".into(),
        person(&mut rng, 0, 0, 10, "/"),
    );
    add(
        end_ms - 38 * MINUTE_MS,
        "sess_clean".into(),
        person(&mut rng, 0, 0, 10, "/tents"),
    );
    add(
        end_ms - 36 * MINUTE_MS,
        "sess_proxy".into(),
        person(&mut rng, 1, 1, 23, "/"),
    );
    let mut relayed = person(&mut rng, 1, 1, 23, "/checkout");
    relayed["ipAddress"] = json!("5.253.204.162");
    add(end_ms - 35 * MINUTE_MS, "sess_proxy".into(), relayed);
    add(
        end_ms - 34 * MINUTE_MS,
        "sess_bot".into(),
        json!({"ipAddress": "3.5.140.2", "userAgent": "curl/8.5.0"}),
    );
    // A long browsing session: 150 pages over three hours, for paging.
    for i in 0..150 {
        let page = PAGES[i % PAGES.len()];
        add(
            end_ms - 3 * HOUR_MS + i as i64 * 70_000,
            "sess_long".into(),
            person(&mut rng, 2, 3, 99, page),
        );
    }

    // People across the day: fewer at night, most in the evening.
    let weights: Vec<f64> = (0..24)
        .map(|h| 1.0 + 9.0 * (1.0 - (f64::from(h) - 19.0).abs() / 10.0).max(0.0))
        .collect();
    let total: f64 = weights.iter().sum();
    for p in 0..PEOPLE {
        let mut pick = rng.random::<f64>() * total;
        let hour = weights
            .iter()
            .position(|w| {
                pick -= w;
                pick <= 0.0
            })
            .unwrap_or(23);
        let at = start + hour as i64 * HOUR_MS + rng.random_range(0..HOUR_MS);
        let (home, browser, host) = (
            rng.random_range(0..HOMES.len()),
            rng.random_range(0..BROWSERS.len()),
            rng.random_range(2..250u8),
        );
        let session = format!("{:012x}", rng.random::<u64>() >> 16);
        for view in 0..rng.random_range(1..5) {
            let page = PAGES[(p + view) % PAGES.len()];
            let e = person(&mut rng, home, browser, host, page);
            add(at + view as i64 * 95_000, session.clone(), e);
        }
    }

    // A scraper burst: 90 sessions in ten minutes from three cloud addresses.
    let burst = start + 14 * HOUR_MS;
    for i in 0..90 {
        let ua = [
            "python-requests/2.32.3",
            "Scrapy/2.11 (+https://scrapy.org)",
        ][i % 2];
        let session = format!("scrape-{i:03}");
        add(
            burst + i as i64 * 6_500,
            session,
            json!({"ipAddress": format!("3.5.140.{}", 2 + i % 3), "userAgent": ua,
                   "request": {"method": "GET", "authority": "shop.example", "path": PAGES[i % 4]}}),
        );
    }

    // Credential stuffing: 60 login attempts in fifteen minutes from hosting addresses, by a
    // driven headless browser.
    let stuffing = start + 20 * HOUR_MS;
    let hosts = ["104.131.10.7", "51.15.0.9", "95.216.0.14", "45.32.0.21"];
    for i in 0..60 {
        let ua = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/142.0.0.0 Safari/537.36";
        add(
            stuffing + i as i64 * 15_000,
            format!("login-{i:03}"),
            json!({"ipAddress": hosts[i % hosts.len()], "userAgent": ua,
                   "request": {"method": "POST", "authority": "shop.example", "path": "/login"},
                   "signals": {"webdriver": i % 2 == 0, "userAgent": ua, "languages": ["en-US"]}}),
        );
    }

    // Tor and VPN visitors, spread over the day.
    let relays = [
        "185.220.101.4",
        "2.26.97.42",
        "5.2.67.226",
        "2.58.241.66",
        "5.157.13.2",
        "23.144.160.67",
        "23.144.160.86",
    ];
    for (i, ip) in relays.iter().enumerate() {
        let mut e = person(&mut rng, i, i, 1, "/tents");
        e["ipAddress"] = json!(ip);
        add(
            start + (3 + 3 * i as i64) * HOUR_MS,
            format!("relay-{i}"),
            e,
        );
    }

    // AI agents: ChatGPT agent from OpenAI's published ranges, and an agent signing its
    // requests under its key directory (the last minutes: a signature is checked against the
    // time it is used, and it was made now).
    for i in 0..4 {
        add(
            start + (9 + 4 * i) * HOUR_MS,
            format!("chatgpt-{i}"),
            json!({"ipAddress": "20.171.206.10",
                   "userAgent": "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot",
                   "request": {"method": "GET", "authority": "shop.example", "path": "/tents"}}),
        );
    }
    for i in 0..3 {
        let ua = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Claude-User/1.0; +Claude-User@anthropic.com)";
        let request = RequestLine {
            method: Some("GET".into()),
            authority: Some("shop.example".into()),
            path: Some(PAGES[i + 1].into()),
        };
        let nonce = format!("demo-{}-{i}", rng.random::<u64>());
        let mut headers: serde_json::Map<String, Value> = agent
            .sign_request(
                &request,
                AGENT_ORIGIN,
                AgentForm::Dictionary,
                &nonce,
                std::time::Duration::from_secs(3600),
            )?
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        headers.insert("user-agent".into(), ua.into());
        add(
            end_ms - 40_000 + i as i64 * 10_000,
            format!("claude-{i}"),
            json!({"ipAddress": "160.79.104.10", "userAgent": ua, "headers": headers,
                   "request": request}),
        );
    }
    out.sort_by_key(|v| v.at_ms);
    Ok(out)
}

/// Posts the demo shop's day to the demo project through `app`, whose clock the day sets (a
/// service of its own on the same store as the server's, so the server's clock is never moved).
/// `store` receives the demo agent's directory.
pub async fn day<S: Store>(
    app: &Vigil<S, Detecting>,
    clock: &ManualClock,
    store: &S,
) -> Result<Day, SeedError> {
    let invalid = |m: String| SeedError::Invalid(m);
    let now = clock.now();
    let agent = Key::from_secret(Sha256::digest(AGENT_PHRASE.as_bytes()).into());
    // Signatures are checked against the time they are used: the real one, not the day's.
    let real_now = Timestamp::now();
    store
        .cache_directory(&DirectoryItem::new(
            AGENT_ORIGIN,
            agent.jwks(),
            real_now.unix_seconds() + 7 * 24 * 3600,
        ))
        .await
        .map_err(|e| invalid(format!("demo agent directory: {e}")))?;
    let visits = script(now.unix_millis(), &agent).map_err(invalid)?;
    let (account, project) = (
        AccountId::parse(DEMO_ACCOUNT).map_err(|e| invalid(e.to_string()))?,
        ProjectId::parse(DEMO_PROJECT).map_err(|e| invalid(e.to_string()))?,
    );
    let mut sessions = std::collections::HashSet::new();
    for v in &visits {
        let at = Timestamp::from_unix_millis(v.at_ms).map_err(|e| invalid(e.to_string()))?;
        clock.set(at);
        let ip: IpAddr = v.evidence["ipAddress"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| invalid(format!("demo visit without an address: {}", v.evidence)))?;
        let evidence: Evidence = serde_json::from_value(v.evidence.clone())
            .map_err(|e| invalid(format!("demo evidence: {e}")))?;
        let session = SessionId::parse(v.session.as_str()).map_err(|e| invalid(e.to_string()))?;
        app.ingestion()
            .record_event(
                &account,
                &project,
                &session,
                &AddressedEvidence::new(ip, evidence),
                None,
            )
            .await?;
        sessions.insert(v.session.as_str());
    }
    clock.set(now);
    Ok(Day {
        events: visits.len(),
        sessions: sessions.len(),
    })
}
