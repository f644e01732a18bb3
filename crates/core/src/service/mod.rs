//! The service's decisions: who may see what, and what each operation means. Handlers parse and
//! answer; this layer decides; stores persist. A file per resource; the [`Vigil`] service itself
//! and how it is built are in `vigil.rs`. This file only declares the modules and re-exports.

pub mod admin;
pub mod agents;
mod auth;
pub mod calibration;
mod deliveries;
mod directories;
mod error;
pub mod events;
pub mod insight;
pub mod labels;
pub mod plans;
pub mod projects;
mod replay;
mod results;
mod site;
mod vigil;
mod webhooks;

// Moved out of this file, still named from here as before.
pub use deliveries::MAX_DELIVERIES;
pub use error::{ServiceError, ServiceResult, TestBudget};
pub use vigil::{Detecting, Vigil};
pub use webhooks::{ACCOUNT_TEST_BUDGET, TEST_BUDGET, TEST_SESSION};
