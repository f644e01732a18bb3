//! Velocity: many sessions from one device or address, many events from one address, one device
//! over many addresses or countries, counted across visits by the store. A single visit shows
//! none of this; it is what catches a real browser driven at the operating-system level, a script
//! replaying a recorded person, and one device rotating through residential addresses.
//!
//! Each threshold is the larger of an absolute floor and a share of the project's own events in
//! the same window, so a large shop's corporate egress is judged against its traffic and a small
//! site's against the floor. Shared addresses (many device keys behind one address) and device
//! keys that identical phones share (iOS) weigh less: the detail says why.

use crate::velocity::{AddressCounts, DeviceCounts, PerSpan, Span, Velocity};
use crate::{Code, Reason, Visit};

/// Sessions of one device key per window before `session_churn`: a person opening tabs makes a
/// handful, the 15 tabs of the demo's person stay under.
const DEVICE_SESSIONS: [u64; 3] = [20, 60, 200];
/// Sessions of one address per window before `session_churn`.
const ADDRESS_SESSIONS: [u64; 3] = [30, 150, 600];
/// Events of one address per window before `address_velocity`.
const ADDRESS_EVENTS: [u64; 3] = [150, 1_000, 5_000];
/// Addresses of one device key per window before `address_churn` (a phone moving between Wi-Fi
/// and its carrier makes two or three an hour).
const DEVICE_ADDRESSES: [u64; 3] = [5, 10, 20];
/// Countries of one device key per window before `address_churn`.
const DEVICE_COUNTRIES: [u64; 3] = [3, 3, 4];
/// The share of the project's events in a window that one subject may have before the floors
/// above stop being the threshold.
const PROJECT_SHARE: f64 = 0.01;

/// Weights short of the table's for evidence that innocent crowds also make.
const SHARED_ADDRESS_WEIGHT: f64 = 3.0;
const SHARED_DEVICE_WEIGHT: f64 = 3.5;
const SHARED_EVENTS_WEIGHT: f64 = 2.0;

pub fn reasons(_: &crate::Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let Some(vel) = v.velocity else {
        return;
    };
    // iPhones of one model and iOS version report the same stable signals: their key is a
    // crowd's, not one device's.
    let shared_key = v.js_claim.or(v.ua_claim).and_then(|c| c.platform) == Some("iOS");
    if let Some(r) = session_churn(vel, shared_key) {
        out.push(r);
    }
    if let Some(r) = address_velocity(vel) {
        out.push(r);
    }
    if let Some(r) = address_churn(vel, shared_key) {
        out.push(r);
    }
}

/// The threshold of `floor` in `span`, raised by the project's own traffic.
fn threshold(floor: &[u64; 3], span: Span, project: &PerSpan<u64>) -> u64 {
    let i = Span::ALL.iter().position(|s| *s == span).unwrap_or(0);
    let relative = (project.at(span) as f64 * PROJECT_SHARE).ceil() as u64;
    floor[i].max(relative)
}

/// The first window (shortest first) in which `count` reaches its threshold.
fn crossed<T: Copy>(
    counts: &PerSpan<T>,
    count: impl Fn(&T) -> u64,
    floor: &[u64; 3],
    project: &PerSpan<u64>,
) -> Option<(Span, u64, u64, T)> {
    Span::ALL.into_iter().find_map(|span| {
        let c = counts.at(span);
        let (n, t) = (count(&c), threshold(floor, span, project));
        (n >= t).then_some((span, n, t, c))
    })
}

/// Many devices behind an address: a crowd, unless each device itself made many sessions.
fn looks_shared(a: &AddressCounts) -> bool {
    a.devices >= 3 && a.devices.saturating_mul(4) >= a.sessions
}

/// "1 address", "3 addresses".
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn with_weight(code: Code, weight: f64, detail: String) -> Reason {
    let mut r = Reason::new(code, detail);
    r.weight = weight.min(code.weight());
    r
}

