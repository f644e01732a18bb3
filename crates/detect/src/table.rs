//! Address ranges as the engine searches them: sorted, non-overlapping `(start, end, tag)` records
//! of fixed size in little-endian bytes, bisected in place. The build script (`build.rs`, which
//! includes this file) lays out the committed data's tables this way, so a cold start reads them
//! from the binary instead of parsing 70,000 lines of addresses; `Engine::load` parses a data
//! directory into the same layout at run time.
//!
//! A data line is `start<TAB>end<TAB>tag` (two addresses of one family and a number); lines
//! starting with `#` and empty lines are not ranges.

use std::borrow::Cow;
use std::net::IpAddr;

const V4: usize = 4 + 4 + 4;
const V6: usize = 16 + 16 + 4;

/// One family's ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    v4: Cow<'static, [u8]>,
    v6: Cow<'static, [u8]>,
}

impl Table {
    /// The ranges of a data file's text; the error is the 1-based number of the first bad line.
    pub fn parse(text: &str) -> Result<Table, usize> {
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        for (n, line) in text.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut cols = line.split('\t');
            let (Some(start), Some(end), Some(tag), None) =
                (cols.next(), cols.next(), cols.next(), cols.next())
            else {
                return Err(n + 1);
            };
            let tag: u32 = tag.parse().map_err(|_| n + 1)?;
            match (start.parse::<IpAddr>(), end.parse::<IpAddr>()) {
                (Ok(IpAddr::V4(s)), Ok(IpAddr::V4(e))) if s <= e => {
                    v4.push((u32::from(s), u32::from(e), tag));
                }
                (Ok(IpAddr::V6(s)), Ok(IpAddr::V6(e))) if s <= e => {
                    v6.push((u128::from(s), u128::from(e), tag));
                }
                _ => return Err(n + 1),
            }
        }
        // Sorted by start for the bisection (the data comes sorted; this keeps a hand-edited
        // file safe).
        v4.sort_unstable();
        v6.sort_unstable();
        // Each record: start, end, tag, little-endian.
        let v4 = v4.iter().flat_map(|(s, e, tag)| {
            (s.to_le_bytes().into_iter())
                .chain(e.to_le_bytes())
                .chain(tag.to_le_bytes())
        });
        let v6 = v6.iter().flat_map(|(s, e, tag)| {
            (s.to_le_bytes().into_iter())
                .chain(e.to_le_bytes())
                .chain(tag.to_le_bytes())
        });
        Ok(Table {
            v4: Cow::Owned(v4.collect()),
            v6: Cow::Owned(v6.collect()),
        })
    }

    /// The layout [`Table::bytes`] wrote, read in place; none when a length is not whole records.
    pub fn from_static(v4: &'static [u8], v6: &'static [u8]) -> Option<Table> {
        (v4.len().is_multiple_of(V4) && v6.len().is_multiple_of(V6)).then_some(Table {
            v4: Cow::Borrowed(v4),
            v6: Cow::Borrowed(v6),
        })
    }

    /// The two families' records, as the build script writes them into the binary.
    pub fn bytes(&self) -> (&[u8], &[u8]) {
        (&self.v4, &self.v6)
    }

    /// The tag of the range `ip` falls in (an IPv4-mapped IPv6 address as its IPv4 address).
    pub fn find(&self, ip: IpAddr) -> Option<u32> {
        match ip {
            IpAddr::V4(v4) => find_v4(&self.v4, u32::from(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => find_v4(&self.v4, u32::from(v4)),
                None => find_v6(&self.v6, u128::from(v6)),
            },
        }
    }

    /// Every range's start with its tag, v4 first.
    pub fn starts(&self) -> impl Iterator<Item = (IpAddr, u32)> + '_ {
        let v4 = self.v4.chunks_exact(V4).map(|r| {
            let (s, _, tag) = v4_record(r);
            (IpAddr::from(std::net::Ipv4Addr::from(s)), tag)
        });
        let v6 = self.v6.chunks_exact(V6).map(|r| {
            let (s, _, tag) = v6_record(r);
            (IpAddr::from(std::net::Ipv6Addr::from(s)), tag)
        });
        v4.chain(v6)
    }

    pub fn len(&self) -> usize {
        self.v4.len() / V4 + self.v6.len() / V6
    }

    /// [`Table::find`] over IPv4 as a step function: each `(from, tag)` holds from its address
    /// up to the next one's, the first from 0. None when the records are not sorted by start or a
    /// range ends before it starts (a table only `from_static` could hold), which `find` answers
    /// in no simple way.
    pub fn steps_v4(&self) -> Option<Vec<(u32, Option<u32>)>> {
        steps(&self.v4, V4, v4_record, |x| x.checked_add(1))
    }

    /// The same over IPv6 (as `find` reads them: an IPv4-mapped address is looked up as IPv4).
    pub fn steps_v6(&self) -> Option<Vec<(u128, Option<u32>)>> {
        steps(&self.v6, V6, v6_record, |x| x.checked_add(1))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The first tag of `table` not in `known`, if any (a range naming a label no line defines).
pub fn unlabelled(table: &Table, known: impl Fn(u32) -> bool) -> Option<u32> {
    table.starts().map(|(_, tag)| tag).find(|&tag| !known(tag))
}

/// The ids of a data file's `#L` lines (`#L<TAB>id<TAB>...`).
pub fn label_ids(text: &str) -> std::collections::HashSet<u32> {
    text.lines()
        .filter_map(|l| l.strip_prefix("#L\t")?.split('\t').next()?.parse().ok())
        .collect()
}

fn word<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[at..at + N]);
    out
}

