//! Opaque paging cursors for a session's results and for a project's sessions.
//!
//! A cursor names the last result of the page the client has seen, and is bound to the project and
//! session it was issued for: a garbled cursor, or one presented for another session, is refused
//! rather than silently paging somewhere else. It is not signed: editing the position inside it
//! only moves within the caller's own session, which the caller may read anyway.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use super::ids::{ProjectId, SessionId};
use super::insight::SessionPosition;
use super::model::ResultPosition;
use super::time::Timestamp;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cursor is not valid for this session")]
pub struct CursorError;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    v: u8,
    p: String,
    s: String,
    t: i64,
    q: u64,
}

pub fn encode(project: &ProjectId, session: &SessionId, at: ResultPosition) -> String {
    let wire = Wire {
        v: 1,
        p: project.as_str().to_owned(),
        s: session.as_str().to_owned(),
        t: at.created_at.unix_millis(),
        q: at.seq,
    };
    // Serialising a struct of plain fields cannot fail.
    let json = serde_json::to_vec(&wire).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(json)
}

pub fn decode(
    cursor: &str,
    project: &ProjectId,
    session: &SessionId,
) -> Result<ResultPosition, CursorError> {
    if cursor.len() > 1024 {
        return Err(CursorError);
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| CursorError)?;
    let wire: Wire = serde_json::from_slice(&bytes).map_err(|_| CursorError)?;
    if wire.v != 1 || wire.p != project.as_str() || wire.s != session.as_str() {
        return Err(CursorError);
    }
    Ok(ResultPosition {
        created_at: Timestamp::from_unix_millis(wire.t).map_err(|_| CursorError)?,
        seq: wire.q,
    })
}

/// A sessions-list cursor: the last session of the page seen, bound to the project.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionsWire {
    v: u8,
    p: String,
    t: i64,
    s: String,
}

pub fn encode_sessions(project: &ProjectId, at: &SessionPosition) -> String {
    let wire = SessionsWire {
        v: 2,
        p: project.as_str().to_owned(),
        t: at.last_seen_at.unix_millis(),
        s: at.session_id.as_str().to_owned(),
    };
    let json = serde_json::to_vec(&wire).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(json)
}

pub fn decode_sessions(cursor: &str, project: &ProjectId) -> Result<SessionPosition, CursorError> {
    if cursor.len() > 1024 {
        return Err(CursorError);
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| CursorError)?;
    let wire: SessionsWire = serde_json::from_slice(&bytes).map_err(|_| CursorError)?;
    if wire.v != 2 || wire.p != project.as_str() {
        return Err(CursorError);
    }
    Ok(SessionPosition {
        last_seen_at: Timestamp::from_unix_millis(wire.t).map_err(|_| CursorError)?,
        session_id: SessionId::parse(&wire.s).map_err(|_| CursorError)?,
    })
}

/// A labels-list cursor: the last labelled session of the page seen, bound to the project.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelsWire {
    v: u8,
    p: String,
    l: String,
}

pub fn encode_labels(project: &ProjectId, last: &SessionId) -> String {
    let wire = LabelsWire {
        v: 1,
        p: project.as_str().to_owned(),
        l: last.as_str().to_owned(),
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&wire).unwrap_or_default())
}

pub fn decode_labels(cursor: &str, project: &ProjectId) -> Result<SessionId, CursorError> {
    if cursor.len() > 1024 {
        return Err(CursorError);
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| CursorError)?;
    let wire: LabelsWire = serde_json::from_slice(&bytes).map_err(|_| CursorError)?;
    if wire.v != 1 || wire.p != project.as_str() {
        return Err(CursorError);
    }
    SessionId::parse(&wire.l).map_err(|_| CursorError)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> (ProjectId, SessionId) {
        (
            ProjectId::parse("p1").unwrap(),
            SessionId::parse("s1").unwrap(),
        )
    }

    #[test]
    fn round_trips() {
        let (p, s) = ids();
        let at = ResultPosition {
            created_at: "2026-11-21T10:00:00.123Z".parse().unwrap(),
            seq: 42,
        };
        let c = encode(&p, &s, at);
        assert_eq!(decode(&c, &p, &s), Ok(at));
    }

    #[test]
    fn refuses_garbled_forged_and_foreign() {
        let (p, s) = ids();
        let at = ResultPosition {
            created_at: Timestamp::now(),
            seq: 1,
        };
        let other = SessionId::parse("s2").unwrap();
        let c = encode(&p, &other, at);
        assert_eq!(decode(&c, &p, &s), Err(CursorError));
        for bad in [
            "",
            "!!!",
            "abc",
            &URL_SAFE_NO_PAD.encode("{\"v\":1}"),
            &"A".repeat(2000),
        ] {
            assert_eq!(decode(bad, &p, &s), Err(CursorError), "{bad}");
        }
    }

    #[test]
    fn session_cursors_round_trip_and_stay_in_their_project() {
        let (p, s) = ids();
        let at = SessionPosition {
            last_seen_at: "2026-11-21T10:00:00.123Z".parse().unwrap(),
            session_id: s.clone(),
        };
        let c = encode_sessions(&p, &at);
        assert_eq!(decode_sessions(&c, &p), Ok(at.clone()));
        let other = ProjectId::parse("p2").unwrap();
        assert_eq!(decode_sessions(&c, &other), Err(CursorError));
        let results = encode(
            &p,
            &s,
            ResultPosition {
                created_at: at.last_seen_at,
                seq: 1,
            },
        );
        assert_eq!(decode_sessions(&results, &p), Err(CursorError));
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_a_cursor_or_a_refusal(s in ".{0,300}") {
            let (p, s_id) = ids();
            let _ = decode(&s, &p, &s_id);
        }

        #[test]
        fn cursors_round_trip(ms in 0i64..253_402_300_799_000, seq in proptest::num::u64::ANY) {
            let (p, s) = ids();
            let at = ResultPosition { created_at: Timestamp::from_unix_millis(ms).unwrap(), seq };
            proptest::prop_assert_eq!(decode(&encode(&p, &s, at), &p, &s), Ok(at));
        }
    }
}
