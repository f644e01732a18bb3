//! Accuracy of the detection engine on labelled corpora (`make eval`, which fetches them into
//! `.cache/eval` first): bot user agents flagged, browser user agents not, each pattern source also
//! graded on the other source's corpus, and addresses of each range category and of consumer ISPs.
//!
//! Usage: cargo run --release --example eval -- .cache/eval [data]

use std::path::{Path, PathBuf};

use vigil_detect::{Engine, Evidence, Signals};

const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (run make eval)", path.display()))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The cleaning rule for the isbot crate's browsers.txt, which collects user agents of every age:
/// an entry counts as a browser in use only if it looks like one (starts with `Mozilla/` or
/// `Opera/` and names its platform in parentheses), does not say it is something else (a URL,
/// or a bot, crawler, spider, headless (PhantomJS, SlimerJS) or HTTP-library word), and is not
/// Internet Explorer
/// (`MSIE`, `Trident/`), retired in 2022. What is dropped is counted and reported.
fn is_browser_entry(ua: &str) -> bool {
    let lower = ua.to_ascii_lowercase();
    (lower.starts_with("mozilla/") || lower.starts_with("opera/"))
        && lower.contains(" (")
        && ![
            "http://",
            "https://",
            "+http",
            "bot",
            "crawl",
            "spider",
            "curl",
            "wget",
            "python",
            "java/",
            "headless",
            "phantomjs",
            "slimerjs",
            "msie",
            "trident/",
        ]
        .iter()
        .any(|w| lower.contains(w))
}

fn engine(data: &Path, only_source: Option<&str>) -> Engine {
    let read = |n: &str| std::fs::read_to_string(data.join(n)).expect("data file");
    let patterns: String = read("bot-patterns.tsv")
        .lines()
        .filter(|l| only_source.is_none_or(|s| l.starts_with(&format!("{s}\t"))))
        .map(|l| format!("{l}\n"))
        .collect();
    Engine::from_data(
        &patterns,
        &read("ip-ranges.tsv"),
        &read("asn-hosting.tsv"),
        std::fs::read(data.join("country.mmdb")).expect("country.mmdb"),
        &read("zones.tsv"),
        &read("wire-fingerprints.tsv"),
        // The pattern sources are graded alone: no agent catalogue beside them.
        &if only_source.is_none() {
            read("agents.tsv")
        } else {
            String::new()
        },
        &read("MANIFEST"),
    )
    .expect("data loads")
}

/// How many of `evidence` have `score(verdict) >= min`, of how many.
fn share(
    e: &Engine,
    evidence: &[Evidence],
    score: fn(&vigil_detect::Verdict) -> f64,
    min: f64,
) -> (usize, usize) {
    let hit = evidence
        .iter()
        .filter(|ev| score(&e.evaluate(ev)) >= min)
        .count();
    (hit, evidence.len())
}

fn bot_score(v: &vigil_detect::Verdict) -> f64 {
    v.score_bot
}

fn proxy_score(v: &vigil_detect::Verdict) -> f64 {
    v.score_proxy_vpn
}

fn ua_only(uas: &[String]) -> Vec<Evidence> {
    uas.iter()
        .map(|u| Evidence {
            user_agent: Some(u.clone()),
            ..Evidence::default()
        })
        .collect()
}

