//! Web Bot Auth in the service: a signed visit's check (`check`: its key directory found, its
//! signature verified by the engine's `vigil_detect::signature`, its first use recorded) and the
//! directory fetching it relies on (`directories`: the fetcher the dispatch crate implements, the
//! instance's cache, the fetch budget). The other layers each keep theirs in one module: the
//! engine's verification in `vigil_detect::signature`, the HTTP fetcher in
//! `vigil_dispatch::directory`, the test agent in the `vigil agents` command (`src/agents.rs`).

mod check;
pub mod directories;
