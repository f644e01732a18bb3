//! The embedded store: the single-table layout in one SQLite file, with a change feed that plays
//! the part of DynamoDB Streams. For local use (`vigil serve`) and tests.
//!
//! Modules, lowest first (each imports only those above it):
//! - `error`, `schema`: the adapter's error; the file's tables, migrations and connection settings.
//! - `claims`, `velocity_body`, `held`, `writer`: the write-behind machinery (claimed plan
//!   positions, the rows the writer holds, the writer thread and its batches).
//! - `shared`, `wal`: what every clone of a store shares; the WAL's upkeep.
//! - `sqlite`: the store's handle ([`SqliteStore`]): opening, and the doors into the writer.
//! - `sessions`, `changes`: the sessions indexes; the change feed's records.
//! - `apply`, `counters`, `queries`, `feed`: the store traits (the write plan, the plan's
//!   counters, the reads, the change feed).

mod apply;
pub mod changes;
mod claims;
mod counters;
mod error;
mod feed;
mod held;
mod queries;
mod schema;
mod sessions;
mod shared;
pub mod sqlite;
#[cfg(test)]
mod testing;
mod velocity_body;
mod wal;
mod writer;

pub use sqlite::SqliteStore;
