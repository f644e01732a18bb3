//! The embedded store: the same single-table item layout as DynamoDB, kept in one SQLite file.
//!
//! Every write runs in a `BEGIN IMMEDIATE` transaction, which serialises writers across threads and
//! processes (the server and `vigil results add` may run side by side), and appends to `changes`, in
//! the same transaction, one record per item written in the shape of a DynamoDB stream record with
//! old and new images. That feed plays the role of DynamoDB Streams locally.

use std::path::Path;
use std::time::Duration;

use aws_lambda_events::dynamodb::{EventRecord, StreamRecord, StreamViewType};
use r2d2::{Pool, PooledConnection};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OptionalExtension, params};
use serde::de::DeserializeOwned;

use super::LabelStore;
use super::change::{feed_event, feed_event_of_bodies};
use super::items::*;
use super::plan::{Applied, Attributes, ItemStore, Op, Read, Step, WritePlan};
use super::{
    AccountStore, AdminStore, AgentStore, COUNTER_GRACE_SECONDS, Cause, DeliveryStore,
    IdempotencyStore, InsightStore, KeyStore, OpFailed, ProjectStore, RATE_WINDOW_TTL, ResultPage,
    ResultStore, StoreError, UsageStore, VelocityStore, WebhookStore,
};
use crate::claims::{Claims, KEEP_UNUSED, Taken, claim_size};
use crate::domain::FeedEvent;
use crate::domain::insight::{Bucket, SessionPage, SessionPosition, SessionQuery, StatsRange};
use crate::domain::label::Label;
use crate::domain::plan::{Counted, Period, VisitCount};
use crate::domain::velocity::{CounterWork, Counters};
use crate::domain::webhook::MAX_WEBHOOKS_PER_PROJECT;
use crate::domain::{
    AccountId, Delivery, Project, ProjectId, ResultPosition, Score, SessionId, Timestamp, Webhook,
    WebhookId,
};
use crate::held::{Held, SUMMARIES, Summaries};
use crate::writer::{Done, Job, Writer, checked, in_savepoint};

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
-- its session's entry to the index's end (deleting the one its summary had said), where a table
-- keyed by session and an index beside it wrote a page at a random place and two more.
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
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct SqliteStore {
    pool: Pool<SqliteConnectionManager>,
    /// Held by every clone; the checkpointer stops when the last one is dropped, and the period
    /// positions still held go back to the file.
    closing: std::sync::Arc<Closing>,
}

/// What every clone of a store shares, and the last one leaves in order: the plan's positions
/// it holds.
struct Closing {
    claims: std::sync::Arc<Claims>,
    /// Every write goes through this queue and its one connection, in batches (group commit; see
    /// [`crate::writer`]). Pooled connections racing for the file's lock waited in SQLite's busy
    /// handler, which sleeps in steps of up to 100 ms: a burst of visits had a p99 of hundreds
    /// of milliseconds.
    writer: Writer,
    /// The session summaries the writer committed last, to plan visits on ([`Summaries`]).
    summaries: std::sync::Arc<Summaries>,
}

impl Closing {
    /// Gives back the period positions held longer than `keep`; `wait` waits (at most that long)
    /// for the write to commit.
    fn give_back(&self, keep: Duration, wait: Option<Duration>) {
        if !self.claims.any_idle(keep) {
            return;
        }
        let (committed, written) = std::sync::mpsc::channel::<()>();
        let claims = self.claims.clone();
        let job: Job = Box::new(move |conn| {
            // Taken from what this process holds here, on the writer: no claim can read the
            // counter between the positions leaving the process and reaching the file (a claim
            // then counted them twice, and refused a request the period had room for).
            let back = claims.idle(keep);
            let (sound, out) = match conn {
                Ok(_) if back.is_empty() => (true, Ok(Ok(()))),
                Ok((c, _)) => in_savepoint(c, |c| -> DbResult<Result<(), ()>> {
                    let mut stmt = c.prepare_cached(
                        "UPDATE counters SET count = max(count - ?2, 0) WHERE key = ?1",
                    )?;
                    for (key, n) in &back {
                        stmt.execute(params![key, n])?;
                    }
                    Ok(Ok(()))
                }),
                Err(e) => (true, Err(failed("sqlite begin", e))),
            };
            let done: Done = Box::new(move |commit: Option<&rusqlite::Error>| {
                // Positions not given back stay counted: the period's usage reads high by them.
                let error = match (out, commit) {
                    (Err(Db(e)), _) => Some(e.to_string()),
                    (Ok(_), Some(e)) => Some(e.to_string()),
                    (Ok(_), None) => None,
                };
                if let Some(e) = error {
                    tracing::warn!(error = %e, "unused plan positions not given back");
                }
                let _ = committed.send(());
            });
            (sound, done)
        });
        if self.writer.send(job).is_err() {
            tracing::warn!("unused plan positions not given back: the writer has stopped");
        } else if let Some(wait) = wait {
            let _ = written.recv_timeout(wait);
        }
    }
}

impl Drop for Closing {
    /// The last clone gives back every period position it holds, and waits for the write: a
    /// process that reads the file next finds the usage exact.
    fn drop(&mut self) {
        self.give_back(Duration::ZERO, Some(BUSY_TIMEOUT));
    }
}

/// How often the WAL is checkpointed off the request path: often enough that what is left to
/// copy when the writer is paused ([`checkpoint`]) is little.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);
/// How often the plan's idle positions are given back.
const GIVE_BACK_EVERY: Duration = Duration::from_millis(500);
/// The WAL size (pages, 128 MiB) from which the checkpointer pauses the writer to finish, so that
/// the WAL starts again from its beginning.
const RESTART_PAGES: i64 = 32_768;
/// The WAL size (pages) at which a commit checkpoints by itself: a safety net, far above what the
/// background checkpointer lets the WAL grow to, so that requests do not pay for it.
const AUTOCHECKPOINT_PAGES: u32 = 262_144;
/// The WAL file size above which an idle store truncates it. A WAL starting again from its
/// beginning keeps its file at the largest size it reached (hundreds of MiB after a burst of
/// visits) until it is truncated; a few MiB is what a quiet store's writes fill between ticks.
const WAL_IDLE_BYTES: u64 = 4 << 20;
/// How long the idle truncation waits for a reader or a writer before leaving it to a later tick.
const TRUNCATE_WAIT: Duration = Duration::from_millis(100);

/// The WAL file of the database at `path`.
fn wal_path(path: &Path) -> std::path::PathBuf {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    wal.into()
}

/// A failure inside this adapter: SQLite's and the pool's errors and the store's own, so that `?`
/// works on all three; it leaves the adapter as the [`StoreError`] it carries.
#[derive(Debug)]
pub struct Db(StoreError);

type DbResult<T> = Result<T, Db>;

impl std::fmt::Display for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", vigil_core::report::Chain(&self.0))
    }
}

impl From<StoreError> for Db {
    fn from(e: StoreError) -> Self {
        Db(e)
    }
}

impl From<rusqlite::Error> for Db {
    fn from(e: rusqlite::Error) -> Self {
        Db(StoreError::Backend(Box::new(e)))
    }
}

impl From<r2d2::Error> for Db {
    fn from(e: r2d2::Error) -> Self {
        Db(StoreError::Backend(OpFailed::cause("sqlite pool", e)))
    }
}

impl From<Db> for StoreError {
    fn from(e: Db) -> Self {
        e.0
    }
}

impl From<String> for Db {
    fn from(e: String) -> Self {
        Db(StoreError::Backend(OpFailed::cause("sqlite write", e)))
    }
}

/// An error of the writer's own transaction, for each write it carried.
fn failed(op: &'static str, e: &rusqlite::Error) -> Db {
    Db(StoreError::Backend(OpFailed::cause(op, e.to_string())))
}

pub(crate) fn corrupt(e: impl Into<Cause>) -> Db {
    Db(StoreError::Corrupt(e.into()))
}

