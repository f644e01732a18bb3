//! data/bot-patterns.tsv split the way the engine matches it: plain text for the automata,
//! expressions for the regular-expression engines, each expression with the literal text every
//! match of it contains (its gate), when it has one. Shared with `build.rs`, which builds the
//! automata once and writes them out, so that a cold start only reads them back.

use std::collections::BTreeMap;

use daachorse::{DoubleArrayAhoCorasick, DoubleArrayAhoCorasickBuilder};

/// The patterns of one bot-patterns file, by how they are matched.
#[derive(Debug, Default)]
pub struct Split {
    /// crawler-user-agents' categories, most telling first.
    pub categories: Vec<String>,
    /// Its plain-text patterns, each with its category's index.
    pub cased_text: Vec<(String, u32)>,
    /// Its other patterns, each with its category's index.
    pub cased: Vec<(u32, Expression)>,
    /// isbot's patterns, lower-cased: plain text, and the others (look-around ones among them).
    pub lower_text: Vec<String>,
    pub lower: Vec<Expression>,
}

/// A pattern that is not plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expression {
    pub pattern: String,
    /// Text every match contains: the engine compiles and runs the expression only once a scan
    /// has found it in the user agent. None: compiled at start and run on every user agent.
    pub gate: Option<String>,
    /// Whether it needs look-around, which only the backtracking engine does.
    pub lookaround: bool,
}

impl Expression {
    fn new(pattern: String) -> Self {
        Self {
            gate: required_literal(&pattern),
            lookaround: needs_lookaround(&pattern),
            pattern,
        }
    }
}

/// Parses `source \t category \t pattern` lines (`#` comments); the error names the line. A
/// pattern's top-level alternatives are patterns of their own: `A|B` matches where A or B does,
/// and alone each may be plain text or have a gate.
pub fn split(text: &str) -> Result<Split, String> {
    let mut out = Split::default();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut cols = line.splitn(3, '\t');
        let (Some(source), Some(category), Some(pattern)) = (cols.next(), cols.next(), cols.next())
        else {
            return Err(format!("bot-patterns.tsv line {}", n + 1));
        };
        let pattern = js_class_hyphens(pattern).into_owned();
        if source == "isbot" {
            let pattern = pattern.to_lowercase();
            for p in alternatives(&pattern) {
                match plain_text(p) {
                    Some(text) => out.lower_text.push(text),
                    None => out.lower.push(Expression::new(p.to_owned())),
                }
            }
            continue;
        }
        let c = match out.categories.iter().position(|c| c == category) {
            Some(c) => c,
            None => {
                out.categories.push(category.to_owned());
                out.categories.len() - 1
            }
        } as u32;
        for p in alternatives(&pattern) {
            match plain_text(p) {
                Some(text) => out.cased_text.push((text, c)),
                None => out.cased.push((c, Expression::new(p.to_owned()))),
            }
        }
    }
    Ok(out)
}

impl Split {
    /// The expressions of the split (not the plain text, which the automata carry), as
    /// `from_expressions` reads them back: one `kind \t ... \t gate \t pattern` line each.
    pub fn expressions(&self) -> String {
        let mut out = String::new();
        for c in &self.categories {
            out.push_str(&format!("category\t{c}\n"));
        }
        let line = |e: &Expression| {
            let kind = if e.lookaround { "lookaround" } else { "regex" };
            format!(
                "{kind}\t{}\t{}\n",
                e.gate.as_deref().unwrap_or(""),
                e.pattern
            )
        };
        for (c, e) in &self.cased {
            out.push_str(&format!("cased\t{c}\t{}", line(e)));
        }
        for e in &self.lower {
            out.push_str(&format!("lower\t{}", line(e)));
        }
        out
    }