fn row(name: &str, (hit, n): (usize, usize), target: &str, ok: bool) {
    let pct = if n == 0 {
        0.0
    } else {
        100.0 * hit as f64 / n as f64
    };
    println!(
        "| {name} | {n} | {hit} | {pct:.2}% | {target} | {} |",
        if ok { "met" } else { "NOT MET" }
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let corpora = PathBuf::from(args.get(1).map_or(".cache/eval", String::as_str));
    let data = PathBuf::from(args.get(2).map_or("data", String::as_str));
    let full = engine(&data, None);
    let cua_only = engine(&data, Some("crawler-user-agents"));
    let isbot_only = engine(&data, Some("isbot"));

    let cua_bots = ua_only(&lines(&corpora.join("bots-crawler-user-agents.txt")));
    let isbot_bots = ua_only(&lines(&corpora.join("isbot-crate-bots.txt")));
    let all_browsers = lines(&corpora.join("isbot-crate-browsers.txt"));
    let browsers: Vec<String> = all_browsers
        .iter()
        .filter(|u| is_browser_entry(u))
        .cloned()
        .collect();
    let browsers = ua_only(&browsers);

    println!("data: {}\n", full.data_version());
    println!("| corpus | entries | flagged | share | target | |");
    println!("|---|---|---|---|---|---|");
    let r = share(&full, &cua_bots, bot_score, 0.5);
    row(
        "crawler-user-agents instances, scoreBot >= 0.5",
        r,
        ">= 99%",
        r.0 * 100 >= r.1 * 99,
    );
    let r = share(&full, &isbot_bots, bot_score, 0.5);
    row(
        "isbot crate bots.txt, scoreBot >= 0.5",
        r,
        ">= 99%",
        r.0 * 100 >= r.1 * 99,
    );
    let r = share(&full, &browsers, bot_score, 0.5);
    if std::env::var_os("EVAL_SHOW").is_some() {
        for ev in browsers
            .iter()
            .filter(|ev| full.evaluate(ev).score_bot >= 0.5)
        {
            let v = full.evaluate(ev);
            eprintln!(
                "FP {:?} {:?}",
                ev.user_agent.as_deref().unwrap_or(""),
                v.reasons.first().map(|r| &r.detail)
            );
        }
    }
    row(
        &format!(
            "isbot crate browsers.txt (cleaned: {} of {}), scoreBot >= 0.5",
            browsers.len(),
            all_browsers.len()
        ),
        r,
        "<= 0.1%",
        r.0 * 1000 <= r.1,
    );
    let r = share(&isbot_only, &cua_bots, bot_score, 0.5);
    row(
        "isbot patterns alone on crawler-user-agents instances",
        r,
        "(cross-check)",
        true,
    );
    let r = share(&cua_only, &isbot_bots, bot_score, 0.5);
    row(
        "crawler-user-agents patterns alone on isbot bots.txt",
        r,
        "(cross-check)",
        true,
    );
    let r = share(&isbot_only, &browsers, bot_score, 0.5);
    row("isbot patterns alone on browsers", r, "(cross-check)", true);
    let r = share(&cua_only, &browsers, bot_score, 0.5);
    row(
        "crawler-user-agents patterns alone on browsers",
        r,
        "(cross-check)",
        true,
    );

    // Proxy side: every range's first address, with a browser's user agent.
    use vigil_detect::places::Kind;
    let mut by_kind: Vec<(&str, Vec<Evidence>, f64, &str)> = vec![
        ("Tor exits", Vec::new(), 0.9, ">= 0.9"),
        ("VPN ranges", Vec::new(), 0.9, ">= 0.9"),
        ("privacy relay ranges", Vec::new(), 0.5, ">= 0.5"),
        ("hosting and CDN ranges", Vec::new(), 0.5, ">= 0.5"),
    ];
    for (ip, label) in full.ranges().samples() {
        let i = match label.kind {
            Kind::Tor => 0,
            Kind::Vpn if label.provider.contains("Relay") => 2,
            Kind::Vpn => 1,
            Kind::Hosting | Kind::Cdn => 3,
            Kind::Crawler => continue,
        };
        by_kind[i].1.push(Evidence {
            ip_address: Some(ip),
            user_agent: Some(CHROME.into()),
            ..Evidence::default()
        });
    }
    for (name, evidence, min, target) in &by_kind {
        let r = share(&full, evidence, proxy_score, *min);
        row(
            &format!("{name}, scoreProxyVpn {target}"),
            r,
            target,
            r.0 * 100 >= r.1 * 99,
        );
    }
    // Addresses drawn from all that large hosting providers' networks announce (not only the
    // ranges they publish), with a browser's user agent.
    let mut providers: Vec<(String, usize, usize)> = Vec::new();
    let mut hosting = Vec::new();
    for line in lines(&corpora.join("hosting-networks.tsv")) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (Some(ip), Some(provider)) = (cols.first().and_then(|s| s.parse().ok()), cols.get(2))
        else {
            continue;
        };
        let e = Evidence {
            ip_address: Some(ip),
            user_agent: Some(CHROME.into()),
            ..Evidence::default()
        };
        let hit = usize::from(full.evaluate(&e).score_proxy_vpn >= 0.5);
        match providers.iter_mut().find(|(p, ..)| p == provider) {
            Some(p) => {
                p.1 += hit;
                p.2 += 1;
            }
            None => providers.push(((*provider).to_owned(), hit, 1)),
        }
        hosting.push(e);
    }
    let r = share(&full, &hosting, proxy_score, 0.5);
    let by_provider: Vec<String> = providers
        .iter()
        .map(|(p, hit, n)| format!("{p} {hit}/{n}"))
        .collect();
    row(
        &format!(
            "hosting-network addresses ({}), scoreProxyVpn >= 0.5",
            by_provider.join(", ")
        ),
        r,
        ">= 90%",
        r.0 * 10 >= r.1 * 9,
    );
    // Consumer ISPs with consistent browser signals: the zone and language of the address's
    // country.
    let mut isp = Vec::new();
    for line in lines(&corpora.join("consumer-isp.tsv")) {
        let Some(ip) = line.split('\t').next().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Some(c) = full.geo().country(ip) else {
            continue;
        };
        let Some(zone) = full.geo().a_zone_of(c) else {
            continue;
        };
        let region = String::from_utf8_lossy(&c).into_owned();
        isp.push(Evidence {
            ip_address: Some(ip),
            user_agent: Some(CHROME.into()),
            signals: Some(Signals {
                user_agent: Some(CHROME.into()),
                time_zone: Some(zone.to_owned()),
                languages: Some(vec![format!("en-{region}")]),
                webdriver: Some(false),
                plugins: Some(5),
                ..Signals::default()
            }),
            ..Evidence::default()
        });
    }
    let r = share(&full, &isp, proxy_score, 0.2);
    row(
        "consumer ISP addresses, consistent signals, scoreProxyVpn >= 0.2",
        r,
        "< 0.2 (none)",
        r.0 * 1000 <= r.1,
    );
    let r = share(&full, &isp, bot_score, 0.5);
    row(
        "consumer ISP addresses, consistent signals, scoreBot >= 0.5",
        r,
        "(none expected)",
        r.0 == 0,
    );
}
