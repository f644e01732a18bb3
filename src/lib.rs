//! Vigil: bot and proxy/VPN detection results, served from AWS Lambda over DynamoDB, or locally over
//! SQLite with the same code.
//!
//! Layers: [`http`] handlers parse and answer, [`service`] decides, [`store`] traits persist through
//! the DynamoDB and SQLite adapters. [`domain`] holds the validated values all of them share.

pub mod cli;
pub mod config;
pub mod demo;
pub mod detect;
pub mod dispatch;
pub mod domain;
pub mod http;
pub mod lambda;
pub mod metrics;
pub mod report;
pub mod seed;
pub mod server;
pub mod service;
pub mod store;