fn v4_record(r: &[u8]) -> (u32, u32, u32) {
    (
        u32::from_le_bytes(word(r, 0)),
        u32::from_le_bytes(word(r, 4)),
        u32::from_le_bytes(word(r, 8)),
    )
}

fn v6_record(r: &[u8]) -> (u128, u128, u32) {
    (
        u128::from_le_bytes(word(r, 0)),
        u128::from_le_bytes(word(r, 16)),
        u32::from_le_bytes(word(r, 32)),
    )
}

/// The record whose range holds `x`: the last one starting at or before it, if it ends after.
fn bisect<T: Ord + Copy>(
    bytes: &[u8],
    size: usize,
    x: T,
    read: fn(&[u8]) -> (T, T, u32),
) -> Option<u32> {
    let n = bytes.len() / size;
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if read(&bytes[mid * size..]).0 <= x {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let (_, end, tag) = read(&bytes[lo.checked_sub(1)? * size..]);
    (x <= end).then_some(tag)
}

/// See [`Table::steps_v4`]: what [`bisect`] answers, from each address on where it changes.
fn steps<T: Ord + Copy + Default>(
    bytes: &[u8],
    size: usize,
    read: fn(&[u8]) -> (T, T, u32),
    after: fn(T) -> Option<T>,
) -> Option<Vec<(T, Option<u32>)>> {
    let records: Vec<(T, T, u32)> = bytes.chunks_exact(size).map(read).collect();
    if records.iter().any(|r| r.0 > r.1) || records.windows(2).any(|w| w[0].0 > w[1].0) {
        return None;
    }
    let mut out = vec![(T::default(), None)];
    let mut push = |at: T, tag: Option<u32>| match out.last_mut() {
        Some(last) if last.0 == at => last.1 = tag,
        Some(last) if last.1 == tag => {}
        _ => out.push((at, tag)),
    };
    for (i, &(start, end, tag)) in records.iter().enumerate() {
        // Of records with one start, the bisection finds the last.
        let next = records.get(i + 1).map(|r| r.0);
        if next == Some(start) {
            continue;
        }
        push(start, Some(tag));
        if let Some(past) = after(end)
            && next.is_none_or(|n| past < n)
        {
            push(past, None);
        }
    }
    // Two steps with one tag in a row are one (a replaced step may have made them).
    out.dedup_by(|b, a| a.1 == b.1);
    Some(out)
}

fn find_v4(bytes: &[u8], x: u32) -> Option<u32> {
    bisect(bytes, V4, x, v4_record)
}

fn find_v6(bytes: &[u8], x: u128) -> Option<u32> {
    bisect(bytes, V6, x, v6_record)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA: &str = "# a comment\n#L\t1\thosting\tX\n\n3.0.0.0\t3.1.255.255\t7\n\
        1.0.0.0\t1.0.0.255\t2\n2600:1f00::\t2600:1fff:ffff:ffff:ffff:ffff:ffff:ffff\t9\n";

    #[test]
    fn addresses_find_their_range_in_either_family() {
        let t = Table::parse(DATA).unwrap();
        let at = |s: &str| t.find(s.parse().unwrap());
        assert_eq!(at("3.0.0.0"), Some(7));
        assert_eq!(at("3.1.255.255"), Some(7));
        assert_eq!(at("3.2.0.0"), None);
        assert_eq!(at("0.255.255.255"), None);
        assert_eq!(at("1.0.0.9"), Some(2));
        assert_eq!(at("::ffff:3.0.0.1"), Some(7));
        assert_eq!(at("2600:1f18::1"), Some(9));
        assert_eq!(at("2a00::1"), None);
        assert_eq!(t.len(), 3);
        let starts: Vec<String> = t.starts().map(|(ip, tag)| format!("{ip}/{tag}")).collect();
        assert_eq!(starts, ["1.0.0.0/2", "3.0.0.0/7", "2600:1f00::/9"]);
    }

    #[test]
    fn the_bytes_read_back_in_place() {
        let t = Table::parse(DATA).unwrap();
        let (v4, v6) = t.bytes();
        let (v4, v6): (&'static [u8], &'static [u8]) = (v4.to_vec().leak(), v6.to_vec().leak());
        assert_eq!(Table::from_static(v4, v6), Some(t));
        assert_eq!(Table::from_static(&v4[1..], v6), None);
    }

    #[test]
    fn steps_are_what_the_bisection_finds() {
        // Overlapping and shared starts, a range at 0 and one to the end of the space.
        let t = Table::parse(
            "0.0.0.0\t0.0.0.9\t1\n0.0.0.20\t0.0.0.40\t2\n0.0.0.30\t0.0.0.35\t3\n\
             0.0.0.30\t0.0.0.32\t4\n0.0.0.50\t0.0.0.60\t5\n0.0.0.55\t0.0.0.99\t5\n\
             255.255.255.0\t255.255.255.255\t6\n",
        )
        .unwrap();
        let steps = t.steps_v4().unwrap();
        let at = |x: u32| steps[steps.partition_point(|s| s.0 <= x) - 1].1;
        for x in (0..120).chain([u32::MAX - 300, u32::MAX - 255, u32::MAX - 1, u32::MAX]) {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(x));
            assert_eq!(at(x), t.find(ip), "{ip}");
        }
        assert_eq!(steps[0], (0, Some(1)));
        assert!(
            steps
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 != w[1].1)
        );
        assert_eq!(t.steps_v6().unwrap(), [(0, None)]);
    }

    #[test]
    fn malformed_lines_are_named() {
        assert_eq!(Table::parse("1.0.0.0\t1.0.0.9\t1\nx\ty\t1\n"), Err(2));
        assert_eq!(Table::parse("1.0.0.0\t::1\t5\n"), Err(1));
        assert_eq!(Table::parse("1.0.0.9\t1.0.0.0\t5\n"), Err(1));
        assert_eq!(Table::parse("1.0.0.0\t1.0.0.9\tx\n"), Err(1));
        assert_eq!(Table::parse("1.0.0.0\t1.0.0.9\n"), Err(1));
    }
}
