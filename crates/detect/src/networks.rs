//! Hosting networks by ASN: the announced ranges of every network classified as hosting, cloud or
//! colocation (data/asn-hosting.tsv, made by `make data`), so that any address of such a network is
//! known as one, not only the ranges operators publish. The same table knows the networks that
//! split TCP near their users (satellite accelerators), which are not hosting: see [`Basis`].

use std::borrow::Cow;
use std::net::IpAddr;

use crate::error::DataError;
use crate::table::Table;

/// How a network came to be classified as hosting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// On Vigil's reviewed list (scripts/hosting-asns.tsv).
    Listed,
    /// By its registered name (hosting, cloud, servers, data centre, ...).
    Named,
    /// Not hosting: a network that splits TCP near its users (a geostationary satellite
    /// service's accelerator), on Vigil's reviewed list (scripts/splitting-asns.tsv).
    Splitting,
}

impl Network<'_> {
    pub fn is_hosting(&self) -> bool {
        self.basis != Basis::Splitting
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network<'a> {
    pub asn: u32,
    pub basis: Basis,
    /// The operator (listed) or the registered name (named).
    pub name: &'a str,
}

mod index;

pub use index::RECORD;

/// Hosting networks (`#A` lines) and their ranges, each naming its network's ASN ([`Table`]).
#[derive(Default)]
pub struct Networks {
    /// The `#A` lines' text and their index (see [`index`]): borrowed from the binary when built
    /// in, so that a cold start copies no name and sorts nothing.
    meta: Cow<'static, str>,
    index: Cow<'static, [u8]>,
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
        let index = index::build(&meta)
            .map_err(|n| DataError::Format(format!("asn-hosting.tsv network line {n}")))?;
        Self::checked(meta, Cow::Owned(index), table)
    }

    /// The networks as `build.rs` indexed them, checked: whole records, in ASN order, each
    /// name inside `meta`.
    pub fn built(
        meta: &'static str,
        index: &'static [u8],
        table: Table,
    ) -> Result<Self, DataError> {
        Self::checked(Cow::Borrowed(meta), Cow::Borrowed(index), table)
    }

    fn checked(
        meta: Cow<'static, str>,
        index: Cow<'static, [u8]>,
        table: Table,
    ) -> Result<Self, DataError> {
        let bad = || DataError::Format("the hosting networks' index".into());
        let (records, []) = index.as_chunks::<RECORD>() else {
            return Err(bad());
        };
        let mut last = None;
        for r in records {
            let (asn, basis, name) = index::read(r);
            let known = matches!(basis, index::LISTED | index::NAMED | index::SPLITTING);
            if !known || meta.get(name).is_none() || last.is_some_and(|l| l >= asn) {
                return Err(bad());
            }
            last = Some(asn);
        }
        Ok(Self { meta, index, table })
    }

    fn records(&self) -> &[[u8; RECORD]] {
        self.index.as_chunks().0
    }

    /// The hosting network `ip` belongs to, if any.
    pub fn lookup(&self, ip: IpAddr) -> Option<Network<'_>> {
        self.network(self.table.find(ip)?)
    }

    /// The ranges as laid out, each naming its network's ASN.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The hosting network of an ASN that a range names ([`crate::places::Place::network`]);
    /// none when no `#A` line names it.
    pub fn network(&self, asn: u32) -> Option<Network<'_>> {
        let records = self.records();
        let i = records
            .binary_search_by_key(&asn, |r| index::read(r).0)
            .ok()?;
        let (asn, basis, name) = index::read(&records[i]);
        Some(Network {
            asn,
            basis: match basis {
                index::NAMED => Basis::Named,
                index::SPLITTING => Basis::Splitting,
                _ => Basis::Listed,
            },
            name: self.meta.get(name)?,
        })
    }

    pub fn len(&self) -> usize {
        self.records().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
    fn a_built_index_is_checked_as_it_is_read() {
        let meta: &'static str = "#A\t9\tnamed\tNine\n#A\t7\tlisted\tSeven\n";
        let index: &'static [u8] = index::build(meta).unwrap().leak();
        let n = Networks::built(meta, index, Table::default()).unwrap();
        assert_eq!(n.len(), 2);
        let swapped: Vec<u8> = [&index[RECORD..], &index[..RECORD]].concat();
        for bad in [&index[..RECORD - 1], swapped.leak()] {
            assert!(Networks::built(meta, bad, Table::default()).is_err());
        }
        // Names past the text they are said to lie in.
        assert!(Networks::built("#A", index, Table::default()).is_err());
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
