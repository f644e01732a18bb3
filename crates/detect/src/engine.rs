//! The engine and its data: the bot patterns, operator ranges, networks, countries and zones,
//! TLS fingerprints and known agents, read once per process or Lambda cold start, by
//! [`Engine::load`] from `data/` or [`Engine::embedded`] from the binary. Scoring a visit with
//! them is in `verdict`.

use std::borrow::Cow;
use std::net::IpAddr;
use std::path::Path;
use std::sync::OnceLock;

use crate::address_index::Index;
use crate::agents::Catalogue;
use crate::error::DataError;
use crate::networks::Networks;
use crate::places::{Geo, Place, Ranges};
use crate::table::Table;
use crate::ua::BotPatterns;
use crate::wire::Fingerprints;

pub struct Engine {
    pub(crate) bots: BotPatterns,
    pub(crate) ranges: Ranges,
    pub(crate) networks: Networks,
    pub(crate) geo: Geo,
    pub(crate) fingerprints: Fingerprints,
    pub(crate) agents: Catalogue,
    pub(crate) data_version: String,
    /// Every address set in one table, once [`Engine::index_addresses`] built it (none inside
    /// when the data cannot be indexed).
    index: OnceLock<Option<Index>>,
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>, DataError> {
    let path = dir.join(name);
    std::fs::read(&path).map_err(|source| DataError::Read {
        path: path.display().to_string(),
        source,
    })
}

fn text(bytes: Vec<u8>, name: &str) -> Result<String, DataError> {
    String::from_utf8(bytes).map_err(|_| DataError::Format(format!("{name} is not UTF-8")))
}

impl Engine {
    /// Loads the data files of `dir` (the repository's `data/`).
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        let patterns = text(read(dir, "bot-patterns.tsv")?, "bot-patterns.tsv")?;
        let ranges = text(read(dir, "ip-ranges.tsv")?, "ip-ranges.tsv")?;
        let hosting = text(read(dir, "asn-hosting.tsv")?, "asn-hosting.tsv")?;
        let zones = text(read(dir, "zones.tsv")?, "zones.tsv")?;
        let wire = text(read(dir, "wire-fingerprints.tsv")?, "wire-fingerprints.tsv")?;
        let agents = text(read(dir, "agents.tsv")?, "agents.tsv")?;
        let manifest = text(read(dir, "MANIFEST")?, "MANIFEST")?;
        Self::from_data(
            &patterns,
            &ranges,
            &hosting,
            read(dir, "country.mmdb")?,
            &zones,
            &wire,
            &agents,
            &manifest,
        )
    }

