//! The embedded store: the same single-table item layout as DynamoDB, kept in one SQLite file.
//! This module holds the store's handle: opening the file, and the doors into the writer thread
//! that every write goes through.
//!
//! Every write runs in a `BEGIN IMMEDIATE` transaction, which serialises writers across threads and
//! processes (the server and `vigil results add` may run side by side), and appends to `changes`, in
//! the same transaction, one record per item written, with its bodies before and after
//! (`changes.rs`). That feed plays the role of DynamoDB Streams locally (`feed.rs`).

use std::path::Path;
use std::sync::Arc;

use r2d2::{Pool, PooledConnection};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::Connection;
use vigil_core::store::{OpFailed, StoreError};

use crate::error::{DbResult, backend, failed};
use crate::held::{Held, SUMMARIES, Summaries};
use crate::schema::{BUSY_TIMEOUT, configure, create_schema};
use crate::shared::Shared;
use crate::wal::{checkpoint_in_background, wal_path};
use crate::writer::{Done, Job, Writer, checked, in_savepoint};

#[derive(Clone)]
pub struct SqliteStore {
    pub(crate) pool: Pool<SqliteConnectionManager>,
    /// Held by every clone; the checkpointer stops when the last one is dropped, and the period
    /// positions still held go back to the file ([`Shared`]'s drop).
    pub(crate) shared: Arc<Shared>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Ok(Self::open_db(path.as_ref())?)
    }

    fn open_db(path: &Path) -> DbResult<Self> {
        let manager = SqliteConnectionManager::file(path).with_init(configure);
        let writer =
            r2d2::ManageConnection::connect(&manager).map_err(|e| backend("sqlite open", e))?;
        let pool = Pool::builder()
            .max_size(8)
            .connection_timeout(BUSY_TIMEOUT)
            .build(manager)?;
        let mut conn = pool.get()?;
        create_schema(&mut conn)?;
        let summaries = Arc::new(Summaries::new(SUMMARIES));
        let writer = Writer::start(writer, Held::new(summaries.clone()))
            .map_err(|e| backend("sqlite writer thread", e))?;
        let shared = Arc::new(Shared {
            claims: Arc::default(),
            writer,
            summaries,
        });
        let wal = wal_path(path);
        checkpoint_in_background(pool.clone(), Arc::downgrade(&shared), wal);
        Ok(Self { pool, shared })
    }

    /// Runs blocking database work off the async executor.
    pub(crate) async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
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
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> DbResult<T> + Send + 'static,
    {
        self.write_held(move |tx, _| f(tx)).await
    }

    /// [`Self::write`] with the rows the writer holds ([`crate::held`]).
    pub(crate) async fn write_held<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Held) -> DbResult<T> + Send + 'static,
    {
        self.write_held_then(f, |_| ()).await
    }

    /// [`Self::write_held`], running `committed` on the writer thread once the write has
    /// committed, before any write queued after it is answered ([`Self::queue_then`]).
    pub(crate) async fn write_held_then<T, F, A>(&self, f: F, committed: A) -> Result<T, StoreError>
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
    pub(crate) async fn write_unless<T, F>(&self, f: F) -> Result<T, StoreError>
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
    pub(crate) async fn write_checked<P, T, C, W>(&self, check: C, then: W) -> Result<T, StoreError>
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
    pub(crate) async fn queue<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Held) -> (bool, DbResult<Result<T, T>>) + Send + 'static,
    {
        self.queue_then(f, |_| ()).await
    }

    /// [`Self::queue`], running `committed` on the writer thread once the write's batch has
    /// committed (not when it refused or failed), before any later write of the queue is answered.
    pub(crate) async fn queue_then<T, F, A>(&self, f: F, committed: A) -> Result<T, StoreError>
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
        self.shared.writer.send(job).map_err(|_| gone())?;
        Ok(answer.await.map_err(|_| gone())??)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use vigil_core::domain::ProjectId;
    use vigil_core::domain::insight::SessionQuery;
    use vigil_core::store::{DeliveryStore, InsightStore, ResultStore};

    use crate::testing::{texts, visit};
    use crate::wal::{WAL_IDLE_BYTES, checkpoint};

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
            let (pool, writer) = (store.pool.clone(), store.shared.writer.clone());
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
}
