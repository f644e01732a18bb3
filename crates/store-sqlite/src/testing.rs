//! What the crate's unit tests share.

use rusqlite::Connection;
use vigil_core::domain::{CheckResult, NewResult, ProjectId, Score, SessionId};

/// A visit's result: session `session` of project `p`, with proxy/VPN score `pv`, at `at`.
pub(crate) fn visit(session: &str, pv: f64, at: &str) -> NewResult {
    NewResult {
        project_id: ProjectId::parse("p").unwrap(),
        session_id: SessionId::parse(session).unwrap(),
        result: CheckResult {
            score_bot: Score::new(0.1).unwrap(),
            score_proxy_vpn: Score::new(pv).unwrap(),
            ip_address: "203.0.113.7".parse().unwrap(),
            created_at: at.parse().unwrap(),
        },
        evaluation: None,
    }
}

/// The first column of every row `sql` selects, as text.
pub(crate) fn texts(c: &Connection, sql: &str) -> Vec<String> {
    c.prepare(sql)
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}
