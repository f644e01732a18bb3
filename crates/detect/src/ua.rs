//! User agents: known bots by pattern (crawler-user-agents and isbot), and what a user agent
//! claims to be (browser, engine, platform, mobile).
//!
//! Most patterns (1,566 of 1,705) are plain text: they are found together by one Aho-Corasick
//! automaton, which builds in a fraction of the time a regular expression of a thousand
//! alternatives compiles in (a cold start pays for it) and scans a user agent once. The rest are
//! regular expressions: one alternation per source, and one per category for naming a match's
//! category, all compiled when the engine is built. The few isbot patterns that need
//! look-around, which the `regex` crate does not do, run on `fancy-regex`.

use aho_corasick::AhoCorasick;
use aho_corasick::AhoCorasickKind;
use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

use super::DataError;

/// The bot patterns of data/bot-patterns.tsv, each source matched as it means its patterns:
/// crawler-user-agents' case-sensitively, isbot's case-insensitively (they are written in lower
/// case and run on the lower-cased user agent, which keeps the automaton small).
pub struct BotPatterns {
    /// crawler-user-agents' plain-text patterns, and the category of each.
    cased_text: Option<AhoCorasick>,
    cased_text_category: Vec<usize>,
    /// Its other patterns: one alternation per category that has any, matched together (each
    /// pattern compiled once), with the category of each.
    cased: RegexSet,
    cased_category: Vec<usize>,
    /// The categories' names, most telling first.
    categories: Vec<String>,
    /// isbot's patterns, in lower case: plain text, and the others.
    lower_text: Option<AhoCorasick>,
    lower: Option<Regex>,
    /// Look-around patterns, each with a literal it cannot match without: the backtracking
    /// engine runs only when the user agent contains it.
    lookaround: Vec<(Option<String>, fancy_regex::Regex)>,
}

/// The text a pattern matches when it has no operator (`\X`, for punctuation X, is X).
fn plain_text(p: &str) -> Option<String> {
    let mut out = String::with_capacity(p.len());
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e) if e.is_ascii_punctuation() => out.push(e),
                _ => return None,
            },
            '.' | '^' | '$' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' => {
                return None;
            }
            c => out.push(c),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// One automaton over `texts`; None for none.
fn automaton(texts: &[String]) -> Result<Option<AhoCorasick>, DataError> {
    if texts.is_empty() {
        return Ok(None);
    }
    // The non-contiguous form builds fastest (a cold start pays for the build) and searches a
    // user agent's hundred bytes in about as little time as the denser ones.
    AhoCorasick::builder()
        .kind(Some(AhoCorasickKind::NoncontiguousNFA))
        .build(texts)
        .map(Some)
        .map_err(|e| DataError::Format(format!("bot patterns: {e}")))
}

fn build(patterns: &[&str]) -> Result<Regex, regex::Error> {
    RegexBuilder::new(&patterns.join("|"))
        // Thousands of alternatives: room for the compiled program and the lazy DFA's cache.
        .size_limit(64 << 20)
        .dfa_size_limit(16 << 20)
        .build()
}

/// The alternation of `patterns`; None for none (an empty alternation would match everything).
fn build_named(patterns: &[String]) -> Result<Option<Regex>, DataError> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
    build(&refs).map(Some).map_err(|_| {
        // Name the pattern at fault, not the whole alternation.
        let bad = refs
            .iter()
            .find(|p| Regex::new(p).is_err())
            .map_or("?", |p| *p);
        DataError::Format(format!("bot pattern {bad:?} is not a valid expression"))
    })
}

/// JavaScript reads `-` after a class escape inside brackets (`[\w\d-.]`) as a literal; the
/// `regex` crate refuses it. Escaping that `-` keeps the JavaScript meaning.
fn js_class_hyphens(p: &str) -> std::borrow::Cow<'_, str> {
    if !p.contains('[') {
        return p.into();
    }
    let mut out = String::with_capacity(p.len() + 4);
    let (mut in_class, mut escaped, mut after_class_escape) = (false, false, false);
    for c in p.chars() {
        if escaped {
            out.push(c);
            escaped = false;
            after_class_escape = in_class && c.is_ascii_alphabetic();
            continue;
        }
        match c {
            '\\' => escaped = true,
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '-' if in_class && after_class_escape => {
                out.push_str("\\-");
                after_class_escape = false;
                continue;
            }
            _ => {}
        }
        after_class_escape = false;
        out.push(c);
    }
    out.into()
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

fn needs_lookaround(p: &str) -> bool {
    p.contains("(?=") || p.contains("(?!") || p.contains("(?<=") || p.contains("(?<!")
}

