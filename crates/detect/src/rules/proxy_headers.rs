//! Proxy headers on the request (Via, Forwarded, X-Forwarded-For).

use crate::engine::Engine;
use crate::reasons::{Code, Reason};
use crate::visit::Visit;

/// The family's reasons for one visit.
pub fn reasons(_: &Engine, v: &Visit<'_>, out: &mut Vec<Reason>) {
    let e = v.evidence;

    let Some(h) = e.headers.as_ref() else {
        return;
    };
    let present: Vec<&str> = ["via", "forwarded", "x-forwarded-for"]
        .into_iter()
        .filter(|n| h.get(n).is_some_and(|v| !v.trim().is_empty()))
        .collect();
    if !present.is_empty() {
        out.push(Reason::new(
            Code::ProxyHeaders,
            format!("proxy headers: {}", present.join(", ")),
        ));
    }
}
