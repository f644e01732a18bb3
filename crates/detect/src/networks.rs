//! Hosting networks by ASN: the announced ranges of every network classified as hosting, cloud or
//! colocation (data/asn-hosting.tsv, made by `make data`), so that any address of such a network is
//! known as one, not only the ranges operators publish.

use std::borrow::Cow;
use std::net::IpAddr;
use std::ops::Range;

use super::DataError;
use crate::table::Table;

/// How a network came to be classified as hosting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// On Vigil's reviewed list (scripts/hosting-asns.tsv).
    Listed,
    /// By its registered name (hosting, cloud, servers, data centre, ...).
    Named,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network<'a> {
    pub asn: u32,
    pub basis: Basis,
    /// The operator (listed) or the registered name (named).
    pub name: &'a str,
}

/// Hosting networks (`#A` lines) and their ranges, each naming its network's ASN ([`Table`]).
#[derive(Default)]
pub struct Networks {
    /// The `#A` lines' text (borrowed from the binary when built in), and each network by ASN
    /// with where its name lies in it: read at a cold start without a copy of any name.
    meta: Cow<'static, str>,
    networks: Vec<(u32, Basis, Range<usize>)>,
    table: Table,
}

impl Networks {
    /// The networks of asn-hosting.tsv's text.
    pub fn parse(text: &str) -> Result<Self, DataError> {
        let table = Table::parse(text)
            .map_err(|n| DataError::Format(format!("asn-hosting.tsv line {n}")))?;
        let meta: String = (text.lines())
            .filter(|l| l.starts_with('#'))
            .flat_map(|l| [l, "\n"])
            .collect();
        Self::new(meta, table)
    }

    /// The networks of `meta` (the file's `#` lines) over a table already laid out. A range
    /// whose ASN no `#A` line names is in no hosting network.
    pub fn new(meta: impl Into<Cow<'static, str>>, table: Table) -> Result<Self, DataError> {
        let meta = meta.into();
        let mut networks = Vec::new();
        let mut at = 0;
        for (n, line) in meta.split_inclusive('\n').enumerate() {
            let start = at;
            at += line.len();
            let Some(fields) = line.trim_end_matches(['\n', '\r']).strip_prefix("#A\t") else {
                continue;
            };
            let bad = || DataError::Format(format!("asn-hosting.tsv network line {}", n + 1));
            let mut cols = fields.split('\t');
            let (Some(asn), Some(basis), Some(name), None) =
                (cols.next(), cols.next(), cols.next(), cols.next())
            else {
                return Err(bad());
            };
            let basis = match basis {
                "listed" => Basis::Listed,
                "named" => Basis::Named,
                _ => return Err(bad()),
            };
            // The name is the last field.
            let name_at = start + "#A\t".len() + fields.len() - name.len();
            networks.push((
                asn.parse().map_err(|_| bad())?,
                basis,
                name_at..name_at + name.len(),
            ));
        }
        // By ASN, the last line of an ASN winning as a map would have it.
        networks.reverse();
        networks.sort_by_key(|(asn, _, _)| *asn);
        networks.dedup_by_key(|(asn, _, _)| *asn);
        Ok(Self {
            meta,
            networks,
            table,
        })
    }

    /// The hosting network `ip` belongs to, if any.
    pub fn lookup(&self, ip: IpAddr) -> Option<Network<'_>> {
        let asn = self.table.find(ip)?;
        let i = (self.networks)
            .binary_search_by_key(&asn, |(asn, _, _)| *asn)
            .ok()?;
        let (asn, basis, name) = &self.networks[i];
        Some(Network {
            asn: *asn,
            basis: *basis,
            name: self.meta.get(name.clone())?,
        })
    }

    pub fn len(&self) -> usize {
        self.networks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.networks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA: &str = "# test\n#A\t16509\tlisted\tAmazon Web Services\n#A\t906\tnamed\tDMIT Cloud Services\n\
        3.0.0.0\t3.1.255.255\t16509\n5.0.0.0\t5.0.0.255\t906\n2600:1f00::\t2600:1fff:ffff:ffff:ffff:ffff:ffff:ffff\t16509\n";

    #[test]
    fn addresses_find_their_network_and_others_none() {
        let n = Networks::parse(DATA).unwrap();
        let at = |s: &str| n.lookup(s.parse().unwrap()).map(|n| n.asn);
        assert_eq!(at("3.0.0.0"), Some(16509));
        assert_eq!(at("3.1.255.255"), Some(16509));
        assert_eq!(at("3.2.0.0"), None);
        assert_eq!(at("2.255.255.255"), None);
        assert_eq!(at("5.0.0.7"), Some(906));
        assert_eq!(at("::ffff:3.0.0.1"), Some(16509));
        assert_eq!(at("2600:1f18::1"), Some(16509));
        assert_eq!(at("2a00::1"), None);
        assert_eq!(
            n.lookup("5.0.0.1".parse().unwrap()),
            Some(Network {
                asn: 906,
                basis: Basis::Named,
                name: "DMIT Cloud Services"
            })
        );
        assert_eq!(n.len(), 2);
    }

    #[test]
    fn a_network_named_twice_is_its_last_line() {
        let n = Networks::parse("#A\t7\tlisted\tOld\r\n#A\t7\tnamed\tNew\n1.0.0.0\t1.0.0.9\t7\n")
            .unwrap();
        let found = n.lookup("1.0.0.1".parse().unwrap()).unwrap();
        assert_eq!((found.name, found.basis, n.len()), ("New", Basis::Named, 1));
    }

    #[test]
    fn malformed_lines_are_errors() {
        for bad in [
            "x\ty\t1\n",
            "#A\tx\tlisted\tn\n",
            "#A\t1\tguessed\tn\n",
            "1.0.0.0\t::1\t5\n",
        ] {
            assert!(Networks::parse(bad).is_err(), "{bad:?}");
        }
    }
}
