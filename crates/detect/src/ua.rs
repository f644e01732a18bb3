//! User agents: known bots by pattern (crawler-user-agents and isbot), and what a user agent
//! claims to be (browser, engine, platform, mobile).
//!
//! Most patterns (1,572 of 1,708, top-level alternatives apart) are plain text: they are found
//! together by Aho-Corasick automata (double-array, `daachorse`), which `build.rs` builds from
//! the data and the binary carries, so that a cold start reads them instead of building them.
//! The rest are regular expressions. Most of those have a gate, text every match contains
//! (`AdsBot` in `AdsBot-Google([^-]|$)`): the gates are in the same automata, so one scan finds
//! both, and an expression is compiled the first time a user agent holds its gate, and run only
//! on user agents that do. The few without one (`^\d+\b`) are compiled at start.
//! Expressions run in ASCII mode (`\w`, `\d` and `\b` as ASCII: user agents are ASCII, and the
//! Unicode classes cost most of the compilation). Those that need look-around, which the
//! `regex` crate does not do, run on `fancy-regex`.

use std::sync::OnceLock;

use daachorse::DoubleArrayAhoCorasick;
use regex_automata::meta::{self, Regex};
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind, PatternSet};

use crate::error::DataError;

mod split;

pub use split::{Expression, Split, Value, automaton, split};

/// The bot patterns of data/bot-patterns.tsv, each source matched as it means its patterns:
/// crawler-user-agents' case-sensitively, isbot's case-insensitively (they are written in lower
/// case and run on the lower-cased user agent, which keeps the automaton small).
pub struct BotPatterns {
    /// crawler-user-agents' plain-text patterns and its expressions' gates, each valued with
    /// its category or gate ([`Value::cased`]).
    cased_text: Option<DoubleArrayAhoCorasick<u32>>,
    /// Its expressions without a gate: one alternation per category that has any, matched
    /// together, with the category of each.
    cased: Option<Regex>,
    cased_category: Vec<u32>,
    cased_lookaround: Vec<(u32, fancy_regex::Regex)>,
    /// Its expressions with one, each with its category.
    cased_gated: Gated,
    /// The categories' names, most telling first.
    categories: Vec<String>,
    /// isbot's patterns, in lower case: plain text and the gates in one automaton
    /// ([`Value::lower`]), the expressions without a gate (one alternation, and those that need
    /// look-around), and those with one.
    lower_text: Option<DoubleArrayAhoCorasick<u32>>,
    lower: Option<Regex>,
    lower_lookaround: Vec<fancy_regex::Regex>,
    lower_gated: Gated,
}

/// Expressions with gates, by gate (found by the automaton of their side).
struct Gated {
    /// Sorted by gate; gate `g`'s are `expressions[start[g]..start[g + 1]]`.
    expressions: Vec<Lazy>,
    start: Vec<usize>,
}

/// An expression compiled the first time it is needed (None: it did not compile, which the
/// tests and `BotPatterns::parse` rule out for the data they see).
struct Lazy {
    category: u32,
    expression: Expression,
    compiled: OnceLock<Option<Compiled>>,
}

enum Compiled {
    Regex(Regex),
    Lookaround(fancy_regex::Regex),
}

impl Lazy {
    fn compiled(&self) -> Option<&Compiled> {
        self.compiled
            .get_or_init(|| compile_one(&self.expression).ok())
            .as_ref()
    }

    fn is_match(&self, text: &str) -> bool {
        match self.compiled() {
            Some(Compiled::Regex(re)) => re.is_match(text),
            Some(Compiled::Lookaround(re)) => re.is_match(text).unwrap_or(false),
            None => false,
        }
    }
}

fn fancy(p: &str) -> Result<fancy_regex::Regex, DataError> {
    fancy_regex::Regex::new(p).map_err(|e| DataError::Format(format!("bot pattern {p:?}: {e}")))
}

