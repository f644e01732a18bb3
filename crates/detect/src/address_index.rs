//! Every address set in one table per family, for runs of many visits (`vigil evaluate`): the
//! operator ranges, the hosting networks' ranges and the country database's networks merged into
//! one sorted list of the addresses where any of them changes, each with what holds from there
//! to the next. One search per address finds all three, where the tables take a bisection each
//! and the country database a walk of up to 32 (IPv6: 128) nodes of a 7.8 MB tree, most of them
//! misses of the processor's caches.
//!
//! The list is laid out a prefix at a time (an IPv4 /16, an IPv6 /32), the first time an address
//! of it is looked up: a run pays for the prefixes its addresses fall in (a few thousand in a
//! log of 200,000 lines), not for the country tree's two million nodes, and a prefix's steps lie
//! together (six on average for an IPv4 /16).
//!
//! The answers are the tables': each source is read as the step function its own lookup computes
//! ([`Table::steps_v4`]; the country tree walked leaf by leaf, each leaf's country read by the
//! database's own lookup, once per record), so the index answers what they answer (tested
//! address by address). Addresses it does not cover (IPv4-mapped IPv6 ones, which the tables
//! read as IPv4 and the database as IPv6; IPv6 prefixes whose walk leads into the IPv4 tree; an
//! IPv6 /32 whose place in the index another holds) are left to the tables.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::places::{Country, Geo, Mmdb, Place};
use crate::table::Table;

/// A value the index leaves to the tables (no packed value has its top bit set).
const FALLBACK: u32 = u32::MAX;

/// Bits of a packed value for the country: its two letters as a number from 1 to 676, 0 none.
const COUNTRY_BITS: u32 = 10;

/// Places for IPv6 /32 prefixes: each prefix has two, by a hash (a log's few thousand fit).
const V6_SLOTS: usize = 1 << 13;

/// An IPv4 /16's steps, each its start (high half) and value (low half), sorted, the first at
/// the prefix's first address: a search reads the entries of one cache line or two.
struct V4Steps(Box<[u64]>);

impl V4Steps {
    #[inline]
    fn at(&self, x: u32) -> u32 {
        let i = self.0.partition_point(|&e| (e >> 32) as u32 <= x);
        self.0[i.saturating_sub(1)] as u32
    }
}

/// An IPv6 /32's steps, with the prefix (its place in the index is by a hash).
struct V6Steps {
    prefix: u32,
    steps: Steps<u128>,
}

/// One prefix's steps: sorted starts (the first the prefix's first address) and their values.
struct Steps<K> {
    starts: Box<[K]>,
    values: Box<[u32]>,
}

impl<K: Ord + Copy> Steps<K> {
    #[inline]
    fn at(&self, x: K) -> u32 {
        // The first start is at or before any `x` of the prefix.
        let i = self.starts.partition_point(|&s| s <= x);
        self.values[i.saturating_sub(1)]
    }
}

/// How a value packs its three parts: the range's dense number in the top bits, the network's
/// below it, the country in the lowest [`COUNTRY_BITS`].
#[derive(Clone, Copy)]
struct Packing {
    network_shift: u32,
    range_shift: u32,
}

impl Packing {
    /// Room for `ranges` and `networks` dense numbers (1-based, 0 none) beside the country;
    /// none past 31 bits.
    fn of(ranges: usize, networks: usize) -> Option<Self> {
        let bits = |n: usize| usize::BITS - n.leading_zeros();
        let range_shift = COUNTRY_BITS + bits(networks);
        (range_shift + bits(ranges) < 32).then_some(Self {
            network_shift: COUNTRY_BITS,
            range_shift,
        })
    }

    fn pack(self, [range, network, country]: [u32; 3]) -> u32 {
        if country == FALLBACK {
            return FALLBACK;
        }
        range << self.range_shift | network << self.network_shift | country
    }
}

