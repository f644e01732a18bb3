//! The catalogue's parsing, and the agent verdict over whole visits.

use super::*;
use crate::evidence::Evidence;
use crate::reasons::{Code, Target};
use crate::signature::{Outcome, SignatureCheck};
use crate::tests::ENGINE;
use crate::visit::Beyond;

#[test]
fn the_token_automata_answer_as_a_search_in_catalogue_order() {
    let text = include_str!("../../../../data/agents.tsv");
    let c = Catalogue::parse(text).unwrap();
    // The automata build.rs built from the same file, as the engine reads them.
    let built = Catalogue::embedded().unwrap();
    let scan = |lower: &str, ranged: bool| {
        (c.agents.iter())
            .find(|k| {
                (!ranged || k.ranges.is_some())
                    && k.tokens.iter().any(|t| lower.contains(t.as_str()))
            })
            .map(|k| k.name.as_str())
    };
    // Each token alone, inside a browser's user agent, and two agents' tokens together.
    let tokens: Vec<&str> = (c.agents.iter())
        .flat_map(|k| k.tokens.iter().map(String::as_str))
        .collect();
    let mut uas = vec!["mozilla/5.0 (x11; linux x86_64) firefox/133.0".to_owned()];
    for (i, t) in tokens.iter().enumerate() {
        uas.push(format!(
            "mozilla/5.0 (compatible; {t}/1.0; +https://x.example)"
        ));
        uas.push(format!("{}; {t}", tokens[(i * 7 + 3) % tokens.len()]));
    }
    for ua in &uas {
        assert_eq!(
            c.by_user_agent(ua).map(|k| k.name.as_str()),
            scan(ua, false),
            "{ua}"
        );
        assert_eq!(
            c.range_claim(ua).map(|k| k.name.as_str()),
            scan(ua, true),
            "{ua}"
        );
        let name = |k: Option<&Known>| k.map(|k| k.name.clone());
        assert_eq!(name(built.by_user_agent(ua)), name(c.by_user_agent(ua)));
        assert_eq!(name(built.range_claim(ua)), name(c.range_claim(ua)));
    }
    assert!(uas.len() > 40, "{}", uas.len());
    assert!(
        Catalogue::parse("")
            .unwrap()
            .by_user_agent("gptbot")
            .is_none()
    );
}

#[test]
fn the_catalogue_parses_and_finds_agents_by_token_and_directory() {
    let text = include_str!("../../../../data/agents.tsv");
    let c = Catalogue::parse(text).unwrap();
    assert!(c.len() >= 20);
    let gpt = c
        .by_user_agent("mozilla/5.0 (compatible; gptbot/1.2)")
        .unwrap();
    assert_eq!(
        (gpt.operator.as_str(), gpt.category),
        ("OpenAI", Category::AiCrawler)
    );
    let agent = c.by_directory("https://chatgpt.com/").unwrap();
    assert_eq!(agent.category, Category::AiAgent);
    assert!(
        c.by_directory("https://chatgpt.com/.well-known/http-message-signatures-directory")
            .is_some()
    );
    assert!(c.by_directory("https://example.com").is_none());
    assert!(
        c.by_user_agent("mozilla/5.0 (x11; linux x86_64) firefox/133.0")
            .is_none()
    );
    assert!(Catalogue::parse("a\tb\tnot_a_category\t\t\t\n").is_err());
}

const CHATGPT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot";

fn ua(agent: &str, ip: &str) -> Evidence {
    serde_json::from_value(serde_json::json!({"userAgent": agent, "ipAddress": ip})).unwrap()
}

fn check(directory: &str, outcome: Outcome) -> SignatureCheck {
    SignatureCheck {
        directory: Some(directory.into()),
        keyid: Some("kid".into()),
        outcome,
    }
}

fn judged(e: &Evidence, c: Option<&SignatureCheck>) -> crate::verdict::Verdict {
    ENGINE.evaluate_with(
        e,
        Beyond {
            signature: c,
            ..Default::default()
        },
    )
}

fn codes(v: &crate::verdict::Verdict) -> Vec<Code> {
    v.reasons.iter().map(|r| r.code).collect()
}