    /// The engine over the data committed under `data/`, built into the binary: a Lambda function
    /// carries its data with it, and nothing is read from disk or parsed at a cold start that
    /// the build could do: the address tables are laid out by `build.rs`, and the country
    /// database is read where it lies in the binary.
    pub fn embedded() -> Result<Self, DataError> {
        const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/");
        macro_rules! data {
            ($file:literal) => {
                include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/", $file))
            };
        }
        macro_rules! built {
            ($file:literal) => {
                include_bytes!(concat!(env!("OUT_DIR"), "/", $file))
            };
        }
        let table = |v4, v6, file: &str| {
            Table::from_static(v4, v6)
                .ok_or_else(|| DataError::Format(format!("{file}: a table of partial records")))
        };
        let ranges = Ranges::new(
            include_str!(concat!(env!("OUT_DIR"), "/ranges.meta")),
            table(built!("ranges.v4"), built!("ranges.v6"), "ip-ranges.tsv")?,
        )?;
        let networks = Networks::built(
            include_str!(concat!(env!("OUT_DIR"), "/networks.meta")),
            built!("networks.index"),
            table(
                built!("networks.v4"),
                built!("networks.v6"),
                "asn-hosting.tsv",
            )?,
        )?;
        Self::assemble(
            BotPatterns::embedded()?,
            ranges,
            networks,
            Geo::built(Cow::Borrowed(include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../data/country.mmdb"
            ))))?,
            data!("wire-fingerprints.tsv"),
            Catalogue::embedded()?,
            data!("MANIFEST"),
        )
        .map_err(|e| DataError::Format(format!("{DATA}: {e}")))
    }

    #[allow(clippy::too_many_arguments)] // one per data file, each named at every call
    pub fn from_data(
        patterns: &str,
        ranges: &str,
        hosting: &str,
        mmdb: Vec<u8>,
        zones: &str,
        wire: &str,
        agents: &str,
        manifest: &str,
    ) -> Result<Self, DataError> {
        Self::assemble(
            BotPatterns::parse(patterns)?,
            Ranges::parse(ranges)?,
            Networks::parse(hosting)?,
            Geo::load(Cow::Owned(mmdb), zones)?,
            wire,
            Catalogue::parse(agents)?,
            manifest,
        )
    }

    #[allow(clippy::too_many_arguments)] // one per data file, each named at every call
    fn assemble(
        bots: BotPatterns,
        ranges: Ranges,
        networks: Networks,
        geo: Geo,
        wire: &str,
        agents: Catalogue,
        manifest: &str,
    ) -> Result<Self, DataError> {
        // The data's version: each package's version, as pinned by make data.
        let data_version = manifest
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let mut c = l.split('\t');
                Some(format!("{}@{}", c.next()?, c.next()?))
            })
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Self {
            bots,
            ranges,
            networks,
            geo,
            fingerprints: Fingerprints::parse(wire)?,
            agents,
            data_version,
            index: OnceLock::new(),
        })
    }

    /// What the address tables hold for `ip`: its operator range, hosting network and country,
    /// by one search of the address index once it is built, else by each table's own.
    #[inline]
    pub fn place(&self, ip: IpAddr) -> Place {
        if let Some(Some(index)) = self.index.get()
            && let Some(place) = index.find(ip, &self.geo)
        {
            return place;
        }
        Place {
            range: self.ranges.table().find(ip),
            network: self.networks.table().find(ip),
            country: self.geo.country(ip),
        }
    }

    /// Builds the address index ([`Index`]) for [`Engine::place`], once, for runs of many visits
    /// (`vigil evaluate`): a millisecond, then each prefix's steps the first time one of its
    /// addresses is looked up (a few microseconds each; a few MB for a log's prefixes). A cold
    /// start does not pay them. Answers are the same with it or without it. Returns it when the
    /// data could be indexed.
    pub fn index_addresses(&self) -> Option<&Index> {
        self.index
            .get_or_init(|| Index::build(self.ranges.table(), self.networks.table(), &self.geo))
            .as_ref()
    }

    pub fn data_version(&self) -> &str {
        &self.data_version
    }

    pub fn ranges(&self) -> &Ranges {
        &self.ranges
    }

    pub fn geo(&self) -> &Geo {
        &self.geo
    }

    pub fn networks(&self) -> &Networks {
        &self.networks
    }

    /// The TLS fingerprints of known clients.
    pub fn fingerprints(&self) -> &Fingerprints {
        &self.fingerprints
    }

    /// The catalogue of known agents.
    pub fn agents(&self) -> &Catalogue {
        &self.agents
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_tables_are_the_data_directorys() {
        let built = Engine::embedded().unwrap();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data");
        let loaded = Engine::load(&dir).unwrap();
        assert!(built.ranges().len() > 20_000, "{}", built.ranges().len());
        let a: Vec<_> = built.ranges().samples().collect();
        let b: Vec<_> = loaded.ranges().samples().collect();
        assert_eq!(a, b);
        assert_eq!(built.networks().len(), loaded.networks().len());
        // Every range's first address, and the one before it, finds the same network either way.
        for (ip, _) in Table::parse(include_str!("../../../data/asn-hosting.tsv"))
            .unwrap()
            .starts()
        {
            let before = match ip {
                std::net::IpAddr::V4(v4) => u32::from(v4)
                    .checked_sub(1)
                    .map(|x| std::net::IpAddr::from(std::net::Ipv4Addr::from(x))),
                std::net::IpAddr::V6(v6) => u128::from(v6)
                    .checked_sub(1)
                    .map(|x| std::net::IpAddr::from(std::net::Ipv6Addr::from(x))),
            };
            for ip in std::iter::once(ip).chain(before) {
                assert_eq!(
                    built.networks().lookup(ip),
                    loaded.networks().lookup(ip),
                    "{ip}"
                );
            }
        }
    }
}
