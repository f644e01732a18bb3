//! Hosting networks by ASN: the announced ranges of every network classified as hosting, cloud or
//! colocation (data/asn-hosting.tsv, made by `make data`), so that any address of such a network is
//! known as one, not only the ranges operators publish.

use std::collections::HashMap;
use std::net::IpAddr;

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Network {
    pub asn: u32,
    pub basis: Basis,
    /// The operator (listed) or the registered name (named).
    pub name: String,
}

/// Hosting networks (`#A` lines) and their ranges, each naming its network's ASN ([`Table`]).
#[derive(Default)]
pub struct Networks {
    networks: HashMap<u32, Network>,
    table: Table,
}

impl Networks {
    /// The networks of asn-hosting.tsv's text.
    pub fn parse(text: &str) -> Result<Self, DataError> {
        let table = Table::parse(text)
            .map_err(|n| DataError::Format(format!("asn-hosting.tsv line {n}")))?;
        Self::new(text, table)
    }

    /// The networks of `meta` (the file's `#` lines, or all of it) over a table already laid out.
    /// A range whose ASN no `#A` line names is in no hosting network.
    pub fn new(meta: &str, table: Table) -> Result<Self, DataError> {
        let mut networks = HashMap::new();
        for (n, line) in meta.lines().enumerate() {
            if !line.starts_with("#A\t") {
                continue;
            }
            let bad = || DataError::Format(format!("asn-hosting.tsv network line {}", n + 1));
            let mut cols = line.split('\t').skip(1);
            let (Some(asn), Some(basis), Some(name), None) =
                (cols.next(), cols.next(), cols.next(), cols.next())
            else {
                return Err(bad());
            };
            let asn: u32 = asn.parse().map_err(|_| bad())?;
            let basis = match basis {
                "listed" => Basis::Listed,
                "named" => Basis::Named,
                _ => return Err(bad()),
            };
            let name = name.to_owned();
            networks.insert(asn, Network { asn, basis, name });
        }
        Ok(Self { networks, table })
    }

    /// The hosting network `ip` belongs to, if any.
    pub fn lookup(&self, ip: IpAddr) -> Option<&Network> {
        self.networks.get(&self.table.find(ip)?)
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
            n.lookup("5.0.0.1".parse().unwrap()).unwrap().basis,
            Basis::Named
        );
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
