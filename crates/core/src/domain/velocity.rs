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

use super::device::DeviceKey;
use super::ids::{ProjectId, SessionId};
use super::time::Timestamp;
use vigil_detect::velocity::{AddressCounts, DeviceCounts, PerSpan, Velocity};

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
    /// Buckets filled in sketch attributes (see [`is_sketch`]).
    pub buckets: Vec<(String, u16)>,
    /// Members added to exact set attributes.
    pub members: Vec<(String, String)>,
}

/// The filled buckets of one distinct-count sketch, as a bitmap: bucket `i` is bit `i % 64` of
/// word `i / 64`. Counting and merging are popcounts and ORs over 128 bytes, with no allocation
/// (a visit reads up to eighteen sketches, some of a thousand buckets).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Sketch([u64; WORDS]);

const WORDS: usize = SKETCH_BUCKETS as usize / 64;

impl Sketch {
    /// The bitmap's size in bytes.
    pub const BYTES: usize = WORDS * 8;

    pub fn insert(&mut self, bucket: u16) {
        let b = usize::from(bucket) % SKETCH_BUCKETS as usize;
        self.0[b / 64] |= 1 << (b % 64);
    }

    pub fn contains(&self, bucket: u16) -> bool {
        let b = usize::from(bucket);
        b < SKETCH_BUCKETS as usize && self.0[b / 64] & (1 << (b % 64)) != 0
    }

    /// Filled buckets.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// Filled buckets of the union with `other`.
    pub fn union_len(&self, other: &Sketch) -> usize {
        self.0
            .iter()
            .zip(&other.0)
            .map(|(a, b)| (a | b).count_ones() as usize)
            .sum()
    }

    /// The filled buckets, in order: each word's set bits, lowest first (not a test of every
    /// bucket: rows list the buckets of sketches that hold few).
    pub fn buckets(&self) -> impl Iterator<Item = u16> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros();
                    rest &= rest - 1;
                    // Below SKETCH_BUCKETS (1,024), so it fits.
                    (i * 64) as u16 + bit as u16
                })
            })
        })
    }

    /// Bucket `i` is bit `i % 8` of byte `i / 8`.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut out = [0u8; Self::BYTES];
        for (chunk, w) in out.chunks_exact_mut(8).zip(&self.0) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// The sketch [`Sketch::to_bytes`] wrote, or none for another length.
    pub fn from_bytes(bytes: &[u8]) -> Option<Sketch> {
        if bytes.len() != Self::BYTES {
            return None;
        }
        let mut s = Sketch::default();
        for (w, chunk) in s.0.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            *w = u64::from_le_bytes(word);
        }
        Some(s)
    }

    /// A bucket written as a set member (its decimal number, as DynamoDB's string sets hold it),
    /// when canonical and in range.
    pub fn parse_bucket(member: &str) -> Option<u16> {
        let n: u16 = member.parse().ok()?;
        (u64::from(n) < SKETCH_BUCKETS && (member == "0" || !member.starts_with('0'))).then_some(n)
    }
}

impl FromIterator<u16> for Sketch {
    fn from_iter<I: IntoIterator<Item = u16>>(iter: I) -> Self {
        let mut s = Sketch::default();
        for b in iter {
            s.insert(b);
        }
        s
    }
}

impl std::fmt::Debug for Sketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.buckets()).finish()
    }
}

/// Whether a set attribute is a sketch (sessions, addresses, devices) rather than an exact set
/// (countries): by its set letter, its name's first character.
pub fn is_sketch(attr: &str) -> bool {
    matches!(attr.as_bytes().first(), Some(b's' | b'a' | b'v'))
}

/// A counter item as stored: its numbers, its sketches and its exact sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    pub numbers: BTreeMap<String, u64>,
    pub sketches: BTreeMap<String, Sketch>,
    pub sets: BTreeMap<String, BTreeSet<String>>,
}

/// The item that was never written.
static EMPTY: Counters = Counters {
    numbers: BTreeMap::new(),
    sketches: BTreeMap::new(),
    sets: BTreeMap::new(),
};

impl Counters {
    fn number(&self, attr: &str) -> u64 {
        self.numbers.get(attr).copied().unwrap_or(0)
    }

    /// Adds `u`'s numbers and members, as a store's atomic update does.
    pub fn apply(&mut self, u: &CounterUpdate) {
        for (attr, n) in &u.adds {
            match self.numbers.get_mut(attr) {
                Some(v) => *v += n,
                None => {
                    self.numbers.insert(attr.clone(), *n);
                }
            }
        }
        for (attr, b) in &u.buckets {
            match self.sketches.get_mut(attr) {
                Some(s) => s.insert(*b),
                None => {
                    self.sketches
                        .insert(attr.clone(), [*b].into_iter().collect());
                }
            }
        }
        for (attr, m) in &u.members {
            match self.sets.get_mut(attr) {
                Some(set) => {
                    if !set.contains(m) {
                        set.insert(m.clone());
                    }
                }
                None => {
                    self.sets.insert(attr.clone(), BTreeSet::from([m.clone()]));
                }
            }
        }
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

/// Whose counts an item holds: an address (or IPv6 /64), a device key, or a shard of the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Address,
    Device,
    Project,
}

/// Which of a subject's items: its hour's (twelve 5-minute slots and the hour's totals) or its
/// day's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemSpan {
    Hour,
    Day,
}

