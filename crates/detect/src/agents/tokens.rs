//! The agent catalogue's tokens as its automata hold them: each token (lower case) with the first
//! agent, in catalogue order, that lists it. Shared with `build.rs`, which builds the automata
//! from data/agents.tsv so that a start reads them back instead of building them.

/// The catalogue's agent lines: not comments, not blank.
pub fn agent_lines(text: &str) -> impl Iterator<Item = &str> {
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
/// index, from each agent's tokens and ranges columns in catalogue order.
pub fn pairs<'a>(agents: impl Iterator<Item = (&'a str, &'a str)>) -> [Vec<(String, u32)>; 2] {
    let (mut all, mut ranged) = (Vec::new(), Vec::new());
    for ((column, ranges), i) in agents.zip(0u32..) {
        for t in tokens(column) {
            if !ranges.is_empty() {
                ranged.push((t.clone(), i));
            }
            all.push((t, i));
        }
    }
    [all, ranged]
}