/// Creates what the file lacks, and brings the sessions index of an older file to this layout, in
/// one transaction: two processes opening a file at once do it once.
fn create_schema(conn: &mut Connection) -> DbResult<()> {
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

impl SqliteStore {
    /// Opens (creating if needed) the database file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Ok(Self::open_db(path.as_ref())?)
    }

    fn open_db(path: &Path) -> DbResult<Self> {
        let manager = SqliteConnectionManager::file(path).with_init(|c| {
            c.busy_timeout(BUSY_TIMEOUT)?;
            // Room for every statement the store runs (rusqlite keeps 16 by default): the
            // writer's connection runs all the writes, and re-preparing was a visible cost.
            c.set_prepared_statement_cache_capacity(128);
            c.pragma_update(None, "journal_mode", "WAL")?;
            c.pragma_update(None, "synchronous", "NORMAL")?;
            c.pragma_update(None, "wal_autocheckpoint", AUTOCHECKPOINT_PAGES)?;
            // Each queued write runs in a savepoint, whose sub-journal (the pages it first
            // changes) spilled past 64 KiB into a temporary file: a pwrite per page, an eighth
            // of the writer thread's time under ingestion. A batch's sub-journal is a few MiB.
            c.pragma_update(None, "temp_store", "MEMORY")?;
            Ok(())
        });
        let writer = r2d2::ManageConnection::connect(&manager)
            .map_err(|e| Db(StoreError::Backend(OpFailed::cause("sqlite open", e))))?;
        let pool = Pool::builder()
            .max_size(8)
            .connection_timeout(BUSY_TIMEOUT)
            .build(manager)?;
        let mut conn = pool.get()?;
        create_schema(&mut conn)?;
        let summaries = std::sync::Arc::new(Summaries::new(SUMMARIES));
        let writer = Writer::start(writer, Held::new(summaries.clone())).map_err(|e| {
            Db(StoreError::Backend(OpFailed::cause(
                "sqlite writer thread",
                e,
            )))
        })?;
        let closing = std::sync::Arc::new(Closing {
            claims: std::sync::Arc::default(),
            writer,
            summaries,
        });
        let wal = wal_path(path);
        checkpoint_in_background(pool.clone(), std::sync::Arc::downgrade(&closing), wal);
        Ok(Self { pool, closing })
    }

    /// Runs blocking database work off the async executor.
    async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut PooledConnection<SqliteConnectionManager>) -> DbResult<T> + Send + 'static,
    {
        let pool = self.pool.clone();
        let done = tokio::task::spawn_blocking(move || -> DbResult<T> {
            let mut conn = pool.get()?;
            f(&mut conn)
        })
        .await
        .map_err(|e| StoreError::Backend(OpFailed::cause("sqlite task", e)))?;
        Ok(done?)
    }

    /// Runs `f` in an immediate (write-locking) transaction and commits it. It cannot refuse, so
    /// it runs without a savepoint ([`checked`]).
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> DbResult<T> + Send + 'static,
    {
        self.write_held(move |tx, _| f(tx)).await
    }

    /// [`Self::write`] with the rows the writer holds ([`crate::held`]).
    async fn write_held<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Held) -> DbResult<T> + Send + 'static,
    {
        self.write_held_then(f, |_| ()).await
    }

    /// [`Self::write_held`], running `committed` on the writer thread once the write has
    /// committed, before any write queued after it is answered ([`Self::queue_then`]).
    async fn write_held_then<T, F, A>(&self, f: F, committed: A) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Held) -> DbResult<T> + Send + 'static,
        A: FnOnce(&T) + Send + 'static,
    {
        let write = move |c: &Connection, held: &mut Held| {
            checked(c, held, |_, _| Ok(Ok(())), move |tx, held, ()| f(tx, held))
        };
        self.queue_then(write, committed).await
    }

    /// Like [`Self::write`], but `f` may refuse after writing: a refusal rolls back everything it
    /// wrote (a savepoint of its own). What the writer holds is written back and dropped first,
    /// since a savepoint's rollback could not undo a change to it.
    async fn write_unless<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> DbResult<Result<T, T>> + Send + 'static,
    {
        self.queue(move |c, held| match held.write_back_and_drop(c) {
            Ok(()) => in_savepoint(c, f),
            // Some rows may be written and others not: the batch cannot commit.
            Err(e) => (false, Err(e)),
        })
        .await
    }

    /// Like [`Self::write_unless`] for a write that decides before it writes: `check` only reads
    /// and may refuse, `then` writes what it decided and cannot refuse ([`checked`]).
    async fn write_checked<P, T, C, W>(&self, check: C, then: W) -> Result<T, StoreError>
    where
        T: Send + 'static,
        C: FnOnce(&Connection, &mut Held) -> DbResult<Result<P, T>> + Send + 'static,
        W: FnOnce(&Connection, &mut Held, P) -> DbResult<T> + Send + 'static,
    {
        self.queue(move |c, held| checked(c, held, check, then))
            .await
    }

    /// Queues a write for the writer thread and waits for its batch's fate: `f` runs in the
    /// batch's transaction and says whether the transaction is still sound, and what it did.
    async fn queue<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Held) -> (bool, DbResult<Result<T, T>>) + Send + 'static,
    {
        self.queue_then(f, |_| ()).await
    }

    /// [`Self::queue`], running `committed` on the writer thread once the write's batch has
    /// committed (not when it refused or failed), before any later write of the queue is answered.
    async fn queue_then<T, F, A>(&self, f: F, committed: A) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Held) -> (bool, DbResult<Result<T, T>>) + Send + 'static,
        A: FnOnce(&T) + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel::<DbResult<T>>();
        let job: Job = Box::new(move |conn| {
            let (sound, out) = match conn {
                Ok((c, held)) => f(c, held),
                Err(e) => (true, Err(failed("sqlite begin", e))),
            };
            let done: Done = Box::new(move |commit: Option<&rusqlite::Error>| {
                let out = match (out, commit) {
                    // Its writes went with the batch.
                    (Ok(Ok(_)), Some(e)) => Err(failed("sqlite commit", e)),
                    (Ok(Ok(v)), None) => {
                        committed(&v);
                        Ok(v)
                    }
                    // Refused: it wrote nothing, whatever became of the batch.
                    (Ok(Err(v)), _) => Ok(v),
                    (Err(e), _) => Err(e),
                };
                // The caller may have gone (its request was cancelled): nothing to tell.
                let _ = reply.send(out);
            });
            (sound, done)
        });
        let gone = || {
            StoreError::Backend(OpFailed::cause(
                "sqlite writer",
                "the writer thread stopped",
            ))
        };
        self.closing.writer.send(job).map_err(|_| gone())?;
        Ok(answer.await.map_err(|_| gone())??)
    }

    /// Change-feed records after `after` (exclusive), oldest first, at most `limit`.
    pub async fn changes(
        &self,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, EventRecord)>, StoreError> {
        self.read_changes(after, limit, stream_record).await
    }

    /// Change-feed records after `after` (exclusive), oldest first, at most `limit`, as what
    /// each says in domain terms (what [`crate::feed`]'s follower hands on).
    pub async fn feed(
        &self,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, FeedEvent)>, StoreError> {
        self.read_changes(after, limit, |seq, text| Ok(feed_event_of(seq, text)))
            .await
    }

    /// Records after `after`, oldest first, at most `limit`, each read by `read` from its text.
    async fn read_changes<T: Send + 'static>(
        &self,
        after: i64,
        limit: usize,
        read: fn(i64, &str) -> Result<T, Db>,
    ) -> Result<Vec<(i64, T)>, StoreError> {
        self.run(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT seq, record FROM changes WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )?;
            let mut rows = stmt.query(params![after, limit as i64])?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                let seq: i64 = row.get(0)?;
                let text = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
                out.push((seq, read(seq, text)?));
            }
            Ok(out)
        })
        .await
    }
}

fn get<T: DeserializeOwned>(c: &Connection, pk: &str, sk: &str) -> Result<Option<T>, Db> {
    body(c, pk, sk)?
        .map(|b| serde_json::from_str(&b).map_err(corrupt))
        .transpose()
}

/// An item's body as stored (JSON text).
fn body(c: &Connection, pk: &str, sk: &str) -> Result<Option<String>, Db> {
    let mut stmt = c.prepare_cached("SELECT body FROM items WHERE pk = ?1 AND sk = ?2")?;
    Ok(stmt.query_row(params![pk, sk], |r| r.get(0)).optional()?)
}

/// Items of one partition whose sort key lies in `[lo, hi)`, in sort key order (`desc` reverses),
/// at most `limit`.
fn range<T: DeserializeOwned>(
    c: &Connection,
    pk: &str,
    lo: &str,
    hi: &str,
    desc: bool,
    limit: usize,
) -> Result<Vec<T>, Db> {
    let sql = if desc {
        "SELECT body FROM items WHERE pk = ?1 AND sk >= ?2 AND sk < ?3 ORDER BY sk DESC LIMIT ?4"
    } else {
        "SELECT body FROM items WHERE pk = ?1 AND sk >= ?2 AND sk < ?3 ORDER BY sk LIMIT ?4"
    };
    let mut stmt = c.prepare_cached(sql)?;
    let rows = stmt.query_map(params![pk, lo, hi, limit as i64], |r| r.get::<_, String>(0))?;
    rows.map(|b| serde_json::from_str(&b?).map_err(corrupt))
        .collect()
}

/// Every webhook item of a project's partition.
fn webhook_items(c: &Connection, pk: &str) -> Result<Vec<WebhookItem>, Db> {
    // At most 10 webhooks exist; the bound only guards against a corrupt partition.
    range(
        c,
        pk,
        WEBHOOK_PREFIX,
        &prefix_end(WEBHOOK_PREFIX),
        false,
        MAX_WEBHOOKS_PER_PROJECT * 2,
    )
}

/// The smallest string greater than every string starting with `prefix` (which ends in `#`).
fn prefix_end(prefix: &str) -> String {
    let mut s = prefix.trim_end_matches('#').to_owned();
    s.push('$');
    s
}

/// How a change record begins since records became compact: the item's key, when it changed
/// (Unix milliseconds), and its bodies before and after as the items table holds them (`null`
/// for none), e.g. `{"v":2,"at":1795255200000,"pk":"PROJECT#p","sk":"SESSION#s","old":null,
/// "new":{...}}`. Older records are whole stream records (an `EventRecord` with DynamoDB-typed
/// images): building one took an eighth of the writer thread's time under ingestion, and parsing
/// it again a seventh of the request threads'. Both kinds are read.
const COMPACT: &str = "{\"v\":2,";

