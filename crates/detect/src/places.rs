//! Where an address is: the operator ranges it falls in (data/ip-ranges.tsv), its country
//! (data/country.mmdb), and which time zones and UTC offsets that country uses (data/zones.tsv
//! with the tz database's offsets).

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::IpAddr;

use chrono::TimeZone;
use serde::Deserialize;

use super::DataError;
use crate::table::{Table, unlabelled};

/// What an operator range is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Hosting,
    Cdn,
    Vpn,
    Tor,
    /// A declared crawler's published range.
    Crawler,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub kind: Kind,
    pub provider: String,
}

/// Operator ranges: their labels (`#L` lines) and the ranges naming them ([`Table`]).
pub struct Ranges {
    labels: HashMap<u32, Label>,
    table: Table,
}

impl Ranges {
    /// The ranges of ip-ranges.tsv's text.
    pub fn parse(text: &str) -> Result<Self, DataError> {
        let table =
            Table::parse(text).map_err(|n| DataError::Format(format!("ip-ranges.tsv line {n}")))?;
        let ranges = Self::new(text, table)?;
        if let Some(tag) = unlabelled(&ranges.table, |tag| ranges.labels.contains_key(&tag)) {
            return Err(DataError::Format(format!(
                "ip-ranges.tsv: a range names label {tag}, which no #L line defines"
            )));
        }
        Ok(ranges)
    }

    /// The labels of `meta` (the file's `#` lines, or all of it) over a table already laid out.
    /// That every range names a label is checked by [`Ranges::parse`] and, for the built-in
    /// data, by the build (`build.rs`): not again at every cold start.
    pub fn new(meta: &str, table: Table) -> Result<Self, DataError> {
        let mut labels = HashMap::new();
        for (n, line) in meta.lines().enumerate() {
            let bad = || DataError::Format(format!("ip-ranges.tsv label line {}", n + 1));
            if !line.starts_with("#L\t") {
                continue;
            }
            let cols: Vec<&str> = line.split('\t').collect();
            let ["#L", i, kind, provider] = cols.as_slice() else {
                return Err(bad());
            };
            let kind = match *kind {
                "hosting" => Kind::Hosting,
                "cdn" => Kind::Cdn,
                "vpn" => Kind::Vpn,
                "tor" => Kind::Tor,
                "bot" => Kind::Crawler,
                _ => return Err(bad()),
            };
            let i: u32 = i.parse().map_err(|_| bad())?;
            let provider = (*provider).to_owned();
            labels.insert(i, Label { kind, provider });
        }
        Ok(Self { labels, table })
    }

    /// The operator range `ip` falls in, if any.
    pub fn lookup(&self, ip: IpAddr) -> Option<&Label> {
        self.labels.get(&self.table.find(ip)?)
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every range with its label, for measuring accuracy on each category.
    pub fn samples(&self) -> impl Iterator<Item = (IpAddr, &Label)> {
        self.table
            .starts()
            .filter_map(|(ip, tag)| self.labels.get(&tag).map(|l| (ip, l)))
    }
}

/// A two-letter country code.
pub type Country = [u8; 2];

fn country(code: &str) -> Option<Country> {
    let b = code.as_bytes();
    (b.len() == 2 && b.iter().all(u8::is_ascii_alphabetic))
        .then(|| [b[0].to_ascii_uppercase(), b[1].to_ascii_uppercase()])
}

pub fn country_name(c: Country) -> String {
    String::from_utf8_lossy(&c).into_owned()
}

/// A zone's countries and its UTC offsets (minutes east) in January and July, so that daylight
/// saving time on either side counts.
#[derive(Debug, Clone)]
pub struct ZoneInfo {
    pub countries: Vec<Country>,
    pub offsets: [i32; 2],
}

pub struct Geo {
    countries: maxminddb::Reader<Cow<'static, [u8]>>,
    zones: HashMap<String, ZoneInfo>,
    /// Every offset used in each country, in January or July.
    country_offsets: HashMap<Country, Vec<i32>>,
}

#[derive(Deserialize)]
struct CountryRecord<'a> {
    country_code: &'a str,
}

