//! The WAL's upkeep, on a thread of the store's own: checkpoints off the request path, a last pass
//! with the writer paused so that the WAL starts again from its beginning, and the file truncated
//! once the store is idle. The same thread gives back the plan's idle positions.

use std::path::{Path, PathBuf};
use std::sync::Weak;
use std::time::{Duration, Instant};

use r2d2::Pool;
use r2d2_sqlite::SqliteConnectionManager;

use crate::claims::KEEP_UNUSED;
use crate::error::{Db, DbResult};
use crate::schema::BUSY_TIMEOUT;
use crate::shared::Shared;
use crate::writer::Writer;

/// How often the WAL is checkpointed off the request path: often enough that what is left to
/// copy when the writer is paused ([`checkpoint`]) is little.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);
/// How often the plan's idle positions are given back.
const GIVE_BACK_EVERY: Duration = Duration::from_millis(500);
/// The WAL size (pages, 128 MiB) from which the checkpointer pauses the writer to finish, so that
/// the WAL starts again from its beginning.
const RESTART_PAGES: i64 = 32_768;
/// The WAL file size above which an idle store truncates it. A WAL starting again from its
/// beginning keeps its file at the largest size it reached until it is truncated; a few MiB is
/// what a quiet store's writes fill between ticks.
pub(crate) const WAL_IDLE_BYTES: u64 = 4 << 20;
/// How long the idle truncation waits for a reader or a writer before leaving it to a later tick.
const TRUNCATE_WAIT: Duration = Duration::from_millis(100);

/// The WAL file of the database at `path`.
pub(crate) fn wal_path(path: &Path) -> PathBuf {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    wal.into()
}

/// Gives back the plan's idle positions ([`Shared::give_back`]) and checkpoints the WAL from a
/// thread of its own, so that no request's commit pays for copying the WAL into the database and
/// syncing it (SQLite's automatic checkpoint runs inside the commit that crosses its threshold).
/// Runs until the store is dropped: it holds the shared state weakly, so that the last clone's
/// drop still ends the writer.
pub(crate) fn checkpoint_in_background(
    pool: Pool<SqliteConnectionManager>,
    alive: Weak<Shared>,
    wal: PathBuf,
) {
    let spawned = std::thread::Builder::new()
        .name("sqlite-checkpoint".into())
        .spawn(move || {
            let mut given_back = Instant::now();
            let mut last = None;
            loop {
                std::thread::sleep(CHECKPOINT_EVERY);
                let Some(store) = alive.upgrade() else { break };
                if given_back.elapsed() >= GIVE_BACK_EVERY {
                    store.give_back(KEEP_UNUSED, None);
                    given_back = Instant::now();
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
pub(crate) struct WalState {
    frames: i64,
    copied: i64,
}

impl WalState {
    /// Every frame copied; seen twice in a row, no write came in between.
    pub(crate) fn idle(self) -> bool {
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
pub(crate) fn checkpoint(
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
