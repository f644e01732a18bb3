//! Vigil: bot and proxy/VPN detection results, served from AWS Lambda over DynamoDB, or locally over
//! SQLite with the same code.
//!
//! This crate is the application: one composition root ([`root`]) for the Lambda functions
//! ([`lambda`]) and the `vigil` command ([`cli`]), over the workspace's layers, re-exported here
//! under the names the binaries and tests use:
//!
//! - [`detect`] (`vigil-detect`): the pure detection engine;
//! - [`domain`], [`service`], [`store`] traits and layout (`vigil-core`);
//! - the store adapters, `vigil-store-dynamo` and `vigil-store-sqlite` (in [`store`]);
//! - [`dispatch`] (`vigil-dispatch`): webhook delivery;
//! - [`http`] (`vigil-http`): the route table, the pipeline, the endpoints, and the local server.

pub mod agents;
pub mod cli;
pub mod lambda;
pub mod root;

pub use vigil_core::{config, demo as demo_day, domain, metrics, report, seed, service};
pub use vigil_detect as detect;
pub use vigil_dispatch as dispatch;
pub use vigil_http as http;
pub use vigil_http::{demo, server};

/// The storage traits and layout, and both adapters.
pub mod store {
    pub use vigil_core::store::*;
    pub use vigil_store_dynamo::{DynamoStore, dynamo, streams};
    pub use vigil_store_sqlite::{SqliteStore, sqlite};
}
