//! The languages: the browser's language regions against the address's country (weak: travellers
//! exist).

use crate::engine::Engine;
use crate::places::{self, country_name, language_region};
use crate::reasons::{Code, Reason};
use crate::visit::Visit;

/// The family's reasons for one visit.
pub fn reasons(_: &Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let (e, country) = (v.evidence, v.country);

    let Some(c) = country else {
        return;
    };
    let from_signals = e.signals.as_ref().and_then(|s| s.languages.as_ref());
    let mut regions: Vec<places::Country> = match from_signals {
        Some(list) => list.iter().filter_map(|t| language_region(t)).collect(),
        None => e
            .headers
            .as_ref()
            .and_then(|h| h.get("accept-language"))
            .map(|v| {
                v.split(',')
                    .filter_map(|part| language_region(part.split(';').next()?.trim()))
                    .collect()
            })
            .unwrap_or_default(),
    };
    regions.dedup();
    if !regions.is_empty() && !regions.contains(&c) {
        let named: Vec<String> = regions.iter().map(|r| country_name(*r)).collect();
        out.push(Reason::new(
            Code::LanguageCountryMismatch,
            format!(
                "language regions {} do not include {}, the address's country",
                named.join(", "),
                country_name(c)
            ),
        ));
    }
}