/// One counter item a visit adds to or reads, as the storage layout names it
/// (`store::keys::velocity_sk` spells its sort key; the domain never does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterItem<'a> {
    pub kind: Kind,
    /// The subject within its kind: an address or /64, a device key, a project shard's number.
    pub name: &'a str,
    pub span: ItemSpan,
    /// The item's hour or day start (epoch seconds).
    pub start: i64,
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
pub fn bucket(member: &str) -> u16 {
    let digest = Sha256::digest(member.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    // Below SKETCH_BUCKETS (1,024), so it fits.
    (u64::from_be_bytes(first) % SKETCH_BUCKETS) as u16
}

/// The distinct members a sketch with `filled` buckets has seen (linear counting).
pub fn estimate(filled: usize) -> u64 {
    let (m, k) = (SKETCH_BUCKETS as f64, filled as f64);
    if filled as u64 >= SKETCH_BUCKETS {
        return SKETCH_CAP;
    }
    (m * (m / (m - k)).ln()).round() as u64
}

fn floor(t: i64, step: i64) -> i64 {
    t.div_euclid(step) * step
}

/// A visit's sketch buckets and exact-set members for one subject, by set letter.
type Members<'a> = (Vec<(char, u16)>, Vec<(char, &'a str)>);

impl Tick<'_> {
    fn subjects(&self) -> Vec<(Kind, String)> {
        let shard = self.session.stable_hash() % PROJECT_SHARDS;
        let mut out = vec![
            (Kind::Address, address_subject(self.address)),
            (Kind::Project, shard.to_string()),
        ];
        if let Some(d) = self.device {
            out.push((Kind::Device, d.as_str().to_owned()));
        }
        out
    }

    /// The buckets this visit fills in a subject's sketches and the members it adds to its
    /// exact sets, by set letter.
    fn members(&self, kind: Kind) -> Members<'_> {
        let session = ('s', bucket(self.session.as_str()));
        match kind {
            Kind::Address => {
                let mut buckets = vec![session];
                if let Some(d) = self.device {
                    buckets.push(('v', bucket(d.as_str())));
                }
                (buckets, Vec::new())
            }
            Kind::Device => (
                vec![session, ('a', bucket(&address_subject(self.address)))],
                self.country.map(|c| ('c', c)).into_iter().collect(),
            ),
            Kind::Project => (Vec::new(), Vec::new()),
        }
    }

    /// What the visit writes and reads: each subject's current hour and day items, added to,
    /// and the previous hour's and day's, read; each item's sort key spelled by `sk` (the
    /// storage layout's `store::keys::velocity_sk`).
    pub fn work(&self, sk: impl Fn(CounterItem<'_>) -> String) -> CounterWork {
        let t = self.at.unix_seconds();
        let (hour, day) = (floor(t, HOUR), floor(t, DAY));
        let slot = (t - hour) / SLOT_SECONDS;
        let mut updates = Vec::new();
        let mut reads = Vec::new();
        for (kind, name) in self.subjects() {
            let (buckets, members) = self.members(kind);
            let item = |span, start| {
                sk(CounterItem {
                    kind,
                    name: &name,
                    span,
                    start,
                })
            };
            // Each member goes into the slot's, the hour's and the day's set.
            let hourly = |set: char| [format!("{set}{slot}"), format!("{set}h")];
            updates.push(CounterUpdate {
                sk: item(ItemSpan::Hour, hour),
                expires: hour + 2 * HOUR + GRACE,
                adds: vec![(format!("e{slot}"), 1), ("eh".to_owned(), 1)],
                buckets: buckets
                    .iter()
                    .flat_map(|&(set, b)| hourly(set).map(|a| (a, b)))
                    .collect(),
                members: members
                    .iter()
                    .flat_map(|&(set, m)| hourly(set).map(|a| (a, m.to_owned())))
                    .collect(),
            });
            updates.push(CounterUpdate {
                sk: item(ItemSpan::Day, day),
                expires: day + 2 * DAY + GRACE,
                adds: vec![("ed".to_owned(), 1)],
                buckets: buckets
                    .iter()
                    .map(|&(set, b)| (format!("{set}d"), b))
                    .collect(),
                members: members
                    .iter()
                    .map(|&(set, m)| (format!("{set}d"), m.to_owned()))
                    .collect(),
            });
            reads.push(item(ItemSpan::Hour, hour - HOUR));
            reads.push(item(ItemSpan::Day, day - DAY));
        }
        CounterWork {
            at: t,
            updates,
            reads,
        }
    }

    /// The velocity the engine reads, from the items `work` named: `updated` as they stand after
    /// this visit's additions (in `work.updates`' order) and `read` (in `work.reads`' order).
    pub fn velocity<'a>(&self, updated: &'a [Counters], read: &'a [Counters]) -> Velocity {
        let t = self.at.unix_seconds();
        let hour = floor(t, HOUR);
        let slot = (t - hour) / SLOT_SECONDS;
        let mut v = Velocity::default();
        for (i, (kind, _)) in self.subjects().into_iter().enumerate() {
            let get = |items: &'a [Counters], j: usize| items.get(j).unwrap_or(&EMPTY);
            let (cur_hour, cur_day) = (get(updated, 2 * i), get(updated, 2 * i + 1));
            let (prev_hour, prev_day) = (get(read, 2 * i), get(read, 2 * i + 1));
            // The 5-minute window's previous bucket is the slot before, in the hour before at :00.
            let (prev_slot_item, prev_slot) = if slot == 0 {
                (prev_hour, 11)
            } else {
                (cur_hour, slot - 1)
            };
            let five = Window {
                current: cur_hour,
                current_tag: slot.to_string(),
                previous: prev_slot_item,
                previous_tag: prev_slot.to_string(),
                elapsed: (t - hour - slot * SLOT_SECONDS) as f64 / SLOT_SECONDS as f64,
            };
            let hourly = Window {
                current: cur_hour,
                current_tag: "h".into(),
                previous: prev_hour,
                previous_tag: "h".into(),
                elapsed: (t - hour) as f64 / HOUR as f64,
            };
            let daily = Window {
                current: cur_day,
                current_tag: "d".into(),
                previous: prev_day,
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

    /// A sketch's filled buckets in the current bucket, and in the union with the previous one.
    fn sketches(&self, set: char) -> (usize, usize) {
        let cur = self
            .current
            .sketches
            .get(&format!("{set}{}", self.current_tag));
        let prev = self
            .previous
            .sketches
            .get(&format!("{set}{}", self.previous_tag));
        match (cur, prev) {
            (Some(c), Some(p)) => (c.len(), c.union_len(p)),
            (Some(c), None) => (c.len(), c.len()),
            (None, Some(p)) => (0, p.len()),
            (None, None) => (0, 0),
        }
    }

    /// An exact set's members in the current bucket, and in the union with the previous one.
    fn sets(&self, set: char) -> (usize, usize) {
        let cur = self.current.sets.get(&format!("{set}{}", self.current_tag));
        let prev = self
            .previous
            .sets
            .get(&format!("{set}{}", self.previous_tag));
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
        let (now, union) = self.sketches(set);
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
    use vigil_detect::velocity::Span;

    fn apply(store: &mut BTreeMap<String, Counters>, work: &CounterWork) -> Vec<Counters> {
        let mut out = Vec::new();
        for u in &work.updates {
            let item = store.entry(u.sk.clone()).or_default();
            item.apply(u);
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
        // Any spelling that keeps items apart will do here; the table's is `store::keys`'.
        let work = tick.work(|i| format!("{:?}#{}#{:?}#{}", i.kind, i.name, i.span, i.start));
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
        let filled: Sketch = (0..1000).map(|i| bucket(&format!("s{i}"))).collect();
        let n = estimate(filled.len());
        assert!((950..=1050).contains(&n), "{n}");
        assert_eq!(estimate(SKETCH_BUCKETS as usize), SKETCH_CAP);
    }

    #[test]
    fn a_sketch_is_a_bitmap_that_round_trips() {
        let s: Sketch = [0u16, 7, 8, 63, 64, 512, 1023].into_iter().collect();
        assert_eq!(s.len(), 7);
        assert_eq!(
            s.buckets().collect::<Vec<_>>(),
            [0, 7, 8, 63, 64, 512, 1023]
        );
        let bytes = s.to_bytes();
        assert_eq!(bytes[0], 0b1000_0001);
        assert_eq!(bytes[1], 0b0000_0001);
        assert_eq!(bytes[127], 0b1000_0000);
        assert_eq!(Sketch::from_bytes(&bytes), Some(s));
        assert_eq!(Sketch::from_bytes(&bytes[1..]), None);
        let full: Sketch = (0..1024).collect();
        assert!(full.buckets().eq(0..1024));
        assert_eq!(Sketch::default().buckets().count(), 0);
        let t: Sketch = [8u16, 9].into_iter().collect();
        assert_eq!((s.union_len(&t), t.union_len(&s)), (8, 8));
        assert_eq!(format!("{t:?}"), "{8, 9}");
        assert_eq!(Sketch::parse_bucket("1023"), Some(1023));
        for bad in ["1024", "007", "-1", "", "x"] {
            assert_eq!(Sketch::parse_bucket(bad), None, "{bad}");
        }
        assert!(is_sketch("sh") && is_sketch("a3") && is_sketch("vd") && !is_sketch("cd"));
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
