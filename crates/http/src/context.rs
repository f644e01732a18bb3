//! What a request's door knows of it, typed: the authenticated principal, the client's address
//! and whether the client reached us directly. Each door builds it in one function (API Gateway:
//! [`crate::gateway::request_context`]; `vigil serve`: its server), and the pipeline and the
//! collect route read only this.

use std::net::IpAddr;

use vigil_core::domain::plan::Principal;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    /// The developer account a key authenticated, with its plan's terms; None on the public
    /// routes (collect, the agent script), which have no key.
    pub principal: Option<Principal>,
    /// The client's address, as the door saw it (API Gateway's source IP; the peer, or what a
    /// trusted proxy says of it).
    pub client: Option<IpAddr>,
    /// Whether the client reached the server with no proxy of ours in between, so that every
    /// header it carries is the client's own (`vigil serve` without a trusted proxy).
    pub direct: bool,
    /// The connection's TLS and HTTP fingerprints, where the door could see them (`vigil serve`
    /// over HTTPS; CloudFront's viewer headers behind the origin-verify secret).
    pub wire: Option<vigil_detect::Wire>,
}