fn offsets(zone: &str) -> Option<[i32; 2]> {
    let tz: chrono_tz::Tz = zone.parse().ok()?;
    let at = |month| {
        chrono::Utc
            .with_ymd_and_hms(2026, month, 15, 12, 0, 0)
            .single()
            .map(|t| {
                use chrono::Offset;
                tz.offset_from_utc_datetime(&t.naive_utc())
                    .fix()
                    .local_minus_utc()
                    / 60
            })
    };
    Some([at(1)?, at(7)?])
}

impl Geo {
    /// `mmdb` is borrowed from the binary when the data is built in (no copy of its 7.8 MB).
    pub fn load(mmdb: Cow<'static, [u8]>, zones_tsv: &str) -> Result<Self, DataError> {
        let countries = maxminddb::Reader::from_source(mmdb)
            .map_err(|e| DataError::Format(format!("country.mmdb: {e}")))?;
        let mut zones = HashMap::new();
        let mut country_offsets: HashMap<Country, Vec<i32>> = HashMap::new();
        for line in zones_tsv.lines().filter(|l| !l.starts_with('#')) {
            let Some((zone, list)) = line.split_once('\t') else {
                continue;
            };
            let cs: Vec<Country> = list.split(',').filter_map(country).collect();
            // A zone the tz database no longer knows gives no offsets: it proves nothing.
            let Some(offs) = offsets(zone) else {
                continue;
            };
            for c in &cs {
                let known = country_offsets.entry(*c).or_default();
                for o in offs {
                    if !known.contains(&o) {
                        known.push(o);
                    }
                }
            }
            zones.insert(
                zone.to_owned(),
                ZoneInfo {
                    countries: cs,
                    offsets: offs,
                },
            );
        }
        Ok(Self {
            countries,
            zones,
            country_offsets,
        })
    }

    pub fn country(&self, ip: IpAddr) -> Option<Country> {
        let found = self.countries.lookup(ip).ok()?;
        let rec: CountryRecord = found.decode().ok()??;
        country(rec.country_code)
    }

    pub fn zone(&self, name: &str) -> Option<&ZoneInfo> {
        self.zones.get(name)
    }

    pub fn offsets_of(&self, c: Country) -> &[i32] {
        self.country_offsets.get(&c).map_or(&[], Vec::as_slice)
    }

    /// A zone used in `c`, for building consistent evidence in measurements.
    pub fn a_zone_of(&self, c: Country) -> Option<&str> {
        let mut names: Vec<&String> = self
            .zones
            .iter()
            .filter(|(_, z)| z.countries.contains(&c))
            .map(|(n, _)| n)
            .collect();
        names.sort();
        names.first().map(|s| s.as_str())
    }
}

/// The region of a language tag (`de-AT` → AT), if it names one.
pub fn language_region(tag: &str) -> Option<Country> {
    tag.split(['-', '_'])
        .skip(1)
        .find(|s| s.len() == 2)
        .and_then(country)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_found_by_bisection() {
        let r = Ranges::parse(
            "#L\t3\ttor\tTor\n#L\t7\thosting\tAmazon AWS\n\
             3.5.140.0\t3.5.143.255\t7\n185.220.101.0\t185.220.101.255\t3\n2a05:d000::\t2a05:dfff:ffff:ffff:ffff:ffff:ffff:ffff\t7\n",
        )
        .unwrap();
        let at = |s: &str| r.lookup(s.parse().unwrap()).map(|l| l.provider.as_str());
        assert_eq!(at("3.5.141.9"), Some("Amazon AWS"));
        assert_eq!(at("3.5.144.0"), None);
        assert_eq!(at("185.220.101.255"), Some("Tor"));
        assert_eq!(at("::ffff:185.220.101.1"), Some("Tor"));
        assert_eq!(at("2a05:d018::1"), Some("Amazon AWS"));
        assert_eq!(at("1.1.1.1"), None);
        assert!(Ranges::parse("1.2.3.4\t1.2.3.5\t99\n").is_err());
    }

    #[test]
    fn zone_offsets_cover_daylight_saving() {
        assert_eq!(offsets("Europe/Berlin"), Some([60, 120]));
        assert_eq!(offsets("Asia/Tokyo"), Some([540, 540]));
        assert_eq!(offsets("Not/AZone"), None);
        assert_eq!(language_region("de-AT"), Some(*b"AT"));
        assert_eq!(language_region("en"), None);
        assert_eq!(language_region("zh-Hant-TW"), Some(*b"TW"));
    }
}