#[test]
fn a_verified_signature_of_a_known_directory_is_a_verified_agent() {
    let e = ua(CHATGPT, "84.128.0.1");
    let c = check("https://chatgpt.com", Outcome::Verified);
    let v = judged(&e, Some(&c));
    assert_eq!(v.agent.status, Status::Verified);
    assert_eq!(v.agent.operator.as_deref(), Some("OpenAI"));
    assert_eq!(v.agent.category, Some(Category::AiAgent));
    assert_eq!(v.agent.via, Some(Via::Signature));
    assert!(codes(&v).contains(&Code::SignedAgent), "{v:?}");
    assert!(!codes(&v).contains(&Code::SpoofedAgent));
    // Claiming ChatGPT under another directory than OpenAI's: spoofed.
    let v = judged(
        &e,
        Some(&check("https://agents.example", Outcome::Verified)),
    );
    assert_eq!(v.agent.status, Status::Spoofed);
    assert!(v.score_bot >= 0.9);
    // A directory outside the catalogue, with a user agent of an agent that has none: the
    // signature holds under it, and its host is the operator.
    let claude = ua("Mozilla/5.0 (compatible; Claude-User/1.0)", "84.128.0.1");
    let v = judged(
        &claude,
        Some(&check("https://agents.example", Outcome::Verified)),
    );
    assert_eq!(v.agent.status, Status::Verified);
    assert_eq!(v.agent.operator.as_deref(), Some("agents.example"));
    assert_eq!(v.agent.category, Some(Category::AiAgent));
    assert!(codes(&v).contains(&Code::SignedAgent) && !codes(&v).contains(&Code::AiAgent));
}

#[test]
fn a_signature_that_fails_is_spoofed_and_scores_at_least_0_9() {
    let e = ua(CHATGPT, "84.128.0.1");
    let c = check(
        "https://chatgpt.com",
        Outcome::Invalid("does not verify".into()),
    );
    let v = judged(&e, Some(&c));
    assert_eq!(v.agent.status, Status::Spoofed);
    assert_eq!(v.agent.name.as_deref(), Some("ChatGPT agent"));
    assert!(codes(&v).contains(&Code::SpoofedAgent));
    assert!(v.score_bot >= 0.9);
    // A browser's user agent with a forged signature: spoofed all the same.
    let browser = ua(
        "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
        "84.128.0.1",
    );
    let v = judged(&browser, Some(&c));
    assert_eq!(v.agent.status, Status::Spoofed);
    assert!(crate::reasons::score(&v.reasons, Target::Bot) >= 0.9);
}

#[test]
fn an_unreachable_directory_is_signed_unknown_and_never_spoofed() {
    let c = check(
        "https://chatgpt.com",
        Outcome::Unverifiable("timed out".into()),
    );
    let v = judged(&ua(CHATGPT, "84.128.0.1"), Some(&c));
    assert_eq!(v.agent.status, Status::SignedUnknown);
    assert!(!codes(&v).contains(&Code::SpoofedAgent));
}

#[test]
fn unsigned_claims_are_declared_verified_by_range_or_spoofed_by_range() {
    // Declared, from a home address: unsigned, an AI agent by its user agent.
    let v = ENGINE.evaluate(&ua(CHATGPT, "84.128.0.1"));
    assert_eq!(
        v.agent.status,
        Status::Spoofed,
        "outside OpenAI's published ranges: {v:?}"
    );
    let claude = "Mozilla/5.0 (compatible; Claude-User/1.0; +Claude-User@anthropic.com)";
    let v = ENGINE.evaluate(&ua(claude, "84.128.0.1"));
    assert_eq!(v.agent.status, Status::Unsigned);
    assert_eq!(v.agent.via, Some(Via::UserAgent));
    assert_eq!(v.agent.category, Some(Category::AiAgent));
    assert!(codes(&v).contains(&Code::AiAgent));
    // Googlebot from Google's published ranges: verified by range.
    let v = ENGINE.evaluate(&ua(
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "66.249.66.1",
    ));
    assert_eq!(v.agent.status, Status::Verified);
    assert_eq!(v.agent.via, Some(Via::IpRange));
    assert_eq!(v.agent.operator.as_deref(), Some("Google"));
    // A browser claims nothing.
    let v = ENGINE.evaluate(&ua(
        "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
        "84.128.0.1",
    ));
    assert_eq!(v.agent, Agent::NONE);
}
