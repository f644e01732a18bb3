//! The place: the browser's time zone against the address's country.

use crate::engine::Engine;
use crate::places::country_name;
use crate::reasons::{Code, Reason};
use crate::visit::Visit;

/// The family's reasons for one visit.
pub fn reasons(engine: &Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let (Some(s), Some(c)) = (v.signals, v.country) else {
        return;
    };
    let country_offsets = engine.geo.offsets_of(c);
    if country_offsets.is_empty() {
        return;
    }
    if let Some(zone) = s.time_zone.as_deref()
        && let Some(info) = engine.geo.zone(zone)
    {
        if !info.countries.contains(&c) && !info.offsets.iter().any(|o| country_offsets.contains(o))
        {
            out.push(Reason::new(
                Code::TimezoneMismatch,
                format!(
                    "the browser's time zone {zone} is not used in {}, the address's country",
                    country_name(c)
                ),
            ));
        }
        return;
    }
    // No zone name: the browser's current offset against every offset of the country. Real
    // offsets are within a day; anything else says nothing about a place (and cannot be
    // negated safely: i32::MIN has no opposite).
    if let Some(minutes_west) = s.timezone_offset.filter(|m| (-1440..=1440).contains(m))
        && !country_offsets.contains(&-minutes_west)
    {
        out.push(Reason::new(
            Code::TimezoneMismatch,
            format!(
                "the browser's UTC offset ({:+} min) is not used in {}, the address's country",
                -minutes_west,
                country_name(c)
            ),
        ));
    }
}