fn compile_one(e: &Expression) -> Result<Compiled, DataError> {
    if e.lookaround {
        fancy(&e.pattern).map(Compiled::Lookaround)
    } else {
        compile(std::slice::from_ref(&e.pattern), MatchKind::LeftmostFirst).map(Compiled::Regex)
    }
}

impl Gated {
    /// `expressions` (with their categories) that have a gate, by their gate's index in
    /// [`split::gates`]'s list.
    fn new<'a>(
        expressions: impl Iterator<Item = (u32, &'a Expression)> + Clone,
    ) -> Result<Self, DataError> {
        let names = split::gates(expressions.clone().map(|(_, e)| e));
        let mut by_gate: Vec<(usize, Lazy)> = Vec::new();
        for (category, e) in expressions {
            let Some(gate) = e.gate.as_deref() else {
                continue;
            };
            let g = names
                .binary_search(&gate)
                .map_err(|_| DataError::Format(format!("bot pattern gate {gate:?}")))?;
            by_gate.push((
                g,
                Lazy {
                    category,
                    expression: e.clone(),
                    compiled: OnceLock::new(),
                },
            ));
        }
        by_gate.sort_by_key(|(g, _)| *g);
        let mut start = vec![0; names.len() + 1];
        for (g, _) in &by_gate {
            start[g + 1] += 1;
        }
        for g in 0..names.len() {
            start[g + 1] += start[g];
        }
        Ok(Self {
            expressions: by_gate.into_iter().map(|(_, e)| e).collect(),
            start,
        })
    }

    /// The expressions of the gates `open` holds (as bits).
    fn of<'a>(&'a self, open: &'a Gates) -> impl Iterator<Item = &'a Lazy> + 'a {
        open.iter().flat_map(|g| {
            let range = self.start.get(g).copied().unwrap_or(0)
                ..self.start.get(g + 1).copied().unwrap_or(0);
            self.expressions.get(range).unwrap_or_default()
        })
    }

    /// Compiles every expression now, failing on the first that does not compile.
    fn compile_all(&self) -> Result<(), DataError> {
        for e in &self.expressions {
            e.compiled.set(Some(compile_one(&e.expression)?)).ok();
        }
        Ok(())
    }
}

/// The gates a scan found, each once, in order; a set of bits on the stack for the first 256,
/// a list past them.
#[derive(Default)]
struct Gates {
    bits: [u64; 4],
    more: Vec<usize>,
}

impl Gates {
    fn insert(&mut self, g: u32) {
        let g = g as usize;
        match self.bits.get_mut(g / 64) {
            Some(word) => *word |= 1 << (g % 64),
            None if !self.more.contains(&g) => self.more.push(g),
            None => {}
        }
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        // Each word's set bits, lowest first, clearing each as it is read.
        let set = self.bits.iter().enumerate().flat_map(|(w, &word)| {
            let mut word = word;
            std::iter::from_fn(move || {
                let bit = (word != 0).then(|| word.trailing_zeros() as usize)?;
                word &= word - 1;
                Some(w * 64 + bit)
            })
        });
        set.chain(self.more.iter().copied())
    }
}

/// Expressions as the bot patterns are compiled: ASCII classes (`\w`, `\d`, `\b`) over bytes,
/// with no captures and no literal prefilter. A prefilter would be an automaton of the
/// patterns' literals built at every start (most of the compilation), to skip through a
/// hundred bytes of user agent the lazy DFA reads as fast.
fn compile(patterns: &[String], kind: MatchKind) -> Result<Regex, DataError> {
    meta::Builder::new()
        .configure(
            meta::Config::new()
                .match_kind(kind)
                .which_captures(WhichCaptures::None)
                .auto_prefilter(false)
                .nfa_size_limit(Some(64 << 20))
                .hybrid_cache_capacity(16 << 20),
        )
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .build_many(patterns)
        .map_err(|e| {
            // Name the pattern at fault, not the whole set.
            let bad = match patterns {
                [one] => Some(one),
                _ => (patterns.iter()).find(|p| compile(std::slice::from_ref(p), kind).is_err()),
            };
            DataError::Format(format!(
                "bot pattern {bad:?} is not a valid expression: {e}"
            ))
        })
}

