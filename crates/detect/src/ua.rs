//! User agents: known bots by pattern (crawler-user-agents and isbot), and what a user agent
//! claims to be (browser, engine, platform, mobile).
//!
//! Most patterns (1,566 of 1,705) are plain text: they are found together by Aho-Corasick
//! automata (double-array, `daachorse`), which `build.rs` builds from the data and the binary
//! carries, so that a cold start reads them instead of building them. The rest are regular
//! expressions: one set for crawler-user-agents' categories and one alternation for isbot's,
//! compiled when the engine is built, in ASCII mode (`\w`, `\d` and `\b` as ASCII: user agents
//! are ASCII, and the Unicode classes cost most of the compilation). The few isbot patterns
//! that need look-around, which the `regex` crate does not do, run on `fancy-regex`.

use daachorse::DoubleArrayAhoCorasick;
use regex_automata::meta::{self, Regex};
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind, PatternSet};

use super::DataError;

mod split;

pub use split::{Split, automaton, split};

/// The bot patterns of data/bot-patterns.tsv, each source matched as it means its patterns:
/// crawler-user-agents' case-sensitively, isbot's case-insensitively (they are written in lower
/// case and run on the lower-cased user agent, which keeps the automaton small).
pub struct BotPatterns {
    /// crawler-user-agents' plain-text patterns, each valued with its category.
    cased_text: Option<DoubleArrayAhoCorasick<u32>>,
    /// Its other patterns: one alternation per category that has any, matched together (each
    /// pattern compiled once), with the category of each.
    cased: Regex,
    cased_category: Vec<usize>,
    /// The categories' names, most telling first.
    categories: Vec<String>,
    /// isbot's patterns, in lower case: plain text, and the others.
    lower_text: Option<DoubleArrayAhoCorasick<u32>>,
    lower: Option<Regex>,
    /// Look-around patterns, each with a literal it cannot match without: the backtracking
    /// engine runs only when the user agent contains it. The literals are found in one scan.
    lookaround: Vec<(Option<(u32, String)>, fancy_regex::Regex)>,
    required: Option<DoubleArrayAhoCorasick<u32>>,
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
        .map_err(|_| {
            // Name the pattern at fault, not the whole set.
            let bad = (patterns.iter()).find(|p| compile(std::slice::from_ref(p), kind).is_err());
            DataError::Format(format!("bot pattern {bad:?} is not a valid expression"))
        })
}

/// The longest run of letters and digits every match of `p` must contain (outside groups, classes
/// and escapes, and not made optional by a quantifier), if `p` has no top-level alternative.
fn required_literal(p: &str) -> Option<String> {
    let chars: Vec<char> = p.chars().collect();
    let (mut depth, mut in_class, mut escaped) = (0usize, false, false);
    let (mut run, mut best) = (String::new(), String::new());
    let flush = |run: &mut String, best: &mut String| {
        if run.len() > best.len() {
            *best = run.clone();
        }
        run.clear();
    };
    for (i, &c) in chars.iter().enumerate() {
        if escaped {
            escaped = false;
            flush(&mut run, &mut best);
            continue;
        }
        let optional = matches!(chars.get(i + 1), Some('?' | '*' | '{'));
        match c {
            '\\' => escaped = true,
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => depth = depth.saturating_sub(1),
            '|' if !in_class && depth == 0 => return None,
            c if depth == 0 && !in_class && c.is_ascii_alphanumeric() && !optional => {
                run.push(c);
                continue;
            }
            _ => {}
        }
        flush(&mut run, &mut best);
    }
    flush(&mut run, &mut best);
    (best.len() >= 3).then_some(best)
}

impl BotPatterns {
    /// Parses `source \t category \t pattern` lines (`#` comments), building everything.
    pub fn parse(text: &str) -> Result<Self, DataError> {
        let split = split(text).map_err(DataError::Format)?;
        let cased_text = split.cased_automaton().map_err(DataError::Format)?;
        let lower_text = split.lower_automaton().map_err(DataError::Format)?;
        Self::compile(split, cased_text, lower_text)
    }

    /// The patterns of data/bot-patterns.tsv as the binary carries them: the automata and the
    /// expressions `build.rs` split and built from it.
    pub fn embedded() -> Result<Self, DataError> {
        let split =
            Split::from_expressions(include_str!(concat!(env!("OUT_DIR"), "/bots.expressions")))
                .map_err(DataError::Format)?;
        Self::compile(
            split,
            read(include_bytes!(concat!(env!("OUT_DIR"), "/bots.cased")))?,
            read(include_bytes!(concat!(env!("OUT_DIR"), "/bots.lower")))?,
        )
    }

