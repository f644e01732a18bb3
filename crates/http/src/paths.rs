//! The vocabulary of paths that the route table and the extractors share: the base every route
//! sits under, and the ids a path carries.

use vigil_core::domain::IdError;

/// The base path every route sits under.
pub const BASE: &str = "/v1";

/// An id that a route carries in its path, under one name shared by the route table
/// ([`super::routes`]) and API Gateway's path parameters.
pub trait PathParam: Sized {
    const NAME: &'static str;
    fn parse(raw: &str) -> Result<Self, IdError>;
}
