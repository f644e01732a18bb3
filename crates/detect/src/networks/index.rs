//! The hosting networks' index: one fixed-size record per network, sorted by ASN, with where its
//! name lies in the `#A` lines' text. `build.rs` writes it into the binary, where the engine
//! reads it in place (a cold start parses and sorts nothing); a file's text is indexed the
//! same way.

use std::ops::Range;

/// Bytes per record: the ASN (u32), the name's start (u32) and length (u16), the basis (u8), and
/// one byte of padding, little-endian.
pub const RECORD: usize = 12;
pub const LISTED: u8 = 0;
pub const NAMED: u8 = 1;
pub const SPLITTING: u8 = 2;

/// The index of `meta`'s `#A \t asn \t listed|named|splitting \t name` lines (other lines are not
/// networks); an ASN named twice is its last line's. The error is the 1-based line at fault.
pub fn build(meta: &str) -> Result<Vec<u8>, usize> {
    let mut networks: Vec<(u32, u8, u32, u16)> = Vec::new();
    let mut at = 0;
    for (n, line) in meta.split_inclusive('\n').enumerate() {
        let start = at;
        at += line.len();
        let Some(fields) = line.trim_end_matches(['\n', '\r']).strip_prefix("#A\t") else {
            continue;
        };
        let mut cols = fields.split('\t');
        let (Some(asn), Some(basis), Some(name), None) =
            (cols.next(), cols.next(), cols.next(), cols.next())
        else {
            return Err(n + 1);
        };
        let basis = match basis {
            "listed" => LISTED,
            "named" => NAMED,
            "splitting" => SPLITTING,
            _ => return Err(n + 1),
        };
        // The name is the last field.
        let name_at = start + "#A\t".len() + fields.len() - name.len();
        let (Ok(asn), Ok(name_at), Ok(len)) = (
            asn.parse::<u32>(),
            u32::try_from(name_at),
            u16::try_from(name.len()),
        ) else {
            return Err(n + 1);
        };
        networks.push((asn, basis, name_at, len));
    }
    // By ASN, the last line of an ASN winning as a map would have it.
    networks.reverse();
    networks.sort_by_key(|(asn, ..)| *asn);
    networks.dedup_by_key(|(asn, ..)| *asn);
    let mut out = Vec::with_capacity(networks.len() * RECORD);
    for (asn, basis, name_at, len) in networks {
        out.extend_from_slice(&asn.to_le_bytes());
        out.extend_from_slice(&name_at.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&[basis, 0]);
    }
    Ok(out)
}

/// A record's ASN, basis and name's byte range.
pub fn read(r: &[u8; RECORD]) -> (u32, u8, Range<usize>) {
    let [a0, a1, a2, a3, s0, s1, s2, s3, l0, l1, basis, _] = *r;
    let start = u32::from_le_bytes([s0, s1, s2, s3]) as usize;
    let len = u16::from_le_bytes([l0, l1]) as usize;
    (
        u32::from_le_bytes([a0, a1, a2, a3]),
        basis,
        start..start + len,
    )
}