    /// The split `expressions` wrote (without its plain text); the error names the line.
    pub fn from_expressions(text: &str) -> Result<Self, String> {
        let mut out = Split::default();
        for (n, line) in text.lines().enumerate() {
            let bad = || format!("bot expressions line {}", n + 1);
            let expression = |rest: &str| -> Result<Expression, String> {
                let mut cols = rest.splitn(3, '\t');
                let (Some(kind), Some(gate), Some(pattern)) =
                    (cols.next(), cols.next(), cols.next())
                else {
                    return Err(bad());
                };
                Ok(Expression {
                    pattern: pattern.to_owned(),
                    gate: (!gate.is_empty()).then(|| gate.to_owned()),
                    lookaround: match kind {
                        "regex" => false,
                        "lookaround" => true,
                        _ => return Err(bad()),
                    },
                })
            };
            match line.split_once('\t').ok_or_else(bad)? {
                ("category", name) => out.categories.push(name.to_owned()),
                ("cased", rest) => {
                    let (c, rest) = rest.split_once('\t').ok_or_else(bad)?;
                    let c: u32 = c.parse().map_err(|_| bad())?;
                    if c as usize >= out.categories.len() {
                        return Err(bad());
                    }
                    out.cased.push((c, expression(rest)?));
                }
                ("lower", rest) => out.lower.push(expression(rest)?),
                _ => return Err(bad()),
            }
        }
        Ok(out)
    }

    /// The automaton over crawler-user-agents' plain text and its expressions' gates, each
    /// valued with [`Value::cased`] (the text's most telling category, and the gate it is);
    /// None for none.
    pub fn cased_automaton(&self) -> Result<Option<DoubleArrayAhoCorasick<u32>>, String> {
        let mut values: BTreeMap<&str, (Option<u32>, Option<u32>)> = BTreeMap::new();
        for (t, c) in &self.cased_text {
            let (category, _) = values.entry(t.as_str()).or_default();
            *category = Some(category.map_or(*c, |k| k.min(*c)));
        }
        for (g, gate) in gates(self.cased.iter().map(|(_, e)| e))
            .into_iter()
            .enumerate()
        {
            values.entry(gate).or_default().1 = Some(g as u32);
        }
        let values: Vec<(&str, u32)> = (values.into_iter())
            .map(|(t, (c, g))| Value::cased(c, g).map(|v| (t, v)))
            .collect::<Result<_, _>>()?;
        automaton(values.into_iter(), true).map_err(|e| format!("bot patterns: {e}"))
    }

    /// The automaton over isbot's plain text (lower case) and its expressions' gates, valued
    /// with [`Value::lower`]; None for none.
    pub fn lower_automaton(&self) -> Result<Option<DoubleArrayAhoCorasick<u32>>, String> {
        let gates = gates(self.lower.iter());
        let texts = (self.lower_text.iter()).map(|t| (t.as_str(), Value::lower(None)));
        let gates = (gates.into_iter().zip(0u32..)).map(|(t, g)| (t, Value::lower(Some(g))));
        // A text that is both is plain text: lowest value.
        automaton(texts.chain(gates), true).map_err(|e| format!("bot patterns: {e}"))
    }
}

/// What a match in the bot automata means, packed in its value.
pub struct Value;

impl Value {
    const NONE: u32 = 0xFFFF;

    /// A cased text's category (the most telling, if it is a pattern's plain text) in the high
    /// half, and 1 + its index among the gates (if it is one; 0 if not) in the low half.
    pub fn cased(category: Option<u32>, gate: Option<u32>) -> Result<u32, String> {
        let category = category.unwrap_or(Self::NONE);
        let gate = gate.map_or(0, |g| g + 1);
        if category > Self::NONE || gate >= Self::NONE {
            return Err("bot patterns: more than 65,534 categories or gates".into());
        }
        Ok(category << 16 | gate)
    }

    /// The category and gate of a cased match.
    pub fn cased_parts(v: u32) -> (Option<u32>, Option<u32>) {
        let (category, gate) = (v >> 16, v & 0xFFFF);
        (
            (category != Self::NONE).then_some(category),
            gate.checked_sub(1),
        )
    }

    /// A lower-case text: 0 when it is plain text (the user agent is a bot), else 1 + its
    /// index among the gates.
    pub fn lower(gate: Option<u32>) -> u32 {
        gate.map_or(0, |g| g.saturating_add(1))
    }

    /// The gate of a lower-case match; None: the text is a pattern's.
    pub fn lower_gate(v: u32) -> Option<u32> {
        v.checked_sub(1)
    }
}

