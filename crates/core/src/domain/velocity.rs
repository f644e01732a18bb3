//! Velocity counters: what one visit adds to the counts of its address, its device key and its
//! project, and how the counts of three windows (5 minutes, 1 hour, 24 hours) are read back.
//!
//! Layout. Each subject has an hour item (twelve 5-minute slots and the hour's totals) and a day
//! item (the day's totals), under the project's partition. A visit adds to its subjects' current
//! hour and day items and reads the previous ones, so each window is estimated as the current
//! bucket plus the previous one weighted by how much of it still lies inside the window (the
//! sliding-window estimate rate limiters use): never more than the last two buckets hold.
//!
//! Distinct counts (sessions, addresses, devices) are linear-counting sketches: a member is
//! hashed to one of [`SKETCH_BUCKETS`] buckets and the set of filled buckets is stored, which both
//! stores merge atomically (DynamoDB's `ADD` to a string set, SQLite's `INSERT OR IGNORE`); a
//! HyperLogLog's registers take a maximum, which DynamoDB cannot apply without reading first.
//! Exact while few buckets collide: within 3% (one standard error) up to 1,000 distinct members,
//! saturating at [`SKETCH_CAP`]. Countries are stored as they are (at most a few hundred).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use sha2::{Digest, Sha256};

use super::{DeviceKey, ProjectId, SessionId, Timestamp};
use crate::detect::velocity::{AddressCounts, DeviceCounts, PerSpan, Velocity};

/// Buckets of a distinct-count sketch.
pub const SKETCH_BUCKETS: u64 = 1024;
/// The largest distinct count a sketch reports (every bucket filled): M ln M.
pub const SKETCH_CAP: u64 = 7_098;
/// Project counters are spread over this many items so that a busy project has no hot key; the
/// baseline is one shard's count times this.
pub const PROJECT_SHARDS: u64 = 4;
const SLOT_SECONDS: i64 = 300;
const HOUR: i64 = 3_600;
const DAY: i64 = 86_400;
/// Items outlive the window that reads them by this much before the table's TTL removes them.
const GRACE: i64 = 3_600;

/// One visit, as the counters see it.
#[derive(Debug, Clone)]
pub struct Tick<'a> {
    pub project: &'a ProjectId,
    pub session: &'a SessionId,
    pub address: IpAddr,
    pub device: Option<&'a DeviceKey>,
    /// The address's country, when the engine knows it.
    pub country: Option<&'a str>,
    pub at: Timestamp,
}

/// Additions to one counter item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterUpdate {
    pub sk: String,
    /// Epoch seconds after which the item may be removed.
    pub expires: i64,
    /// Numbers added to attributes.
    pub adds: Vec<(String, u64)>,
    /// Members added to set attributes.
    pub members: Vec<(String, String)>,
}

/// A counter item as stored: its numbers and its sets.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    pub numbers: BTreeMap<String, u64>,
    pub sets: BTreeMap<String, BTreeSet<String>>,
}

impl Counters {
    fn number(&self, attr: &str) -> u64 {
        self.numbers.get(attr).copied().unwrap_or(0)
    }

    fn set(&self, attr: &str) -> Option<&BTreeSet<String>> {
        self.sets.get(attr)
    }
}

/// The store work of one visit: the items to add to (read back after) and the items to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterWork {
    /// The visit's time (epoch seconds): items that expired before it may be cleared.
    pub at: i64,
    pub updates: Vec<CounterUpdate>,
    pub reads: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Address,
    Device,
    Project,
}

/// The counter subject of an address: itself, or its /64 for IPv6 (one subscriber's prefix).
pub fn address_subject(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

/// The bucket of a sketch that `member` fills.
pub fn bucket(member: &str) -> String {
    let digest = Sha256::digest(member.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) % SKETCH_BUCKETS).to_string()
}

