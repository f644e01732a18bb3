//! Agents by identity: who a visit says it is (its user agent, its `Signature-Agent`), and
//! whether that holds (a Web Bot Auth signature, or the operator's published ranges).
//!
//! The catalogue (`data/agents.tsv`, made by `make data` from `scripts/agents.tsv`) lists known
//! agents: operator, name, category, user-agent tokens, the range provider whose published ranges
//! it comes from, and the key directory it signs with.

use daachorse::DoubleArrayAhoCorasick;
use serde::{Deserialize, Serialize};

use crate::error::DataError;

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
pub mod verdict;

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

#[cfg(test)]
mod tests;