/// The distinct gates of `expressions`, in order: a gate's index is its place in the list.
pub fn gates<'a>(expressions: impl Iterator<Item = &'a Expression>) -> Vec<&'a str> {
    let mut gates: Vec<&str> = expressions.filter_map(|e| e.gate.as_deref()).collect();
    gates.sort_unstable();
    gates.dedup();
    gates
}

/// `p`'s top-level alternatives (outside groups and classes).
pub fn alternatives(p: &str) -> Vec<&str> {
    let (mut depth, mut in_class, mut escaped, mut from) = (0usize, false, false, 0);
    let mut out = Vec::new();
    for (i, c) in p.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => depth = depth.saturating_sub(1),
            '|' if !in_class && depth == 0 => {
                out.push(&p[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&p[from..]);
    out
}

/// The longest run of letters and digits every match of `p` must contain (outside groups,
/// classes, escapes and repetition counts, and not made optional by a quantifier), if it has
/// one of three or more and `p` has no top-level alternative. Patterns whose letters may not
/// mean themselves (inline flags such as `(?i)`, escapes with arguments such as `\x41`) have
/// none: a wrong gate would hide a bot.
pub fn required_literal(p: &str) -> Option<String> {
    let opaque = ["\\x", "\\u", "\\U", "\\p", "\\P", "\\k", "\\Q"];
    if opaque.iter().any(|e| p.contains(e)) {
        return None;
    }
    let chars: Vec<char> = p.chars().collect();
    let flags = chars
        .windows(3)
        .any(|w| w[0] == '(' && w[1] == '?' && w[2].is_ascii_alphabetic() && w[2] != 'P');
    if flags {
        return None;
    }
    let (mut depth, mut in_class, mut in_count, mut escaped) = (0usize, false, false, false);
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
            '{' if !in_class => in_count = true,
            '}' if !in_class => in_count = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => depth = depth.saturating_sub(1),
            '|' if !in_class && depth == 0 => return None,
            c if depth == 0 && !in_class && !in_count && c.is_ascii_alphanumeric() && !optional => {
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

/// One automaton over `(text, value)`s; None for none. A text listed twice keeps its lowest
/// value (the most telling category, the first agent), as a search over both would answer.
/// The 2-gram `prefilter` speeds the scan of large sets; it is 64 KiB to build, which an
/// automaton built at every start of a few dozen texts does without.
pub fn automaton<'a>(
    texts: impl Iterator<Item = (&'a str, u32)>,
    prefilter: bool,
) -> Result<Option<DoubleArrayAhoCorasick<u32>>, daachorse::errors::DaachorseError> {
    let mut texts: Vec<(&str, u32)> = texts.collect();
    if texts.is_empty() {
        return Ok(None);
    }
    texts.sort_unstable();
    texts.dedup_by_key(|(t, _)| *t);
    DoubleArrayAhoCorasickBuilder::new()
        .use_prefilter(prefilter)
        .build_with_values(texts)
        .map(Some)
}

/// The text a pattern matches when it has no operator (`\X`, for punctuation X, is X).
pub fn plain_text(p: &str) -> Option<String> {
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

/// JavaScript reads `-` after a class escape inside brackets (`[\w\d-.]`) as a literal; the
/// `regex` crate refuses it. Escaping that `-` keeps the JavaScript meaning.
pub fn js_class_hyphens(p: &str) -> std::borrow::Cow<'_, str> {
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

pub fn needs_lookaround(p: &str) -> bool {
    p.contains("(?=") || p.contains("(?!") || p.contains("(?<=") || p.contains("(?<!")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_read_back_as_written() {
        let text = "# c\ncua\tAI crawler\tGPTBot\ncua\tmonitor\t^ping\\d\ncua\tAI crawler\tx[ab]\n\
                    cua\tmonitor\tUptime|Pingdom[0-9]\nisbot\tbot\tcrawl\nisbot\tbot\t^Bot\\b\n\
                    isbot\tbot\t(?<!cu)bot";
        let split = split(text).unwrap();
        let back = Split::from_expressions(&split.expressions()).unwrap();
        assert_eq!(back.categories, ["AI crawler", "monitor"]);
        let e = |p: &str, gate: Option<&str>, lookaround| Expression {
            pattern: p.to_owned(),
            gate: gate.map(str::to_owned),
            lookaround,
        };
        assert_eq!(
            back.cased,
            [
                (1, e("^ping\\d", Some("ping"), false)),
                (0, e("x[ab]", None, false)),
                (1, e("Pingdom[0-9]", Some("Pingdom"), false))
            ]
        );
        // Each alternative on its own: "Uptime" is plain text.
        assert_eq!(split.cased_text[1], ("Uptime".to_owned(), 1));
        assert_eq!(
            back.lower,
            [
                e("^bot\\b", Some("bot"), false),
                e("(?<!cu)bot", Some("bot"), true)
            ]
        );
        assert!(back.cased_text.is_empty() && back.lower_text.is_empty());
        assert_eq!(gates(back.lower.iter()), ["bot"]);
        // Plain text and gates in one automaton each, each match telling which it is.
        let cased = split.cased_automaton().unwrap().unwrap();
        let found = |ua: &str| -> Vec<_> {
            let m = cased.find_overlapping_iter(ua);
            m.map(|m| Value::cased_parts(m.value())).collect()
        };
        assert_eq!(found("GPTBot"), [(Some(0), None)]);
        assert_eq!(found("Pingdom"), [(None, Some(0))]);
        assert_eq!(found("ping"), [(None, Some(1))]);
        let lower = split.lower_automaton().unwrap().unwrap();
        let found: Vec<_> = (lower.find_overlapping_iter("crawl bot"))
            .map(|m| Value::lower_gate(m.value()))
            .collect();
        assert_eq!(found, [None, Some(0)]);
        assert!(Split::from_expressions("cased\t9\tregex\t\tx").is_err());
        assert!(Split::from_expressions("lower\tother\t\tx").is_err());
        assert!(Split::from_expressions("other\tx").is_err());
    }

    #[test]
    fn a_text_both_pattern_and_gate_is_both() {
        let split = split("cua\tAI crawler\tSpider[0-9]\ncua\tmonitor\tSpider\n").unwrap();
        let cased = split.cased_automaton().unwrap().unwrap();
        let found: Vec<_> = (cased.find_overlapping_iter("Spider"))
            .map(|m| Value::cased_parts(m.value()))
            .collect();
        assert_eq!(found, [(Some(1), Some(0))]);
        assert!(Value::cased(Some(0x10000), None).is_err());
        assert!(Value::cased(None, Some(0xFFFE)).is_err());
    }

    #[test]
    fn top_level_alternatives() {
        assert_eq!(
            alternatives("a|b(c|d)|[|]|\\|e"),
            ["a", "b(c|d)", "[|]", "\\|e"]
        );
        assert_eq!(alternatives("abc"), ["abc"]);
        assert_eq!(alternatives("a|"), ["a", ""]);
    }

    #[test]
    fn gates_are_text_every_match_contains() {
        let gate = |p| required_literal(p);
        assert_eq!(gate(r"(?:^|[^g])news(?!sapphire)").as_deref(), Some("news"));
        assert_eq!(gate(r"(?<! cu)bots?(?:\b|_)").as_deref(), Some("bot"));
        assert_eq!(gate(r"java(?!;)").as_deref(), Some("java"));
        assert_eq!(gate(r"AdsBot-Google([^-]|$)").as_deref(), Some("AdsBot"));
        assert_eq!(gate(r"abc+d").as_deref(), Some("abc"));
        assert_eq!(gate(r"a|bcd"), None);
        assert_eq!(gate(r"\bab\d"), None);
        // Repetition counts, optional letters, flags and escapes with arguments are not text.
        assert_eq!(gate(r"x{1000}"), None);
        assert_eq!(gate(r"ab{2,300}c"), None);
        assert_eq!(gate(r"abcd?"), Some("abc".to_owned()));
        assert_eq!(gate(r"(?i)abcdef"), None);
        assert_eq!(gate(r"(?x)a b c d"), None);
        assert_eq!(gate(r"\x41bcd"), None);
        assert_eq!(gate(r"\u{1F600}"), None);
        assert_eq!(gate(r"(?P<name>x)yz0"), Some("yz0".to_owned()));
    }
}
