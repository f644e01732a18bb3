//! Velocity: many sessions from one device or address, many events from one address, one device
//! over many addresses or countries, counted across visits by the store. A single visit shows
//! none of this; it is what catches a real browser driven at the operating-system level, a script
//! replaying a recorded person, and one device rotating through residential addresses.
//!
//! Each threshold is the larger of an absolute floor and a share of the project's own events in
//! the same window, so a large shop's corporate egress is judged against its traffic and a small
//! site's against the floor. Shared addresses (many device keys behind one address) and device
//! keys that identical phones share (iOS) weigh less: the detail says why.
//!
//! Counts are evidence about whoever made them, and anyone can make them: so a visit is judged by
//! its own share. A device key's sessions count where this visit is: at most the address's
//! sessions, so a burst sent elsewhere under a common browser's key (identical machines share
//! one) raises that address, not every holder of the key. And a visit that carries a device key
//! is judged by its address's counts only at a shared address's weight, unless its own device
//! made them: sessions sprayed without a key, or under another one, are another client's doing.

use crate::reasons::{Code, Reason};
use crate::velocity::{AddressCounts, DeviceCounts, PerSpan, Span, Velocity};
use crate::visit::Visit;

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

pub fn reasons(_: &crate::engine::Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
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

/// The device's counts where this visit is: its sessions and events at most its address's, since
/// it cannot have made more of them here than the address saw.
fn device_here(
    d: &PerSpan<DeviceCounts>,
    a: Option<&PerSpan<AddressCounts>>,
) -> PerSpan<DeviceCounts> {
    let Some(a) = a else {
        return *d;
    };
    PerSpan(Span::ALL.map(|span| {
        let (dc, ac) = (d.at(span), a.at(span));
        DeviceCounts {
            sessions: dc.sessions.min(ac.sessions),
            events: dc.events.min(ac.events),
            ..dc
        }
    }))
}

/// Why an address's counts weigh less against this visit, if they do: many devices behind it,
/// or a visit with a device key of its own that made few of them.
fn address_discount(c: &AddressCounts, own: Option<u64>, what: &str) -> Option<String> {
    if looks_shared(c) {
        return Some(
            "; many devices behind one address look like a shared one, weighed less".into(),
        );
    }
    own.map(|n| {
        format!(
            "; this browser's device key made at most {} of them, so the rest are another client's \
             evidence, weighed less",
            count(n, what, &format!("{what}s"))
        )
    })
}

fn session_churn(vel: &Velocity, shared_key: bool) -> Option<Reason> {
    let p = &vel.project_events;
    let here = vel
        .device
        .as_ref()
        .map(|d| device_here(d, vel.address.as_ref()));
    let by_device = here
        .as_ref()
        .and_then(|d| crossed(d, |c: &DeviceCounts| c.sessions, &DEVICE_SESSIONS, p));
    if let Some((span, n, t, c)) = by_device {
        let mut detail = format!(
            "{n} sessions in {span} from one device at this address (threshold {t}; {} events, {})",
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
    let own = here.map(|d| d.at(span).sessions);
    if let Some(why) = address_discount(&c, own, "session") {
        detail.push_str(&why);
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
    // This visit's device made at most this many of the window's events here.
    let own = vel
        .device
        .as_ref()
        .map(|d| device_here(d, Some(a)).at(span).events);
    // A device that made most of them is this visit's own doing, whatever else is there.
    let own = own.filter(|&n| n.saturating_mul(2) < c.events);
    if let Some(why) = address_discount(&c, own, "event") {
        detail.push_str(&why);
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
    use crate::evidence::{Evidence, Signals};
    use crate::reasons;

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
            crate::visit::Beyond {
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
            r[0].detail.starts_with(
                "20 sessions in 5 minutes from one device at this address (threshold 20"
            )
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

    /// Issue 52: 24 sessions sent from one address under a common browser's key must not make a
    /// person with that browser elsewhere a bot; that address's own visits still are.
    #[test]
    fn a_burst_under_a_shared_device_key_elsewhere_is_not_this_visit_s_evidence() {
        let elsewhere = Velocity {
            address: Some(address(2, 1, 1)),
            device: Some(device(25, 2, 1)),
            ..Velocity::default()
        };
        assert!(verdict(CHROME, elsewhere).is_empty());
        let there = Velocity {
            address: Some(address(50, 25, 1)),
            device: Some(device(25, 2, 1)),
            ..Velocity::default()
        };
        let r = verdict(CHROME, there);
        assert_eq!(codes(&r), [Code::SessionChurn]);
        assert!(reasons::score(&r, reasons::Target::Bot) >= 0.9);
    }

    /// Issue 52: sessions sprayed from an address without a device key weigh less against a
    /// person there whose browser has one; without a key of its own a visit is judged in full.
    #[test]
    fn deviceless_sessions_weigh_less_against_a_visit_with_its_own_key() {
        let sprayed = address(400, 200, 1);
        let person = Velocity {
            address: Some(sprayed),
            device: Some(device(1, 1, 1)),
            ..Velocity::default()
        };
        let r = verdict(CHROME, person);
        assert_eq!(codes(&r), [Code::SessionChurn, Code::AddressVelocity]);
        assert!(
            r.iter().all(|r| r.detail.contains("another client's")),
            "{r:?}"
        );
        assert!(reasons::score(&r, reasons::Target::Bot) < 0.9, "{r:?}");
        let keyless = Velocity {
            address: Some(sprayed),
            ..Velocity::default()
        };
        assert!(reasons::score(&verdict(CHROME, keyless), reasons::Target::Bot) > 0.99);
        // A device that made the address's events itself is judged by them in full.
        let busy = DeviceCounts {
            events: 400,
            sessions: 15,
            addresses: 1,
            countries: 1,
        };
        let own = Velocity {
            address: Some(address(400, 15, 1)),
            device: Some(PerSpan([busy; 3])),
            ..Velocity::default()
        };
        let r = verdict(CHROME, own);
        assert_eq!(codes(&r), [Code::AddressVelocity]);
        assert_eq!(r[0].weight, Code::AddressVelocity.weight());
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