/// The distinct members a sketch with `filled` buckets has seen (linear counting).
pub fn estimate(filled: usize) -> u64 {
    let (m, k) = (SKETCH_BUCKETS as f64, filled as f64);
    if filled as u64 >= SKETCH_BUCKETS {
        return SKETCH_CAP;
    }
    (m * (m / (m - k)).ln()).round() as u64
}

fn hour_sk(subject: &str, start: i64) -> String {
    format!("VEL#{subject}#H#{start}")
}

fn day_sk(subject: &str, start: i64) -> String {
    format!("VEL#{subject}#D#{start}")
}

/// A subject's key part: its kind and its name.
fn subject(kind: Kind, name: &str) -> String {
    match kind {
        Kind::Address => format!("a#{name}"),
        Kind::Device => format!("d#{name}"),
        Kind::Project => format!("p#{name}"),
    }
}

fn floor(t: i64, step: i64) -> i64 {
    t.div_euclid(step) * step
}

impl Tick<'_> {
    fn subjects(&self) -> Vec<(Kind, String)> {
        let shard = super::super::store::items::stats_shard(self.session) % PROJECT_SHARDS;
        let mut out = vec![
            (
                Kind::Address,
                subject(Kind::Address, &address_subject(self.address)),
            ),
            (Kind::Project, subject(Kind::Project, &shard.to_string())),
        ];
        if let Some(d) = self.device {
            out.push((Kind::Device, subject(Kind::Device, d.as_str())));
        }
        out
    }

    /// The members this visit adds to a subject's sets, by set letter.
    fn members(&self, kind: Kind) -> Vec<(char, String)> {
        let mut out = vec![('s', bucket(self.session.as_str()))];
        match kind {
            Kind::Address => {
                if let Some(d) = self.device {
                    out.push(('v', bucket(d.as_str())));
                }
            }
            Kind::Device => {
                out.push(('a', bucket(&address_subject(self.address))));
                if let Some(c) = self.country {
                    out.push(('c', c.to_owned()));
                }
            }
            Kind::Project => out.clear(),
        }
        out
    }

    /// What the visit writes and reads: each subject's current hour and day items, added to,
    /// and the previous hour's and day's, read.
    pub fn work(&self) -> CounterWork {
        let t = self.at.unix_seconds();
        let (hour, day) = (floor(t, HOUR), floor(t, DAY));
        let slot = (t - hour) / SLOT_SECONDS;
        let mut updates = Vec::new();
        let mut reads = Vec::new();
        for (kind, name) in self.subjects() {
            let members = self.members(kind);
            let hour_members = members
                .iter()
                .flat_map(|(set, m)| {
                    [
                        (format!("{set}{slot}"), m.clone()),
                        (format!("{set}h"), m.clone()),
                    ]
                })
                .collect();
            updates.push(CounterUpdate {
                sk: hour_sk(&name, hour),
                expires: hour + 2 * HOUR + GRACE,
                adds: vec![(format!("e{slot}"), 1), ("eh".to_owned(), 1)],
                members: hour_members,
            });
            updates.push(CounterUpdate {
                sk: day_sk(&name, day),
                expires: day + 2 * DAY + GRACE,
                adds: vec![("ed".to_owned(), 1)],
                members: members
                    .iter()
                    .map(|(set, m)| (format!("{set}d"), m.clone()))
                    .collect(),
            });
            reads.push(hour_sk(&name, hour - HOUR));
            reads.push(day_sk(&name, day - DAY));
        }
        CounterWork {
            at: t,
            updates,
            reads,
        }
    }

    /// The velocity the engine reads, from the items `work` named: `updated` as they stand after
    /// this visit's additions (in `work.updates`' order) and `read` (in `work.reads`' order).
    pub fn velocity(&self, updated: &[Counters], read: &[Counters]) -> Velocity {
        let t = self.at.unix_seconds();
        let hour = floor(t, HOUR);
        let slot = (t - hour) / SLOT_SECONDS;
        let mut v = Velocity::default();
        for (i, (kind, _)) in self.subjects().into_iter().enumerate() {
            let get = |items: &'_ [Counters], j: usize| -> Counters {
                items.get(j).cloned().unwrap_or_default()
            };
            let (cur_hour, cur_day) = (get(updated, 2 * i), get(updated, 2 * i + 1));
            let (prev_hour, prev_day) = (get(read, 2 * i), get(read, 2 * i + 1));
            // The 5-minute window's previous bucket is the slot before, in the hour before at :00.
            let (prev_slot_item, prev_slot) = if slot == 0 {
                (&prev_hour, 11)
            } else {
                (&cur_hour, slot - 1)
            };
            let five = Window {
                current: &cur_hour,
                current_tag: slot.to_string(),
                previous: prev_slot_item,
                previous_tag: prev_slot.to_string(),
                elapsed: (t - hour - slot * SLOT_SECONDS) as f64 / SLOT_SECONDS as f64,
            };
            let hourly = Window {
                current: &cur_hour,
                current_tag: "h".into(),
                previous: &prev_hour,
                previous_tag: "h".into(),
                elapsed: (t - hour) as f64 / HOUR as f64,
            };
            let daily = Window {
                current: &cur_day,
                current_tag: "d".into(),
                previous: &prev_day,
                previous_tag: "d".into(),
                elapsed: (t - floor(t, DAY)) as f64 / DAY as f64,
            };
            let windows = [five, hourly, daily];
            match kind {
                Kind::Address => {
                    v.address = Some(PerSpan(windows.map(|w| AddressCounts {
                        events: w.events(),
                        sessions: w.distinct('s'),
                        devices: w.distinct('v'),
                    })));
                }
                Kind::Device => {
                    v.device = Some(PerSpan(windows.map(|w| DeviceCounts {
                        events: w.events(),
                        sessions: w.distinct('s'),
                        addresses: w.distinct('a'),
                        countries: w.exact('c'),
                    })));
                }
                Kind::Project => {
                    v.project_events = PerSpan(windows.map(|w| w.events() * PROJECT_SHARDS));
                }
            }
        }
        v
    }
}

