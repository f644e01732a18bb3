//! The rules: one file per family, each turning the normalised view of a visit ([`Visit`]) into
//! named reasons. [`RULES`] lists them once, in the order their reasons are reported.

use crate::engine::Engine;
use crate::reasons::Reason;
use crate::visit::Visit;

mod address;
mod browser;
mod client_hints;
mod hand;
mod integrity;
mod language;
mod path;
mod place;
mod proxy_headers;
mod relay;
mod user_agent;
mod velocity;
mod webrtc;
mod wire;

/// A rule family: the reasons it finds in one visit, appended to `out`.
pub type Rule = fn(&Engine, &Visit<'_>, &mut Vec<Reason>);

/// Every family, in order. Two dependencies: `integrity` runs after `user_agent` and `browser`,
/// because function tampering counts only beside another automation reason they may have found;
/// `path` runs after `integrity`, so that a page's `scripted_input` is named once.
pub const RULES: &[(&str, Rule)] = &[
    ("user_agent", user_agent::reasons),
    ("address", address::reasons),
    ("browser", browser::reasons),
    ("integrity", integrity::reasons),
    ("place", place::reasons),
    ("webrtc", webrtc::reasons),
    ("client_hints", client_hints::reasons),
    ("proxy_headers", proxy_headers::reasons),
    ("language", language::reasons),
    ("wire", wire::reasons),
    ("relay", relay::reasons),
    ("velocity", velocity::reasons),
    ("path", path::reasons),
    ("hand", hand::reasons),
];
