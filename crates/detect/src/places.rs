//! Where an address is: the operator ranges it falls in (data/ip-ranges.tsv), its country
//! (data/country.mmdb), and which time zones and UTC offsets that country uses (data/zones.tsv
//! with the tz database's offsets).

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use serde::Deserialize;

use crate::error::DataError;
use crate::table::{Table, unlabelled};

mod zones;

pub use zones::Country;
use zones::country;

// The zones and countries of data/zones.tsv, as `build.rs` computed them.
include!(concat!(env!("OUT_DIR"), "/zones.rs"));

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

/// What the address tables hold for one address, found together ([`crate::Engine::place`]): the
/// operator range's label (its tag; [`Ranges::label`] reads it), the ASN of the hosting network
/// range it falls in ([`crate::networks::Networks::network`] reads it), and its country.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Place {
    pub range: Option<u32>,
    pub network: Option<u32>,
    pub country: Option<Country>,
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
        self.label(self.table.find(ip)?)
    }

    /// The label of a range's tag ([`Place::range`]).
    pub fn label(&self, tag: u32) -> Option<&Label> {
        self.labels.get(&tag)
    }

    /// The ranges as laid out.
    pub fn table(&self) -> &Table {
        &self.table
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

pub fn country_name(c: Country) -> String {
    String::from_utf8_lossy(&c).into_owned()
}

/// A zone's countries and its UTC offsets (minutes east) in January and July, so that daylight
/// saving time on either side counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneInfo {
    pub countries: Cow<'static, [Country]>,
    pub offsets: [i32; 2],
}

/// The country database's bytes, shared by its reader and the address index's walk of its tree
/// ([`crate::address_index::Index::build`]).
#[derive(Clone)]
pub(crate) struct Mmdb(Arc<Cow<'static, [u8]>>);

impl AsRef<[u8]> for Mmdb {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

pub struct Geo {
    pub(crate) countries: maxminddb::Reader<Mmdb>,
    pub(crate) mmdb: Mmdb,
    /// Zones by name, and countries with every offset they use (in January or July), sorted:
    /// borrowed from the binary when built in.
    zones: Cow<'static, [(Cow<'static, str>, ZoneInfo)]>,
    country_offsets: Cow<'static, [(Country, Cow<'static, [i32]>)]>,
}

#[derive(Deserialize)]
struct CountryRecord<'a> {
    country_code: &'a str,
}

impl Geo {
    /// `mmdb` is borrowed from the binary when the data is built in (no copy of its 7.8 MB);
    /// `zones_tsv` is data/zones.tsv's text.
    pub fn load(mmdb: Cow<'static, [u8]>, zones_tsv: &str) -> Result<Self, DataError> {
        let (zones, countries) = zones::table(zones_tsv);
        let zones = (zones.into_iter())
            .map(|(name, countries, offsets)| {
                let countries = Cow::Owned(countries);
                (Cow::Owned(name), ZoneInfo { countries, offsets })
            })
            .collect();
        let countries = (countries.into_iter())
            .map(|(c, offsets)| (c, Cow::Owned(offsets)))
            .collect();
        Self::with(mmdb, Cow::Owned(zones), Cow::Owned(countries))
    }

    /// The same, with the zones `build.rs` computed from data/zones.tsv.
    pub fn built(mmdb: Cow<'static, [u8]>) -> Result<Self, DataError> {
        Self::with(
            mmdb,
            Cow::Borrowed(BUILT_ZONES),
            Cow::Borrowed(BUILT_COUNTRIES),
        )
    }

