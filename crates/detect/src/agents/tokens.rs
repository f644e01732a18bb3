//! The agent catalogue's tokens as its automata hold them: each token (lower case) with the first
//! agent, in catalogue order, that lists it. Shared with `build.rs`, which builds the automata
//! from data/agents.tsv so that a start reads them back instead of building them.

/// The catalogue's agent lines: not comments, not blank.
fn agent_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
}

/// The tokens of a line's tokens column, lower-cased.
pub fn tokens(column: &str) -> Vec<String> {
    (column.split(','))
        .filter(|t| !t.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Every agent's tokens, and those of the agents with published ranges, each with its agent's
/// index in catalogue order, from agents.tsv's text (its tokens and ranges columns).
pub fn pairs(text: &str) -> [Vec<(String, u32)>; 2] {
    let (mut all, mut ranged) = (Vec::new(), Vec::new());
    for (line, i) in agent_lines(text).zip(0u32..) {
        let mut columns = line.split('\t').skip(3);
        let (column, ranges) = (columns.next().unwrap_or(""), columns.next().unwrap_or(""));
        for t in tokens(column) {
            if !ranges.is_empty() {
                ranged.push((t.clone(), i));
            }
            all.push((t, i));
        }
    }
    [all, ranged]
}
