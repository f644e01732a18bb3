//! The sessions and devices indexes (DynamoDB's sparse `sessions` and `devices` GSIs), kept in
//! step with every session summary written or removed.

use rusqlite::{Connection, params};
use vigil_core::domain::{Score, SessionId, Timestamp};
use vigil_core::store::items::Entity;
use vigil_core::store::keys::seen_key;

use crate::error::Db;

/// Whether `sk` is a session summary's key: its session's alone (`SESSION#<id>`; ids have no
/// `#`), where a result's goes on (`SESSION#<id>#RESULT#…`).
pub(crate) fn is_summary_sk(sk: &str) -> bool {
    sk.strip_prefix("SESSION#")
        .is_some_and(|id| !id.contains('#'))
}

/// What the sessions indexes need of a summary: its scores and where its entries go. Read
/// instead of the whole [`SessionItem`](vigil_core::store::items::SessionItem) (its last result and reasons) on every visit's write.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Indexed {
    entity: Entity,
    pk: String,
    sk: String,
    session_id: SessionId,
    score_bot: Score,
    score_proxy_vpn: Score,
    last: LastAt,
    #[serde(default)]
    last_seen_at: Option<Timestamp>,
    #[serde(default)]
    seen: Option<String>,
    #[serde(default)]
    device_pk: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct LastAt {
    created_at: Timestamp,
}

/// What the sessions indexes hold of a summary as it was stored, or `None` for a body that is
/// not a summary this code can read (its entries are then found by session).
pub(crate) fn stored_summary(body: &str) -> Option<Indexed> {
    serde_json::from_str::<Indexed>(body)
        .ok()
        .filter(|s| s.entity == Entity::Session)
}

/// A summary's key in the sessions indexes ([`seen_key`]): as [`SessionItem`](vigil_core::store::items::SessionItem)'s, from the same
/// fields.
fn seen_of(s: &Indexed) -> String {
    s.seen
        .clone()
        .unwrap_or_else(|| seen_key(s.last_seen_at.unwrap_or(s.last.created_at), &s.session_id))
}

/// Keeps the sessions indexes up to date with a summary just written over `old` (the summary
/// stored before it: `None` when there was none, `Some(None)` when it could not be read).
pub(crate) fn index_session(
    tx: &Connection,
    old: Option<Option<Indexed>>,
    s: &Indexed,
) -> Result<(), Db> {
    let seen = seen_of(s);
    if let Some(old) = old {
        unindex_session(
            tx,
            &s.pk,
            &s.sk,
            &old,
            Some((&seen, s.device_pk.as_deref())),
        )?;
    }
    tx.prepare_cached(
        "INSERT OR REPLACE INTO sessions_seen (pk, seen, sk, score_bot, score_proxy_vpn) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        s.pk,
        seen,
        s.sk,
        s.score_bot.get(),
        s.score_proxy_vpn.get()
    ])?;
    if let Some(dpk) = &s.device_pk {
        tx.prepare_cached(
            "INSERT OR REPLACE INTO devices_seen (dpk, seen, pk, sk) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![dpk, seen, s.pk, s.sk])?;
    }
    Ok(())
}

/// Removes the entries of the summary at (`pk`, `sk`) as it was stored (`old`), but those its
/// next version writes over (`kept`: its seen key and device partition). An entry not found
/// where the stored summary says (one indexed before the summary kept its `seen`, or a summary
/// this code cannot read) is looked for by its session, in its partition, so that none is left
/// to list the session twice.
pub(crate) fn unindex_session(
    tx: &Connection,
    pk: &str,
    sk: &str,
    old: &Option<Indexed>,
    kept: Option<(&str, Option<&str>)>,
) -> Result<(), Db> {
    // Scans of a partition, for entries not where the summary says.
    let session_by_id = || -> Result<(), Db> {
        tx.prepare_cached("DELETE FROM sessions_seen WHERE pk = ?1 AND sk = ?2")?
            .execute(params![pk, sk])?;
        Ok(())
    };
    let Some(old) = old else {
        session_by_id()?;
        // No device partition known: every device's entries of the project.
        tx.prepare_cached("DELETE FROM devices_seen WHERE pk = ?1 AND sk = ?2")?
            .execute(params![pk, sk])?;
        return Ok(());
    };
    let seen = seen_of(old);
    if kept.map(|k| k.0) != Some(seen.as_str()) {
        let gone = tx
            .prepare_cached("DELETE FROM sessions_seen WHERE pk = ?1 AND seen = ?2")?
            .execute(params![pk, seen])?;
        if gone == 0 {
            session_by_id()?;
        }
    }
    if let Some(dpk) = &old.device_pk
        && kept != Some((seen.as_str(), Some(dpk.as_str())))
    {
        let gone = tx
            .prepare_cached("DELETE FROM devices_seen WHERE dpk = ?1 AND seen = ?2")?
            .execute(params![dpk, seen])?;
        if gone == 0 {
            tx.prepare_cached("DELETE FROM devices_seen WHERE dpk = ?1 AND pk = ?2 AND sk = ?3")?
                .execute(params![dpk, pk, sk])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::visit;
    use vigil_core::store::items::SessionItem;

    #[test]
    fn a_summarys_index_fields_are_read_as_from_the_whole_summary() {
        let summary = SessionItem::next(None, &visit("s", 0.3, "2026-11-21T10:00:01Z"));
        let whole = |s: &SessionItem| {
            s.seen
                .clone()
                .unwrap_or_else(|| seen_key(s.last_seen(), &s.session_id))
        };
        let mut legacy = serde_json::to_value(&summary).unwrap();
        legacy.as_object_mut().unwrap().remove("seen");
        legacy.as_object_mut().unwrap().remove("lastSeenAt");
        let legacy: SessionItem = serde_json::from_value(legacy).unwrap();
        for s in [&summary, &legacy] {
            let body = serde_json::to_string(s).unwrap();
            let indexed = stored_summary(&body).expect("a summary");
            assert_eq!(seen_of(&indexed), whole(s));
            assert_eq!(
                (indexed.pk.as_str(), indexed.sk.as_str()),
                (s.pk.as_str(), s.sk.as_str())
            );
            assert_eq!(indexed.score_proxy_vpn, s.score_proxy_vpn);
        }
        assert!(stored_summary("{\"entity\":\"result\"}").is_none());
        assert!(is_summary_sk("SESSION#s") && !is_summary_sk("SESSION#s#RESULT#x"));
    }
}
