//! The address: a crawler from (or outside) its operator's published ranges, Tor, VPN and relay
//! exits, and hosting: an operator's published ranges, or any address a hosting network announces.

use crate::engine::Engine;
use crate::networks::Basis;
use crate::places::Kind;
use crate::reasons::{Code, Reason, visitor_text};
use crate::visit::Visit;

/// The family's reasons for one visit.
pub fn reasons(engine: &Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let ip = v.evidence.ip_address;

    // One search of the address's tables (the visit's), not one per table.
    let label = v.place.range.and_then(|tag| engine.ranges.label(tag));
    // A crawler that names itself, of an operator that publishes its ranges (the catalogue).
    // (Only a visit with an address is judged: no scan of the user agent without one.)
    let claimed = ip
        .and_then(|_| v.range_claim(&engine.agents))
        .and_then(|known| known.ranges.as_deref());
    if let Some(operator) = claimed {
        match label {
            Some(l) if l.kind == Kind::Crawler && l.provider == operator => {
                out.push(Reason::new(
                    Code::VerifiedBot,
                    format!("{operator} from {operator}'s published crawler ranges"),
                ));
                return;
            }
            _ => out.push(Reason::new(
                Code::SpoofedBot,
                format!("claims to be {operator} but is outside {operator}'s published ranges"),
            )),
        }
    }
    // Networks that split TCP are in the same table, and are not hosting.
    let network = (v.place.network)
        .and_then(|asn| engine.networks.network(asn))
        .filter(|n| n.is_hosting());
    let Some(label) = label else {
        // Not in an operator's published ranges, but announced by a hosting network.
        if let Some(n) = network {
            let how = match n.basis {
                Basis::Named => "a hosting network by its registered name",
                Basis::Listed | Basis::Splitting => "a hosting network",
            };
            let name = visitor_text(n.name, 60);
            out.push(Reason::new(
                Code::HostingIp,
                format!("an address of AS{} {name}, {how}", n.asn),
            ));
            out.push(Reason::new(
                Code::DatacenterIp,
                format!("a data centre address (AS{} {name})", n.asn),
            ));
        }
        return;
    };
    let p = &label.provider;
    let asn = network.map_or(String::new(), |n| {
        format!(", AS{} {}", n.asn, visitor_text(n.name, 60))
    });
    match label.kind {
        Kind::Tor => out.push(Reason::new(Code::TorExit, "a Tor exit node")),
        Kind::Vpn if p.contains("Relay") => {
            out.push(Reason::new(Code::Relay, format!("an exit of {p}")));
        }
        Kind::Vpn => out.push(Reason::new(Code::VpnRange, format!("an exit of {p}"))),
        Kind::Hosting | Kind::Cdn => {
            out.push(Reason::new(
                Code::HostingIp,
                format!("an address of {p}{asn}"),
            ));
            out.push(Reason::new(
                Code::DatacenterIp,
                format!("a data centre address ({p})"),
            ));
        }
        // A crawler range without a matching claim: a server that does not say what it is.
        Kind::Crawler => {
            out.push(Reason::new(
                Code::DatacenterIp,
                format!("a crawler range of {p}"),
            ));
        }
    }
}
