//! The agent verdict: who a visit says it is (its user agent, its signature), checked against
//! the catalogue once every rule has run. Apart from the catalogue (`agents`), which the engine
//! holds, so that the engine's data does not depend on the view of a visit.

use super::{Agent, Catalogue, Category, Known, Status, Via};
use crate::reasons::{Code, Reason, visitor_text};
use crate::signature::{Outcome, SignatureCheck};
use crate::visit::Visit;

/// The agent verdict, after every rule has run (the address rule's `verified_bot` and
/// `spoofed_bot` are the range check), and the identity reasons it adds.
pub fn judge<'a>(catalogue: &'a Catalogue, v: &Visit<'a>, out: &mut Vec<Reason>) -> Agent {
    let claimed = v.named;
    if let Some(check) = v.signature {
        return judge_signature(catalogue, check, claimed, out);
    }
    // The address rule's range check: the claim it judged is the catalogue's range claim.
    let ranged = out.iter().find_map(|r| match r.code {
        Code::VerifiedBot => Some(Status::Verified),
        Code::SpoofedBot => Some(Status::Spoofed),
        _ => None,
    });
    if let Some(status) = ranged {
        let known = v.range_claim(catalogue);
        return Agent::of(status, known.or(claimed), Via::IpRange);
    }
    let Some(known) = claimed else {
        return Agent::NONE;
    };
    if matches!(known.category, Category::AiAgent | Category::AiCrawler) {
        out.push(Reason::new(
            Code::AiAgent,
            format!(
                "declares itself {} ({}, {}) in its user agent, unsigned and unverified",
                known.name,
                known.operator,
                known.category.as_str()
            ),
        ));
    }
    Agent::of(Status::Unsigned, Some(known), Via::UserAgent)
}

fn judge_signature(
    catalogue: &Catalogue,
    check: &SignatureCheck,
    claimed: Option<&Known>,
    out: &mut Vec<Reason>,
) -> Agent {
    let directory = check.directory.as_deref();
    let by_directory = directory.and_then(|d| catalogue.by_directory(d));
    let shown = |d: Option<&str>| d.map_or("no directory".to_owned(), |d| visitor_text(d, 100));
    let key = check
        .keyid
        .as_deref()
        .map_or(String::new(), |k| format!(", key {}", visitor_text(k, 50)));
    match &check.outcome {
        Outcome::Verified => match by_directory {
            Some(known) => {
                out.push(Reason::new(
                    Code::SignedAgent,
                    format!(
                        "{} of {} ({}), signed under {}{key}",
                        known.name,
                        known.operator,
                        known.category.as_str(),
                        shown(directory)
                    ),
                ));
                Agent::of(Status::Verified, Some(known), Via::Signature)
            }
            // It claims a known agent whose directory is another: not that agent.
            None if claimed.is_some_and(|k| k.directory.is_some()) => {
                let k =
                    claimed.map_or_else(String::new, |k| format!("{} of {}", k.name, k.operator));
                out.push(Reason::new(
                    Code::SpoofedAgent,
                    format!(
                        "claims to be {k} but is signed under {}{key}, not its operator's directory",
                        shown(directory)
                    ),
                ));
                Agent::of(Status::Spoofed, claimed, Via::Signature)
            }
            // A directory the catalogue does not know: the signature holds under the directory it
            // names, so its host is the operator; name and category are what the user agent says.
            None => {
                let host = directory.map(|d| visitor_text(host_of(d), 100));
                out.push(Reason::new(
                    Code::SignedAgent,
                    format!(
                        "signed under {}{key}, a directory outside the catalogue",
                        shown(directory)
                    ),
                ));
                Agent {
                    status: Status::Verified,
                    operator: host,
                    name: claimed.map(|k| k.name.clone()),
                    category: claimed.map(|k| k.category),
                    via: Some(Via::Signature),
                }
            }
        },
        Outcome::SelfSigned => Agent {
            status: Status::SignedUnknown,
            operator: None,
            name: None,
            category: None,
            via: Some(Via::Signature),
        },
        Outcome::Invalid(why) => {
            let known = by_directory.or(claimed);
            let claim = known.map_or(String::new(), |k| {
                format!(", claiming {} of {}", k.name, k.operator)
            });
            out.push(Reason::new(
                Code::SpoofedAgent,
                format!(
                    "its Web Bot Auth signature {}{claim} ({}{key})",
                    visitor_text(why, 120),
                    shown(directory)
                ),
            ));
            Agent::of(Status::Spoofed, known, Via::Signature)
        }
        Outcome::Unverifiable(_) => {
            let known = by_directory.or(claimed);
            Agent::of(Status::SignedUnknown, known, Via::Signature)
        }
    }
}

fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?', '#']).next().unwrap_or_default()
}