impl BotPatterns {
    /// Parses `source \t category \t pattern` lines (`#` comments), building everything and
    /// compiling every expression (so that a bad one is refused here, not skipped later).
    pub fn parse(text: &str) -> Result<Self, DataError> {
        let split = split(text).map_err(DataError::Format)?;
        let cased_text = split.cased_automaton().map_err(DataError::Format)?;
        let lower_text = split.lower_automaton().map_err(DataError::Format)?;
        let patterns = Self::compile(split, [cased_text, lower_text])?;
        patterns.cased_gated.compile_all()?;
        patterns.lower_gated.compile_all()?;
        Ok(patterns)
    }

    /// The patterns of data/bot-patterns.tsv as the binary carries them: the automata and the
    /// expressions `build.rs` split and built from it. The gated expressions compile when first
    /// needed; the tests compile every one.
    pub fn embedded() -> Result<Self, DataError> {
        macro_rules! built {
            ($file:literal) => {
                read(include_bytes!(concat!(env!("OUT_DIR"), "/", $file)))?
            };
        }
        let split =
            Split::from_expressions(include_str!(concat!(env!("OUT_DIR"), "/bots.expressions")))
                .map_err(DataError::Format)?;
        Self::compile(split, [built!("bots.cased"), built!("bots.lower")])
    }

    /// The patterns of `split`, its automata given ([`Split::cased_automaton`] and
    /// [`Split::lower_automaton`]).
    fn compile(
        split: Split,
        [cased_text, lower_text]: [Option<DoubleArrayAhoCorasick<u32>>; 2],
    ) -> Result<Self, DataError> {
        // The expressions without a gate: one alternation per category, matched together.
        let mut alternations: Vec<(u32, Vec<&str>)> = Vec::new();
        let mut cased_lookaround = Vec::new();
        for (c, e) in split.cased.iter().filter(|(_, e)| e.gate.is_none()) {
            if e.lookaround {
                cased_lookaround.push((*c, fancy(&e.pattern)?));
                continue;
            }
            match alternations.iter_mut().find(|(a, _)| a == c) {
                Some((_, list)) => list.push(&e.pattern),
                None => alternations.push((*c, vec![&e.pattern])),
            }
        }
        let cased_category = alternations.iter().map(|(c, _)| *c).collect();
        let alternations: Vec<String> = (alternations.iter()).map(|(_, l)| l.join("|")).collect();
        // Every category that matches, not the first: the most telling of them is chosen.
        let cased = if alternations.is_empty() {
            None
        } else {
            Some(compile(&alternations, MatchKind::All)?)
        };
        let ungated = |lookaround: bool| {
            (split.lower.iter())
                .filter(move |e| e.gate.is_none() && e.lookaround == lookaround)
                .map(|e| e.pattern.as_str())
        };
        let lower: Vec<&str> = ungated(false).collect();
        let lower = if lower.is_empty() {
            // An empty alternation would match everything.
            None
        } else {
            Some(compile(&[lower.join("|")], MatchKind::LeftmostFirst)?)
        };
        let lower_lookaround = ungated(true).map(fancy).collect::<Result<_, _>>()?;
        Ok(Self {
            cased_text,
            cased,
            cased_category,
            cased_lookaround,
            cased_gated: Gated::new(split.cased.iter().map(|(c, e)| (*c, e)))?,
            categories: split.categories,
            lower_text,
            lower,
            lower_lookaround,
            lower_gated: Gated::new(split.lower.iter().map(|e| (0, e)))?,
        })
    }

