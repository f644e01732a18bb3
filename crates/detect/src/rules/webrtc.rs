//! WebRTC: a public address of the browser's own that is not the request's.

use std::net::IpAddr;

use crate::engine::Engine;
use crate::net::is_blocked;
use crate::reasons::{Code, Reason};
use crate::visit::Visit;

/// The family's reasons for one visit.
pub fn reasons(_: &Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let (Some(s), ip) = (v.signals, v.evidence.ip_address) else {
        return;
    };
    let Some(request_ip) = ip else {
        return;
    };
    let other = s
        .webrtc_ips
        .iter()
        .flatten()
        .filter_map(|a| a.parse::<IpAddr>().ok())
        .find(|a| !is_blocked(*a) && *a != request_ip);
    if let Some(a) = other {
        out.push(Reason::new(
            Code::WebrtcIpMismatch,
            format!("WebRTC shows the public address {a}, the request came from {request_ip}"),
        ));
    }
}
