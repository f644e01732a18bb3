//! The DynamoDB store (one table, `serde_dynamo` items, conditional transactions) and the
//! follower of the table's stream for `vigil serve --dynamodb`.

mod apply;
mod counters;
pub mod dynamo;
pub mod records;
pub mod streams;

pub use dynamo::DynamoStore;
