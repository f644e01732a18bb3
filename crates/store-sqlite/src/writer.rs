//! Group commit: a store's writes go through one thread and one connection, and the writes that
//! queue while a transaction runs share the next one, each in a savepoint of its own.
//!
//! Why: every authenticated request counts its plan in a write transaction, and every visit adds
//! its velocity counters and its event in two more. Writers serialise on the file whatever we do;
//! what a transaction costs beyond its statements (taking the lock, writing each touched page to
//! the WAL once, committing) is then paid once per batch instead of once per write, and pooled
//! connections no longer race for the lock and sleep in SQLite's busy handler.
//!
//! What stays as it was: a write sees everything written before it (earlier writes of its batch
//! included, on the same connection), so the counters' guarded upserts stay exact; a write that
//! refuses or fails rolls back to its savepoint and leaves the others' writes alone; nothing is
//! answered before its batch has committed, and a failed commit fails every write in the batch.
//! Another process on the same file still meets SQLite's lock and waits for it.
//!
//! The thread also keeps the rows every visit reads and adds to ([`Held`]): each batch checks
//! them against the file as it begins, and writes what it changed of them just before it commits.
//!
//! A write that decides before it writes ([`checked`]) needs no savepoint: its check only reads,
//! and what it writes after cannot be refused. SQLite copies every page a savepoint's statements
//! touch into the savepoint's journal; such a write skips that. Should it fail half-way (an I/O error, a full disk), nothing can undo its
//! writes alone: the batch is rolled back and every write in it fails.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, mpsc};

use rusqlite::Connection;

use crate::held::Held;

/// The most writes one transaction carries: a bound on how long the first of them waits for the
/// last.
const MAX_BATCH: usize = 64;

/// What a queued write is told once its batch's fate is known: `None` when it committed, or why
/// it did not.
pub type Done = Box<dyn FnOnce(Option<&rusqlite::Error>) + Send>;

/// One queued write. It runs against the batch's open transaction and the rows the writer holds
/// (or is told why the transaction could not begin) and returns whether the transaction is still
/// sound, and what to answer.
pub type Job =
    Box<dyn FnOnce(Result<(&Connection, &mut Held), &rusqlite::Error>) -> (bool, Done) + Send>;

/// The queue into a store's writer thread; the thread ends when the last sender is dropped.
#[derive(Clone)]
pub struct Writer {
    jobs: mpsc::Sender<Job>,
    gate: Arc<Gate>,
}

impl Writer {
    /// Starts the thread that writes through `conn`, holding what it holds in `held`.
    pub fn start(conn: Connection, held: Held) -> std::io::Result<Self> {
        let (send, receive) = mpsc::channel::<Job>();
        let gate = Arc::new(Gate::default());
        let at_gate = gate.clone();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || serve(conn, held, receive, &at_gate))?;
        Ok(Self { jobs: send, gate })
    }

    /// Queues `job`; gives it back if the writer thread is gone.
    pub fn send(&self, job: Job) -> Result<(), Job> {
        self.jobs.send(job).map_err(|e| e.0)
    }

    /// Waits for the batch being written, if any, and keeps the writer from beginning another
    /// until the returned guard is dropped.
    pub fn pause(&self) -> Paused<'_> {
        let mut state = self.gate.lock();
        state.paused = true;
        drop(self.gate.wait_while(state, |s| s.writing));
        Paused(&self.gate)
    }
}

/// Where the writer thread and a thread that pauses it ([`Writer::pause`]) meet: the WAL
/// checkpoint's last step, which can only finish while nothing is appended to the WAL.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    /// A batch is between its `BEGIN` and its `COMMIT` (or `ROLLBACK`).
    writing: bool,
    /// Someone holds the writer between batches.
    paused: bool,
}

