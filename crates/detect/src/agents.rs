//! Agents by identity: who a visit says it is (its user agent, its `Signature-Agent`), and
//! whether that holds (a Web Bot Auth signature, or the operator's published ranges).
//!
//! The catalogue (`data/agents.tsv`, made by `make data` from `scripts/agents.tsv`) lists known
//! agents: operator, name, category, user-agent tokens, the range provider whose published ranges
//! it comes from, and the key directory it signs with.

use daachorse::DoubleArrayAhoCorasick;
use serde::{Deserialize, Serialize};

use crate::error::DataError;
use crate::signature::{Outcome, SignatureCheck};
use crate::{Code, Reason, Visit, visitor_text};

/// What kind of agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Acts for a person, at their request (ChatGPT agent, Claude-User, Perplexity-User).
    AiAgent,
    /// Collects pages to train or ground models (GPTBot, ClaudeBot, CCBot).
    AiCrawler,
    Search,
    Monitor,
    Preview,
    Archive,
    Seo,
    Feed,
    Other,
}

impl Category {
    pub const ALL: [Category; 9] = [
        Category::AiAgent,
        Category::AiCrawler,
        Category::Search,
        Category::Monitor,
        Category::Preview,
        Category::Archive,
        Category::Seo,
        Category::Feed,
        Category::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::AiAgent => "ai_agent",
            Category::AiCrawler => "ai_crawler",
            Category::Search => "search",
            Category::Monitor => "monitor",
            Category::Preview => "preview",
            Category::Archive => "archive",
            Category::Seo => "seo",
            Category::Feed => "feed",
            Category::Other => "other",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// Whether a visit's claim to be an agent holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Its signature verifies under the key directory it names (a known agent's, or one whose
    /// host is then its operator), or it comes from the claimed operator's published ranges.
    Verified,
    /// Signed, but under keys that could not be had: its directory could not be fetched or is
    /// not a signed directory, it names none, or it carries its keys itself.
    SignedUnknown,
    /// Claims an agent, and its signature or its address does not hold.
    Spoofed,
    /// No signature, and no range check that holds.
    Unsigned,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Verified => "verified",
            Status::SignedUnknown => "signed_unknown",
            Status::Spoofed => "spoofed",
            Status::Unsigned => "unsigned",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Status::Verified,
            Status::SignedUnknown,
            Status::Spoofed,
            Status::Unsigned,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }
}

/// How the agent was identified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    Signature,
    IpRange,
    UserAgent,
}

/// The agent verdict on one visit: every event carries one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    pub status: Status,
    pub operator: Option<String>,
    pub name: Option<String>,
    pub category: Option<Category>,
    pub via: Option<Via>,
}

impl Agent {
    /// A visit that claims no agent and carries no signature.
    pub const NONE: Agent = Agent {
        status: Status::Unsigned,
        operator: None,
        name: None,
        category: None,
        via: None,
    };

    fn of(status: Status, known: Option<&Known>, via: Via) -> Self {
        Agent {
            status,
            operator: known.map(|k| k.operator.clone()),
            name: known.map(|k| k.name.clone()),
            category: known.map(|k| k.category),
            via: Some(via),
        }
    }
}

/// One known agent of the catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct Known {
    pub operator: String,
    pub name: String,
    pub category: Category,
    /// Lower-case tokens its user agent contains.
    pub tokens: Vec<String>,
    /// The provider in `ip-ranges.tsv` whose published ranges it comes from.
    pub ranges: Option<String>,
    /// Its key directory's origin (`Signature-Agent`).
    pub directory: Option<String>,
}

/// The catalogue of known agents.
#[derive(Clone, Default)]
pub struct Catalogue {
    agents: Vec<Known>,
    /// Every agent's tokens, each valued with the first agent (in catalogue order) that lists
    /// it; and the same over the agents with published ranges. One scan of a user agent finds
    /// every token it contains, where a token-by-token search read it once per token.
    tokens: Option<DoubleArrayAhoCorasick<u32>>,
    ranged_tokens: Option<DoubleArrayAhoCorasick<u32>>,
}

impl std::fmt::Debug for Catalogue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalogue")
            .field("agents", &self.agents)
            .finish_non_exhaustive()
    }
}

mod tokens;

use tokens::pairs;