/// The address index: what [`crate::Engine::place`] answers, from one search.
pub struct Index {
    tree: TreeInfo,
    packing: Packing,
    /// Range tags and network ASNs by their dense numbers less one.
    ranges: Vec<u32>,
    networks: Vec<u32>,
    /// The tables' steps with their dense numbers: ranges and networks, each family.
    tables_v4: [Vec<(u32, u32)>; 2],
    tables_v6: [Vec<(u128, u32)>; 2],
    /// Each IPv4 /16's steps, once looked up.
    v4: Box<[OnceLock<V4Steps>]>,
    /// IPv6 /32s' steps with their prefix, once looked up.
    v6: Box<[OnceLock<V6Steps>]>,
    /// Each data record's country, by its pointer (see [`Index::country`]).
    countries: Box<[AtomicU64]>,
}

impl Index {
    /// The index of these tables and this country database, with no prefix laid out yet (a
    /// millisecond); none when a source cannot be read as steps (an unsorted table, an IPv4-only
    /// or unusual database) or holds more tags than the packed values fit: the tables answer
    /// then.
    pub fn build(ranges: &Table, networks: &Table, geo: &Geo) -> Option<Index> {
        let tree = TreeInfo::of(geo)?;
        let (r4, r6) = (ranges.steps_v4()?, ranges.steps_v6()?);
        let (n4, n6) = (networks.steps_v4()?, networks.steps_v6()?);
        let (ranges, networks) = (tags(&r4, &r6), tags(&n4, &n6));
        let tables_v4 = [dense(r4, &ranges), dense(n4, &networks)];
        let tables_v6 = [dense(r6, &ranges), dense(n6, &networks)];
        Some(Index {
            tree,
            packing: Packing::of(ranges.len(), networks.len())?,
            ranges,
            networks,
            tables_v4,
            tables_v6,
            v4: (0..1 << 16).map(|_| OnceLock::new()).collect(),
            v6: (0..V6_SLOTS).map(|_| OnceLock::new()).collect(),
            countries: (0..1024).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// What the tables hold for `ip` (`geo` the database the index was built with); none where
    /// the index leaves it to them.
    #[inline]
    pub fn find(&self, ip: IpAddr, geo: &Geo) -> Option<Place> {
        let value = match ip {
            IpAddr::V4(v4) => {
                let x = u32::from(v4);
                let prefix = &self.v4[(x >> 16) as usize];
                prefix.get_or_init(|| self.v4_prefix(x >> 16, geo)).at(x)
            }
            // The tables read an IPv4-mapped address as IPv4, the country database as IPv6.
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => return None,
            IpAddr::V6(v6) => {
                let x = u128::from(v6);
                let prefix = (x >> 96) as u32;
                let slot = (prefix.wrapping_mul(0x9e37_79b1) >> 19) as usize;
                // The first of its two places that holds it, or that no prefix held yet.
                let steps = [slot, (slot + 1) % V6_SLOTS].into_iter().find_map(|slot| {
                    let held = self.v6[slot].get_or_init(|| V6Steps {
                        prefix,
                        steps: self.v6_prefix(prefix, geo),
                    });
                    (held.prefix == prefix).then_some(&held.steps)
                })?;
                steps.at(x)
            }
        };
        if value == FALLBACK {
            return None;
        }
        let Packing {
            network_shift,
            range_shift,
        } = self.packing;
        let tag = |list: &[u32], n: u32| list.get((n as usize).checked_sub(1)?).copied();
        let country = value & ((1 << COUNTRY_BITS) - 1);
        Some(Place {
            range: tag(&self.ranges, value >> range_shift),
            network: tag(
                &self.networks,
                (value & ((1 << range_shift) - 1)) >> network_shift,
            ),
            country: (country != 0).then(|| {
                let n = country - 1;
                [b'A' + (n / 26) as u8, b'A' + (n % 26) as u8]
            }),
        })
    }

    /// An IPv4 /16's steps: the tree from its IPv4 start node, the tables' steps within.
    fn v4_prefix(&self, prefix: u32, geo: &Geo) -> V4Steps {
        let first = prefix << 16;
        let steps = self.prefix(first, first | 0xffff, &self.tables_v4, |tree, leaf| {
            tree.walk(tree.v4_start, first, 16, 32, false, |start: u32, found| {
                leaf(
                    start,
                    self.country(found, || geo.country(Ipv4Addr::from(start).into())),
                );
            });
        });
        let entries = (steps.starts.iter().zip(&steps.values))
            .map(|(&s, &v)| u64::from(s) << 32 | u64::from(v));
        V4Steps(entries.collect())
    }

    /// An IPv6 /32's steps: the tree from its root, the tables' steps within.
    fn v6_prefix(&self, prefix: u32, geo: &Geo) -> Steps<u128> {
        let first = u128::from(prefix) << 96;
        let last = first | ((1 << 96) - 1);
        self.prefix(first, last, &self.tables_v6, |tree, leaf| {
            tree.walk(0, first, 32, 128, true, |start: u128, found| {
                leaf(
                    start,
                    self.country(found, || geo.country(Ipv6Addr::from(start).into())),
                );
            });
        })
    }

    /// The steps from `first` to `last`: the tables' (the one holding `first` moved to it) and
    /// the leaves `walk` finds, merged.
    fn prefix<K: Ord + Copy>(
        &self,
        first: K,
        last: K,
        tables: &[Vec<(K, u32)>; 2],
        walk: impl FnOnce(&Tree<'_>, &mut dyn FnMut(K, u32)),
    ) -> Steps<K> {
        let within = |steps: &[(K, u32)]| -> Vec<(K, u32)> {
            // Steps start at the family's first address: one holds `first`.
            let from = steps.partition_point(|s| s.0 <= first).saturating_sub(1);
            let to = steps.partition_point(|s| s.0 <= last);
            let held = steps.get(from).map_or(0, |s| s.1);
            std::iter::once((first, held))
                .chain(steps.get(from + 1..to).unwrap_or_default().iter().copied())
                .collect()
        };
        let (ranges, networks) = (within(&tables[0]), within(&tables[1]));
        let mut merger = Merger::new(self.packing, &ranges, &networks);
        walk(&self.tree.tree(), &mut |start, value| {
            merger.leaf(start, value)
        });
        let (starts, values) = merger.finish();
        Steps {
            starts: starts.into(),
            values: values.into(),
        }
    }

    /// A leaf's value: its record's country (read by the database's own lookup of an address
    /// that leads to it, once per record: a few hundred records for two million leaves), none,
    /// or [`FALLBACK`]. Kept by pointer in a small table (a record whose place another holds is
    /// read again: still right).
    fn country(&self, leaf: Leaf, lookup: impl FnOnce() -> Option<Country>) -> u32 {
        let pointer = match leaf {
            Leaf::Empty => return 0,
            Leaf::V4Tree => return FALLBACK,
            Leaf::Data(p) => p as u64,
        };
        // Pointers are below 2^32 (the database's size); a kept one has bit 15 set.
        let slot = &self.countries[(pointer.wrapping_mul(0x9e37_79b9) >> 7) as usize % 1024];
        let kept = slot.load(Ordering::Relaxed);
        if kept >> 16 == pointer && kept & 1 << 15 != 0 {
            return (kept & 0x3ff) as u32;
        }
        let value = country_number(lookup());
        slot.store(
            pointer << 16 | 1 << 15 | u64::from(value),
            Ordering::Relaxed,
        );
        value
    }

    /// How many prefixes of each family are laid out (for measuring).
    pub fn prefixes(&self) -> (usize, usize) {
        let v4 = self.v4.iter().filter(|p| p.get().is_some()).count();
        let v6 = self.v6.iter().filter(|p| p.get().is_some()).count();
        (v4, v6)
    }
}

/// A country as a packed value's part: 1 to 676 (`AA` to `ZZ`), 0 none.
fn country_number(c: Option<Country>) -> u32 {
    c.filter(|c| c.iter().all(u8::is_ascii_uppercase))
        .map_or(0, |[a, b]| {
            u32::from(a - b'A') * 26 + u32::from(b - b'A') + 1
        })
}

/// Three step functions (each starting at 0) as one, packed, equal neighbours joined: the
/// tables' steps (a hundred thousand) taken in between the tree's leaves as the walk finds them
/// (two million; their values change at a third of them).
struct Merger<'a, K> {
    packing: Packing,
    ranges: &'a [(K, u32)],
    networks: &'a [(K, u32)],
    /// The ranges', networks' and tree's values where the steps have come to.
    current: [u32; 3],
    starts: Vec<K>,
    values: Vec<u32>,
}

impl<'a, K: Ord + Copy> Merger<'a, K> {
    fn new(packing: Packing, ranges: &'a [(K, u32)], networks: &'a [(K, u32)]) -> Self {
        Self {
            packing,
            ranges,
            networks,
            current: [0; 3],
            starts: Vec::new(),
            values: Vec::new(),
        }
    }

    /// A leaf of the tree from `key` on (keys ascending).
    #[inline]
    fn leaf(&mut self, key: K, value: u32) {
        let tables = self.ranges.first().is_some_and(|s| s.0 <= key)
            || self.networks.first().is_some_and(|s| s.0 <= key);
        // Most leaves: the value of the one before, and no table's step since.
        if value == self.current[2] && !tables && !self.starts.is_empty() {
            return;
        }
        if tables {
            self.tables(Some(key));
        }
        self.current[2] = value;
        self.push(key);
    }

    /// The tables' steps before `end` (all that are left without one), and their values at it.
    fn tables(&mut self, end: Option<K>) {
        loop {
            let key = match (self.ranges.first(), self.networks.first()) {
                (Some(a), Some(b)) => a.0.min(b.0),
                (Some(a), None) => a.0,
                (None, Some(b)) => b.0,
                (None, None) => return,
            };
            let at_end = end.is_some_and(|end| key >= end);
            if at_end && end != Some(key) {
                return;
            }
            for (list, l) in [(&mut self.ranges, 0), (&mut self.networks, 1)] {
                if let Some(((k, v), rest)) = list.split_first()
                    && *k == key
                {
                    self.current[l] = *v;
                    *list = rest;
                }
            }
            if at_end {
                return;
            }
            self.push(key);
        }
    }

    fn push(&mut self, key: K) {
        let value = self.packing.pack(self.current);
        if self.values.last() != Some(&value) {
            self.starts.push(key);
            self.values.push(value);
        }
    }

    fn finish(mut self) -> (Vec<K>, Vec<u32>) {
        self.tables(None);
        self.starts.shrink_to_fit();
        self.values.shrink_to_fit();
        (self.starts, self.values)
    }
}

/// Three step functions as one (see [`Merger`]).
#[cfg(test)]
fn merge<K: Ord + Copy>(
    packing: Packing,
    ranges: Vec<(K, u32)>,
    networks: Vec<(K, u32)>,
    tree: impl Iterator<Item = (K, u32)>,
) -> (Vec<K>, Vec<u32>) {
    let mut m = Merger::new(packing, &ranges, &networks);
    for (key, value) in tree {
        m.leaf(key, value);
    }
    m.finish()
}

/// The tags of a table's steps in both families, sorted: a tag's dense number is its place in
/// them, from 1.
fn tags(v4: &[(u32, Option<u32>)], v6: &[(u128, Option<u32>)]) -> Vec<u32> {
    let mut tags: Vec<u32> = (v4.iter().filter_map(|s| s.1))
        .chain(v6.iter().filter_map(|s| s.1))
        .collect();
    tags.sort_unstable();
    tags.dedup();
    tags
}

/// Steps with their tags' dense numbers (0 none).
fn dense<K>(steps: Vec<(K, Option<u32>)>, tags: &[u32]) -> Vec<(K, u32)> {
    (steps.into_iter())
        .map(|(at, tag)| {
            let n = tag.and_then(|t| tags.binary_search(&t).ok());
            (at, n.map_or(0, |i| i as u32 + 1))
        })
        .collect()
}

/// Where the country database's tree lies and how it is read (see [`Tree`]).
struct TreeInfo {
    bytes: Mmdb,
    node_count: usize,
    record_size: u16,
    v4_start: usize,
}

impl TreeInfo {
    fn of(geo: &Geo) -> Option<Self> {
        let meta = geo.countries.metadata();
        let (node_count, record_size) = (usize::try_from(meta.node_count).ok()?, meta.record_size);
        let size = node_count.checked_mul(usize::from(record_size) / 4)?;
        if meta.ip_version != 6 || !matches!(record_size, 24 | 28 | 32) || geo.bytes().len() < size
        {
            return None;
        }
        let mut info = TreeInfo {
            bytes: geo.mmdb.clone(),
            node_count,
            record_size,
            v4_start: 0,
        };
        // IPv4 addresses are found below 96 zero bits (`::a.b.c.d`), as the reader finds them.
        let tree = info.tree();
        let mut node = 0;
        for _ in 0..96 {
            if node >= node_count {
                break;
            }
            node = tree.read(node, 0);
        }
        info.v4_start = node;
        Some(info)
    }

    fn tree(&self) -> Tree<'_> {
        Tree {
            bytes: self.bytes.as_ref(),
            node_count: self.node_count,
            record_size: self.record_size,
            v4_start: self.v4_start,
        }
    }
}

/// What a walk of the country tree ends at.
enum Leaf {
    /// No network: no country.
    Empty,
    /// A record of the data section, by its pointer.
    Data(usize),
    /// The IPv4 tree's start node, reached again from IPv6.
    V4Tree,
}

/// The country database's search tree, read as its reader reads it (the MaxMind DB format:
/// `node_count` nodes of two records of 24, 28 or 32 bits; a record below `node_count` is a node,
/// `node_count` itself nothing, above it data).
struct Tree<'a> {
    bytes: &'a [u8],
    node_count: usize,
    record_size: u16,
    v4_start: usize,
}

impl Tree<'_> {
    /// Child `bit` of `node` (the reader's `read_node`).
    #[inline(always)]
    fn read(&self, node: usize, bit: usize) -> usize {
        let b = self.bytes;
        match self.record_size {
            24 => {
                let at = node * 6 + bit * 3;
                let r = &b[at..at + 3];
                usize::from(r[0]) << 16 | usize::from(r[1]) << 8 | usize::from(r[2])
            }
            28 => {
                let at = node * 7;
                let middle = usize::from(b[at + 3]);
                if bit == 0 {
                    (middle & 0xf0) << 20
                        | usize::from(b[at]) << 16
                        | usize::from(b[at + 1]) << 8
                        | usize::from(b[at + 2])
                } else {
                    (middle & 0x0f) << 24
                        | usize::from(b[at + 4]) << 16
                        | usize::from(b[at + 5]) << 8
                        | usize::from(b[at + 6])
                }
            }
            _ => {
                let at = node * 8 + bit * 4;
                u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize
            }
        }
    }

