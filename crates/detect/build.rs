//! Lays out the committed data's address tables (data/ip-ranges.tsv, data/asn-hosting.tsv) as the
//! engine searches them (see src/table.rs), with the hosting networks' index, and builds the bot
//! patterns' automata (see src/ua/split.rs), the agent catalogue's token automata and the time
//! zones' tables, so that a cold start reads them from the binary instead of parsing 70,000 lines
//! of addresses and building automata of 1,572 patterns and their expressions' gates. A malformed
//! line fails the build.

use std::error::Error;
use std::path::{Path, PathBuf};

// The engine reads tables too; this script only writes them.
#[allow(dead_code)]
#[path = "src/table.rs"]
mod table;

#[allow(dead_code)]
#[path = "src/ua/split.rs"]
mod split;

#[allow(dead_code)]
#[path = "src/networks/index.rs"]
mod networks_index;

#[allow(dead_code)]
#[path = "src/places/zones.rs"]
mod zones;

#[allow(dead_code)]
#[path = "src/agents/tokens.rs"]
mod agent_tokens;

fn main() -> Result<(), Box<dyn Error>> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    let path = data.join("bot-patterns.tsv");
    println!("cargo::rerun-if-changed={}", path.display());
    let patterns = split::split(&std::fs::read_to_string(&path)?)?;
    // No automaton (no patterns of its kind) is written as no bytes.
    let bytes = |a: Option<daachorse::DoubleArrayAhoCorasick<u32>>| {
        a.map_or_else(Vec::new, |a| a.serialize())
    };
    std::fs::write(out.join("bots.cased"), bytes(patterns.cased_automaton()?))?;
    std::fs::write(out.join("bots.lower"), bytes(patterns.lower_automaton()?))?;
    // The expressions apart from the 1,700 lines they come from: those without a gate are
    // compiled at start, the others when first needed.
    std::fs::write(out.join("bots.expressions"), patterns.expressions())?;
    // The agent catalogue's token automata (src/agents.rs reads the rest of the file at start).
    let path = data.join("agents.tsv");
    println!("cargo::rerun-if-changed={}", path.display());
    let [all, ranged] = agent_tokens::pairs(&std::fs::read_to_string(&path)?);
    for (list, file) in [(all, "agents.tokens"), (ranged, "agents.ranged-tokens")] {
        let automaton = split::automaton(list.iter().map(|(t, i)| (t.as_str(), *i)), false)
            .map_err(|e| format!("agents.tsv tokens: {e}"))?;
        std::fs::write(out.join(file), bytes(automaton))?;
    }
    // Each zone's offsets from the tz database, computed once here.
    let path = data.join("zones.tsv");
    println!("cargo::rerun-if-changed={}", path.display());
    let statics = zone_statics(&std::fs::read_to_string(&path)?);
    std::fs::write(out.join("zones.rs"), statics)?;
    for (file, name) in [("ip-ranges.tsv", "ranges"), ("asn-hosting.tsv", "networks")] {
        let path = data.join(file);
        println!("cargo::rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path)?;
        let table = table::Table::parse(&text).map_err(|n| format!("{file} line {n}"))?;
        if name == "ranges"
            && let Some(tag) = table::unlabelled(&table, {
                let ids = table::label_ids(&text);
                move |tag| ids.contains(&tag)
            })
        {
            return Err(
                format!("{file}: a range names label {tag}, which no #L line defines").into(),
            );
        }
        let (v4, v6) = table.bytes();
        std::fs::write(out.join(format!("{name}.v4")), v4)?;
        std::fs::write(out.join(format!("{name}.v6")), v6)?;
        // The labels and networks (`#` lines): small, parsed at start.
        let meta: String = text
            .lines()
            .filter(|l| l.starts_with('#'))
            .flat_map(|l| [l, "\n"])
            .collect();
        if name == "networks" {
            let index = networks_index::build(&meta)
                .map_err(|n| format!("{file}: network line {n} of its # lines"))?;
            std::fs::write(out.join("networks.index"), index)?;
        }
        std::fs::write(out.join(format!("{name}.meta")), meta)?;
    }
    Ok(())
}

/// zones.tsv's zones and countries (see src/places/zones.rs) as Rust statics, `BUILT_ZONES` and
/// `BUILT_COUNTRIES`, of the types in src/places.rs, which includes them.
fn zone_statics(tsv: &str) -> String {
    let (zones, countries) = zones::table(tsv);
    let mut out = String::from("static BUILT_ZONES: &[(Cow<'static, str>, ZoneInfo)] = &[\n");
    for (name, cs, [jan, jul]) in zones {
        out.push_str(&format!(
            "(Cow::Borrowed({name:?}), ZoneInfo {{ countries: Cow::Borrowed(&{cs:?}), offsets: [{jan}, {jul}] }}),\n"
        ));
    }
    out.push_str("];\nstatic BUILT_COUNTRIES: &[(Country, Cow<'static, [i32]>)] = &[\n");
    for (c, offs) in countries {
        out.push_str(&format!("({c:?}, Cow::Borrowed(&{offs:?})),\n"));
    }
    out.push_str("];\n");
    out
}