/// A compact change record, its bodies borrowed from the row's text.
#[derive(serde::Deserialize)]
struct Change<'a> {
    at: i64,
    pk: String,
    sk: String,
    #[serde(borrow)]
    old: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    new: Option<&'a serde_json::value::RawValue>,
}

/// Appends one compact record ([`COMPACT`]) to the change feed: `old` and `new` are the item's
/// bodies as the items table holds them (JSON objects that serde_json wrote), set in as they are.
fn record_change(
    tx: &Connection,
    pk: &str,
    sk: &str,
    old: Option<&str>,
    new: Option<&str>,
) -> Result<(), Db> {
    let key = |k: &str| serde_json::to_string(k).map_err(corrupt);
    let (pk, sk) = (key(pk)?, key(sk)?);
    let at = chrono::Utc::now().timestamp_millis();
    let (old, new) = (old.unwrap_or("null"), new.unwrap_or("null"));
    let record =
        format!("{COMPACT}\"at\":{at},\"pk\":{pk},\"sk\":{sk},\"old\":{old},\"new\":{new}}}");
    tx.prepare_cached("INSERT INTO changes (record) VALUES (?1)")?
        .execute([record])?;
    Ok(())
}

/// A stored change record as the stream record DynamoDB would have sent for it.
fn stream_record(seq: i64, text: &str) -> Result<EventRecord, Db> {
    let mut rec = if text.starts_with(COMPACT) {
        let c: Change = serde_json::from_str(text).map_err(corrupt)?;
        let typed = |body: Option<&serde_json::value::RawValue>| -> Result<_, Db> {
            match body {
                Some(b) => image(&serde_json::from_str(b.get()).map_err(corrupt)?),
                None => Ok(serde_dynamo::Item::default()),
            }
        };
        let mut change = StreamRecord::default();
        change.approximate_creation_date_time =
            chrono::DateTime::from_timestamp_millis(c.at).unwrap_or_default();
        change.keys =
            serde_dynamo::to_item(serde_json::json!({ PK: c.pk, SK: c.sk })).map_err(corrupt)?;
        change.stream_view_type = Some(StreamViewType::NewAndOldImages);
        let mut rec = EventRecord::default();
        rec.event_name = match (c.old, c.new) {
            (None, _) => "INSERT",
            (Some(_), Some(_)) => "MODIFY",
            (Some(_), None) => "REMOVE",
        }
        .to_owned();
        change.old_image = typed(c.old)?;
        change.new_image = typed(c.new)?;
        rec.change = change;
        rec.aws_region = "local".to_owned();
        rec.event_source = Some("vigil:sqlite".to_owned());
        rec.event_version = Some("1.1".to_owned());
        rec
    } else {
        serde_json::from_str(text).map_err(corrupt)?
    };
    rec.event_id = seq.to_string();
    rec.change.sequence_number = Some(format!("{seq:021}"));
    Ok(rec)
}

/// What a stored change record says, in domain terms; a record that cannot be read is said to be
/// unreadable (the follower reports it and goes on) rather than stopping the feed.
fn feed_event_of(seq: i64, text: &str) -> FeedEvent {
    if text.starts_with(COMPACT) {
        match serde_json::from_str::<Change>(text) {
            // Only session summaries make events; their bodies are not read for other items.
            Ok(c) if !is_summary_sk(&c.sk) => FeedEvent::Other,
            Ok(c) => feed_event_of_bodies(
                &seq.to_string(),
                c.old.map(|b| b.get()),
                c.new.map(|b| b.get()),
            ),
            Err(e) => FeedEvent::Unreadable(format!("record {seq}: {e}")),
        }
    } else {
        match stream_record(seq, text) {
            Ok(rec) => feed_event(&rec),
            Err(e) => FeedEvent::Unreadable(format!("record {seq}: {}", e.0)),
        }
    }
}

fn image(item: &Attributes) -> Result<serde_dynamo::Item, Db> {
    serde_dynamo::to_item(item).map_err(corrupt)
}

/// Writes `new` at (pk, sk) over `old` (read in this transaction), with its change record and the
/// tables that index some kinds of item: the sessions index and the due index.
fn put(
    tx: &Connection,
    held: Option<&mut Held>,
    pk: &str,
    sk: &str,
    old: Option<&str>,
    new: &Attributes,
) -> Result<(), Db> {
    let body = serde_json::to_string(new).map_err(corrupt)?;
    tx.prepare_cached("INSERT OR REPLACE INTO items (pk, sk, body) VALUES (?1, ?2, ?3)")?
        .execute(params![pk, sk, body])?;
    record_change(tx, pk, sk, old, Some(&body))?;
    match new.get("entity").and_then(serde_json::Value::as_str) {
        // Read back from the text just written: no copy of the attribute map.
        Some("session") => {
            if let Some(held) = held {
                held.summary_written(pk, sk, Some(&body));
            }
            index_session(
                tx,
                old.map(stored_summary),
                &serde_json::from_str(&body).map_err(corrupt)?,
            )
        }
        Some("delivery") => index_due(tx, pk, sk, new.get(DUE_AT).and_then(|v| v.as_str())),
        _ => Ok(()),
    }
}

fn delete(
    tx: &Connection,
    held: Option<&mut Held>,
    pk: &str,
    sk: &str,
    old: &str,
) -> Result<(), Db> {
    tx.prepare_cached("DELETE FROM items WHERE pk = ?1 AND sk = ?2")?
        .execute(params![pk, sk])?;
    record_change(tx, pk, sk, Some(old), None)?;
    if is_summary_sk(sk) {
        if let Some(held) = held {
            held.summary_written(pk, sk, None);
        }
        unindex_session(tx, pk, sk, &stored_summary(old), None)?;
    }
    index_due(tx, pk, sk, None)
}

/// Keeps the due index in step with a delivery item (None: not due, or gone).
fn index_due(tx: &Connection, pk: &str, sk: &str, due_at: Option<&str>) -> Result<(), Db> {
    match due_at {
        Some(at) => tx
            .prepare_cached("INSERT OR REPLACE INTO due (pk, sk, due_at) VALUES (?1, ?2, ?3)")?
            .execute(params![pk, sk, at])?,
        None => tx
            .prepare_cached("DELETE FROM due WHERE pk = ?1 AND sk = ?2")?
            .execute(params![pk, sk])?,
    };
    Ok(())
}

/// Adds numbers to a statistics item (created as `blank`), kept in its own table: statistics feed
/// nothing. Through what the writer holds when it may ([`crate::held`]), else straight to the row.
fn add_stats(
    tx: &Connection,
    held: Option<&mut Held>,
    pk: &str,
    sk: &str,
    blank: Attributes,
    adds: &[(String, u64)],
) -> Result<(), Db> {
    if let Some(held) = held {
        return held.add_stats(tx, pk, sk, blank, adds);
    }
    let mut item = crate::held::read_stats(tx, pk, sk)?.unwrap_or(blank);
    crate::held::add_numbers(&mut item, adds);
    crate::held::write_stats(tx, pk, sk, &item)
}

/// What a step writes, decided from its item as the transaction read it.
enum Outcome {
    Put {
        stored: Option<String>,
        new: Attributes,
    },
    Delete {
        stored: String,
    },
    Add {
        blank: Attributes,
        adds: Vec<(String, u64)>,
    },
    Nothing,
}

/// A step's item and what it writes there.
struct Decided {
    pk: String,
    sk: String,
    outcome: Outcome,
}

/// Reads a step's item and decides what the step writes, or why it is refused. Only reads.
fn decide(tx: &Connection, step: Step) -> Result<Result<Decided, Applied>, Db> {
    let Step { name, pk, sk, op } = step;
    if let Op::Add { blank, adds } = op {
        let outcome = Outcome::Add { blank, adds };
        return Ok(Ok(Decided { pk, sk, outcome }));
    }
    // The body as stored goes into the change record as it is.
    let stored = body(tx, &pk, &sk)?;
    let current: Option<Attributes> = stored
        .as_deref()
        .map(|b| serde_json::from_str(b).map_err(corrupt))
        .transpose()?;
    let refused = |current| {
        Ok(Err(Applied::Refused {
            step: name,
            current,
        }))
    };
    let keyed = || {
        let mut item = Attributes::new();
        item.insert(PK.to_owned(), pk.clone().into());
        item.insert(SK.to_owned(), sk.clone().into());
        item
    };
    let new = match op {
        Op::Put { when, .. } | Op::Delete { when } | Op::Set { when, .. }
            if !when.holds(current.as_ref()) =>
        {
            return refused(current);
        }
        Op::Put { item, .. } => item,
        Op::Delete { .. } => {
            let outcome = match stored {
                Some(stored) => Outcome::Delete { stored },
                None => Outcome::Nothing,
            };
            return Ok(Ok(Decided { pk, sk, outcome }));
        }
        Op::Set { attributes, .. } => {
            let mut item = current.unwrap_or_else(keyed);
            item.extend(attributes);
            item
        }
        Op::Count {
            entity,
            by,
            max,
            expires,
        } => {
            let Some(count) = Step::counted(by, max, current.as_ref()) else {
                return refused(current);
            };
            let mut item = current.unwrap_or_else(keyed);
            item.insert(
                "entity".to_owned(),
                serde_json::to_value(entity).map_err(corrupt)?,
            );
            item.insert("count".to_owned(), count.into());
            if let Some(t) = expires {
                item.insert("ttl".to_owned(), t.into());
            }
            item
        }
        // Taken above; nothing to write here.
        Op::Add { .. } => {
            let outcome = Outcome::Nothing;
            return Ok(Ok(Decided { pk, sk, outcome }));
        }
    };
    let outcome = Outcome::Put { stored, new };
    Ok(Ok(Decided { pk, sk, outcome }))
}

