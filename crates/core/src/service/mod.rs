//! The service's decisions: who may see what, and what each operation means. Handlers parse and
//! answer; this layer decides; stores persist. A file per resource; the [`vigil::Vigil`] service
//! itself and how it is built are in `vigil.rs`. This file only declares the modules.

pub mod admin;
mod auth;
pub mod calibration;
pub mod deliveries;
pub mod error;
pub mod events;
pub mod insight;
pub mod labels;
pub mod plans;
pub mod project_cache;
pub mod projects;
mod replay;
mod results;
pub mod site;
pub mod vigil;
pub mod web_bot_auth;
pub mod webhooks;
