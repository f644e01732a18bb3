//! The DynamoDB store (one table, `serde_dynamo` items, conditional transactions) and the
//! follower of the table's stream for `vigil serve --dynamodb`.

mod apply;
pub mod dynamo;
pub mod streams;

pub use dynamo::DynamoStore;

// The layout and traits the adapter implements, named as its modules name them (`super::items`).
use vigil_core::store::*;
use vigil_core::{domain, report};
