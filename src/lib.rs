//! Vigil: bot and proxy/VPN detection results, served from AWS Lambda over DynamoDB, or locally over
//! SQLite with the same code.
//!
//! This crate is the application: one composition root ([`root`]) for the Lambda functions
//! ([`lambda`]) and the `vigil` command ([`cli`]), over the workspace's layers, each named by its
//! own crate:
//!
//! - `vigil-detect`: the pure detection engine;
//! - `vigil-core`: the domain, the service, the storage traits and layout;
//! - the store adapters, `vigil-store-dynamo` and `vigil-store-sqlite`;
//! - `vigil-dispatch`: webhook delivery;
//! - `vigil-http`: the route table, the pipeline, the endpoints, and the local server.

pub mod agents;
pub mod cli;
pub mod gateway;
pub mod lambda;
pub mod root;
