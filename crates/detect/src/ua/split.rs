//! data/bot-patterns.tsv split the way the engine matches it: plain text for the automata,
//! expressions for the regular-expression engines. Shared with `build.rs`, which builds the
//! automata once and writes them out, so that a cold start only reads them back.

use daachorse::{DoubleArrayAhoCorasick, DoubleArrayAhoCorasickBuilder};

/// The patterns of one bot-patterns file, by how they are matched.
#[derive(Debug, Default)]
pub struct Split {
    /// crawler-user-agents' categories, most telling first.
    pub categories: Vec<String>,
    /// Its plain-text patterns, each with its category's index.
    pub cased_text: Vec<(String, u32)>,
    /// Its other patterns, by category index.
    pub cased: Vec<Vec<String>>,
    /// isbot's patterns, lower-cased: plain text, other expressions, and look-around ones.
    pub lower_text: Vec<String>,
    pub lower: Vec<String>,
    pub lookaround: Vec<String>,
}

/// Parses `source \t category \t pattern` lines (`#` comments); the error names the line.
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
            if needs_lookaround(&pattern) {
                out.lookaround.push(pattern);
            } else if let Some(text) = plain_text(&pattern) {
                out.lower_text.push(text);
            } else {
                out.lower.push(pattern);
            }
            continue;
        }
        let c = match out.categories.iter().position(|c| c == category) {
            Some(c) => c,
            None => {
                out.categories.push(category.to_owned());
                out.cased.push(Vec::new());
                out.categories.len() - 1
            }
        };
        match plain_text(&pattern) {
            Some(text) => out.cased_text.push((text, c as u32)),
            None => out.cased[c].push(pattern),
        }
    }
    Ok(out)
}

impl Split {
    /// The expressions of the split (not the plain text, which the automata carry), as
    /// `from_expressions` reads them back: one `kind \t ... ` line each.
    pub fn expressions(&self) -> String {
        let mut out = String::new();
        for c in &self.categories {
            out.push_str(&format!("category\t{c}\n"));
        }
        for (c, patterns) in self.cased.iter().enumerate() {
            for p in patterns {
                out.push_str(&format!("cased\t{c}\t{p}\n"));
            }
        }
        for p in &self.lower {
            out.push_str(&format!("lower\t{p}\n"));
        }
        for p in &self.lookaround {
            out.push_str(&format!("lookaround\t{p}\n"));
        }
        out
    }

    /// The split `expressions` wrote (without its plain text); the error names the line.
    pub fn from_expressions(text: &str) -> Result<Self, String> {
        let mut out = Split::default();
        for (n, line) in text.lines().enumerate() {
            let bad = || format!("bot expressions line {}", n + 1);
            match line.split_once('\t').ok_or_else(bad)? {
                ("category", name) => {
                    out.categories.push(name.to_owned());
                    out.cased.push(Vec::new());
                }
                ("cased", rest) => {
                    let (c, p) = rest.split_once('\t').ok_or_else(bad)?;
                    let c: usize = c.parse().map_err(|_| bad())?;
                    out.cased.get_mut(c).ok_or_else(bad)?.push(p.to_owned());
                }
                ("lower", p) => out.lower.push(p.to_owned()),
                ("lookaround", p) => out.lookaround.push(p.to_owned()),
                _ => return Err(bad()),
            }
        }
        Ok(out)
    }

    /// The automaton over crawler-user-agents' plain text, each match valued with its
    /// category's index; None for none.
    pub fn cased_automaton(&self) -> Result<Option<DoubleArrayAhoCorasick<u32>>, String> {
        automaton(self.cased_text.iter().map(|(t, c)| (t.as_str(), *c)), true)
            .map_err(|e| format!("bot patterns: {e}"))
    }

    /// The automaton over isbot's plain text (lower case); None for none.
    pub fn lower_automaton(&self) -> Result<Option<DoubleArrayAhoCorasick<u32>>, String> {
        automaton(self.lower_text.iter().map(|t| (t.as_str(), 0)), true)
            .map_err(|e| format!("bot patterns: {e}"))
    }
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
                    isbot\tbot\tcrawl\nisbot\tbot\t^Bot\\b\nisbot\tbot\t(?<!cu)bot";
        let split = split(text).unwrap();
        let back = Split::from_expressions(&split.expressions()).unwrap();
        assert_eq!(back.categories, ["AI crawler", "monitor"]);
        assert_eq!(back.cased, [vec!["x[ab]"], vec!["^ping\\d"]]);
        assert_eq!(
            (back.lower, back.lookaround),
            (vec!["^bot\\b".to_owned()], vec!["(?<!cu)bot".to_owned()])
        );
        assert!(back.cased_text.is_empty() && back.lower_text.is_empty());
        assert!(Split::from_expressions("cased\t9\tx").is_err());
        assert!(Split::from_expressions("other\tx").is_err());
    }
}
