//! Client hints against the user agent: brands, major version, platform, mobile, and high-entropy
//! values all empty, in the agent's data and in the `Sec-CH-UA*` request headers.

use crate::engine::Engine;
use crate::evidence;
use crate::reasons::{Code, Reason, visitor_text};
use crate::ua;
use crate::visit::Visit;

/// The family's reasons for one visit.
pub fn reasons(_: &Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let (e, ua) = (v.evidence, v.ua);

    let Some(claim) = ua.filter(|u| !u.is_empty()).and(v.ua_claim) else {
        return;
    };
    let header = |n| e.headers.as_ref().and_then(|h| h.get(n));
    let ua_data = e.signals.as_ref().and_then(|s| s.ua_data.as_ref());
    let brands: Option<String> = header("sec-ch-ua").map(str::to_owned).or_else(|| {
        ua_data.map(|d| {
            d.brands
                .iter()
                .map(|b| b.brand.as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
    });
    let platform = header("sec-ch-ua-platform")
        .map(|p| p.trim_matches('"').to_owned())
        .or_else(|| ua_data.and_then(|d| d.platform.clone()));
    let mobile = header("sec-ch-ua-mobile")
        .map(|m| m.trim() == "?1")
        .or_else(|| ua_data.and_then(|d| d.mobile));
    let mut why = Vec::new();
    if let Some(b) = brands.as_deref().filter(|b| !b.is_empty()) {
        let chromium = b.contains("Chromium") || b.contains("Google Chrome") || b.contains("Edge");
        match claim.browser {
            ua::Browser::Chrome | ua::Browser::Edge if !chromium => {
                why.push(format!(
                    "brands ({}) for a Chromium user agent",
                    visitor_text(b, 80)
                ));
            }
            ua::Browser::Firefox | ua::Browser::Safari if chromium => {
                why.push("Chromium brands for a non-Chromium user agent".to_owned());
            }
            _ => {}
        }
    }
    if let (Some(p), Some(claimed)) = (platform.as_deref(), claim.platform)
        && !p.is_empty()
        && !p.eq_ignore_ascii_case(claimed)
        && !(claimed == "Linux" && p.eq_ignore_ascii_case("Chrome OS"))
    {
        why.push(format!(
            "platform {} for a {claimed} user agent",
            visitor_text(p, 20)
        ));
    }
    if let Some(m) = mobile
        && m != claim.mobile
        && claim.platform != Some("iOS")
    {
        why.push(format!(
            "mobile {m} for a {} user agent",
            if claim.mobile { "mobile" } else { "desktop" }
        ));
    }
    let high = e.signals.as_ref().and_then(|s| s.high_entropy.as_ref());
    if let Some(h) = high {
        let empty = |v: &Option<String>| v.as_deref().is_none_or(str::is_empty);
        if empty(&h.platform_version)
            && empty(&h.architecture)
            && empty(&h.bitness)
            && empty(&h.ua_full_version)
            && h.full_version_list.is_empty()
        {
            why.push("the high-entropy client hints are all empty".to_owned());
        }
    }
    // The engine's major version by its brands, against the one the user agent claims.
    let brand_major = header("sec-ch-ua")
        .and_then(header_brand_major)
        .or_else(|| {
            ua_data.and_then(|d| {
                brand_major(
                    d.brands
                        .iter()
                        .map(|b| (b.brand.as_str(), b.version.as_str())),
                )
            })
        });
    // (The user agent's version is read only when brands give one: most visits send none.)
    if let Some(b) = brand_major
        && let Some(u) = chromium_major(ua.unwrap_or_default())
        && b != u
    {
        why.push(format!("brands say version {b}, the user agent {u}"));
    }
    if let (Some(d), Some(h)) = (ua_data, high)
        && !d.brands.is_empty()
        && !h.full_version_list.is_empty()
        && brand_names(&d.brands) != brand_names(&h.full_version_list)
    {
        why.push("the brands and the full version list name different brands".to_owned());
    }
    if !why.is_empty() {
        out.push(Reason::new(Code::ClientHintsMismatch, why.join("; ")));
    }
}

fn brand_names(list: &[evidence::Brand]) -> Vec<&str> {
    let mut v: Vec<&str> = list.iter().map(|b| b.brand.as_str()).collect();
    v.sort_unstable();
    v
}

/// The major version a Chromium user agent claims (`Chrome/131.0...`, `Edg/131...`).
fn chromium_major(ua: &str) -> Option<u32> {
    ["Edg/", "Chrome/", "CriOS/", "Chromium/"]
        .iter()
        .find_map(|t| ua.split_once(t))
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|d| d.parse().ok())
}

/// The major version of the Chromium brands in a list of (brand, version).
fn brand_major<'a>(brands: impl Iterator<Item = (&'a str, &'a str)>) -> Option<u32> {
    brands
        .filter(|(b, _)| matches!(*b, "Chromium" | "Google Chrome" | "Microsoft Edge"))
        .find_map(|(_, v)| v.split('.').next()?.parse().ok())
}

/// `Sec-CH-UA`'s brands: `"Chromium";v="131", "Not_A Brand";v="24"`.
fn header_brand_major(v: &str) -> Option<u32> {
    let pairs: Vec<(&str, &str)> = v
        .split(',')
        .filter_map(|item| {
            let (brand, version) = item.split_once(";v=")?;
            Some((
                brand.trim().trim_matches('"'),
                version.trim().trim_matches('"'),
            ))
        })
        .collect();
    brand_major(pairs.into_iter())
}