/// Writes what [`decide`] decided; statistics through what the writer holds, when given.
fn write_decided(tx: &Connection, held: Option<&mut Held>, d: Decided) -> Result<(), Db> {
    let Decided { pk, sk, outcome } = d;
    match outcome {
        Outcome::Put { stored, new } => put(tx, held, &pk, &sk, stored.as_deref(), &new),
        Outcome::Delete { stored } => delete(tx, held, &pk, &sk, &stored),
        Outcome::Add { blank, adds } => add_stats(tx, held, &pk, &sk, blank, &adds),
        Outcome::Nothing => Ok(()),
    }
}

/// Whether no two steps name the same item: then none reads what another writes, and every
/// step can be decided before any is written.
fn distinct_items(steps: &[Step]) -> bool {
    steps.iter().enumerate().all(|(i, a)| {
        steps[..i]
            .iter()
            .all(|b| (a.pk.as_str(), a.sk.as_str()) != (b.pk.as_str(), b.sk.as_str()))
    })
}

impl ItemStore for SqliteStore {
    async fn item<T: DeserializeOwned + Send + 'static>(
        &self,
        pk: &str,
        sk: &str,
        _read: Read,
    ) -> Result<Option<T>, StoreError> {
        // One file: every read sees every committed write, whatever was asked.
        // A point read by primary key takes microseconds from the page cache: it is done on the
        // request's thread when a connection is free at once, since handing it to the blocking
        // pool (a thread woken each way) cost more than the read. Otherwise it waits there.
        if let Some(c) = self.pool.try_get() {
            return Ok(get(&c, pk, sk)?);
        }
        let (pk, sk) = (pk.to_owned(), sk.to_owned());
        self.run(move |c| get(c, &pk, &sk)).await
    }

    /// The plan's steps in one immediate transaction, each condition checked against the item
    /// as the transaction sees it; a refusal leaves nothing of the plan written. Steps on
    /// distinct items (every plan the service builds) are all decided before any is written, with
    /// no savepoint; a plan that names an item twice runs step by step in a savepoint, so that a
    /// later step sees an earlier one's write.
    async fn apply(&self, plan: WritePlan) -> Result<Applied, StoreError> {
        let steps = plan.steps;
        if distinct_items(&steps) {
            return self
                .write_checked(
                    move |tx, _| {
                        let mut decided = Vec::with_capacity(steps.len());
                        for step in steps {
                            match decide(tx, step)? {
                                Ok(d) => decided.push(d),
                                Err(refused) => return Ok(Err(refused)),
                            }
                        }
                        Ok(Ok(decided))
                    },
                    |tx, held, decided| {
                        for d in decided {
                            write_decided(tx, Some(&mut *held), d)?;
                        }
                        Ok(Applied::Done)
                    },
                )
                .await;
        }
        self.write_unless(move |tx| {
            for step in steps {
                match decide(tx, step)? {
                    Ok(d) => write_decided(tx, None, d)?,
                    Err(refused) => return Ok(Err(refused)),
                }
            }
            Ok(Ok(Applied::Done))
        })
        .await
    }
}

impl KeyStore for SqliteStore {}

impl AgentStore for SqliteStore {}

impl LabelStore for SqliteStore {
    async fn labels(
        &self,
        project: &ProjectId,
        after: Option<&SessionId>,
        limit: usize,
    ) -> Result<Vec<Label>, StoreError> {
        let pk = project_pk(project);
        // Strictly after the previous page's last label: its key with the lowest suffix.
        let lo = after.map_or_else(|| LABEL_PREFIX.to_owned(), |s| format!("{}\0", label_sk(s)));
        self.run(move |c| {
            let rows: Vec<LabelItem> = range(c, &pk, &lo, &prefix_end(LABEL_PREFIX), false, limit)?;
            Ok(rows.into_iter().map(|i| i.value).collect())
        })
        .await
    }

    async fn labelled_projects(
        &self,
        after: Option<&ProjectId>,
        limit: usize,
    ) -> Result<Vec<ProjectId>, StoreError> {
        let lo = after.map_or_else(
            || LABELLED_PREFIX.to_owned(),
            |p| format!("{LABELLED_PREFIX}{p}\0"),
        );
        self.run(move |c| {
            let end = prefix_end(LABELLED_PREFIX);
            let rows: Vec<LabelledItem> = range(c, LABELLED_PK, &lo, &end, false, limit)?;
            Ok(rows.into_iter().map(|i| i.value.project_id).collect())
        })
        .await
    }
}

impl AccountStore for SqliteStore {}

impl ProjectStore for SqliteStore {
    async fn account_projects(&self, account: &AccountId) -> Result<Vec<Project>, StoreError> {
        let pk = account_pk(account);
        self.run(move |c| {
            let end = prefix_end(ACCOUNT_PROJECT_PREFIX);
            let items: Vec<ProjectItem> =
                range(c, &pk, ACCOUNT_PROJECT_PREFIX, &end, false, usize::MAX >> 1)?;
            Ok(items.into_iter().map(Project::from).collect())
        })
        .await
    }
}

/// Positions `first..end` a claim took in a counter.
type Block = (i64, i64);

impl SqliteStore {
    /// One try of [`UsageStore::count_request`]: positions held here, else a claim.
    async fn count_request_once(
        &self,
        pk: &str,
        second: i64,
        max_rps: u32,
        period: &Period,
        usage_key: &str,
        max_requests: i64,
    ) -> Result<Counted, StoreError> {
        let claims = &self.closing.claims;
        let (held, want) =
            match claims.take(pk, second, i64::from(max_rps), usage_key, max_requests) {
                Taken {
                    rate: Some(r),
                    quota: Some(q),
                    ..
                } => return Ok(allowed(r, q)),
                Taken { rate, want, .. } => (rate, want),
            };
        let rate_key = second_key(second, pk, &rate_sk(second));
        let usage_expires = period.end.unix_seconds() + COUNTER_GRACE_SECONDS;
        let (account, key, held_here) = (pk.to_owned(), usage_key.to_owned(), claims.clone());
        let (filed_for, filed_at, filed_in) = (pk.to_owned(), usage_key.to_owned(), claims.clone());
        // What the claim got is filed on the writer thread as its batch commits, before any
        // claim queued after it is answered: a request the file refuses because earlier claims
        // took the room finds their unused positions held here ([`UsageStore::count_request`]).
        let file = move |&(rate, quota): &(Option<Block>, Option<Block>)| {
            let claimed = rate.filter(|_| held.is_none());
            filed_in.file(&filed_for, second, claimed, &filed_at, quota);
        };
        let (rate, quota) = self
            .write_held_then(
                move |tx, rows| {
                    let rate = match held {
                        Some(p) => (p, p + 1),
                        None => {
                            let expires = second + RATE_WINDOW_TTL;
                            let back = held_here.surrender_rate(&account, second);
                            let max = i64::from(max_rps);
                            match claim(tx, &rate_key, max, want, expires, back)? {
                                Some(block) => block,
                                None => return Ok((None, None)),
                            }
                        }
                    };
                    if rows.counters_purge_due(second) {
                        purge_counters(tx, second)?;
                    }
                    let back = held_here.surrender_quota(&account, &key);
                    let quota = claim(tx, &key, max_requests, want, usage_expires, back)?;
                    Ok((Some(rate), quota))
                },
                file,
            )
            .await?;
        Ok(match (rate, quota) {
            (None, _) => Counted::RateLimited,
            (Some(_), None) => Counted::QuotaExceeded,
            (Some((r, _)), Some((q, _))) => allowed(r, q),
        })
    }
}

impl UsageStore for SqliteStore {
    /// Counts against the positions this process holds, claiming a block from the file when it
    /// holds none (see [`crate::claims`]): one write per claim, not per request.
    async fn count_request(
        &self,
        account: &AccountId,
        second: i64,
        max_rps: u32,
        period: &Period,
        max_requests: u64,
    ) -> Result<Counted, StoreError> {
        let pk = account_pk(account);
        let usage_key = format!("{pk}/{}", usage_sk(period.start));
        let claims = &self.closing.claims;
        let max_requests = i64::try_from(max_requests).unwrap_or(i64::MAX);
        // A request the file refuses may find positions held here that claims before its own
        // took (they are filed before it is answered): it tries once more and takes one, or
        // those positions would go unused while the second or the period had room. (Its second
        // try takes a position in the second again, as any request refused for the period has.)
        let once =
            || self.count_request_once(&pk, second, max_rps, period, &usage_key, max_requests);
        let mut counted = once().await?;
        if matches!(counted, Counted::RateLimited | Counted::QuotaExceeded)
            && claims.holds(&pk, second, &usage_key)
        {
            counted = once().await?;
        }
        if let Counted::Allowed { .. } = counted {
            claims.admitted(&pk, second);
        }
        Ok(counted)
    }

