//! The embedded store: the single-table layout in one SQLite file, with a change feed that plays
//! the part of DynamoDB Streams. For local use (`vigil serve`) and tests.

mod claims;
mod feed;
mod held;
pub mod sqlite;
mod velocity_body;
mod writer;

pub use sqlite::SqliteStore;

// The layout and traits the adapter implements, named as its module names them (`super::items`).
use vigil_core::domain;
use vigil_core::store::*;