    fn compile(
        split: Split,
        cased_text: Option<DoubleArrayAhoCorasick<u32>>,
        lower_text: Option<DoubleArrayAhoCorasick<u32>>,
    ) -> Result<Self, DataError> {
        let (mut alternations, mut cased_category) = (Vec::new(), Vec::new());
        for (c, patterns) in split.cased.iter().enumerate() {
            if !patterns.is_empty() {
                alternations.push(patterns.join("|"));
                cased_category.push(c);
            }
        }
        // Every category that matches, not the first: the most telling of them is chosen.
        let cased = compile(&alternations, MatchKind::All)?;
        let lower = if split.lower.is_empty() {
            // An empty alternation would match everything.
            None
        } else {
            Some(compile(&[split.lower.join("|")], MatchKind::LeftmostFirst)?)
        };
        // Each look-around pattern, with the id of its literal among the distinct ones.
        let mut literals: Vec<String> = Vec::new();
        let mut lookaround = Vec::new();
        for p in &split.lookaround {
            let re = fancy_regex::Regex::new(p)
                .map_err(|e| DataError::Format(format!("bot pattern {p:?}: {e}")))?;
            let literal = required_literal(p).map(|l| {
                let id = literals.iter().position(|x| *x == l).unwrap_or_else(|| {
                    literals.push(l.clone());
                    literals.len() - 1
                });
                (id as u32, l)
            });
            lookaround.push((literal, re));
        }
        // Built at every start, for a handful of literals: no prefilter.
        let required = automaton(literals.iter().map(String::as_str).zip(0u32..), false)
            .map_err(|e| DataError::Format(format!("bot patterns: {e}")))?;
        Ok(Self {
            cased_text,
            cased,
            cased_category,
            categories: split.categories,
            lower_text,
            lower,
            lookaround,
            required,
        })
    }

    /// Whether `ua` is a known bot's, and if so its category ("AI crawler", "HTTP library", ...;
    /// "bot" when only a generic pattern matched). `lower` is `ua` in lower case.
    pub fn category(&self, ua: &str, lower: &str) -> Option<&str> {
        // The most telling category among the plain-text matches ...
        let by_text = (self.cased_text.as_ref())
            .and_then(|ac| ac.find_overlapping_iter(ua).map(|m| m.value()).min())
            .map(|c| c as usize);
        // ... and among the expressions' matches: the most telling of both.
        let mut matched = PatternSet::new(self.cased.pattern_len());
        self.cased
            .which_overlapping_matches(&Input::new(ua), &mut matched);
        let by_expression = matched.iter().map(|i| self.cased_category[i]).min();
        if let Some(c) = by_text.into_iter().chain(by_expression).min() {
            return Some(self.categories.get(c).map_or("bot", String::as_str));
        }
        let generic = (self.lower_text.as_ref())
            .is_some_and(|ac| ac.find_iter(lower).next().is_some())
            || (self.lower.as_ref()).is_some_and(|re| re.is_match(lower))
            || self.lookaround_match(lower);
        generic.then_some("bot")
    }
}

impl BotPatterns {
    /// Whether a look-around pattern matches `lower`: of those with a literal, only those whose
    /// literal the one scan found.
    fn lookaround_match(&self, lower: &str) -> bool {
        let found = (self.required.iter())
            .flat_map(|ac| ac.find_overlapping_iter(lower))
            .fold(0u64, |bits, m| {
                bits | 1u64.checked_shl(m.value()).unwrap_or(0)
            });
        self.lookaround.iter().any(|(literal, re)| {
            let possible = match literal {
                None => true,
                Some((id, _)) if *id < 64 => found & (1 << id) != 0,
                // Past what one word of bits holds: looked for on its own.
                Some((_, text)) => lower.contains(text.as_str()),
            };
            possible && re.is_match(lower).unwrap_or(false)
        })
    }
}

/// An automaton `build.rs` wrote (no bytes: no automaton), checked as it is read.
fn read(bytes: &[u8]) -> Result<Option<DoubleArrayAhoCorasick<u32>>, DataError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    match DoubleArrayAhoCorasick::deserialize(bytes) {
        Ok((automaton, [])) => Ok(Some(automaton)),
        _ => Err(DataError::Format("a built-in bot automaton".into())),
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
        let mut compared = 0;
        for ua in &uas {
            let lower = ua.to_lowercase();
            if parsed
                .lookaround
                .iter()
                .any(|(_, re)| re.is_match(&lower).unwrap_or(false))
            {
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
    fn required_literals_prefilter_look_around_patterns() {
        assert_eq!(
            required_literal(r"(?:^|[^g])news(?!sapphire)").as_deref(),
            Some("news")
        );
        assert_eq!(
            required_literal(r"(?<! cu)bots?(?:\b|_)").as_deref(),
            Some("bot")
        );
        assert_eq!(required_literal(r"java(?!;)").as_deref(), Some("java"));
        assert_eq!(required_literal(r"a|bcd"), None);
        assert_eq!(required_literal(r"\bab\d"), None);
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
}