    async fn count_visit(&self, v: &VisitCount<'_>) -> Result<Counted, StoreError> {
        let (apk, ppk) = (account_pk(v.account), project_pk(v.project));
        let rate_key = second_key(v.second, &ppk, &visit_rate_sk(v.second));
        let source_key = second_key(v.second, &ppk, &visit_source_sk(&v.source, v.second));
        let usage_key = format!("{apk}/{}", usage_sk(v.period.start));
        let visits_key = format!("{apk}/{}", visits_sk(v.period.start));
        let usage_expires = v.period.end.unix_seconds() + COUNTER_GRACE_SECONDS;
        let max_requests = i64::try_from(v.max_requests).unwrap_or(i64::MAX);
        let (second, project_rps, source_rps) = (v.second, v.project_rps, v.source_rps);
        let claims = self.closing.claims.clone();
        // Every limit is read before anything is counted, in the batch's write transaction (no
        // other writer meanwhile): a refused visit counts nowhere, and no savepoint is needed.
        // The visit's own counters are the ones the writer holds ([`Held`]); the period's usage
        // is claimed in blocks and written as it is claimed, so it is read from the file.
        self.write_checked(
            move |tx, held| {
                if held.count(tx, &source_key)? >= i64::from(source_rps)
                    || held.count(tx, &rate_key)? >= i64::from(project_rps)
                {
                    return Ok(Err(Counted::RateLimited));
                }
                // Period positions this process holds unused are claimed, not spent.
                let developer = count_of(tx, &usage_key)? - claims.unused(&apk, &usage_key);
                if held.count(tx, &visits_key)? >= max_requests.saturating_sub(developer) {
                    return Ok(Err(Counted::QuotaExceeded));
                }
                Ok(Ok((source_key, rate_key, visits_key, developer)))
            },
            move |tx, held, (source_key, rate_key, visits_key, developer)| {
                if held.counters_purge_due(second) {
                    purge_counters(tx, second)?;
                }
                let expires = second + RATE_WINDOW_TTL;
                let in_second = held.add_one(tx, &source_key, expires)?;
                held.add_one(tx, &rate_key, expires)?;
                let visits = held.add_one(tx, &visits_key, usage_expires)?;
                Ok(Counted::Allowed {
                    in_second: u32::try_from(in_second).unwrap_or(u32::MAX),
                    in_period: u64::try_from(developer + visits).unwrap_or(0),
                })
            },
        )
        .await
    }

    async fn period_usage(&self, account: &AccountId, period: &Period) -> Result<u64, StoreError> {
        let pk = account_pk(account);
        let keys = [
            format!("{pk}/{}", usage_sk(period.start)),
            format!("{pk}/{}", visits_sk(period.start)),
        ];
        // Period positions this process holds unused are claimed, not spent.
        let unused = self.closing.claims.unused(&pk, &keys[0]);
        self.run(move |c| {
            let mut n = -unused;
            for key in &keys {
                n += count_of(c, key)?;
            }
            Ok(u64::try_from(n).unwrap_or(0))
        })
        .await
    }
}

impl VelocityStore for SqliteStore {
    /// Every item the visit names read and added to as the writer holds them ([`crate::held`]),
    /// in one write transaction: atomic as DynamoDB's `ADD` is. The rows it changed are written
    /// back when its batch commits.
    async fn count_velocity(
        &self,
        project: &ProjectId,
        work: &CounterWork,
    ) -> Result<(Vec<Counters>, Vec<Counters>), StoreError> {
        let pk = project_pk(project);
        let work = work.clone();
        self.write_held(move |tx, held| {
            let updates = work.updates.iter().map(|u| u.sk.as_str());
            held.read_velocity_ahead(
                tx,
                &pk,
                updates.chain(work.reads.iter().map(String::as_str)),
            )?;
            let mut updated = Vec::with_capacity(work.updates.len());
            for u in &work.updates {
                updated.push(held.add_velocity(tx, &pk, u, work.at)?);
            }
            let mut read = Vec::with_capacity(work.reads.len());
            for sk in &work.reads {
                read.push(held.velocity(tx, &pk, sk, work.at)?.unwrap_or_default());
            }
            if held.velocity_purge_due(work.at) {
                // Expired counters are cleared, as the table's TTL would, at most once a minute
                // (they read as absent meanwhile): once per new address was a statement a visit.
                tx.prepare_cached("DELETE FROM velocity WHERE expires < ?1")?
                    .execute([work.at])?;
            }
            Ok((updated, read))
        })
        .await
    }
}

/// Gives back the plan's idle positions ([`Closing::give_back`]) and checkpoints the WAL from a
/// thread of its own, so that no request's commit pays for copying the WAL into the database and
/// syncing it (SQLite's automatic checkpoint runs inside the commit that crosses its threshold,
/// and its syncs kept the writer waiting on the disk a seventh of the time). Runs until the store
/// is dropped.
fn checkpoint_in_background(
    pool: Pool<SqliteConnectionManager>,
    alive: std::sync::Weak<Closing>,
    wal: std::path::PathBuf,
) {
    let spawned = std::thread::Builder::new()
        .name("sqlite-checkpoint".into())
        .spawn(move || {
            let mut given_back = std::time::Instant::now();
            let mut last = None;
            loop {
                std::thread::sleep(CHECKPOINT_EVERY);
                let Some(store) = alive.upgrade() else { break };
                if given_back.elapsed() >= GIVE_BACK_EVERY {
                    store.give_back(KEEP_UNUSED, None);
                    given_back = std::time::Instant::now();
                }
                match checkpoint(&pool, &store.writer, RESTART_PAGES) {
                    Ok(state) => {
                        if last == Some(state) && state.idle() {
                            truncate_when_large(&pool, &wal);
                        }
                        last = Some(state);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "WAL checkpoint failed; the next one retries")
                    }
                }
            }
        });
    if let Err(e) = spawned {
        // The automatic checkpoint still bounds the WAL.
        tracing::warn!(error = %e, "no checkpoint thread");
    }
}

/// What a checkpoint pass found: the WAL's frames and how many of them are in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WalState {
    frames: i64,
    copied: i64,
}

impl WalState {
    /// Every frame copied; seen twice in a row, no write came in between.
    fn idle(self) -> bool {
        self.frames == self.copied
    }
}

/// Truncates the WAL file when it is larger than [`WAL_IDLE_BYTES`], once the store has had no
/// write for a tick: after a burst the file would otherwise keep its largest size for good. The
/// truncation waits at most [`TRUNCATE_WAIT`] for readers, so a busy moment only postpones it.
fn truncate_when_large(pool: &Pool<SqliteConnectionManager>, wal: &Path) {
    if std::fs::metadata(wal).map_or(0, |m| m.len()) <= WAL_IDLE_BYTES {
        return;
    }
    let truncated = pool.get().map_err(Db::from).and_then(|c| {
        c.busy_timeout(TRUNCATE_WAIT)?;
        let busy: rusqlite::Result<i64> =
            c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0));
        c.busy_timeout(BUSY_TIMEOUT)?;
        Ok(busy? == 0)
    });
    match truncated {
        Ok(true) => tracing::debug!("idle WAL truncated"),
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "idle WAL not truncated; a later tick retries"),
    }
}

/// Copies what the WAL holds into the database (PASSIVE: it never waits for, nor blocks, readers
/// and writers). A WAL only starts again from its beginning when a write transaction begins with
/// every frame copied, which a writer that never stops does not leave time for; so once the WAL
/// has grown past `restart_at` pages, the last pass runs with the writer paused between two
/// batches, and copies what the passes before it could not (a few batches' pages). The last
/// pass's state: every frame copied unless a reader still on an older snapshot kept it from them.
fn checkpoint(
    pool: &Pool<SqliteConnectionManager>,
    writer: &Writer,
    restart_at: i64,
) -> DbResult<WalState> {
    let c = pool.get()?;
    // The WAL's frames, and how many of them are in the database.
    let passive = || -> rusqlite::Result<WalState> {
        c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok(WalState {
                frames: r.get(1)?,
                copied: r.get(2)?,
            })
        })
    };
    let state = passive()?;
    if state.frames < restart_at {
        return Ok(state);
    }
    // Another pass while the writer goes on leaves less for the paused one.
    passive()?;
    let _paused = writer.pause();
    Ok(passive()?)
}

