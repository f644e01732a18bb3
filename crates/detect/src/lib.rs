//! The detection engine: evidence about one visit in, `scoreBot`, `scoreProxyVpn` and the named
//! reasons behind them out. Pure: no I/O, no clock, no store. Its data (bot patterns, operator
//! ranges, countries, zones; see `scripts/data.py`) is read once, by [`Engine::load`], per
//! process or Lambda cold start.
//!
//! Where things are: `engine` (the engine and its data), `verdict` (scoring one visit),
//! `evidence` (what the engine is told), `visit` (the normalised view every rule reads, and
//! [`Beyond`]), `rules/` (one file per rule family), `reasons` (the codes, their weights and
//! the scores), `agents` (who a visit says it is), `error` ([`DataError`]). This file only
//! declares the modules and names the public types; no module imports from it.

mod address_index;
pub mod agents;
pub mod batch;
pub mod calibration;
mod de;
mod engine;
mod error;
pub mod evidence;
pub mod hand;
pub mod net;
pub mod networks;
pub mod path;
pub mod places;
pub mod reasons;
mod rules;
pub mod signature;
pub mod table;
#[cfg(test)]
mod tests;
pub mod transport;
pub mod ua;
pub mod velocity;
mod verdict;
mod visit;
pub mod wire;

pub use agents::{Agent, Catalogue};
pub use engine::Engine;
pub use error::DataError;
pub use evidence::{Evidence, Headers, RequestLine, Signals};
pub use reasons::{Code, Reason, Target, visitor_text};
pub use signature::SignatureCheck;
pub use verdict::Verdict;
pub use visit::{Beyond, Visit};
pub use wire::Wire;

/// The engine's own version; the data's is in [`Engine::data_version`].
pub const ENGINE_VERSION: &str = concat!("vigil-detect/", env!("CARGO_PKG_VERSION"));