impl Gate {
    /// The state, whether or not a thread panicked holding it: both flags are set and cleared
    /// whole, so what a panic leaves is still true.
    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The writer, before a batch: waits while paused. The batch is over when the returned
    /// guard is dropped, by the writer once its batch has committed or rolled back, or by its
    /// unwinding should it panic (a pause then waits for nothing).
    fn enter(&self) -> Writing<'_> {
        self.wait_while(self.lock(), |s| s.paused).writing = true;
        Writing(self)
    }

    /// Waits on `state` for as long as `busy` says.
    fn wait_while<'a>(
        &self,
        state: MutexGuard<'a, GateState>,
        busy: impl FnMut(&mut GateState) -> bool,
    ) -> MutexGuard<'a, GateState> {
        self.changed
            .wait_while(state, busy)
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A batch being written ([`Gate::enter`]).
struct Writing<'a>(&'a Gate);

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.lock().writing = false;
        self.0.changed.notify_all();
    }
}

/// The writer held between batches; it goes on when this is dropped (or its holder panics).
pub struct Paused<'a>(&'a Gate);

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        self.0.lock().paused = false;
        self.0.changed.notify_all();
    }
}

fn serve(conn: Connection, mut held: Held, jobs: mpsc::Receiver<Job>, gate: &Gate) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let writing = gate.enter();
        let (answers, outcome) = write_batch(&conn, &mut held, batch);
        drop(writing);
        for done in answers {
            done(outcome.as_ref().err());
        }
    }
}

/// Runs `batch` in one transaction and returns what to tell each write, and whether the batch
/// committed.
fn write_batch(
    conn: &Connection,
    held: &mut Held,
    batch: Vec<Job>,
) -> (Vec<Done>, rusqlite::Result<()>) {
    let mut answers = Vec::with_capacity(batch.len());
    if let Err(e) = run(conn, "BEGIN IMMEDIATE") {
        for job in batch {
            answers.push(job(Err(&e)).1);
        }
        return (answers, Err(e));
    }
    if let Err(e) = held.begin(conn) {
        // Nothing held can be trusted: this batch reads from the file.
        tracing::warn!(error = %e, "data_version unread; held rows dropped");
        held.drop_all();
    }
    let mut sound = true;
    for job in batch {
        let (ok, done) = job(Ok((conn, &mut *held)));
        sound &= ok;
        answers.push(done);
    }
    // What the batch changed of the held rows commits with it, or not at all.
    let written = if sound {
        held.write_back(conn).map_err(|e| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
                Some(format!("held rows not written back: {e}")),
            )
        })
    } else {
        Ok(())
    };
    let outcome = if let Err(e) = written {
        Err(e)
    } else if sound {
        run(conn, "COMMIT")
    } else {
        Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
            Some("a write left its savepoint unresolved; the batch was rolled back".into()),
        ))
    };
    if outcome.is_err() {
        // Still in the transaction after a failed COMMIT (or an unsound write): undo it all,
        // and what is held with it.
        let _ = run(conn, "ROLLBACK");
        held.drop_all();
    } else {
        held.committed();
    }
    (answers, outcome)
}