/// Claims up to `want` positions under `max` in the counter `key` (see [`claim_size`]), after
/// giving back the `back` positions this process held there unused: the block `first..end` it
/// took, or none when the counter is at `max`. (Were the batch's commit to fail, the positions
/// given back would stay counted: the usage would read high by them, never low.)
fn claim(
    tx: &Connection,
    key: &str,
    max: i64,
    want: i64,
    expires: i64,
    back: i64,
) -> Result<Option<(i64, i64)>, Db> {
    let count = (count_of(tx, key)? - back).max(0);
    let k = claim_size(max - count, want);
    let total = count + k;
    if k > 0 || back > 0 {
        tx.prepare_cached(
            "INSERT INTO counters (key, count, expires) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET count = ?2",
        )?
        .execute(params![key, total, expires])?;
    }
    Ok((k > 0).then_some((total - k + 1, total + 1)))
}

/// Where the counters of one second (a developer's requests, a project's visits, a source's)
/// begin in the `counters` table: after every period counter's key (`ACCOUNT#…`), since `~` sorts
/// after them.
const SECOND_KEYS: &str = "~";

/// The `counters` key of a counter of one `second`: the second first (fixed width), then its
/// item's key. A second's counters are then written side by side at the table's end, where each
/// visit from a new address inserted a row at a random place, and expired seconds are cleared
/// from the table's start by key ([`purge_counters`]).
fn second_key(second: i64, pk: &str, sk: &str) -> String {
    format!("{SECOND_KEYS}{second:015}/{pk}/{sk}")
}

/// Clears the counters that have expired at `now`, as the table's TTL would: the seconds whose
/// window has passed by key, the few others (the periods', and any kept under the keys used
/// before [`second_key`]) by their expiry. They are never read again once expired (their keys
/// name a second or a period that has passed), so this is housekeeping, done once a second at
/// most ([`Held::counters_purge_due`]).
fn purge_counters(tx: &Connection, now: i64) -> Result<(), Db> {
    let first_kept = format!("{SECOND_KEYS}{:015}", now - RATE_WINDOW_TTL);
    tx.prepare_cached("DELETE FROM counters WHERE key >= ?1 AND key < ?2")?
        .execute([SECOND_KEYS, &first_kept])?;
    tx.prepare_cached("DELETE FROM counters WHERE key < ?1 AND expires < ?2")?
        .execute(params![SECOND_KEYS, now])?;
    Ok(())
}

fn allowed(in_second: i64, in_period: i64) -> Counted {
    Counted::Allowed {
        in_second: u32::try_from(in_second).unwrap_or(u32::MAX),
        in_period: u64::try_from(in_period).unwrap_or(0),
    }
}

