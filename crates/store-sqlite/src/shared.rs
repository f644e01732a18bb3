//! What every clone of a store shares: the claimed plan positions, the writer's queue and the
//! summaries it committed last. The last clone to go gives the positions it holds back to the
//! file.

use std::sync::Arc;
use std::time::Duration;

use rusqlite::params;

use crate::claims::Claims;
use crate::error::{Db, DbResult, failed};
use crate::held::Summaries;
use crate::schema::BUSY_TIMEOUT;
use crate::writer::{Done, Job, Writer, in_savepoint};

/// Shared by every clone of a store (see the module's summary).
pub(crate) struct Shared {
    /// The plan's positions this process claimed and has not used (`claims.rs`).
    pub(crate) claims: Arc<Claims>,
    /// The one queue every write goes through, to one connection, in batches (group commit;
    /// see `writer.rs`): no two connections race for the file's write lock.
    pub(crate) writer: Writer,
    /// The session summaries the writer committed last, to plan visits on ([`Summaries`]).
    pub(crate) summaries: Arc<Summaries>,
}

impl Shared {
    /// Gives back the period positions held longer than `keep`; `wait` waits (at most that long)
    /// for the write to commit.
    pub(crate) fn give_back(&self, keep: Duration, wait: Option<Duration>) {
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

impl Drop for Shared {
    /// The last clone gives back every period position it holds, and waits for the write: a
    /// process that reads the file next finds the usage exact.
    fn drop(&mut self) {
        self.give_back(Duration::ZERO, Some(BUSY_TIMEOUT));
    }
}