/// Runs one of the writer's own statements, prepared once per connection (they run several times
/// per write).
fn run(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// Runs `f` in a savepoint of the open transaction: kept when it returns `Ok(Ok(_))`, rolled back
/// when it refuses (`Ok(Err(_))`), fails or panics. The flag is false when the savepoint itself
/// could not be resolved, and the batch must not commit.
pub fn in_savepoint<T, E, F>(conn: &Connection, f: F) -> (bool, Result<Result<T, T>, E>)
where
    F: FnOnce(&Connection) -> Result<Result<T, T>, E>,
    E: From<rusqlite::Error> + From<String>,
{
    if let Err(e) = run(conn, "SAVEPOINT job") {
        return (true, Err(e.into()));
    }
    let out = catch_unwind(AssertUnwindSafe(|| f(conn)))
        .unwrap_or_else(|_| Err(E::from("a write panicked".to_owned())));
    let resolved = match out {
        Ok(Ok(_)) => run(conn, "RELEASE job"),
        _ => run(conn, "ROLLBACK TO job").and_then(|()| run(conn, "RELEASE job")),
    };
    match resolved {
        Ok(()) => (true, out),
        Err(e) => (false, Err(e.into())),
    }
}

/// Runs a write that decides before it writes, with no savepoint: `check` only reads, and
/// refuses (`Err`) or hands what it read to `then`, which writes and cannot refuse. Both are
/// given `state` (the rows the writer holds), which `check` may read but not change. The flag is
/// false when `then` failed or panicked, having perhaps written part of its work: the batch must
/// not commit.
pub fn checked<S, P, T, E, C, W>(
    conn: &Connection,
    state: &mut S,
    check: C,
    then: W,
) -> (bool, Result<Result<T, T>, E>)
where
    C: FnOnce(&Connection, &mut S) -> Result<Result<P, T>, E>,
    W: FnOnce(&Connection, &mut S, P) -> Result<T, E>,
    E: From<String>,
{
    let mut writing = false;
    let out = catch_unwind(AssertUnwindSafe(|| match check(conn, &mut *state)? {
        Err(refused) => Ok(Err(refused)),
        Ok(read) => {
            writing = true;
            then(conn, state, read).map(Ok)
        }
    }))
    .unwrap_or_else(|_| Err(E::from("a write panicked".to_owned())));
    (!(writing && out.is_err()), out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Failed(String);
    impl From<rusqlite::Error> for Failed {
        fn from(e: rusqlite::Error) -> Self {
            Failed(e.to_string())
        }
    }
    impl From<String> for Failed {
        fn from(e: String) -> Self {
            Failed(e)
        }
    }

    fn conn() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER NOT NULL)")
            .unwrap();
        c
    }

    fn count(c: &Connection) -> i64 {
        c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    fn put(c: &Connection, k: &str) -> Result<(), Failed> {
        c.execute("INSERT INTO t VALUES (?1, 1)", [k])?;
        Ok(())
    }

    fn insert(c: &Connection, k: &str) -> Result<Result<(), ()>, Failed> {
        put(c, k).map(Ok)
    }

    #[test]
    fn a_refusal_a_failure_and_a_panic_roll_back_only_themselves() {
        let c = conn();
        c.execute_batch("BEGIN IMMEDIATE").unwrap();
        assert!(matches!(
            in_savepoint(&c, |c| insert(c, "a")),
            (true, Ok(Ok(())))
        ));
        let refused = in_savepoint(&c, |c| {
            put(c, "b")?;
            Ok::<_, Failed>(Err(()))
        });
        assert!(matches!(refused, (true, Ok(Err(())))));
        // The primary key refuses a second "a": an error, and "c" before it is undone.
        let failed = in_savepoint(&c, |c| {
            put(c, "c")?;
            insert(c, "a")
        });
        assert!(matches!(failed, (true, Err(_))));
        let panicked = in_savepoint(&c, |c| -> Result<Result<(), ()>, Failed> {
            put(c, "d")?;
            panic!("a bug in a write")
        });
        assert!(matches!(panicked, (true, Err(Failed(m))) if m.contains("panicked")));
        c.execute_batch("COMMIT").unwrap();
        let keys: Vec<String> = c
            .prepare("SELECT k FROM t")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(keys, ["a"]);
    }

    #[test]
    fn a_checked_write_refuses_before_writing_and_a_failed_one_spoils_the_batch() {
        let c = conn();
        c.execute_batch("BEGIN IMMEDIATE").unwrap();
        let absent = |c: &Connection, k: &str| -> Result<Result<(), ()>, Failed> {
            let n: i64 = c.query_row("SELECT count(*) FROM t WHERE k = ?1", [k], |r| r.get(0))?;
            Ok(if n == 0 { Ok(()) } else { Err(()) })
        };
        let first = checked(&c, &mut (), |c, _| absent(c, "a"), |c, _, ()| put(c, "a"));
        assert!(matches!(first, (true, Ok(Ok(())))));
        // Refused by its check: nothing written, the batch sound.
        let again = checked(&c, &mut (), |c, _| absent(c, "a"), |c, _, ()| put(c, "a"));
        assert!(matches!(again, (true, Ok(Err(())))));
        // A check that fails or panics wrote nothing either.
        let failed_check = checked(
            &c,
            &mut (),
            |_, _| -> Result<Result<(), ()>, Failed> { Err(Failed("no read".into())) },
            |c, _, ()| put(c, "x"),
        );
        assert!(matches!(failed_check, (true, Err(_))));
        let panicked_check = checked(
            &c,
            &mut (),
            |_, _| -> Result<Result<(), ()>, Failed> { panic!("a bug in a check") },
            |c, _, ()| put(c, "x"),
        );
        assert!(matches!(panicked_check, (true, Err(Failed(m))) if m.contains("panicked")));
        // A write that fails after writing part of its work leaves the batch unsound.
        let half = checked(
            &c,
            &mut (),
            |c, _| absent(c, "b"),
            |c, _, ()| {
                put(c, "b")?;
                put(c, "a")
            },
        );
        assert!(matches!(half, (false, Err(_))));
        c.execute_batch("ROLLBACK").unwrap();
        assert_eq!(count(&c), 0);
    }

    /// A job that says when it runs, then waits for `go` before its batch commits.
    fn held_job(ran: mpsc::Sender<()>, go: mpsc::Receiver<()>) -> Job {
        Box::new(move |c| {
            let _ = ran.send(());
            let _ = go.recv();
            let sound = c.is_ok();
            (sound, Box::new(|_: Option<&rusqlite::Error>| {}))
        })
    }

    #[test]
    fn a_pause_waits_for_the_batch_and_holds_the_next() {
        let writer = Writer::start(conn(), Held::default()).unwrap();
        let (ran, started) = mpsc::channel();
        let (go, wait) = mpsc::channel();
        assert!(writer.send(held_job(ran.clone(), wait)).is_ok());
        started.recv().unwrap();
        // The first batch is being written: the pause waits for it.
        let (paused_tx, paused) = mpsc::channel();
        let pausing = {
            let writer = writer.clone();
            std::thread::spawn(move || {
                let guard = writer.pause();
                paused_tx.send(()).unwrap();
                // Held until the test says so.
                std::thread::park();
                drop(guard);
            })
        };
        assert!(paused.try_recv().is_err());
        go.send(()).unwrap();
        paused.recv().unwrap();
        // Paused: a queued write does not begin.
        let (go2, wait2) = mpsc::channel();
        assert!(writer.send(held_job(ran, wait2)).is_ok());
        assert!(
            started
                .recv_timeout(std::time::Duration::from_millis(100))
                .is_err()
        );
        pausing.thread().unpark();
        pausing.join().unwrap();
        started.recv().unwrap();
        go2.send(()).unwrap();
    }

    #[test]
    fn queued_writes_are_answered_after_their_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let c = Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER NOT NULL)")
            .unwrap();
        let writer = Writer::start(c, Held::default()).unwrap();
        let (tx, rx) = mpsc::channel();
        for i in 0..200 {
            let tx = tx.clone();
            let job: Job = Box::new(move |c| {
                let (sound, out) = match c {
                    Ok((c, _)) => in_savepoint(c, |c| insert(c, &format!("k{i}"))),
                    Err(e) => (true, Err(Failed(e.to_string()))),
                };
                (
                    sound,
                    Box::new(move |failed: Option<&rusqlite::Error>| {
                        let _ = tx.send(failed.is_none() && out.is_ok());
                    }),
                )
            });
            assert!(writer.send(job).is_ok());
        }
        drop(tx);
        let answers: Vec<bool> = rx.iter().collect();
        assert_eq!(answers.len(), 200);
        assert!(answers.iter().all(|&ok| ok));
        // Answered only after the commit: another connection sees every row.
        assert_eq!(count(&Connection::open(&path).unwrap()), 200);
    }
}