    /// Whether `ua` is a known bot's, and if so its category ("AI crawler", "HTTP library", ...;
    /// "bot" when only a generic pattern matched). `lower` is `ua` in lower case.
    pub fn category(&self, ua: &str, lower: &str) -> Option<&str> {
        // The most telling category among the plain-text matches, and the gates there ...
        let (mut best, mut open) = (None::<u32>, Gates::default());
        for m in (self.cased_text.iter()).flat_map(|ac| ac.find_overlapping_iter(ua)) {
            let (category, gate) = Value::cased_parts(m.value());
            best = best.into_iter().chain(category).min();
            if let Some(g) = gate {
                open.insert(g);
            }
        }
        // ... among the expressions' without a gate ...
        if let Some(re) = &self.cased {
            let mut matched = PatternSet::new(re.pattern_len());
            re.which_overlapping_matches(&Input::new(ua), &mut matched);
            let found = matched
                .iter()
                .filter_map(|i| self.cased_category.get(i.as_usize()));
            best = best.into_iter().chain(found.copied()).min();
        }
        for (c, re) in &self.cased_lookaround {
            if best.is_none_or(|b| *c < b) && re.is_match(ua).unwrap_or(false) {
                best = Some(*c);
            }
        }
        // ... and among those whose gate is there that could tell more: the most telling.
        for e in self.cased_gated.of(&open) {
            if best.is_none_or(|b| e.category < b) && e.is_match(ua) {
                best = Some(e.category);
            }
        }
        if let Some(c) = best {
            return Some(
                self.categories
                    .get(c as usize)
                    .map_or("bot", String::as_str),
            );
        }
        // isbot's: any plain text, else any expression that matches.
        let mut open = Gates::default();
        for m in (self.lower_text.iter()).flat_map(|ac| ac.find_overlapping_iter(lower)) {
            match Value::lower_gate(m.value()) {
                None => return Some("bot"),
                Some(g) => open.insert(g),
            }
        }
        let generic = (self.lower.as_ref()).is_some_and(|re| re.is_match(lower))
            || (self.lower_lookaround.iter()).any(|re| re.is_match(lower).unwrap_or(false))
            || (self.lower_gated.of(&open)).any(|e| e.is_match(lower));
        generic.then_some("bot")
    }
}

/// An automaton `build.rs` wrote (no bytes: no automaton), checked as it is read.
pub(crate) fn read(bytes: &[u8]) -> Result<Option<DoubleArrayAhoCorasick<u32>>, DataError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    match DoubleArrayAhoCorasick::deserialize(bytes) {
        Ok((automaton, [])) => Ok(Some(automaton)),
        _ => Err(DataError::Format("a built-in automaton".into())),
    }
}

/// The browser family a user agent claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Browser {
    Chrome,
    Edge,
    Firefox,
    Safari,
    Other,
}

/// What a user agent string claims about the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    pub browser: Browser,
    pub mobile: bool,
    /// Windows, macOS, Linux, Android, iOS, Chrome OS, as client hints name them.
    pub platform: Option<&'static str>,
}

impl Claim {
    pub fn of(ua: &str) -> Self {
        let browser = if ua.contains("Edg/") {
            Browser::Edge
        } else if ua.contains("Firefox/") || ua.contains("FxiOS/") {
            Browser::Firefox
        } else if ua.contains("Chrome/") || ua.contains("CriOS/") || ua.contains("Chromium/") {
            Browser::Chrome
        } else if ua.contains("Safari/") && ua.contains("Version/") {
            Browser::Safari
        } else {
            Browser::Other
        };
        let platform = if ua.contains("Android") {
            Some("Android")
        } else if ua.contains("iPhone") || ua.contains("iPad") || ua.contains("iPod") {
            Some("iOS")
        } else if ua.contains("Windows") {
            Some("Windows")
        } else if ua.contains("CrOS") {
            Some("Chrome OS")
        } else if ua.contains("Macintosh") || ua.contains("Mac OS X") {
            Some("macOS")
        } else if ua.contains("Linux") || ua.contains("X11") {
            Some("Linux")
        } else {
            None
        };
        Self {
            browser,
            mobile: ua.contains("Mobile") || ua.contains("Android") && !ua.contains("Tablet"),
            platform,
        }
    }