/// The automata over `pairs`' two lists (see [`Catalogue`]'s fields).
fn token_automata(
    [all, ranged]: [Vec<(String, u32)>; 2],
) -> Result<[Option<DoubleArrayAhoCorasick<u32>>; 2], DataError> {
    // Built from files only (the built-in ones are read back), for a few dozen tokens: no
    // prefilter.
    let build = |list: &[(String, u32)]| {
        crate::ua::automaton(list.iter().map(|(t, i)| (t.as_str(), *i)), false)
            .map_err(|e| DataError::Format(format!("agents.tsv tokens: {e}")))
    };
    Ok([build(&all)?, build(&ranged)?])
}

impl Catalogue {
    /// The catalogue of agents.tsv's text, its token automata built here.
    pub fn parse(text: &str) -> Result<Self, DataError> {
        let agents = Self::agents(text)?;
        let [tokens, ranged_tokens] = token_automata(pairs(text))?;
        Ok(Self {
            agents,
            tokens,
            ranged_tokens,
        })
    }

    /// The same, with the automata `build.rs` built from the same text.
    fn built(
        text: &str,
        [tokens, ranged_tokens]: [Option<DoubleArrayAhoCorasick<u32>>; 2],
    ) -> Result<Self, DataError> {
        Ok(Self {
            agents: Self::agents(text)?,
            tokens,
            ranged_tokens,
        })
    }

    /// The catalogue of data/agents.tsv as the binary carries it, with the token automata
    /// `build.rs` built.
    pub fn embedded() -> Result<Self, DataError> {
        macro_rules! built {
            ($file:literal) => {
                crate::ua::read(include_bytes!(concat!(env!("OUT_DIR"), "/", $file)))?
            };
        }
        Self::built(
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../data/agents.tsv"
            )),
            [built!("agents.tokens"), built!("agents.ranged-tokens")],
        )
    }

    fn agents(text: &str) -> Result<Vec<Known>, DataError> {
        let mut agents = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let bad = |what: &str| DataError::Format(format!("agents.tsv:{}: {what}", n + 1));
            let c: Vec<&str> = line.split('\t').collect();
            let [operator, name, category, tokens, ranges, directory] = c[..] else {
                return Err(bad("six columns expected"));
            };
            let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
            agents.push(Known {
                operator: operator.to_owned(),
                name: name.to_owned(),
                category: Category::parse(category).ok_or_else(|| bad("unknown category"))?,
                tokens: tokens::tokens(tokens),
                ranges: opt(ranges),
                directory: opt(directory).map(|d| origin_of(&d)),
            });
        }
        Ok(agents)
    }

    /// The first agent (in catalogue order) with a token in `lower`, of `automaton`'s agents.
    fn first_named(
        &self,
        automaton: Option<&DoubleArrayAhoCorasick<u32>>,
        lower: &str,
    ) -> Option<&Known> {
        let first = automaton?
            .find_overlapping_iter(lower)
            .map(|m| m.value())
            .min()?;
        self.agents.get(first as usize)
    }

    pub fn len(&self) -> usize {
        self.agents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// The agent a lower-cased user agent names.
    pub fn by_user_agent(&self, lower: &str) -> Option<&Known> {
        self.first_named(self.tokens.as_ref(), lower)
    }

    /// The agent whose key directory this is (a `Signature-Agent` URL, origin or full).
    pub fn by_directory(&self, url: &str) -> Option<&Known> {
        let origin = origin_of(url);
        self.agents
            .iter()
            .find(|k| k.directory.as_deref() == Some(origin.as_str()))
    }

    /// Operators with published ranges, by user-agent token (the address rule's crawler claims).
    pub fn range_claim(&self, lower: &str) -> Option<&Known> {
        self.first_named(self.ranged_tokens.as_ref(), lower)
    }
}

/// `https://host[:port]` of a URL, lower-cased, without path or trailing slash.
fn origin_of(url: &str) -> String {
    let lower = url.trim().to_ascii_lowercase();
    let (scheme, rest) = lower.split_once("://").unwrap_or(("https", lower.as_str()));
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    format!("{scheme}://{host}")
}

