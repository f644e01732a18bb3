//! Time zones by name: each zone's countries (data/zones.tsv) and its UTC offsets (minutes east)
//! in January and July, so that daylight saving time on either side counts, from the tz
//! database; and every offset each country uses. `build.rs` computes them into the binary as
//! sorted tables that the engine searches in place; a file's text is read the same way.

use std::collections::BTreeMap;

use chrono::TimeZone;

/// A two-letter country code.
pub type Country = [u8; 2];

/// `code` as a country, upper-cased, if it is two letters.
pub fn country(code: &str) -> Option<Country> {
    let b = code.as_bytes();
    (b.len() == 2 && b.iter().all(u8::is_ascii_alphabetic))
        .then(|| [b[0].to_ascii_uppercase(), b[1].to_ascii_uppercase()])
}

/// `zone`'s offsets in mid-January and mid-July 2026, if the tz database knows it.
pub fn offsets(zone: &str) -> Option<[i32; 2]> {
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

/// A zone: its name, countries and offsets.
pub type Zone = (String, Vec<Country>, [i32; 2]);

/// The zones of zones.tsv's `zone \t CC,CC` lines (`#` comments) sorted by name (a zone listed
/// twice is its last line; one the tz database does not know is left out: it proves nothing),
/// and the countries, sorted, each with every offset its zones use.
pub fn table(tsv: &str) -> (Vec<Zone>, Vec<(Country, Vec<i32>)>) {
    let mut zones = BTreeMap::new();
    let mut country_offsets: BTreeMap<Country, Vec<i32>> = BTreeMap::new();
    for line in tsv.lines().filter(|l| !l.starts_with('#')) {
        let Some((zone, list)) = line.split_once('\t') else {
            continue;
        };
        let cs: Vec<Country> = list.split(',').filter_map(country).collect();
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
        zones.insert(zone.to_owned(), (cs, offs));
    }
    let zones = (zones.into_iter()).map(|(z, (cs, o))| (z, cs, o)).collect();
    (zones, country_offsets.into_iter().collect())
}