fn session_churn(vel: &Velocity, shared_key: bool) -> Option<Reason> {
    let p = &vel.project_events;
    let by_device = vel
        .device
        .as_ref()
        .and_then(|d| crossed(d, |c: &DeviceCounts| c.sessions, &DEVICE_SESSIONS, p));
    if let Some((span, n, t, c)) = by_device {
        let mut detail = format!(
            "{n} sessions in {span} from one device (threshold {t}; {} events, {})",
            c.events,
            count(c.addresses, "address", "addresses")
        );
        let mut weight = Code::SessionChurn.weight();
        if shared_key {
            detail.push_str("; identical iPhones share a device key, so weighed less");
            weight = SHARED_DEVICE_WEIGHT;
        }
        return Some(with_weight(Code::SessionChurn, weight, detail));
    }
    let (span, n, t, c) = vel
        .address
        .as_ref()
        .and_then(|a| crossed(a, |c: &AddressCounts| c.sessions, &ADDRESS_SESSIONS, p))?;
    let mut detail = format!(
        "{n} sessions in {span} from one address (threshold {t}; {} events, {})",
        c.events,
        count(c.devices, "device", "devices")
    );
    let mut weight = Code::SessionChurn.weight();
    if looks_shared(&c) {
        detail.push_str("; many devices behind one address look like a shared one, weighed less");
        weight = SHARED_ADDRESS_WEIGHT;
    }
    Some(with_weight(Code::SessionChurn, weight, detail))
}

fn address_velocity(vel: &Velocity) -> Option<Reason> {
    let a = vel.address.as_ref()?;
    let (span, n, t, c) = crossed(
        a,
        |c: &AddressCounts| c.events,
        &ADDRESS_EVENTS,
        &vel.project_events,
    )?;
    let mut detail = format!(
        "{n} events in {span} from one address (threshold {t}; {} sessions, {})",
        c.sessions,
        count(c.devices, "device", "devices")
    );
    let mut weight = Code::AddressVelocity.weight();
    if looks_shared(&c) {
        detail.push_str("; many devices behind one address look like a shared one, weighed less");
        weight = SHARED_EVENTS_WEIGHT;
    }
    Some(with_weight(Code::AddressVelocity, weight, detail))
}

