//! Hosting networks by ASN: the announced ranges of every network classified as hosting, cloud or
//! colocation (data/asn-hosting.tsv, made by `make data`), so that any address of such a network is
//! known as one, not only the ranges operators publish.

use std::collections::HashMap;
use std::net::IpAddr;

use super::DataError;

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

/// Non-overlapping ranges sorted by start, searched by bisection, each naming its network.
#[derive(Default)]
pub struct Networks {
    networks: HashMap<u32, Network>,
    v4: Vec<(u32, u32, u32)>,
    v6: Vec<(u128, u128, u32)>,
}

impl Networks {
    pub fn parse(text: &str) -> Result<Self, DataError> {
        let bad = |n: usize| DataError::Format(format!("asn-hosting.tsv line {}", n + 1));
        let mut out = Networks::default();
        for (n, line) in text.lines().enumerate() {
            let mut cols = line.split('\t');
            match (cols.next(), cols.next(), cols.next(), cols.next()) {
                (Some("#A"), Some(asn), Some(basis), Some(name)) => {
                    let asn: u32 = asn.parse().map_err(|_| bad(n))?;
                    let basis = match basis {
                        "listed" => Basis::Listed,
                        "named" => Basis::Named,
                        _ => return Err(bad(n)),
                    };
                    let name = name.to_owned();
                    out.networks.insert(asn, Network { asn, basis, name });
                }
                (Some(c), ..) if c.starts_with('#') => {}
                (Some(start), Some(end), Some(asn), None) => {
                    let asn: u32 = asn.parse().map_err(|_| bad(n))?;
                    match (start.parse::<IpAddr>(), end.parse::<IpAddr>()) {
                        (Ok(IpAddr::V4(s)), Ok(IpAddr::V4(e))) => {
                            out.v4.push((u32::from(s), u32::from(e), asn));
                        }
                        (Ok(IpAddr::V6(s)), Ok(IpAddr::V6(e))) => {
                            out.v6.push((u128::from(s), u128::from(e), asn));
                        }
                        _ => return Err(bad(n)),
                    }
                }
                (Some(""), None, ..) => {}
                _ => return Err(bad(n)),
            }
        }
        // Sorted by start for the bisection (the data comes sorted; this keeps a hand-edited
        // file safe).
        out.v4.sort_unstable();
        out.v6.sort_unstable();
        Ok(out)
    }

    /// The hosting network `ip` belongs to, if any.
    pub fn lookup(&self, ip: IpAddr) -> Option<&Network> {
        let asn = match ip {
            IpAddr::V4(v4) => find(&self.v4, u32::from(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => find(&self.v4, u32::from(v4)),
                None => find(&self.v6, u128::from(v6)),
            },
        }?;
        self.networks.get(&asn)
    }

    pub fn len(&self) -> usize {
        self.networks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.networks.is_empty()
    }
}

fn find<T: Ord + Copy>(ranges: &[(T, T, u32)], x: T) -> Option<u32> {
    let i = ranges.partition_point(|(start, ..)| *start <= x);
    let (_, end, asn) = ranges.get(i.checked_sub(1)?)?;
    (x <= *end).then_some(*asn)
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
