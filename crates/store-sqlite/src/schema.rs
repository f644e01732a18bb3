//! The file: its tables, what opening an older file brings up to date, and the settings every
//! connection gets.

use std::time::Duration;

use rusqlite::Connection;

use crate::error::DbResult;

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS items (
    pk   TEXT NOT NULL,
    sk   TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes (
    seq    INTEGER PRIMARY KEY AUTOINCREMENT,
    record TEXT NOT NULL
);
-- The due index of pending deliveries (DynamoDB's sparse `due` GSI).
CREATE TABLE IF NOT EXISTS due (
    pk     TEXT NOT NULL,
    sk     TEXT NOT NULL,
    due_at TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS due_by_time ON due (due_at);
-- Request counters, per second and per billing period (the table's RATE# and USAGE# items). Not
-- items: one is written per request, and they feed nothing. A second's counters are keyed by
-- their second first (`second_key`): they are written side by side at the table's end, and
-- cleared from its start by key, with no index on their expiry.
CREATE TABLE IF NOT EXISTS counters (
    key     TEXT PRIMARY KEY,
    count   INTEGER NOT NULL,
    expires INTEGER NOT NULL
) WITHOUT ROWID;
DROP INDEX IF EXISTS counters_by_expiry;
-- The sessions index (DynamoDB's sparse `sessions` GSI): each session summary by when it was last
-- seen, with the scores the list filters on. Keyed in the order the list reads it: a visit moves
-- its session's entry to the index's end (deleting the one its summary had said), so it writes
-- at the end rather than at a random page.
CREATE TABLE IF NOT EXISTS sessions_seen (
    pk              TEXT NOT NULL,
    seen            TEXT NOT NULL,
    sk              TEXT NOT NULL,
    score_bot       REAL NOT NULL,
    score_proxy_vpn REAL NOT NULL,
    PRIMARY KEY (pk, seen)
) WITHOUT ROWID;
-- The devices index (DynamoDB's sparse `devices` GSI): each session summary with a device key,
-- by its project's device key and when it was last seen, kept as `sessions_seen` is.
CREATE TABLE IF NOT EXISTS devices_seen (
    dpk  TEXT NOT NULL,
    seen TEXT NOT NULL,
    pk   TEXT NOT NULL,
    sk   TEXT NOT NULL,
    PRIMARY KEY (dpk, seen)
) WITHOUT ROWID;
-- Statistics items (the table's STATS# items). Not in `items`: one is written with every event,
-- and they feed nothing.
CREATE TABLE IF NOT EXISTS stats (
    pk   TEXT NOT NULL,
    sk   TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
-- Velocity counters (the table's VEL# items): each item's numbers and sets as JSON. Not items:
-- several are written with every visit, and they feed nothing.
CREATE TABLE IF NOT EXISTS velocity (
    pk      TEXT NOT NULL,
    sk      TEXT NOT NULL,
    body    TEXT NOT NULL,
    expires INTEGER NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS velocity_by_expiry ON velocity (expires);
-- Where each change-feed consumer has got to. Not items: writing them feeds nothing.
CREATE TABLE IF NOT EXISTS checkpoints (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

/// A database from before the sessions index: the summaries it already has, indexed.
const BACKFILL_SESSIONS: &str = "
INSERT OR IGNORE INTO sessions_seen (pk, seen, sk, score_bot, score_proxy_vpn)
SELECT pk,
       COALESCE(json_extract(body, '$.seen'),
                json_extract(body, '$.last.createdAt') || '#' || json_extract(body, '$.sessionId')),
       sk, json_extract(body, '$.scoreBot'), json_extract(body, '$.scoreProxyVpn')
FROM items WHERE json_extract(body, '$.entity') = 'session';
";

/// A database whose indexes were tables keyed by session (`sessions`, `session_devices`), each
/// with an index by when it was last seen: their entries, moved to the tables keyed that way.
const MOVE_SESSIONS: &str = "
INSERT OR IGNORE INTO sessions_seen (pk, seen, sk, score_bot, score_proxy_vpn)
SELECT pk, seen, sk, score_bot, score_proxy_vpn FROM sessions;
INSERT OR IGNORE INTO devices_seen (dpk, seen, pk, sk)
SELECT dpk, seen, pk, sk FROM session_devices;
DROP TABLE sessions;
DROP TABLE session_devices;
";

/// How long a writer waits for another process's transaction before giving up.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The WAL size (pages) at which a commit checkpoints by itself: a safety net, far above what the
/// background checkpointer (`wal.rs`) lets the WAL grow to, so that requests do not pay for it.
const AUTOCHECKPOINT_PAGES: u32 = 262_144;

/// The settings of every connection, the writer's and the pool's.
pub(crate) fn configure(c: &mut Connection) -> rusqlite::Result<()> {
    c.busy_timeout(BUSY_TIMEOUT)?;
    // Room for every statement the store runs (rusqlite keeps 16 by default): the writer's
    // connection runs all the writes, and a statement that falls out is prepared again.
    c.set_prepared_statement_cache_capacity(128);
    c.pragma_update(None, "journal_mode", "WAL")?;
    c.pragma_update(None, "synchronous", "NORMAL")?;
    c.pragma_update(None, "wal_autocheckpoint", AUTOCHECKPOINT_PAGES)?;
    // A queued write's savepoint journals the pages it first changes (a few MiB a batch): in
    // memory, not spilled to a temporary file a page write at a time.
    c.pragma_update(None, "temp_store", "MEMORY")?;
    Ok(())
}

/// Creates what the file lacks, and brings the sessions index of an older file to this layout, in
/// one transaction: two processes opening a file at once do it once.
pub(crate) fn create_schema(conn: &mut Connection) -> DbResult<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let table = |name: &str| -> DbResult<bool> {
        Ok(tx.query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |r| r.get(0),
        )?)
    };
    let (indexed, keyed_by_session) = (table("sessions_seen")?, table("sessions")?);
    tx.execute_batch(SCHEMA)?;
    if keyed_by_session {
        tx.execute_batch(MOVE_SESSIONS)?;
    } else if !indexed {
        tx.execute_batch(BACKFILL_SESSIONS)?;
    }
    tx.commit()?;
    Ok(())
}