    fn with(
        mmdb: Cow<'static, [u8]>,
        zones: Cow<'static, [(Cow<'static, str>, ZoneInfo)]>,
        country_offsets: Cow<'static, [(Country, Cow<'static, [i32]>)]>,
    ) -> Result<Self, DataError> {
        let mmdb = Mmdb(Arc::new(mmdb));
        let countries = maxminddb::Reader::from_source(mmdb.clone())
            .map_err(|e| DataError::Format(format!("country.mmdb: {e}")))?;
        Ok(Self {
            countries,
            mmdb,
            zones,
            country_offsets,
        })
    }

    pub fn country(&self, ip: IpAddr) -> Option<Country> {
        let found = self.countries.lookup(ip).ok()?;
        let rec: CountryRecord = found.decode().ok()??;
        country(rec.country_code)
    }

    /// The country database as read.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.mmdb.as_ref()
    }

    pub fn zone(&self, name: &str) -> Option<&ZoneInfo> {
        let i = (self.zones)
            .binary_search_by(|(z, _)| z.as_ref().cmp(name))
            .ok()?;
        Some(&self.zones[i].1)
    }

    /// Every offset used in `c`, in January or July.
    pub fn offsets_of(&self, c: Country) -> &[i32] {
        (self.country_offsets)
            .binary_search_by_key(&c, |(c, _)| *c)
            .map_or(&[], |i| &self.country_offsets[i].1)
    }

    /// A zone used in `c` (the first by name), for building consistent evidence in measurements.
    pub fn a_zone_of(&self, c: Country) -> Option<&str> {
        (self.zones.iter())
            .find(|(_, z)| z.countries.contains(&c))
            .map(|(name, _)| name.as_ref())
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
    fn the_built_zones_are_the_files() {
        let mmdb = || Cow::Borrowed(&[][..]);
        let (Err(_), Err(_)) = (Geo::built(mmdb()), Geo::load(mmdb(), "")) else {
            panic!("an empty country database is refused");
        };
        let (zones, countries) = zones::table(include_str!("../../../data/zones.tsv"));
        assert!(zones.len() > 400 && countries.len() > 200);
        assert_eq!(BUILT_ZONES.len(), zones.len());
        for ((name, cs, offsets), (built, info)) in zones.iter().zip(BUILT_ZONES) {
            assert_eq!(
                (name.as_str(), &cs[..], offsets),
                (&**built, &*info.countries, &info.offsets)
            );
        }
        assert_eq!(BUILT_COUNTRIES.len(), countries.len());
        for ((c, offsets), (built, built_offsets)) in countries.iter().zip(BUILT_COUNTRIES) {
            assert_eq!((c, &offsets[..]), (built, &**built_offsets));
        }
    }

    #[test]
    fn zones_are_found_by_name_and_countries_by_code() {
        let mmdb = include_bytes!("../../../data/country.mmdb");
        let geo = |tsv| Geo::load(Cow::Borrowed(&mmdb[..]), tsv).unwrap();
        let g = geo(
            "# zones\nEurope/Berlin\tDE\nEurope/Busingen\tDE,CH\nNot/AZone\tFR\nAsia/Tokyo\tJP\n\
                     Asia/Tokyo\tjp,XX1\n",
        );
        assert_eq!(
            g.zone("Asia/Tokyo").map(|z| &*z.countries),
            Some(&[*b"JP"][..])
        );
        assert_eq!(
            g.zone("Europe/Busingen").map(|z| z.offsets),
            Some([60, 120])
        );
        assert_eq!(g.zone("Not/AZone"), None);
        assert_eq!(g.offsets_of(*b"CH"), [60, 120]);
        assert_eq!(g.offsets_of(*b"FR"), [0; 0]);
        assert_eq!(g.a_zone_of(*b"DE"), Some("Europe/Berlin"));
        assert_eq!(g.a_zone_of(*b"CH"), Some("Europe/Busingen"));
    }

    #[test]
    fn zone_offsets_cover_daylight_saving() {
        use zones::offsets;
        assert_eq!(offsets("Europe/Berlin"), Some([60, 120]));
        assert_eq!(offsets("Asia/Tokyo"), Some([540, 540]));
        assert_eq!(offsets("Not/AZone"), None);
        assert_eq!(language_region("de-AT"), Some(*b"AT"));
        assert_eq!(language_region("en"), None);
        assert_eq!(language_region("zh-Hant-TW"), Some(*b"TW"));
    }
}