    /// Blink (Chrome, Edge) and WebKit browsers: `eval` is 33 characters and productSub
    /// 20030107; Gecko: 37 and 20100101.
    pub fn engine(self) -> Option<(u32, &'static str)> {
        match self.browser {
            Browser::Chrome | Browser::Edge | Browser::Safari => Some((33, "20030107")),
            Browser::Firefox => Some((37, "20100101")),
            Browser::Other => None,
        }
    }
}

/// Headless browsers that say so. (Not Electron: its user agents are desktop apps people use,
/// Slack's and Brave's first builds among them.)
pub fn headless_marker(ua: &str) -> Option<&'static str> {
    ["HeadlessChrome", "PhantomJS", "SlimerJS", "HtmlUnit"]
        .into_iter()
        .find(|m| ua.contains(m))
}

#[cfg(test)]
mod tests {
    use super::split::{js_class_hyphens, needs_lookaround, plain_text};
    use super::*;

    const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

    fn patterns() -> BotPatterns {
        BotPatterns::parse(
            "# test\ncua\tAI crawler\tGPTBot\ncua\tHTTP library\tpython-requests\nisbot\tbot\t(?<!cu)bots?(?:\\b|_)\nisbot\tbot\tcrawl",
        )
        .unwrap()
    }

    /// `category` as the engine calls it.
    fn cat<'a>(p: &'a BotPatterns, ua: &str) -> Option<&'a str> {
        p.category(ua, &ua.to_lowercase())
    }

    /// The layout before plain-text patterns went into an automaton: each category's patterns
    /// as one alternation, tried in order, and isbot's as one, in Unicode mode.
    struct Alternations(Vec<(String, regex::Regex)>, regex::Regex);

    impl Alternations {
        fn new(text: &str) -> Self {
            let mut categories: Vec<(String, Vec<String>)> = Vec::new();
            let mut lower = Vec::new();
            for line in text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
            {
                let [source, category, pattern] = line.splitn(3, '\t').collect::<Vec<_>>()[..]
                else {
                    continue;
                };
                let pattern = js_class_hyphens(pattern).into_owned();
                if source == "isbot" {
                    if !needs_lookaround(&pattern) {
                        lower.push(pattern.to_lowercase());
                    }
                } else if let Some((_, list)) = categories.iter_mut().find(|(c, _)| c == category) {
                    list.push(pattern);
                } else {
                    categories.push((category.to_owned(), vec![pattern]));
                }
            }
            let compile = |list: &[String]| {
                regex::RegexBuilder::new(&list.join("|"))
                    .size_limit(64 << 20)
                    .build()
                    .unwrap()
            };
            Alternations(
                categories
                    .into_iter()
                    .map(|(name, list)| (name, compile(&list)))
                    .collect(),
                compile(&lower),
            )
        }

        fn category(&self, ua: &str) -> Option<String> {
            if let Some((name, _)) = self.0.iter().find(|(_, re)| re.is_match(ua)) {
                return Some(name.clone());
            }
            self.1
                .is_match(&ua.to_lowercase())
                .then(|| "bot".to_owned())
        }
    }

    #[test]
    fn the_automaton_answers_as_the_alternations_did() {
        let text = include_str!("../../../data/bot-patterns.tsv");
        let parsed = BotPatterns::parse(text).unwrap();
        let embedded = BotPatterns::embedded().unwrap();
        let before = Alternations::new(text);
        // Every plain-text pattern alone, inside a browser's user agent, and in other cases;
        // browsers' own user agents.
        let mut uas: Vec<String> = vec![
            CHROME.to_owned(),
            "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0".to_owned(),
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 \
             (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
                .to_owned(),
            // Beyond ASCII, where the Unicode and ASCII classes could part: a word character
            // after a pattern's word boundary, and letters in a name.
            "Mozilla/5.0 (compatible; Süßbot/1.0)".to_owned(),
            "robot\u{e9} crawler/2".to_owned(),
            "Ünïcödé-Spider/3.1 (+https://x.example)".to_owned(),
        ];
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            if let Some(t) = line.splitn(3, '\t').nth(2).and_then(plain_text) {
                uas.push(format!("Mozilla/5.0 (compatible; {t}; +https://x.example)"));
                uas.push(t.to_uppercase());
                uas.push(t.to_lowercase());
                uas.push(t);
            }
        }
        // The lookaround patterns are outside both layouts' alternations: leave their matches.
        let lookaround: Vec<fancy_regex::Regex> = (split(text).unwrap().lower.iter())
            .filter(|e| e.lookaround)
            .map(|e| fancy_regex::Regex::new(&e.pattern).unwrap())
            .collect();
        assert!(!lookaround.is_empty());
        let mut compared = 0;
        for ua in &uas {
            let lower = ua.to_lowercase();
            if lookaround.iter().any(|re| re.is_match(&lower).unwrap()) {
                continue;
            }
            let expected = before.category(ua);
            assert_eq!(parsed.category(ua, &lower), expected.as_deref(), "{ua}");
            assert_eq!(embedded.category(ua, &lower), expected.as_deref(), "{ua}");
            compared += 1;
        }
        assert!(compared > 2_500, "{compared}");
    }

    #[test]
    fn categories_and_generic_bots() {
        let p = patterns();
        // crawler-user-agents patterns are case-sensitive, as that list means them.
        assert_eq!(cat(&p, "xGptbotx"), None);
        let c = |ua: &str| cat(&p, ua).map(str::to_owned);
        assert_eq!(
            c("Mozilla/5.0 (compatible; GPTBot/1.1)").as_deref(),
            Some("AI crawler")
        );
        assert_eq!(c("python-requests/2.31").as_deref(), Some("HTTP library"));
        assert_eq!(c("SomeCrawler/1.0").as_deref(), Some("bot"));
        assert_eq!(c("Mozilla/5.0 (X11) mybot").as_deref(), Some("bot"));
        assert_eq!(c(CHROME), None);
        // The look-behind keeps "cubot" (a phone maker) a browser.
        assert_eq!(c("Mozilla/5.0 (Linux; Android 9; CUBOT X19)"), None);
    }

    #[test]
    fn look_around_patterns_run_when_their_literal_is_there() {
        let p = BotPatterns::parse(
            "isbot\tbot\t(?<!cu)bots?(?:\\b|_)\nisbot\tbot\tjava(?!;)\nisbot\tbot\t(?<!lib)http\n\
             isbot\tbot\t(?<!ro)bot(?!x)\nisbot\tbot\t(?<!a)q(?!c)",
        )
        .unwrap();
        let c = |ua: &str| cat(&p, ua);
        for ua in ["mybot", "java/1.8", "http-client/2", "Robot_", "q"] {
            assert_eq!(c(ua), Some("bot"), "{ua}");
        }
        for ua in ["cubotx", "java;", "libhttp", "aqc", "robotx"] {
            assert_eq!(c(ua), None, "{ua}");
        }
    }

    #[test]
    fn every_built_in_expression_compiles() {
        let p = BotPatterns::embedded().unwrap();
        p.cased_gated.compile_all().unwrap();
        p.lower_gated.compile_all().unwrap();
        // Most expressions wait for their gate: few are compiled at start.
        let eager = p.cased.as_ref().map_or(0, |re| re.pattern_len())
            + p.cased_lookaround.len()
            + p.lower_lookaround.len();
        assert!(eager < 5, "{eager}");
        assert!(p.cased_gated.expressions.len() + p.lower_gated.expressions.len() > 100);
    }

    /// `p` with its anchors, word boundaries and look-around removed: it matches all `p` does
    /// and more, in syntax that strings can be generated from.
    fn loosened(p: &str) -> String {
        let chars: Vec<char> = p.chars().collect();
        let (mut out, mut i, mut in_class) = (String::new(), 0, false);
        while i < chars.len() {
            let c = chars[i];
            let rest: String = chars[i..].iter().take(4).collect();
            if c == '\\' {
                if !in_class && matches!(chars.get(i + 1), Some('b' | 'B')) {
                    i += 2;
                    continue;
                }
                out.extend(&chars[i..(i + 2).min(chars.len())]);
                i += 2;
                continue;
            }
            if !in_class
                && ["(?=", "(?!", "(?<=", "(?<!"]
                    .iter()
                    .any(|l| rest.starts_with(l))
            {
                // Past the group's closing parenthesis.
                let mut depth = 0;
                while i < chars.len() {
                    match chars[i] {
                        '\\' => i += 1,
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                continue;
            }
            match c {
                '[' if !in_class => in_class = true,
                ']' if in_class => in_class = false,
                '^' | '$' if !in_class => {
                    i += 1;
                    continue;
                }
                _ => {}
            }
            out.push(c);
            i += 1;
        }
        out
    }

    #[test]
    fn every_match_of_a_gated_expression_holds_its_gate() {
        use proptest::strategy::{Strategy, ValueTree};
        use proptest::test_runner::TestRunner;
        let split = split(include_str!("../../../data/bot-patterns.tsv")).unwrap();
        let expressions = (split.cased.iter().map(|(_, e)| e)).chain(&split.lower);
        let mut runner = TestRunner::deterministic();
        let mut checked = 0;
        for e in expressions {
            let Some(gate) = &e.gate else { continue };
            let strings = proptest::string::string_regex(&loosened(&e.pattern))
                .unwrap_or_else(|err| panic!("{}: {err}", e.pattern));
            for _ in 0..300 {
                let s = strings.new_tree(&mut runner).unwrap().current();
                assert!(
                    s.contains(gate.as_str()),
                    "{:?} matches {s:?} without {gate:?}",
                    e.pattern
                );
            }
            checked += 1;
        }
        assert!(checked > 100, "{checked}");
        assert_eq!(loosened(r"^a\b(?<!x(y))c[$^]$"), "ac[$^]");
    }

    #[test]
    fn gates_are_each_found_once_in_order() {
        let mut open = Gates::default();
        for g in [70, 3, 255, 3, 300, 0, 300] {
            open.insert(g);
        }
        assert_eq!(open.iter().collect::<Vec<_>>(), [0, 3, 70, 255, 300]);
        assert_eq!(Gates::default().iter().count(), 0);
    }

    #[test]
    fn gated_expressions_run_only_when_their_gate_is_there() {
        let p = BotPatterns::parse(
            "cua\tAI crawler\tGPT[0-9]+Bot\ncua\tmonitor\tPingdom[0-9]\nisbot\tbot\t^scan\\d",
        )
        .unwrap();
        // Compiled by `parse`; here, a fresh one compiles on first need.
        let s = split("cua\tAI crawler\tGPT[0-9]+Bot\ncua\tmonitor\tPingdom[0-9]").unwrap();
        let automata = [s.cased_automaton().unwrap(), s.lower_automaton().unwrap()];
        let fresh = BotPatterns::compile(s, automata).unwrap();
        let none_compiled = |p: &BotPatterns| {
            (p.cased_gated.expressions.iter()).all(|e| e.compiled.get().is_none())
        };
        assert!(none_compiled(&fresh));
        assert_eq!(cat(&fresh, CHROME), None);
        assert!(none_compiled(&fresh));
        assert_eq!(cat(&fresh, "x Pingdom7 GPT4Bot"), Some("AI crawler"));
        assert_eq!(cat(&p, "x Pingdom7 GPT4Bot"), Some("AI crawler"));
        assert_eq!(cat(&p, "Pingdom7"), Some("monitor"));
        assert_eq!(cat(&p, "Pingdom GPTBot"), None);
        assert_eq!(cat(&p, "Scan5"), Some("bot"));
        assert_eq!(cat(&p, "a scan5"), None);
        assert!(BotPatterns::parse("cua\tmonitor\tPingdom[0-9").is_err());
        // Look-around in crawler-user-agents' patterns too, with a gate and without.
        let p = BotPatterns::parse("cua\tmonitor\tPing(?!dom)\ncua\tscanner\t(?<!x)Zz").unwrap();
        assert_eq!(p.cased_lookaround.len(), 1);
        assert_eq!(cat(&p, "Pinger"), Some("monitor"));
        assert_eq!(cat(&p, "Pingdom"), None);
        assert_eq!(cat(&p, "a Zz"), Some("scanner"));
        assert_eq!(cat(&p, "xZz"), None);
    }

    #[test]
    fn javascript_class_hyphens_are_literal() {
        assert_eq!(js_class_hyphens(r"[\w\d-.]+"), r"[\w\d\-.]+");
        assert_eq!(js_class_hyphens(r"[a-z]\d-x"), r"[a-z]\d-x");
        let p = BotPatterns::parse(
            "isbot\tbot\t^mozilla/\\d\\.\\d\\s\\((?:\\s?[\\w\\d-.]+[\\s/]\\d+\\.\\d+)?\\)$",
        )
        .unwrap();
        assert_eq!(cat(&p, "Mozilla/5.0 (my-tool/1.2)"), Some("bot"));
    }

    #[test]
    fn claims() {
        let c = Claim::of(CHROME);
        assert_eq!(
            (c.browser, c.mobile, c.platform),
            (Browser::Chrome, false, Some("Windows"))
        );
        let f = Claim::of("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0");
        assert_eq!(
            (f.browser, f.engine()),
            (Browser::Firefox, Some((37, "20100101")))
        );
        let s = Claim::of(
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
        );
        assert_eq!(
            (s.browser, s.mobile, s.platform),
            (Browser::Safari, true, Some("iOS"))
        );
        assert_eq!(
            headless_marker("Mozilla/5.0 HeadlessChrome/120.0"),
            Some("HeadlessChrome")
        );
    }

    /// Issue 61: browsers of every era that the shipped patterns once named as bots (uap-core's
    /// corpus): Internet Explorer with Ask's TeomaBar or with Google Chrome Frame, WIRED's iPad
    /// app. The crawlers those patterns were for are still named.
    #[test]
    fn old_browsers_are_not_bots_and_their_crawlers_still_are() {
        let bot = |ua: &str| {
            let e: crate::evidence::Evidence =
                serde_json::from_value(serde_json::json!({ "userAgent": ua })).unwrap();
            crate::tests::ENGINE.evaluate(&e).score_bot >= 0.5
        };
        for person in [
            "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1; TeomaBar 2.01; .NET CLR 1.1.4322)",
            "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0; chromeframe/11.0.696.57)",
            "Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 5.1; Trident/4.0; GTB6; chromeframe; .NET CLR 2.0.50727)",
            "Mozilla/5.0 (iPad; U; CPU iPhone OS 7_0 like Mac OS X; de-DE) WIRED/3.2.3.11.87970",
        ] {
            assert!(!bot(person), "{person}");
        }
        for crawler in [
            "Mozilla/2.0 (compatible; Ask Jeeves/Teoma; +http://sp.ask.com/docs/about/tech_crawling.html)",
            "RED/2.0.14 (https://redbot.org/)",
        ] {
            assert!(bot(crawler), "{crawler}");
        }
    }
}