impl BotPatterns {
    /// Parses `source \t category \t pattern` lines (`#` comments).
    pub fn parse(text: &str) -> Result<Self, DataError> {
        let (mut cased_text, mut cased_text_category) = (Vec::new(), Vec::new());
        let (mut lower, mut lower_text) = (Vec::new(), Vec::new());
        let mut lookaround = Vec::new();
        // (category, its patterns that are not plain text), in order of first appearance.
        let mut categories: Vec<(String, Vec<String>)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let mut cols = line.splitn(3, '\t');
            let (Some(source), Some(category), Some(pattern)) =
                (cols.next(), cols.next(), cols.next())
            else {
                return Err(DataError::Format(format!(
                    "bot-patterns.tsv line {}",
                    n + 1
                )));
            };
            let pattern = js_class_hyphens(pattern).into_owned();
            if source == "isbot" {
                let pattern = pattern.to_lowercase();
                if needs_lookaround(&pattern) {
                    let re = fancy_regex::Regex::new(&pattern)
                        .map_err(|e| DataError::Format(format!("bot pattern {pattern:?}: {e}")))?;
                    lookaround.push((required_literal(&pattern), re));
                } else if let Some(text) = plain_text(&pattern) {
                    lower_text.push(text);
                } else {
                    lower.push(pattern);
                }
                continue;
            }
            let c = match categories.iter().position(|(c, _)| c == category) {
                Some(c) => c,
                None => {
                    categories.push((category.to_owned(), Vec::new()));
                    categories.len() - 1
                }
            };
            match plain_text(&pattern) {
                Some(text) => {
                    cased_text.push(text);
                    cased_text_category.push(c);
                }
                None => categories[c].1.push(pattern),
            }
        }
        let (mut alternations, mut cased_category) = (Vec::new(), Vec::new());
        for (c, (_, patterns)) in categories.iter().enumerate() {
            if !patterns.is_empty() {
                alternations.push(patterns.join("|"));
                cased_category.push(c);
            }
        }
        let cased = RegexSetBuilder::new(&alternations)
            .size_limit(64 << 20)
            .dfa_size_limit(16 << 20)
            .build()
            .map_err(|_| {
                // Name the pattern at fault, not the whole set.
                let bad = (categories.iter().flat_map(|(_, patterns)| patterns))
                    .find(|p| Regex::new(p).is_err());
                DataError::Format(format!("bot pattern {bad:?} is not a valid expression"))
            })?;
        Ok(Self {
            cased_text: automaton(&cased_text)?,
            cased_text_category,
            cased,
            cased_category,
            categories: categories.into_iter().map(|(name, _)| name).collect(),
            lower_text: automaton(&lower_text)?,
            lower: build_named(&lower)?,
            lookaround,
        })
    }

    /// Whether `ua` is a known bot's, and if so its category ("AI crawler", "HTTP library", ...;
    /// "bot" when only a generic pattern matched). `lower` is `ua` in lower case.
    pub fn category(&self, ua: &str, lower: &str) -> Option<&str> {
        // The most telling category among the plain-text matches ...
        let by_text = self.cased_text.as_ref().and_then(|ac| {
            ac.find_overlapping_iter(ua)
                .map(|m| self.cased_text_category[m.pattern().as_usize()])
                .min()
        });
        // ... and among the expressions' matches: the most telling of both.
        let by_expression = self
            .cased
            .matches(ua)
            .iter()
            .map(|i| self.cased_category[i])
            .min();
        if let Some(c) = by_text.into_iter().chain(by_expression).min() {
            return Some(self.categories.get(c).map_or("bot", String::as_str));
        }
        let generic = self
            .lower_text
            .as_ref()
            .is_some_and(|ac| ac.is_match(lower))
            || self.lower.as_ref().is_some_and(|re| re.is_match(lower))
            || self.lookaround.iter().any(|(literal, re)| {
                literal.as_ref().is_none_or(|l| lower.contains(l.as_str()))
                    && re.is_match(lower).unwrap_or(false)
            });
        generic.then_some("bot")
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
    /// as one alternation, tried in order, and isbot's as one.
    struct Alternations(Vec<(String, Regex)>, Regex);

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
            let compile = |list: &[String]| build_named(list).unwrap().unwrap();
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
        let engine = BotPatterns::parse(text).unwrap();
        let before = Alternations::new(text);
        // Every plain-text pattern alone, inside a browser's user agent, and in other cases;
        // browsers' own user agents.
        let mut uas: Vec<String> = vec![
            CHROME.to_owned(),
            "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0".to_owned(),
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 \
             (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
                .to_owned(),
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
            if engine
                .lookaround
                .iter()
                .any(|(_, re)| re.is_match(&lower).unwrap_or(false))
            {
                continue;
            }
            assert_eq!(
                engine.category(ua, &lower).map(str::to_owned),
                before.category(ua),
                "{ua}"
            );
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