/// A counter's value; 0 when it was never counted.
fn count_of(c: &Connection, key: &str) -> Result<i64, Db> {
    Ok(
        c.prepare_cached("SELECT count FROM counters WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?
            .unwrap_or(0),
    )
}

impl ResultStore for SqliteStore {
    /// The summary this process's writer committed last, when it has it ([`Summaries`]): no
    /// read. Else read from the file.
    async fn prior_summary(
        &self,
        project: &ProjectId,
        session: &SessionId,
    ) -> Result<super::write::PriorSummary, StoreError> {
        let key = (project_pk(project), session_sk(session));
        if let Some(body) = self.closing.summaries.get(&key)
            && let Ok(summary) = serde_json::from_str::<SessionItem>(&body)
        {
            return Ok(super::write::PriorSummary::known(summary));
        }
        super::write::prior_summary(self, project, session).await
    }

    async fn results(
        &self,
        project: &ProjectId,
        session: &SessionId,
        limit: usize,
        after: Option<ResultPosition>,
    ) -> Result<ResultPage, StoreError> {
        let pk = project_pk(project);
        let lo = results_prefix(session);
        let hi = match after {
            Some(at) => result_sk(session, at),
            None => prefix_end(&lo),
        };
        self.run(move |c| {
            let rows = range(c, &pk, &lo, &hi, true, limit + 1)?;
            Ok(ResultPage::from_rows(rows, limit))
        })
        .await
    }
}

/// Whether `sk` is a session summary's key: its session's alone (`SESSION#<id>`; ids have no
/// `#`), where a result's goes on (`SESSION#<id>#RESULT#…`).
fn is_summary_sk(sk: &str) -> bool {
    sk.strip_prefix("SESSION#")
        .is_some_and(|id| !id.contains('#'))
}

/// What the sessions indexes need of a summary: its scores and where its entries go. Read
/// instead of the whole [`SessionItem`] (its last result and reasons) on every visit's write.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Indexed {
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
fn stored_summary(body: &str) -> Option<Indexed> {
    serde_json::from_str::<Indexed>(body)
        .ok()
        .filter(|s| s.entity == Entity::Session)
}

/// A summary's key in the sessions indexes ([`seen_key`]): as [`SessionItem`]'s, from the same
/// fields.
fn seen_of(s: &Indexed) -> String {
    s.seen
        .clone()
        .unwrap_or_else(|| seen_key(s.last_seen_at.unwrap_or(s.last.created_at), &s.session_id))
}

/// Keeps the sessions indexes up to date with a summary just written over `old` (the summary
/// stored before it: `None` when there was none, `Some(None)` when it could not be read).
fn index_session(tx: &Connection, old: Option<Option<Indexed>>, s: &Indexed) -> Result<(), Db> {
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
fn unindex_session(
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

impl InsightStore for SqliteStore {
    async fn sessions(
        &self,
        project: &ProjectId,
        query: &SessionQuery,
    ) -> Result<SessionPage, StoreError> {
        let pk = project_pk(project);
        // Every seen key starts with a year's digit, so "~" sorts after them all.
        let before = query.after.as_ref().map_or_else(
            || "~".to_owned(),
            |a| seen_key(a.last_seen_at, &a.session_id),
        );
        let min = |m: Option<Score>| m.map_or(-1.0, Score::get);
        let (bot, proxy, limit) = (
            min(query.min_score_bot),
            min(query.min_score_proxy_vpn),
            query.limit,
        );
        let agent = query.agent.map(|a| a.as_str());
        // One device's sessions are read from the devices index, under its own partition.
        let (sql, partition) = match &query.device {
            None => (
                "SELECT i.body FROM sessions_seen s JOIN items i ON i.pk = s.pk AND i.sk = s.sk \
                 WHERE s.pk = ?1 AND s.seen < ?2 AND s.score_bot >= ?3 AND s.score_proxy_vpn >= ?4 \
                 AND (?6 IS NULL OR json_extract(i.body, '$.agent') = ?6) \
                 ORDER BY s.seen DESC LIMIT ?5",
                pk,
            ),
            Some(d) => (
                "SELECT i.body FROM devices_seen d \
                 JOIN sessions_seen s ON s.pk = d.pk AND s.seen = d.seen \
                 JOIN items i ON i.pk = d.pk AND i.sk = d.sk \
                 WHERE d.dpk = ?1 AND d.seen < ?2 AND s.score_bot >= ?3 AND s.score_proxy_vpn >= ?4 \
                 AND (?6 IS NULL OR json_extract(i.body, '$.agent') = ?6) \
                 ORDER BY d.seen DESC LIMIT ?5",
                device_pk(project, d.as_str()),
            ),
        };
        self.run(move |c| {
            let mut stmt = c.prepare_cached(sql)?;
            let rows = stmt.query_map(
                params![partition, before, bot, proxy, limit as i64 + 1, agent],
                |r| r.get::<_, String>(0),
            )?;
            let mut items: Vec<SessionItem> = rows
                .map(|b| serde_json::from_str(&b?).map_err(corrupt))
                .collect::<Result<_, Db>>()?;
            let more = items.len() > limit;
            items.truncate(limit);
            let next = items.last().filter(|_| more).map(|s| SessionPosition {
                last_seen_at: s.last_seen(),
                session_id: s.session_id.clone(),
            });
            Ok(SessionPage {
                sessions: items.into_iter().map(SessionItem::summary).collect(),
                next,
            })
        })
        .await
    }

    async fn stats(
        &self,
        project: &ProjectId,
        range: &StatsRange,
    ) -> Result<Vec<Bucket>, StoreError> {
        let pk = project_pk(project);
        let g = range.granularity();
        let (lo, hi) = (
            stats_sk_bound(g, range.from()),
            stats_sk_bound(g, range.to()),
        );
        let range = *range;
        self.run(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT body FROM stats WHERE pk = ?1 AND sk > ?2 AND sk < ?3 ORDER BY sk",
            )?;
            let rows = stmt.query_map(params![pk, lo, hi], |r| r.get::<_, String>(0))?;
            let items: Vec<StatsItem> = rows
                .map(|b| serde_json::from_str(&b?).map_err(corrupt))
                .collect::<Result<_, Db>>()?;
            Ok(super::buckets(&range, &items))
        })
        .await
    }
}

impl IdempotencyStore for SqliteStore {}

impl WebhookStore for SqliteStore {
    async fn webhooks(&self, project: &ProjectId) -> Result<Vec<Webhook>, StoreError> {
        let pk = project_pk(project);
        self.run(move |c| Ok(sorted_webhooks(webhook_items(c, &pk)?)))
            .await
    }
}

impl AdminStore for SqliteStore {
    async fn is_empty(&self) -> Result<bool, StoreError> {
        self.run(|c| {
            let any: bool = c.query_row("SELECT EXISTS (SELECT 1 FROM items)", [], |r| r.get(0))?;
            Ok(!any)
        })
        .await
    }
}

impl DeliveryStore for SqliteStore {
    async fn active_webhooks(&self, project: &ProjectId) -> Result<Vec<Webhook>, StoreError> {
        let pk = project_pk(project);
        self.run(move |c| {
            let rows = webhook_items(c, &pk)?;
            Ok(sorted_webhooks(
                rows.into_iter().filter(|w| !w.disabled).collect(),
            ))
        })
        .await
    }

    async fn due_deliveries(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        let now = now.to_string();
        self.run(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT i.body FROM due d JOIN items i ON i.pk = d.pk AND i.sk = d.sk \
                 WHERE d.due_at <= ?1 ORDER BY d.due_at LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![now, limit as i64], |r| r.get::<_, String>(0))?;
            rows.map(|b| {
                serde_json::from_str::<DeliveryItem>(&b?)
                    .map(|i| i.delivery)
                    .map_err(corrupt)
            })
            .collect()
        })
        .await
    }

    async fn deliveries(
        &self,
        project: &ProjectId,
        webhook: &WebhookId,
        limit: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        let pk = project_pk(project);
        let lo = deliveries_prefix(webhook);
        self.run(move |c| {
            let rows: Vec<DeliveryItem> = range(c, &pk, &lo, &prefix_end(&lo), true, limit)?;
            Ok(rows.into_iter().map(|i| i.delivery).collect())
        })
        .await
    }

    async fn checkpoint(&self, name: &str) -> Result<Option<String>, StoreError> {
        let name = name.to_owned();
        self.run(move |c| {
            Ok(
                c.prepare_cached("SELECT value FROM checkpoints WHERE name = ?1")?
                    .query_row([name], |r| r.get(0))
                    .optional()?,
            )
        })
        .await
    }

    async fn set_checkpoint(&self, name: &str, value: &str) -> Result<(), StoreError> {
        let (name, value) = (name.to_owned(), value.to_owned());
        // Through the writer: a commit on another connection would drop what the writer holds.
        self.write(move |c| {
            c.prepare_cached("INSERT OR REPLACE INTO checkpoints (name, value) VALUES (?1, ?2)")?
                .execute(params![name, value])?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{CheckResult, NewResult, SessionChanged};

    fn visit(session: &str, pv: f64, at: &str) -> NewResult {
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

    /// The whole stream record a store wrote for a new item before records became compact.
    fn legacy_record(pk: &str, sk: &str, new: &impl serde::Serialize) -> String {
        let mut rec = EventRecord::default();
        rec.event_name = "INSERT".to_owned();
        rec.change.keys = serde_dynamo::to_item(serde_json::json!({ PK: pk, SK: sk })).unwrap();
        rec.change.new_image = serde_dynamo::to_item(new).unwrap();
        rec.change.stream_view_type = Some(StreamViewType::NewAndOldImages);
        rec.aws_region = "local".to_owned();
        serde_json::to_string(&rec).unwrap()
    }

    fn changed(e: &FeedEvent) -> &SessionChanged {
        match e {
            FeedEvent::SessionChanged(c) => c,
            other => panic!("not a session change: {other:?}"),
        }
    }

    /// The first column of every row `sql` selects, as text.
    fn texts(c: &Connection, sql: &str) -> Vec<String> {
        c.prepare(sql)
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// The sessions listed by the store, newest first.
    async fn listed(store: &SqliteStore) -> Vec<String> {
        let query = SessionQuery {
            limit: 100,
            after: None,
            min_score_bot: None,
            min_score_proxy_vpn: None,
            device: None,
            agent: None,
        };
        let page = store
            .sessions(&ProjectId::parse("p").unwrap(), &query)
            .await
            .unwrap();
        page.sessions
            .into_iter()
            .map(|s| s.session_id.to_string())
            .collect()
    }

    #[tokio::test]
    async fn a_file_indexed_by_session_is_moved_to_the_index_order_and_kept_exact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vigil.db");
        let store = SqliteStore::open(&path).unwrap();
        for (session, at) in [("a", "2026-11-21T10:00:01Z"), ("b", "2026-11-21T10:00:02Z")] {
            store.add_result(&visit(session, 0.2, at)).await.unwrap();
        }
        drop(store);
        // The layout an older build wrote: tables keyed by session, each with an index by when
        // it was last seen. Session a's entry is where a backfill put it, not where its summary
        // says; a device entry stands for the devices index.
        let file = Connection::open(&path).unwrap();
        file.execute_batch(
            "CREATE TABLE sessions (pk TEXT NOT NULL, sk TEXT NOT NULL, seen TEXT NOT NULL,
                 score_bot REAL NOT NULL, score_proxy_vpn REAL NOT NULL,
                 PRIMARY KEY (pk, sk)) WITHOUT ROWID;
             CREATE INDEX sessions_by_seen ON sessions (pk, seen);
             CREATE TABLE session_devices (pk TEXT NOT NULL, sk TEXT NOT NULL, dpk TEXT NOT NULL,
                 seen TEXT NOT NULL, PRIMARY KEY (pk, sk)) WITHOUT ROWID;
             CREATE INDEX session_devices_by_seen ON session_devices (dpk, seen);
             INSERT INTO sessions SELECT pk, sk, seen, score_bot, score_proxy_vpn FROM sessions_seen;
             UPDATE sessions SET seen = '2026-11-21T10:00:01Z#a' WHERE sk = 'SESSION#a';
             INSERT INTO session_devices VALUES ('PROJECT#p', 'SESSION#b', 'DEVICE#p#d', 'x#b');
             DROP TABLE sessions_seen;
             DROP TABLE devices_seen;",
        )
        .unwrap();
        drop(file);

        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(listed(&store).await, ["b", "a"]);
        let c = store.pool.get().unwrap();
        let tables = texts(
            &c,
            "SELECT name FROM sqlite_master WHERE name LIKE 'session%' AND name != 'sessions_seen'",
        );
        assert!(tables.is_empty(), "the old tables are gone: {tables:?}");
        let devices: i64 = c
            .query_row("SELECT count(*) FROM devices_seen", [], |r| r.get(0))
            .unwrap();
        assert_eq!(devices, 1, "the devices index moved with it");
        drop(c);
        // A visit moves a's entry, found by its session where its summary did not say.
        store
            .add_result(&visit("a", 0.3, "2026-11-21T10:00:03Z"))
            .await
            .unwrap();
        assert_eq!(listed(&store).await, ["a", "b"]);
        // Visits move entries without leaving any behind.
        for (i, session) in ["b", "a", "b"].iter().enumerate() {
            let at = format!("2026-11-21T10:00:1{i}Z");
            store.add_result(&visit(session, 0.3, &at)).await.unwrap();
        }
        assert_eq!(listed(&store).await, ["b", "a"]);
    }

    #[tokio::test]
    async fn visits_plan_on_the_summary_committed_last_and_a_stale_one_is_planned_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vigil.db");
        let store = SqliteStore::open(&path).unwrap();
        let (project, session) = (
            ProjectId::parse("p").unwrap(),
            SessionId::parse("s").unwrap(),
        );
        let key = (project_pk(&project), session_sk(&session));
        let summary = |store: &SqliteStore| {
            let c = store.pool.get().unwrap();
            get::<SessionItem>(&c, &key.0, &key.1).unwrap().unwrap()
        };
        store
            .add_result(&visit("s", 0.2, "2026-11-21T10:00:01Z"))
            .await
            .unwrap();
        let held = store
            .closing
            .summaries
            .get(&key)
            .expect("the summary committed");
        let held: SessionItem = serde_json::from_str(&held).unwrap();
        assert_eq!(held, summary(&store));

        // Another process writes the session: what this one holds is stale until its writer's
        // next batch, and a visit planned on it is refused once and planned again.
        let other = SqliteStore::open(&path).unwrap();
        other
            .add_result(&visit("s", 0.9, "2026-11-21T10:00:02Z"))
            .await
            .unwrap();
        let prior = store.prior_summary(&project, &session).await.unwrap();
        assert!(
            format!("{prior:?}").contains("seq: 1,"),
            "planned on the summary held, not read: {prior:?}"
        );
        store
            .write_result_after(&visit("s", 0.4, "2026-11-21T10:00:03Z"), None, prior)
            .await
            .unwrap();
        let now = summary(&store);
        assert_eq!(now.seq, 3, "every result counted once");
        assert_eq!(
            now.score_proxy_vpn.get(),
            0.9,
            "the other process's result is in it"
        );
        let held = store.closing.summaries.get(&key).unwrap();
        assert_eq!(serde_json::from_str::<SessionItem>(&held).unwrap(), now);
    }

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

    /// Requests at a second's limit while other claims of the process are on their way: the file
    /// counts those claims' positions before they are filed here, and a request refused then
    /// finds them filed and takes one, so the second admits exactly its limit (it admitted a few
    /// fewer now and then, and the positions were left unused).
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_burst_at_the_seconds_limit_admits_exactly_the_limit() {
        use crate::domain::plan::Period;
        let period = Period {
            start: "2026-11-01T00:00:00Z".parse().unwrap(),
            end: "2026-12-01T00:00:00Z".parse().unwrap(),
        };
        let account = AccountId::parse("acc_burst").unwrap();
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let store = std::sync::Arc::new(SqliteStore::open(dir.path().join("v.db")).unwrap());
            let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(16));
            let tasks: Vec<_> = (0..1_100)
                .map(|_| {
                    let (store, account, gate) = (store.clone(), account.clone(), gate.clone());
                    tokio::spawn(async move {
                        let _turn = gate.acquire().await.unwrap();
                        store
                            .count_request(&account, 1_795_000_000, 1_000, &period, 1_000_000)
                            .await
                            .unwrap()
                    })
                })
                .collect();
            let mut allowed = 0;
            for t in tasks {
                allowed += usize::from(matches!(t.await.unwrap(), Counted::Allowed { .. }));
            }
            assert_eq!(allowed, 1_000, "round {round}");
        }
    }

    #[test]
    fn expired_counters_are_cleared_by_their_second_or_their_expiry() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(SCHEMA).unwrap();
        let now = 1_800_000_000;
        let ttl = RATE_WINDOW_TTL;
        let rows = [
            // A second's counters: expired when their window ended before now.
            (second_key(now - ttl - 1, "PROJECT#p", "VSRC#a#1"), now - 1),
            (second_key(now - ttl, "PROJECT#p", "VRATE#1"), now),
            (second_key(now, "ACCOUNT#a", "RATE#1"), now + ttl),
            // The period's, and a second's kept under the key used before: by their expiry.
            ("ACCOUNT#a/USAGE#old".to_owned(), now - 1),
            ("ACCOUNT#a/USAGE#new".to_owned(), now + 100),
            ("PROJECT#p/VSRC#a#1".to_owned(), now - 1),
        ];
        for (key, expires) in &rows {
            c.execute(
                "INSERT INTO counters (key, count, expires) VALUES (?1, 1, ?2)",
                params![key, expires],
            )
            .unwrap();
        }
        purge_counters(&c, now).unwrap();
        let left = texts(&c, "SELECT key FROM counters ORDER BY key");
        // Seconds sort by time, after every period's key.
        assert_eq!(
            left,
            [rows[4].0.as_str(), &rows[1].0, &rows[2].0],
            "kept: the period in force and the seconds whose window has not ended"
        );
    }

    /// The WAL's frames, as a checkpoint counts them.
    fn wal_frames(store: &SqliteStore) -> i64 {
        let c = store.pool.get().unwrap();
        c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))
            .unwrap()
    }

    /// How many times the WAL has started again from its beginning: its header's checkpoint
    /// sequence number, which a write starting it again increments.
    fn wal_restarts(wal: &Path) -> u32 {
        let header = std::fs::read(wal).unwrap();
        u32::from_be_bytes(header[12..16].try_into().unwrap())
    }

    /// Issue 52: a burst left the WAL file at hundreds of MiB for good; an idle store brings it
    /// back down.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_idle_store_truncates_the_wal_a_burst_left_large() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("v.db")).unwrap();
        let wal = dir.path().join("v.db-wal");
        let value = "x".repeat(4_000);
        let writes: Vec<_> = (0..2_000)
            .map(|i| {
                let (store, value) = (store.clone(), value.clone());
                tokio::spawn(async move { store.set_checkpoint(&format!("k{i}"), &value).await })
            })
            .collect();
        for w in writes {
            w.await.unwrap().unwrap();
        }
        let grown = std::fs::metadata(&wal).unwrap().len();
        assert!(
            grown > WAL_IDLE_BYTES,
            "the burst grew the WAL to {grown} bytes"
        );
        let mut size = grown;
        for _ in 0..200 {
            size = std::fs::metadata(&wal).map_or(0, |m| m.len());
            if size <= WAL_IDLE_BYTES {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(size <= WAL_IDLE_BYTES, "still {size} bytes after 5 s idle");
        // Nothing was lost by it.
        assert_eq!(store.checkpoint("k1999").await.unwrap(), Some(value));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_checkpoint_under_writes_copies_everything_and_the_wal_starts_again() {
        const PASSES: usize = 50;
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("v.db")).unwrap();
        let wal = dir.path().join("v.db-wal");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Writes from many tasks at once, so that the writer is never idle.
        let writing: Vec<_> = (0..16)
            .map(|task| {
                let (store, stop) = (store.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut n = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        n += 1;
                        let name = format!("test{task}");
                        store.set_checkpoint(&name, &n.to_string()).await.unwrap();
                    }
                    n
                })
            })
            .collect();
        while wal_frames(&store) < 200 {
            tokio::task::yield_now().await;
        }
        // Under a writer that never stops, the WAL grows until the checkpoint pauses it.
        let restarts = wal_restarts(&wal);
        // A pass does not wait for readers: one finding a connection's read mark behind (a
        // reader, or a connection beginning a read at that moment) copies up to it, and a later
        // pass copies the rest, as the background checkpointer's next tick does.
        let mut complete = false;
        for _ in 0..PASSES {
            let (pool, writer) = (store.pool.clone(), store.closing.writer.clone());
            complete = tokio::task::spawn_blocking(move || checkpoint(&pool, &writer, 1))
                .await
                .unwrap()
                .unwrap()
                .idle();
            if complete {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(complete, "frames were left to copy after {PASSES} passes");
        // Everything copied, the next write starts the WAL again from its beginning (and counts
        // one more restart in its header), however many frames it has written since.
        let mut now = wal_restarts(&wal);
        for _ in 0..5_000 {
            if now > restarts {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
            now = wal_restarts(&wal);
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(
            now > restarts,
            "the WAL did not start again ({restarts} restarts)"
        );
        // Every write the pause held back was answered, and kept.
        for (task, writing) in writing.into_iter().enumerate() {
            let written = writing.await.unwrap();
            let last = store.checkpoint(&format!("test{task}")).await.unwrap();
            assert_eq!(last, Some(written.to_string()));
        }
    }

    #[tokio::test]
    async fn records_from_before_compact_ones_are_read_beside_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vigil.db");
        let store = SqliteStore::open(&path).unwrap();
        // A database that an older build wrote to: one summary's whole stream record.
        let old = SessionItem::next(None, &visit("old", 0.8, "2026-11-21T10:00:00Z"));
        let legacy = legacy_record("PROJECT#p", "SESSION#old", &old);
        let file = Connection::open(&path).unwrap();
        file.execute("INSERT INTO changes (record) VALUES (?1)", [legacy])
            .unwrap();
        // Then this build's writes: a result and its summary, then the summary again.
        store
            .add_result(&visit("new", 0.2, "2026-11-21T10:00:01Z"))
            .await
            .unwrap();
        store
            .add_result(&visit("new", 0.9, "2026-11-21T10:00:02Z"))
            .await
            .unwrap();

        let records = store.changes(0, 100).await.unwrap();
        let names: Vec<&str> = records.iter().map(|(_, r)| r.event_name.as_str()).collect();
        assert_eq!(names, ["INSERT", "INSERT", "INSERT", "INSERT", "MODIFY"]);
        for (seq, r) in &records {
            assert_eq!(r.event_id, seq.to_string());
        }
        let image = |i: &serde_dynamo::Item| -> serde_json::Value {
            serde_dynamo::from_item(i.clone()).unwrap()
        };
        assert_eq!(image(&records[0].1.change.new_image)["scoreProxyVpn"], 0.8);
        let modify = &records[4].1.change;
        assert_eq!(image(&modify.old_image)["scoreProxyVpn"], 0.2);
        assert_eq!(image(&modify.new_image)["scoreProxyVpn"], 0.9);
        assert_eq!(
            image(&modify.keys),
            serde_json::json!({"pk": "PROJECT#p", "sk": "SESSION#new"})
        );

        // The follower's reading: the summaries' changes, old and new kinds alike.
        let events = store.feed(0, 100).await.unwrap();
        let seqs: Vec<i64> = events.iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, records.iter().map(|(s, _)| *s).collect::<Vec<_>>());
        assert_eq!(changed(&events[0].1).session.as_str(), "old");
        assert_eq!(events[1].1, FeedEvent::Other);
        let first = changed(&events[2].1);
        assert_eq!((first.session.as_str(), first.before), ("new", None));
        let second = changed(&events[4].1);
        assert_eq!(second.before.map(|b| b.score_proxy_vpn.get()), Some(0.2));
        assert_eq!(second.after.score_proxy_vpn.get(), 0.9);
        // What the follower read from the compact records is what the stream records say.
        for (i, (_, rec)) in records.iter().enumerate() {
            assert_eq!(events[i].1, feed_event(rec), "record {i}");
        }

        // A record nothing can read is unreadable to the follower, and an error to a reader that
        // asks for stream records.
        file.execute(
            "INSERT INTO changes (record) VALUES (?1)",
            [r#"{"v":2,"at":"then"}"#],
        )
        .unwrap();
        let last = store.feed(records[4].0, 100).await.unwrap();
        assert!(matches!(&last[..], [(_, FeedEvent::Unreadable(_))]));
        assert!(store.changes(records[4].0, 100).await.is_err());
    }
}