/// One window over a current and a previous bucket.
struct Window<'a> {
    current: &'a Counters,
    current_tag: String,
    previous: &'a Counters,
    previous_tag: String,
    /// How much of the current bucket has passed, in [0, 1).
    elapsed: f64,
}

impl Window<'_> {
    fn weight(&self) -> f64 {
        1.0 - self.elapsed.clamp(0.0, 1.0)
    }

    fn events(&self) -> u64 {
        let cur = self.current.number(&format!("e{}", self.current_tag));
        let prev = self.previous.number(&format!("e{}", self.previous_tag));
        cur + (prev as f64 * self.weight()).round() as u64
    }

    fn sets(&self, set: char) -> (usize, usize) {
        let cur = self.current.set(&format!("{set}{}", self.current_tag));
        let prev = self.previous.set(&format!("{set}{}", self.previous_tag));
        let now = cur.map_or(0, BTreeSet::len);
        let union = match (cur, prev) {
            (Some(c), Some(p)) => c.union(p).count(),
            (Some(c), None) => c.len(),
            (None, Some(p)) => p.len(),
            (None, None) => 0,
        };
        (now, union)
    }

    /// The members of the current bucket, and of the previous one's not in it, weighted.
    fn distinct(&self, set: char) -> u64 {
        let (now, union) = self.sets(set);
        let (a, b) = (estimate(now), estimate(union));
        a + ((b - a) as f64 * self.weight()).round() as u64
    }

    fn exact(&self, set: char) -> u64 {
        let (now, union) = self.sets(set);
        now as u64 + ((union - now) as f64 * self.weight()).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::velocity::Span;

    fn apply(store: &mut BTreeMap<String, Counters>, work: &CounterWork) -> Vec<Counters> {
        let mut out = Vec::new();
        for u in &work.updates {
            let item = store.entry(u.sk.clone()).or_default();
            for (a, n) in &u.adds {
                *item.numbers.entry(a.clone()).or_default() += n;
            }
            for (a, m) in &u.members {
                item.sets.entry(a.clone()).or_default().insert(m.clone());
            }
            out.push(item.clone());
        }
        out
    }

    fn visit(
        store: &mut BTreeMap<String, Counters>,
        session: &str,
        ip: &str,
        device: Option<&DeviceKey>,
        at: i64,
    ) -> Velocity {
        let project = ProjectId::parse("proj_velocity").expect("id");
        let session = SessionId::parse(session).expect("session");
        let tick = Tick {
            project: &project,
            session: &session,
            address: ip.parse().expect("ip"),
            device,
            country: Some("DE"),
            at: Timestamp::from_unix_millis(at * 1000).expect("time"),
        };
        let work = tick.work();
        let updated = apply(store, &work);
        let read: Vec<Counters> = work
            .reads
            .iter()
            .map(|sk| store.get(sk).cloned().unwrap_or_default())
            .collect();
        tick.velocity(&updated, &read)
    }

    const T0: i64 = 1_790_000_000;

    #[test]
    fn ipv6_counts_by_its_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(
            address_subject("2001:db8:1:2:aaaa::1".parse().expect("ip")),
            "2001:db8:1:2::/64"
        );
        assert_eq!(
            address_subject("::ffff:192.0.2.7".parse().expect("ip")),
            "192.0.2.7"
        );
    }

    #[test]
    fn linear_counting_is_exact_for_few_and_close_for_many() {
        assert_eq!(estimate(0), 0);
        assert_eq!(estimate(1), 1);
        assert_eq!(estimate(20), 20);
        let filled: BTreeSet<String> = (0..1000).map(|i| bucket(&format!("s{i}"))).collect();
        let n = estimate(filled.len());
        assert!((950..=1050).contains(&n), "{n}");
        assert_eq!(estimate(SKETCH_BUCKETS as usize), SKETCH_CAP);
    }

    #[test]
    fn sessions_events_and_addresses_count_across_visits() {
        let mut store = BTreeMap::new();
        let device = DeviceKey::parse("dev_00112233445566778899").expect("key");
        let mut last = Velocity::default();
        for i in 0..30 {
            last = visit(
                &mut store,
                &format!("s-{i}"),
                "198.51.100.7",
                Some(&device),
                T0 + i,
            );
        }
        let a = last.address.expect("address").at(Span::FiveMinutes);
        assert_eq!((a.events, a.sessions, a.devices), (30, 30, 1));
        let d = last.device.expect("device").at(Span::Day);
        assert_eq!(
            (d.events, d.sessions, d.addresses, d.countries),
            (30, 30, 1, 1)
        );
        // The same session again is another event, not another session.
        let again = visit(&mut store, "s-0", "198.51.100.8", Some(&device), T0 + 31);
        let d = again.device.expect("device").at(Span::FiveMinutes);
        assert_eq!((d.events, d.sessions, d.addresses), (31, 30, 2));
        assert_eq!(again.project_events.at(Span::Hour) % PROJECT_SHARDS, 0);
    }

    #[test]
    fn windows_slide_and_expire() {
        let mut store = BTreeMap::new();
        for i in 0..10 {
            visit(&mut store, &format!("s-{i}"), "198.51.100.7", None, T0 + i);
        }
        let five = |v: &Velocity, s| v.address.expect("address").at(s).sessions;
        // Ten minutes later the 5-minute window has let them go; the hour and the day have not.
        let later = visit(&mut store, "late", "198.51.100.7", None, T0 + 600);
        assert_eq!(five(&later, Span::FiveMinutes), 1);
        assert_eq!(five(&later, Span::Day), 11);
        // Three days later nothing is left.
        let gone = visit(&mut store, "gone", "198.51.100.7", None, T0 + 3 * 86_400);
        for s in Span::ALL {
            assert_eq!(five(&gone, s), 1, "{s}");
        }
    }
}