/// The agent verdict, after every rule has run (the address rule's `verified_bot` and
/// `spoofed_bot` are the range check), and the identity reasons it adds.
pub fn judge(catalogue: &Catalogue, v: &Visit<'_>, out: &mut Vec<Reason>) -> Agent {
    let claimed = v
        .agent_lower
        .as_deref()
        .and_then(|lower| catalogue.by_user_agent(lower));
    if let Some(check) = v.signature {
        return judge_signature(catalogue, check, claimed, out);
    }
    // The address rule's range check: the claim it judged is the catalogue's range claim.
    let ranged = out.iter().find_map(|r| match r.code {
        Code::VerifiedBot => Some(Status::Verified),
        Code::SpoofedBot => Some(Status::Spoofed),
        _ => None,
    });
    if let Some(status) = ranged {
        let known = v
            .agent_lower
            .as_deref()
            .and_then(|l| catalogue.range_claim(l));
        return Agent::of(status, known.or(claimed), Via::IpRange);
    }
    let Some(known) = claimed else {
        return Agent::NONE;
    };
    if matches!(known.category, Category::AiAgent | Category::AiCrawler) {
        out.push(Reason::new(
            Code::AiAgent,
            format!(
                "declares itself {} ({}, {}) in its user agent, unsigned and unverified",
                known.name,
                known.operator,
                known.category.as_str()
            ),
        ));
    }
    Agent::of(Status::Unsigned, Some(known), Via::UserAgent)
}

fn judge_signature(
    catalogue: &Catalogue,
    check: &SignatureCheck,
    claimed: Option<&Known>,
    out: &mut Vec<Reason>,
) -> Agent {
    let directory = check.directory.as_deref();
    let by_directory = directory.and_then(|d| catalogue.by_directory(d));
    let shown = |d: Option<&str>| d.map_or("no directory".to_owned(), |d| visitor_text(d, 100));
    let key = check
        .keyid
        .as_deref()
        .map_or(String::new(), |k| format!(", key {}", visitor_text(k, 50)));
    match &check.outcome {
        Outcome::Verified => match by_directory {
            Some(known) => {
                out.push(Reason::new(
                    Code::SignedAgent,
                    format!(
                        "{} of {} ({}), signed under {}{key}",
                        known.name,
                        known.operator,
                        known.category.as_str(),
                        shown(directory)
                    ),
                ));
                Agent::of(Status::Verified, Some(known), Via::Signature)
            }
            // It claims a known agent whose directory is another: not that agent.
            None if claimed.is_some_and(|k| k.directory.is_some()) => {
                let k =
                    claimed.map_or_else(String::new, |k| format!("{} of {}", k.name, k.operator));
                out.push(Reason::new(
                    Code::SpoofedAgent,
                    format!(
                        "claims to be {k} but is signed under {}{key}, not its operator's directory",
                        shown(directory)
                    ),
                ));
                Agent::of(Status::Spoofed, claimed, Via::Signature)
            }
            // A directory the catalogue does not know: the signature holds under the directory it
            // names, so its host is the operator; name and category are what the user agent says.
            None => {
                let host = directory.map(|d| visitor_text(host_of(d), 100));
                out.push(Reason::new(
                    Code::SignedAgent,
                    format!(
                        "signed under {}{key}, a directory outside the catalogue",
                        shown(directory)
                    ),
                ));
                Agent {
                    status: Status::Verified,
                    operator: host,
                    name: claimed.map(|k| k.name.clone()),
                    category: claimed.map(|k| k.category),
                    via: Some(Via::Signature),
                }
            }
        },
        Outcome::SelfSigned => Agent {
            status: Status::SignedUnknown,
            operator: None,
            name: None,
            category: None,
            via: Some(Via::Signature),
        },
        Outcome::Invalid(why) => {
            let known = by_directory.or(claimed);
            let claim = known.map_or(String::new(), |k| {
                format!(", claiming {} of {}", k.name, k.operator)
            });
            out.push(Reason::new(
                Code::SpoofedAgent,
                format!(
                    "its Web Bot Auth signature {}{claim} ({}{key})",
                    visitor_text(why, 120),
                    shown(directory)
                ),
            ));
            Agent::of(Status::Spoofed, known, Via::Signature)
        }
        Outcome::Unverifiable(_) => {
            let known = by_directory.or(claimed);
            Agent::of(Status::SignedUnknown, known, Via::Signature)
        }
    }
}

fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?', '#']).next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_automata_answer_as_a_search_in_catalogue_order() {
        let text = include_str!("../../../data/agents.tsv");
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
        let text = include_str!("../../../data/agents.tsv");
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

    use crate::signature::{Outcome, SignatureCheck};
    use crate::tests::ENGINE;
    use crate::{Beyond, Evidence, Target};

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

    fn judged(e: &Evidence, c: Option<&SignatureCheck>) -> crate::Verdict {
        ENGINE.evaluate_with(
            e,
            Beyond {
                signature: c,
                ..Default::default()
            },
        )
    }

    fn codes(v: &crate::Verdict) -> Vec<Code> {
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
}
