//! Vigil's core: the domain's validated values, the service that decides, the storage traits the
//! service depends on and the single-table layout both stores share. No HTTP and no AWS SDK: the
//! adapters and doors are crates of their own that depend on this one.

pub mod config;
pub mod demo;
pub mod domain;
pub mod metrics;
pub mod report;
pub mod seed;
pub mod service;
pub mod store;
