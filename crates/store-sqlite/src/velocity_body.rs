//! How a velocity item is kept in its row: numbers as they are, and each sketch as its bitmap
//! in base64 (171 characters), instead of a JSON list of up to 1,024 bucket numbers. A visit reads and rewrites six items; with
//! lists, a busy device's items ran to kilobytes and spilled onto overflow pages, and parsing and
//! writing them was most of the visit's added time. Other sets (countries) stay lists. Rows
//! written before this layout are still read.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::domain::velocity::{Counters, Sketch, is_sketch};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Compact {
    #[serde(default, rename = "n", skip_serializing_if = "BTreeMap::is_empty")]
    numbers: BTreeMap<String, u64>,
    /// Sketches, as bitmaps (bit `i` of byte `i / 8` is bucket `i`).
    #[serde(default, rename = "b", skip_serializing_if = "BTreeMap::is_empty")]
    buckets: BTreeMap<String, String>,
    /// Exact sets, as their members.
    #[serde(default, rename = "m", skip_serializing_if = "BTreeMap::is_empty")]
    members: BTreeMap<String, BTreeSet<String>>,
}

/// The layout before bitmaps: every set as its members.
#[derive(Deserialize)]
struct Plain {
    numbers: BTreeMap<String, u64>,
    sets: BTreeMap<String, BTreeSet<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Compact(Compact),
    Plain(Plain),
}

/// The row's body for `c`.
pub fn encode(c: &Counters) -> Result<String, serde_json::Error> {
    #[derive(Serialize)]
    struct Out<'a> {
        #[serde(rename = "n", skip_serializing_if = "BTreeMap::is_empty")]
        numbers: &'a BTreeMap<String, u64>,
        #[serde(rename = "b", skip_serializing_if = "BTreeMap::is_empty")]
        buckets: BTreeMap<&'a str, String>,
        #[serde(rename = "m", skip_serializing_if = "BTreeMap::is_empty")]
        members: &'a BTreeMap<String, BTreeSet<String>>,
    }
    serde_json::to_string(&Out {
        numbers: &c.numbers,
        buckets: c
            .sketches
            .iter()
            .map(|(attr, s)| (attr.as_str(), STANDARD_NO_PAD.encode(s.to_bytes())))
            .collect(),
        members: &c.sets,
    })
}

/// The item a row's body holds, in either layout.
pub fn decode(body: &str) -> Result<Counters, String> {
    match serde_json::from_str::<Stored>(body).map_err(|e| e.to_string())? {
        Stored::Compact(c) => {
            let mut sketches = BTreeMap::new();
            for (attr, map) in c.buckets {
                let mut bytes = [0u8; Sketch::BYTES + 2];
                let n = STANDARD_NO_PAD
                    .decode_slice(map.as_bytes(), &mut bytes)
                    .map_err(|e| format!("{attr}: {e}"))?;
                let sketch = Sketch::from_bytes(&bytes[..n])
                    .ok_or_else(|| format!("{attr}: a bitmap of {n} bytes"))?;
                sketches.insert(attr, sketch);
            }
            Ok(Counters {
                numbers: c.numbers,
                sketches,
                sets: c.members,
            })
        }
        Stored::Plain(p) => {
            let (sketches, sets): (BTreeMap<_, _>, BTreeMap<_, _>) =
                p.sets.into_iter().partition(|(attr, _)| is_sketch(attr));
            Ok(Counters {
                numbers: p.numbers,
                sketches: sketches
                    .into_iter()
                    .map(|(attr, members)| {
                        let s = members
                            .iter()
                            .filter_map(|m| Sketch::parse_bucket(m))
                            .collect();
                        (attr, s)
                    })
                    .collect(),
                sets,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(sketches: &[(&str, &[u16])], sets: &[(&str, &[&str])]) -> Counters {
        Counters {
            numbers: [("eh".to_owned(), 7u64), ("e3".to_owned(), 2)].into(),
            sketches: sketches
                .iter()
                .map(|(a, bs)| (a.to_string(), bs.iter().copied().collect()))
                .collect(),
            sets: sets
                .iter()
                .map(|(a, ms)| (a.to_string(), ms.iter().map(|m| m.to_string()).collect()))
                .collect(),
        }
    }

    #[test]
    fn sketches_become_bitmaps_and_everything_comes_back() {
        let c = counters(
            &[("sh", &[0, 7, 8, 1023, 512]), ("a3", &[])],
            &[("ch", &["DE", "FR"])],
        );
        let body = encode(&c).unwrap();
        assert!(body.contains("\"b\":{\"a3\":\"AAAA"), "{body}");
        assert!(body.contains("\"m\":{\"ch\":[\"DE\",\"FR\"]}"), "{body}");
        assert_eq!(decode(&body).unwrap(), c);
    }

    #[test]
    fn a_full_sketch_is_small() {
        let c = counters(&[("sd", &(0..1024).collect::<Vec<u16>>())], &[]);
        let body = encode(&c).unwrap();
        assert!(body.len() < 220, "{} bytes", body.len());
        assert_eq!(decode(&body).unwrap(), c);
    }

    #[test]
    fn rows_of_the_layout_before_are_read() {
        let old = r#"{"numbers":{"e3":2,"eh":7},"sets":{"ch":["DE"],"sh":["1","2"]}}"#;
        assert_eq!(
            decode(old).unwrap(),
            counters(&[("sh", &[1, 2])], &[("ch", &["DE"])])
        );
        assert!(decode("{\"b\":{\"sh\":\"!!\"}}").is_err());
        assert!(decode("{\"b\":{\"sh\":\"AAAA\"}}").is_err());
        assert!(decode("[1]").is_err());
    }
}
