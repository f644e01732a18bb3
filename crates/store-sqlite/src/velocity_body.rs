//! How a velocity item is kept in its row: numbers as they are, and each set of sketch buckets
//! (decimal members below [`SKETCH_BUCKETS`]) as a bitmap in base64, 171 characters at most,
//! instead of a JSON list of up to 1,024 strings. A visit reads and rewrites six items; with
//! lists, a busy device's items ran to kilobytes and spilled onto overflow pages, and parsing and
//! writing them was most of the visit's added time. Other sets (countries) stay lists. Rows
//! written before this layout are still read.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::domain::velocity::{Counters, SKETCH_BUCKETS};

const BYTES: usize = SKETCH_BUCKETS as usize / 8;

/// The bucket numbers in the order of their decimal strings (`0`, `1`, `10`, `100`, `1000`, ...).
static LEXICOGRAPHIC: std::sync::LazyLock<Vec<u16>> = std::sync::LazyLock::new(|| {
    let mut all: Vec<u16> = (0..(BYTES * 8) as u16).collect();
    all.sort_by_cached_key(u16::to_string);
    all
});

#[derive(Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Compact {
    #[serde(default, rename = "n", skip_serializing_if = "BTreeMap::is_empty")]
    numbers: BTreeMap<String, u64>,
    /// Bucket sets, as bitmaps (bit `i` of byte `i / 8` is bucket `i`).
    #[serde(default, rename = "b", skip_serializing_if = "BTreeMap::is_empty")]
    buckets: BTreeMap<String, String>,
    /// Any other set, as its members.
    #[serde(default, rename = "m", skip_serializing_if = "BTreeMap::is_empty")]
    members: BTreeMap<String, BTreeSet<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Compact(Compact),
    /// The layout before bitmaps: `Counters` as serde writes it.
    Plain(Counters),
}

/// A sketch bucket's number, when `member` is one written canonically (`0`..`1023`).
fn bucket(member: &str) -> Option<usize> {
    let n: usize = member.parse().ok()?;
    (n < BYTES * 8 && (member == "0" || !member.starts_with('0'))).then_some(n)
}

/// The row's body for `c`.
pub fn encode(c: &Counters) -> Result<String, serde_json::Error> {
    let mut out = Compact {
        numbers: c.numbers.clone(),
        ..Compact::default()
    };
    for (attr, set) in &c.sets {
        let bits: Option<Vec<usize>> = set.iter().map(|m| bucket(m)).collect();
        match bits {
            Some(bits) => {
                let mut map = [0u8; BYTES];
                for b in bits {
                    map[b / 8] |= 1 << (b % 8);
                }
                out.buckets
                    .insert(attr.clone(), STANDARD_NO_PAD.encode(map));
            }
            None => {
                out.members.insert(attr.clone(), set.clone());
            }
        }
    }
    serde_json::to_string(&out)
}

/// The item a row's body holds, in either layout.
pub fn decode(body: &str) -> Result<Counters, String> {
    let compact = match serde_json::from_str::<Stored>(body).map_err(|e| e.to_string())? {
        Stored::Plain(c) => return Ok(c),
        Stored::Compact(c) => c,
    };
    let mut sets = compact.members;
    for (attr, map) in compact.buckets {
        let bytes = STANDARD_NO_PAD
            .decode(map.as_bytes())
            .map_err(|e| format!("{attr}: {e}"))?;
        if bytes.len() != BYTES {
            return Err(format!("{attr}: a bitmap of {} bytes", bytes.len()));
        }
        // Members in the set's own (lexicographic) order: the set is then built in one pass
        // instead of by a search per member, which was most of a busy item's decoding.
        let members: Vec<String> = LEXICOGRAPHIC
            .iter()
            .filter(|&&b| bytes[usize::from(b) / 8] & (1 << (b % 8)) != 0)
            .map(u16::to_string)
            .collect();
        sets.insert(attr, members.into_iter().collect());
    }
    Ok(Counters {
        numbers: compact.numbers,
        sets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(sets: &[(&str, &[&str])]) -> Counters {
        Counters {
            numbers: [("eh".to_owned(), 7u64), ("e3".to_owned(), 2)].into(),
            sets: sets
                .iter()
                .map(|(a, ms)| (a.to_string(), ms.iter().map(|m| m.to_string()).collect()))
                .collect(),
        }
    }

    #[test]
    fn buckets_become_bitmaps_and_everything_comes_back() {
        let c = counters(&[
            ("sh", &["0", "7", "8", "1023", "512"]),
            ("ch", &["DE", "FR"]),
            // Not canonical bucket numbers: kept as members.
            ("s3", &["007", "1024"]),
            ("a3", &[]),
        ]);
        let body = encode(&c).unwrap();
        assert!(body.contains("\"b\":{\"a3\":"), "{body}");
        assert!(
            body.contains("\"m\":{\"ch\":[\"DE\",\"FR\"],\"s3\":"),
            "{body}"
        );
        assert_eq!(decode(&body).unwrap(), c);
    }

    #[test]
    fn a_full_sketch_is_small() {
        let all: Vec<String> = (0..SKETCH_BUCKETS).map(|i| i.to_string()).collect();
        let c = Counters {
            numbers: BTreeMap::new(),
            sets: [("sd".to_owned(), all.into_iter().collect())].into(),
        };
        let body = encode(&c).unwrap();
        assert!(body.len() < 200, "{} bytes", body.len());
        assert_eq!(decode(&body).unwrap(), c);
    }

    #[test]
    fn rows_of_the_layout_before_are_read() {
        let c = counters(&[("sh", &["1", "2"]), ("ch", &["DE"])]);
        let old = serde_json::to_string(&c).unwrap();
        assert_eq!(decode(&old).unwrap(), c);
        assert!(decode("{\"b\":{\"sh\":\"!!\"}}").is_err());
        assert!(decode("{\"b\":{\"sh\":\"AAAA\"}}").is_err());
        assert!(decode("[1]").is_err());
    }
}
