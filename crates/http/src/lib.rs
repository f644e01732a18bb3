//! HTTP: the route table, the one request pipeline (authentication, extractors, the handler, the
//! answer), and one endpoint per route, shared by the Lambda functions and the local server.

pub mod auth;
pub mod context;
pub mod demo;
pub mod error;
pub mod extract;
pub mod forwarded;
pub mod handlers;
pub mod ingest;
pub mod insight;
pub mod message;
pub mod paths;
pub mod pipeline;
pub mod reference;
pub mod reply;
mod response;
pub mod routes;
pub mod server;
pub mod statics;

pub use context::Context;
pub use error::ApiError;
pub use message::{PathParams, Request, Response};
pub use pipeline::{Endpoint, respond};
pub use routes::{Resolved, Route, Router};
