//! How a velocity item is kept in its row: numbers as they are, and each sketch as its bitmap
//! in base64 (171 characters), instead of a JSON list of up to 1,024 bucket numbers, or, while it
//! holds few buckets, as the list of them (an address seen once fills one bucket: a few
//! characters, not 171). A visit reads and rewrites six items: as lists, a busy device's items
//! run to kilobytes and spill onto overflow pages; as bitmaps only, a row of an address seen once
//! or twice is many times the size of what it says. Other sets (countries) stay lists. Rows
//! written in the layouts before are still read.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use serde::{Deserialize, Serialize};

use vigil_core::domain::velocity::{Counters, SKETCH_BUCKETS, Sketch, is_sketch};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Compact {
    #[serde(default, rename = "n", skip_serializing_if = "BTreeMap::is_empty")]
    numbers: BTreeMap<String, u64>,
    /// Sketches, as bitmaps (bit `i` of byte `i / 8` is bucket `i`) or lists of buckets.
    #[serde(default, rename = "b", skip_serializing_if = "BTreeMap::is_empty")]
    buckets: BTreeMap<String, SketchText>,
    /// Exact sets, as their members.
    #[serde(default, rename = "m", skip_serializing_if = "BTreeMap::is_empty")]
    members: BTreeMap<String, BTreeSet<String>>,
}

/// A sketch as a row holds it.
#[derive(Serialize)]
#[serde(untagged)]
enum SketchText {
    /// Its bitmap in base64.
    Bitmap(String),
    /// Its filled buckets.
    Buckets(Vec<u16>),
}

/// Told apart by the JSON's own type, a string or a list: an untagged derive would buffer every
/// value to try each variant in turn, on every row a visit reads.
impl<'de> Deserialize<'de> for SketchText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> serde::de::Visitor<'de> for Text {
            type Value = SketchText;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a bitmap in base64 or a list of buckets")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SketchText, E> {
                Ok(SketchText::Bitmap(v.to_owned()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<SketchText, A::Error> {
                let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(LIST_MAX));
                while let Some(b) = seq.next_element()? {
                    list.push(b);
                }
                Ok(SketchText::Buckets(list))
            }
        }
        d.deserialize_any(Text)
    }
}

/// The most buckets a sketch is written as a list of: about four characters each, against the
/// bitmap's 171.
const LIST_MAX: usize = 32;

/// The layout before bitmaps: every set as its members.
#[derive(Deserialize)]
struct Plain {
    numbers: BTreeMap<String, u64>,
    sets: BTreeMap<String, BTreeSet<String>>,
}

/// The row's body for `c`.
pub fn encode(c: &Counters) -> Result<String, serde_json::Error> {
    #[derive(Serialize)]
    struct Out<'a> {
        #[serde(rename = "n", skip_serializing_if = "BTreeMap::is_empty")]
        numbers: &'a BTreeMap<String, u64>,
        #[serde(rename = "b", skip_serializing_if = "BTreeMap::is_empty")]
        buckets: BTreeMap<&'a str, SketchText>,
        #[serde(rename = "m", skip_serializing_if = "BTreeMap::is_empty")]
        members: &'a BTreeMap<String, BTreeSet<String>>,
    }
    serde_json::to_string(&Out {
        numbers: &c.numbers,
        buckets: c
            .sketches
            .iter()
            .map(|(attr, s)| {
                let text = if s.len() <= LIST_MAX {
                    SketchText::Buckets(s.buckets().collect())
                } else {
                    SketchText::Bitmap(STANDARD_NO_PAD.encode(s.to_bytes()))
                };
                (attr.as_str(), text)
            })
            .collect(),
        members: &c.sets,
    })
}

/// The item a row's body holds, in either layout: today's first, then the one before (not an
/// untagged enum, which would buffer every row before trying either).
pub fn decode(body: &str) -> Result<Counters, String> {
    match serde_json::from_str::<Compact>(body) {
        Ok(c) => c.counters(),
        Err(e) => serde_json::from_str::<Plain>(body)
            .map(Plain::counters)
            .map_err(|_| e.to_string()),
    }
}

impl SketchText {
    /// The sketch of attribute `attr`, or why the row is corrupt.
    fn sketch(self, attr: &str) -> Result<Sketch, String> {
        match self {
            SketchText::Bitmap(map) => {
                let mut bytes = [0u8; Sketch::BYTES + 2];
                let n = STANDARD_NO_PAD
                    .decode_slice(map.as_bytes(), &mut bytes)
                    .map_err(|e| format!("{attr}: {e}"))?;
                Sketch::from_bytes(&bytes[..n])
                    .ok_or_else(|| format!("{attr}: a bitmap of {n} bytes"))
            }
            SketchText::Buckets(list) => {
                if let Some(b) = list.iter().find(|&&b| u64::from(b) >= SKETCH_BUCKETS) {
                    return Err(format!("{attr}: bucket {b} of {SKETCH_BUCKETS}"));
                }
                Ok(list.into_iter().collect())
            }
        }
    }
}

impl Compact {
    fn counters(self) -> Result<Counters, String> {
        let mut sketches = BTreeMap::new();
        for (attr, text) in self.buckets {
            let sketch = text.sketch(&attr)?;
            sketches.insert(attr, sketch);
        }
        Ok(Counters {
            numbers: self.numbers,
            sketches,
            sets: self.members,
        })
    }
}

impl Plain {
    fn counters(self) -> Counters {
        let (sketches, sets): (BTreeMap<_, _>, BTreeMap<_, _>) =
            self.sets.into_iter().partition(|(attr, _)| is_sketch(attr));
        Counters {
            numbers: self.numbers,
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
    fn few_buckets_are_a_list_many_a_bitmap_and_everything_comes_back() {
        let many: Vec<u16> = (0..=LIST_MAX as u16).map(|b| b * 31).collect();
        let c = counters(
            &[("sh", &[0, 7, 8, 1023, 512]), ("a3", &[]), ("vd", &many)],
            &[("ch", &["DE", "FR"])],
        );
        let body = encode(&c).unwrap();
        assert!(body.contains("\"a3\":[]"), "{body}");
        assert!(body.contains("\"sh\":[0,7,8,512,1023]"), "{body}");
        assert!(body.contains("\"vd\":\"AQAA"), "{body}");
        assert!(body.contains("\"m\":{\"ch\":[\"DE\",\"FR\"]}"), "{body}");
        assert_eq!(decode(&body).unwrap(), c);
    }

    #[test]
    fn rows_with_bitmaps_only_are_read() {
        // Bucket 0, then 1023, as the layout before lists wrote them.
        let mut bytes = [0u8; Sketch::BYTES];
        bytes[0] = 1;
        bytes[Sketch::BYTES - 1] = 0x80;
        let body = format!(
            "{{\"n\":{{\"e3\":2,\"eh\":7}},\"b\":{{\"sh\":\"{}\"}}}}",
            STANDARD_NO_PAD.encode(bytes)
        );
        assert_eq!(decode(&body).unwrap(), counters(&[("sh", &[0, 1023])], &[]));
        assert!(decode("{\"b\":{\"sh\":[1024]}}").is_err());
        assert!(decode("{\"b\":{\"sh\":[-1]}}").is_err());
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