fn address_churn(vel: &Velocity, shared_key: bool) -> Option<Reason> {
    let d = vel.device.as_ref()?;
    let p = &vel.project_events;
    let (what, (span, n, t, c)) = crossed(d, |c: &DeviceCounts| c.addresses, &DEVICE_ADDRESSES, p)
        .map(|x| ("addresses", x))
        .or_else(|| {
            crossed(d, |c: &DeviceCounts| c.countries, &DEVICE_COUNTRIES, p)
                .map(|x| ("countries", x))
        })?;
    let mut detail = format!(
        "one device from {n} {what} in {span} (threshold {t}; {} sessions, {}, {})",
        c.sessions,
        count(c.addresses, "address", "addresses"),
        count(c.countries, "country", "countries")
    );
    let mut weight = Code::AddressChurn.weight();
    if shared_key {
        detail.push_str("; identical iPhones share a device key, so weighed less");
        weight = SHARED_DEVICE_WEIGHT;
    }
    Some(with_weight(Code::AddressChurn, weight, detail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Evidence, Signals, reasons};

    const CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Safari/537.36";
    const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1";

    fn device(sessions: u64, addresses: u64, countries: u64) -> PerSpan<DeviceCounts> {
        let c = DeviceCounts {
            events: sessions * 2,
            sessions,
            addresses,
            countries,
        };
        PerSpan([c; 3])
    }

    fn address(events: u64, sessions: u64, devices: u64) -> PerSpan<AddressCounts> {
        PerSpan(
            [AddressCounts {
                events,
                sessions,
                devices,
            }; 3],
        )
    }

    fn verdict(ua: &str, vel: Velocity) -> Vec<Reason> {
        let e = Evidence {
            user_agent: Some(ua.to_owned()),
            signals: Some(Signals {
                user_agent: Some(ua.to_owned()),
                ..Signals::default()
            }),
            ..Evidence::default()
        };
        let v = Visit::with(
            &crate::tests::ENGINE,
            &e,
            crate::Beyond {
                velocity: Some(&vel),
                ..Default::default()
            },
        );
        let mut out = Vec::new();
        reasons(&crate::tests::ENGINE, &v, &mut out);
        out
    }

    fn codes(r: &[Reason]) -> Vec<Code> {
        r.iter().map(|r| r.code).collect()
    }

    #[test]
    fn a_person_opening_a_few_tabs_is_no_evidence() {
        let vel = Velocity {
            address: Some(address(40, 15, 1)),
            device: Some(device(15, 1, 1)),
            ..Velocity::default()
        };
        assert!(verdict(CHROME, vel).is_empty());
        assert!(verdict(CHROME, Velocity::default()).is_empty());
    }

    #[test]
    fn one_device_making_sessions_fast_is_session_churn_at_bot_odds() {
        let vel = Velocity {
            address: Some(address(20, 20, 1)),
            device: Some(device(20, 1, 1)),
            ..Velocity::default()
        };
        let r = verdict(CHROME, vel);
        assert_eq!(codes(&r), [Code::SessionChurn]);
        assert!(
            r[0].detail
                .starts_with("20 sessions in 5 minutes from one device (threshold 20")
        );
        assert!(reasons::score(&r, reasons::Target::Bot) >= 0.9);
    }

    #[test]
    fn a_crowd_behind_one_address_weighs_less_than_one_browser_there() {
        let crowd = Velocity {
            address: Some(address(400, 200, 150)),
            ..Velocity::default()
        };
        let r = verdict(CHROME, crowd);
        assert_eq!(codes(&r), [Code::SessionChurn, Code::AddressVelocity]);
        assert!(reasons::score(&r, reasons::Target::Bot) < 0.9);
        assert!(r[0].detail.contains("shared"));
        let one = Velocity {
            address: Some(address(400, 200, 1)),
            ..Velocity::default()
        };
        assert!(reasons::score(&verdict(CHROME, one), reasons::Target::Bot) > 0.99);
    }

    #[test]
    fn one_device_over_many_addresses_or_countries_is_address_churn() {
        let r = verdict(
            CHROME,
            Velocity {
                device: Some(device(6, 20, 1)),
                ..Velocity::default()
            },
        );
        assert_eq!(codes(&r), [Code::AddressChurn]);
        assert!(
            r[0].detail
                .starts_with("one device from 20 addresses in 5 minutes")
        );
        let r = verdict(
            CHROME,
            Velocity {
                device: Some(device(3, 3, 3)),
                ..Velocity::default()
            },
        );
        assert!(r[0].detail.starts_with("one device from 3 countries"));
    }

    #[test]
    fn iphones_share_keys_so_their_device_reasons_weigh_less() {
        let vel = Velocity {
            device: Some(device(30, 20, 1)),
            ..Velocity::default()
        };
        let r = verdict(IPHONE, vel);
        assert_eq!(codes(&r), [Code::SessionChurn, Code::AddressChurn]);
        assert!(r.iter().all(|r| r.weight == SHARED_DEVICE_WEIGHT));
    }

    #[test]
    fn a_busy_project_raises_the_thresholds() {
        let vel = Velocity {
            device: Some(device(25, 1, 1)),
            project_events: PerSpan([10_000, 100_000, 1_000_000]),
            ..Velocity::default()
        };
        // 1% of 10,000 events in 5 minutes is 100 sessions, of 100,000 an hour 1,000.
        assert!(verdict(CHROME, vel).is_empty());
    }
}