    /// Every leaf below the prefix `first` of `depth` bits (walked down from `root`, the node its
    /// walk starts at) in address order, with its first address: what a lookup of any address
    /// from there to the next leaf's finds. A walk that runs out of `bits` on a node finds
    /// nothing, as the reader's lookup does; in IPv6 (`v6`), one that comes to the IPv4 tree
    /// finds that.
    fn walk<K: Key>(
        &self,
        root: usize,
        first: K,
        depth: u32,
        bits: u32,
        v6: bool,
        mut leaf: impl FnMut(K, Leaf),
    ) {
        let mut stack = Vec::with_capacity(bits as usize + 1);
        // Down to the prefix's node (or a leaf above it).
        let mut node = root;
        for d in 0..depth {
            if node >= self.node_count || v6 && node == self.v4_start {
                break;
            }
            node = self.read(node, usize::from(first.has(bits - 1 - d)));
        }
        stack.push((node, depth, first));
        while let Some((mut node, mut depth, start)) = stack.pop() {
            // Down the left children (lower addresses first), each right one left for later.
            loop {
                if v6 && node == self.v4_start && node < self.node_count {
                    leaf(start, Leaf::V4Tree);
                } else if node < self.node_count && depth < bits {
                    let bit = K::bit(bits - 1 - depth);
                    stack.push((self.read(node, 1), depth + 1, start.or(bit)));
                    node = self.read(node, 0);
                    depth += 1;
                    continue;
                } else if node > self.node_count {
                    leaf(start, Leaf::Data(node));
                } else {
                    leaf(start, Leaf::Empty);
                }
                break;
            }
        }
    }
}

/// An address of either family as an integer.
trait Key: Copy {
    fn bit(n: u32) -> Self;
    fn or(self, other: Self) -> Self;
    /// Whether bit `n` (0 the lowest) is set.
    fn has(self, n: u32) -> bool;
}

// The same three operations for both widths of address.
macro_rules! key {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn bit(n: u32) -> Self {
                1 << n
            }
            fn or(self, other: Self) -> Self {
                self | other
            }
            fn has(self, n: u32) -> bool {
                self >> n & 1 == 1
            }
        }
    )*};
}
key!(u32, u128);

#[cfg(test)]
mod tests;
