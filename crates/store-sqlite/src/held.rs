//! Rows the writer thread holds between its batches: the velocity counters, the statistics
//! items and a visit's plan counters. Every visit reads twelve velocity items and adds to six,
//! adds to two statistics items (its hour's and its day's), and reads and adds to three plan
//! counters (its address's and its project's second, its account's visits in the period); most of
//! them (a project's, a device's, the hour before's) are the same rows visit after visit. Held
//! here, a visit reads them from memory instead of reading, parsing and writing each back in
//! SQLite, and each row a batch changed is written once, just before the batch commits, in its
//! transaction.
//!
//! Why the counts stay exact:
//! - Only this store's writer connection changes these tables in this process, and it holds
//!   SQLite's write lock for the whole batch. At the start of each batch the connection's
//!   `data_version` says whether any other connection (another `vigil` process on the file, a
//!   `vigil results add`) has committed since: if so, everything held is dropped and read again.
//! - What a batch changed is written back before its `COMMIT`, in the same transaction: it commits
//!   with the batch or not at all. A batch that does not commit drops everything held.
//! - A write that may be rolled back to a savepoint must not change what is held: such writes
//!   ask for what is held to be written back and dropped first ([`Held::write_back_and_drop`]),
//!   and then change the rows in SQLite only.
//! - Of the `counters` table, only a visit's own counters are held. The claimed ones (a second's
//!   requests, the period's usage) are written by their claims and read from the file; a purge
//!   of expired counters may remove a held one, which its next write makes again.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};
use vigil_core::domain::velocity::{CounterUpdate, Counters};
use vigil_core::store::plan::Attributes;

use crate::error::{Db, corrupt};

/// Clean rows kept per table: far more than a site's busy keys (its project shards, its devices'
/// and addresses' current items), bounded so that a flood of one-visit addresses cannot grow it.
const VELOCITY_ROWS: usize = 16_384;
const STATS_ROWS: usize = 1_024;
const COUNTER_ROWS: usize = 4_096;
/// Expired velocity rows read as absent; clearing them is housekeeping, done at most this often.
const VELOCITY_PURGE_EVERY: i64 = 60;
/// Expired plan counters are never read again; they are cleared at most this often, so that the
/// table stays about as small as the counters in force.
const COUNTERS_PURGE_EVERY: i64 = 1;

type Key = (String, String);

/// A velocity row: its counters and when it may be removed. `None` where no row exists.
#[derive(Clone)]
struct VelocityRow {
    counters: Counters,
    expires: i64,
    /// The expiry the file's row has (none: no row): a write that leaves it as it is touches
    /// only the row, not the expiry index (a visit's items keep the expiry they were made with).
    stored: Option<i64>,
}

/// A visit's own plan counter (its address's and its project's second, its account's visits in
/// the period): its count, its expiry, and whether the file has a row for it.
#[derive(Clone, Copy)]
struct CounterRow {
    count: i64,
    expires: i64,
    stored: bool,
}

/// The session summaries this process's writer committed last (by item key, their bodies as
/// stored), shared with the request threads: a visit plans its write on its session's summary
/// from here instead of reading it from SQLite, whose page cache every commit empties. Only a
/// plan reads it: the write checks the summary in its transaction, and a stale one (another
/// process wrote the session) costs a refused attempt and a re-plan, never a wrong write.
pub type Summaries = quick_cache::sync::Cache<Key, std::sync::Arc<str>>;

/// Summaries kept in [`Summaries`]: a busy site's sessions of the last minutes.
pub const SUMMARIES: usize = 16_384;

/// What the writer keeps between batches. See the module's summary.
pub struct Held {
    /// The connection's `data_version` when what is held was last known to be the file's.
    version: Option<i64>,
    velocity: Rows<Option<VelocityRow>>,
    stats: Rows<Option<Attributes>>,
    /// Keyed by the counter's key alone (the second part is empty).
    counters: Rows<Option<CounterRow>>,
    /// When expired velocity rows are next cleared (Unix seconds).
    velocity_purge: i64,
    /// When expired plan counters are next cleared (Unix seconds).
    counters_purge: i64,
    /// The summaries the request threads plan on, and what this batch wrote of them (`None`:
    /// removed), made known once it has committed.
    summaries: std::sync::Arc<Summaries>,
    written: Vec<(Key, Option<std::sync::Arc<str>>)>,
}

/// One table's held rows: clean (as the file has them) and changed in this batch.
struct Rows<V> {
    clean: quick_cache::unsync::Cache<Key, V>,
    changed: HashMap<Key, V>,
}

impl<V: Clone> Rows<V> {
    fn new(capacity: usize) -> Self {
        Self {
            clean: quick_cache::unsync::Cache::new(capacity),
            changed: HashMap::new(),
        }
    }

    /// The row at `key` for changing: this batch's copy, the clean one, or `read` from the file.
    fn take<E>(&mut self, key: &Key, read: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        if let Some(v) = self.changed.remove(key) {
            return Ok(v);
        }
        match self.clean.remove(key) {
            Some((_, v)) => Ok(v),
            None => read(),
        }
    }

    /// The row at `key` as it stands, read from the file once.
    fn get<E>(&mut self, key: &Key, read: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        if let Some(v) = self.changed.get(key) {
            return Ok(v.clone());
        }
        if let Some(v) = self.clean.get(key) {
            return Ok(v.clone());
        }
        let v = read()?;
        self.clean.insert(key.clone(), v.clone());
        Ok(v)
    }

    fn clear(&mut self) {
        self.clean.clear();
        self.changed.clear();
    }
}

impl Default for Held {
    fn default() -> Self {
        Self::new(std::sync::Arc::new(Summaries::new(SUMMARIES)))
    }
}

impl Held {
    /// Nothing held yet; committed summaries go to `summaries`.
    pub fn new(summaries: std::sync::Arc<Summaries>) -> Self {
        Self {
            version: None,
            velocity: Rows::new(VELOCITY_ROWS),
            stats: Rows::new(STATS_ROWS),
            counters: Rows::new(COUNTER_ROWS),
            velocity_purge: 0,
            counters_purge: 0,
            summaries,
            written: Vec::new(),
        }
    }

    /// A session summary written (`None`: removed) in this batch's transaction; the request
    /// threads see it once the batch has committed ([`Held::committed`]).
    pub fn summary_written(&mut self, pk: &str, sk: &str, body: Option<&str>) {
        let key = (pk.to_owned(), sk.to_owned());
        self.written.push((key, body.map(std::sync::Arc::from)));
    }

    /// After the batch's `COMMIT`: the summaries it wrote are the ones to plan on.
    pub fn committed(&mut self) {
        for (key, body) in self.written.drain(..) {
            match body {
                Some(body) => self.summaries.insert(key, body),
                None => {
                    self.summaries.remove(&key);
                }
            }
        }
    }
    /// At the start of a batch, with the write lock held: drops what is held if another
    /// connection has committed since it was read.
    pub fn begin(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let version: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        if self.version != Some(version) {
            self.drop_all();
            self.version = Some(version);
        }
        Ok(())
    }

    /// Drops everything held: the next batch reads from the file.
    pub fn drop_all(&mut self) {
        self.version = None;
        self.velocity.clear();
        self.stats.clear();
        self.counters.clear();
        // Another connection's commit, or a write that bypasses what is held, may have changed
        // any summary: plans read them from SQLite again.
        self.written.clear();
        self.summaries.clear();
    }

    /// Writes the rows this batch changed, in its transaction, before it commits; they are then
    /// clean. An error leaves the batch to be rolled back (and what is held to be dropped).
    pub fn write_back(&mut self, conn: &Connection) -> Result<(), Db> {
        if !self.velocity.changed.is_empty() {
            for ((pk, sk), mut row) in self.velocity.changed.drain() {
                if let Some(r) = &mut row {
                    let body = crate::velocity_body::encode(&r.counters).map_err(corrupt)?;
                    if r.stored == Some(r.expires) {
                        conn.prepare_cached(
                            "UPDATE velocity SET body = ?3 WHERE pk = ?1 AND sk = ?2",
                        )?
                        .execute(params![pk, sk, body])?;
                    } else {
                        conn.prepare_cached(
                            "INSERT INTO velocity (pk, sk, body, expires) VALUES (?1, ?2, ?3, ?4)
                             ON CONFLICT (pk, sk) DO UPDATE SET body = ?3, expires = ?4",
                        )?
                        .execute(params![pk, sk, body, r.expires])?;
                    }
                    r.stored = Some(r.expires);
                }
                self.velocity.clean.insert((pk, sk), row);
            }
        }
        if !self.counters.changed.is_empty() {
            for ((key, none), mut row) in self.counters.changed.drain() {
                if let Some(r) = &mut row {
                    write_counter(conn, &key, r)?;
                    r.stored = true;
                }
                self.counters.clean.insert((key, none), row);
            }
        }
        if !self.stats.changed.is_empty() {
            for ((pk, sk), item) in self.stats.changed.drain() {
                if let Some(i) = &item {
                    write_stats(conn, &pk, &sk, i)?;
                }
                self.stats.clean.insert((pk, sk), item);
            }
        }
        Ok(())
    }

    /// Before a write that may be rolled back to a savepoint: what this batch changed is written,
    /// and nothing is held, so that the write changes SQLite's rows only.
    pub fn write_back_and_drop(&mut self, conn: &Connection) -> Result<(), Db> {
        let written = self.write_back(conn);
        let version = self.version;
        self.drop_all();
        // Nothing else has committed: the next batch need not look.
        self.version = version;
        written
    }

    /// The velocity item at (`pk`, `sk`) unless it expired before `now`.
    pub fn velocity(
        &mut self,
        conn: &Connection,
        pk: &str,
        sk: &str,
        now: i64,
    ) -> Result<Option<Counters>, Db> {
        let key = (pk.to_owned(), sk.to_owned());
        let row = self.velocity.get(&key, || read_velocity(conn, pk, sk))?;
        Ok(row.filter(|r| r.expires >= now).map(|r| r.counters))
    }

    /// Reads from the file the velocity items of project `pk` among `sks` that are not held, ahead
    /// of [`Held::add_velocity`] and [`Held::velocity`], and holds them (or their absence). A
    /// visit adds to and reads each subject's hour and day items, this one's and the one before
    /// (`VEL#<subject>#<H|D>#<start>`), which sit side by side in the table: they are read as one
    /// range of keys per subject, one descent of the table instead of one per item. (Should the
    /// keys change shape, the ranges only grow less useful: an item is taken from its range by
    /// its key.)
    pub fn read_velocity_ahead<'a>(
        &mut self,
        conn: &Connection,
        pk: &str,
        sks: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), Db> {
        let mut subjects: Vec<(&str, Vec<&str>)> = Vec::new();
        for sk in sks {
            let key = (pk.to_owned(), sk.to_owned());
            if self.velocity.changed.contains_key(&key) || self.velocity.clean.contains_key(&key) {
                continue;
            }
            let subject = sk.rsplitn(3, '#').nth(2).unwrap_or(sk);
            match subjects.iter_mut().find(|(s, _)| *s == subject) {
                Some((_, wanted)) => wanted.push(sk),
                None => subjects.push((subject, vec![sk])),
            }
        }
        for (_, mut wanted) in subjects {
            wanted.sort_unstable();
            wanted.dedup();
            let (Some(&first), Some(&last)) = (wanted.first(), wanted.last()) else {
                continue;
            };
            let mut found: Vec<Option<VelocityRow>> = vec![None; wanted.len()];
            let mut stmt = conn.prepare_cached(
                "SELECT sk, body, expires FROM velocity WHERE pk = ?1 AND sk >= ?2 AND sk <= ?3",
            )?;
            let mut rows = stmt.query(params![pk, first, last])?;
            while let Some(row) = rows.next()? {
                let sk = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
                let Ok(i) = wanted.binary_search(&sk) else {
                    continue;
                };
                let body = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
                found[i] = Some(stored_velocity(body, row.get(2)?)?);
            }
            for (sk, row) in wanted.into_iter().zip(found) {
                self.velocity
                    .clean
                    .insert((pk.to_owned(), sk.to_owned()), row);
            }
        }
        Ok(())
    }

    /// Adds `u` to the velocity item at (`pk`, `u.sk`) (a new one if it is absent or expired
    /// before `now`) and returns it as it now stands.
    pub fn add_velocity(
        &mut self,
        conn: &Connection,
        pk: &str,
        u: &CounterUpdate,
        now: i64,
    ) -> Result<Counters, Db> {
        let key = (pk.to_owned(), u.sk.clone());
        let row = self
            .velocity
            .take(&key, || read_velocity(conn, pk, &u.sk))?;
        let mut row = match row {
            Some(r) if r.expires >= now => r,
            // An expired row is replaced, as the table's TTL would have removed it; the
            // upsert keeps the later expiry of the two.
            Some(r) => VelocityRow {
                counters: Counters::default(),
                ..r
            },
            None => VelocityRow {
                counters: Counters::default(),
                expires: u.expires,
                stored: None,
            },
        };
        row.counters.apply(u);
        row.expires = row.expires.max(u.expires);
        let out = row.counters.clone();
        self.velocity.changed.insert(key, Some(row));
        Ok(out)
    }

    /// Whether expired velocity rows are to be cleared now: at most once every
    /// [`VELOCITY_PURGE_EVERY`] seconds.
    pub fn velocity_purge_due(&mut self, now: i64) -> bool {
        due(&mut self.velocity_purge, now, VELOCITY_PURGE_EVERY)
    }

    /// Whether expired plan counters are to be cleared now: at most once every
    /// [`COUNTERS_PURGE_EVERY`] seconds.
    pub fn counters_purge_due(&mut self, now: i64) -> bool {
        due(&mut self.counters_purge, now, COUNTERS_PURGE_EVERY)
    }

    /// The plan counter `key`'s count; 0 when it was never counted.
    pub fn count(&mut self, conn: &Connection, key: &str) -> Result<i64, Db> {
        let key = (key.to_owned(), String::new());
        let row = self.counters.get(&key, || read_counter(conn, &key.0))?;
        Ok(row.map_or(0, |r| r.count))
    }

    /// Adds one to the plan counter `key` (made with `expires` when absent) and returns its count.
    pub fn add_one(&mut self, conn: &Connection, key: &str, expires: i64) -> Result<i64, Db> {
        let key = (key.to_owned(), String::new());
        let row = self.counters.take(&key, || read_counter(conn, &key.0))?;
        let mut row = row.unwrap_or(CounterRow {
            count: 0,
            expires,
            stored: false,
        });
        row.count += 1;
        let count = row.count;
        self.counters.changed.insert(key, Some(row));
        Ok(count)
    }

    /// Adds numbers to the statistics item at (`pk`, `sk`), created as `blank` when absent.
    pub fn add_stats(
        &mut self,
        conn: &Connection,
        pk: &str,
        sk: &str,
        blank: Attributes,
        adds: &[(String, u64)],
    ) -> Result<(), Db> {
        let key = (pk.to_owned(), sk.to_owned());
        let item = self.stats.take(&key, || read_stats(conn, pk, sk))?;
        let mut item = item.unwrap_or(blank);
        add_numbers(&mut item, adds);
        self.stats.changed.insert(key, Some(item));
        Ok(())
    }
}

/// Whether a task due at `next` is due at `now`; if so, it is next due `every` seconds on.
fn due(next: &mut i64, now: i64, every: i64) -> bool {
    let due = now >= *next;
    if due {
        *next = now + every;
    }
    due
}

/// Adds `adds` to the numbers of `item` (absent ones count from zero).
pub fn add_numbers(item: &mut Attributes, adds: &[(String, u64)]) {
    for (attr, n) in adds {
        let was = item
            .get(attr)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        item.insert(attr.clone(), (was + n).into());
    }
}

fn read_velocity(conn: &Connection, pk: &str, sk: &str) -> Result<Option<VelocityRow>, Db> {
    let row: Option<(String, i64)> = conn
        .prepare_cached("SELECT body, expires FROM velocity WHERE pk = ?1 AND sk = ?2")?
        .query_row(params![pk, sk], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    row.map(|(body, expires)| stored_velocity(&body, expires))
        .transpose()
}

/// A velocity row as the file has it.
fn stored_velocity(body: &str, expires: i64) -> Result<VelocityRow, Db> {
    Ok(VelocityRow {
        counters: crate::velocity_body::decode(body).map_err(corrupt)?,
        expires,
        stored: Some(expires),
    })
}

fn read_counter(conn: &Connection, key: &str) -> Result<Option<CounterRow>, Db> {
    Ok(conn
        .prepare_cached("SELECT count, expires FROM counters WHERE key = ?1")?
        .query_row([key], |r| {
            Ok(CounterRow {
                count: r.get(0)?,
                expires: r.get(1)?,
                stored: true,
            })
        })
        .optional()?)
}

/// Writes a plan counter's count. A row the file has keeps its expiry as it was made; one it
/// lacks (a new counter, or one a purge of expired counters removed meanwhile) is made.
fn write_counter(conn: &Connection, key: &str, row: &CounterRow) -> Result<(), Db> {
    if row.stored {
        let updated = conn
            .prepare_cached("UPDATE counters SET count = ?2 WHERE key = ?1")?
            .execute(params![key, row.count])?;
        if updated == 1 {
            return Ok(());
        }
    }
    conn.prepare_cached(
        "INSERT INTO counters (key, count, expires) VALUES (?1, ?2, ?3)
         ON CONFLICT (key) DO UPDATE SET count = ?2",
    )?
    .execute(params![key, row.count, row.expires])?;
    Ok(())
}

/// Writes the statistics item at (`pk`, `sk`) over what SQLite holds.
pub fn write_stats(conn: &Connection, pk: &str, sk: &str, item: &Attributes) -> Result<(), Db> {
    let body = serde_json::to_string(item).map_err(corrupt)?;
    conn.prepare_cached("INSERT OR REPLACE INTO stats (pk, sk, body) VALUES (?1, ?2, ?3)")?
        .execute(params![pk, sk, body])?;
    Ok(())
}

/// The statistics item at (`pk`, `sk`), as SQLite holds it.
pub fn read_stats(conn: &Connection, pk: &str, sk: &str) -> Result<Option<Attributes>, Db> {
    let body: Option<String> = conn
        .prepare_cached("SELECT body FROM stats WHERE pk = ?1 AND sk = ?2")?
        .query_row(params![pk, sk], |row| row.get(0))
        .optional()?;
    body.map(|b| serde_json::from_str(&b).map_err(corrupt))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database file with the store's tables, and a connection to it.
    fn file() -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("held.db");
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.execute_batch(crate::schema::SCHEMA).unwrap();
        (dir, path, c)
    }

    fn visit(sk: &str, expires: i64) -> CounterUpdate {
        CounterUpdate {
            sk: sk.to_owned(),
            expires,
            adds: vec![("eh".to_owned(), 1)],
            buckets: vec![("sh".to_owned(), 7)],
            members: vec![("ch".to_owned(), "France".to_owned())],
        }
    }

    /// Runs `f` as one batch: begin, `f`, write back, commit.
    fn batch<T>(c: &Connection, held: &mut Held, f: impl FnOnce(&mut Held) -> T) -> T {
        c.execute_batch("BEGIN IMMEDIATE").unwrap();
        held.begin(c).unwrap();
        let out = f(held);
        held.write_back(c).unwrap();
        c.execute_batch("COMMIT").unwrap();
        out
    }

    fn stored(c: &Connection, sk: &str) -> Option<(u64, i64)> {
        c.query_row(
            "SELECT body, expires FROM velocity WHERE pk = 'P' AND sk = ?1",
            [sk],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)),
        )
        .optional()
        .unwrap()
        .map(|(body, expires)| {
            let counters = crate::velocity_body::decode(&body).unwrap();
            (counters.numbers["eh"], expires)
        })
    }

    #[test]
    fn a_batchs_additions_are_written_once_when_it_commits() {
        let (_dir, _path, c) = file();
        let mut held = Held::default();
        let counts = batch(&c, &mut held, |h| {
            (0..3)
                .map(|_| h.add_velocity(&c, "P", &visit("A", 100), 10).unwrap())
                .map(|v| v.numbers["eh"])
                .collect::<Vec<_>>()
        });
        assert_eq!(counts, [1, 2, 3]);
        assert_eq!(stored(&c, "A"), Some((3, 100)));
        // Read back from what is held, and added to again.
        let next = batch(&c, &mut held, |h| {
            h.add_velocity(&c, "P", &visit("A", 100), 11).unwrap()
        });
        assert_eq!(next.numbers["eh"], 4);
        assert_eq!(stored(&c, "A"), Some((4, 100)));
    }

    fn counter(c: &Connection, key: &str) -> Option<(i64, i64)> {
        c.query_row(
            "SELECT count, expires FROM counters WHERE key = ?1",
            [key],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .unwrap()
    }

    #[test]
    fn plan_counters_count_in_memory_and_are_written_with_their_batch() {
        let (_dir, path, c) = file();
        let mut held = Held::default();
        let counts = batch(&c, &mut held, |h| {
            assert_eq!(h.count(&c, "K").unwrap(), 0);
            (0..3)
                .map(|_| h.add_one(&c, "K", 50).unwrap())
                .collect::<Vec<_>>()
        });
        assert_eq!(counts, [1, 2, 3]);
        assert_eq!(counter(&c, "K"), Some((3, 50)));
        // Another process counts too: its count is read before the next batch.
        let other = Connection::open(&path).unwrap();
        other
            .execute("UPDATE counters SET count = count + 10 WHERE key = 'K'", [])
            .unwrap();
        let next = batch(&c, &mut held, |h| {
            assert_eq!(h.count(&c, "K").unwrap(), 13);
            h.add_one(&c, "K", 99).unwrap()
        });
        assert_eq!(next, 14);
        // The expiry stays the one the counter was made with.
        assert_eq!(counter(&other, "K"), Some((14, 50)));
        // A purge of expired counters removed it meanwhile (in this connection, which the
        // held rows do not see): it is made again, not lost.
        batch(&c, &mut held, |_| {
            c.execute("DELETE FROM counters WHERE expires < 60", [])
                .unwrap();
        });
        batch(&c, &mut held, |h| h.add_one(&c, "K", 50).unwrap());
        assert_eq!(counter(&c, "K"), Some((15, 50)));
    }

    #[test]
    fn a_subjects_items_are_read_ahead_in_one_range_and_held_found_or_absent() {
        let (_dir, _path, c) = file();
        let mut held = Held::default();
        let (hour, day, before) = ("VEL#a#x#H#7200", "VEL#a#x#D#0", "VEL#a#x#H#3600");
        batch(&c, &mut held, |h| {
            h.add_velocity(&c, "P", &visit(hour, 100), 10).unwrap();
            h.add_velocity(&c, "P", &visit(day, 100), 10).unwrap();
            // Another subject's item inside the range's bounds is not taken for one of these.
            h.add_velocity(&c, "P", &visit("VEL#a#x#E#1", 100), 10)
                .unwrap();
        });
        let mut cold = Held::default();
        let (now, gone) = batch(&c, &mut cold, |h| {
            h.read_velocity_ahead(&c, "P", [hour, day, before, hour])
                .unwrap();
            // Everything asked for is held now: the file is no longer read for them.
            c.execute("DELETE FROM velocity", []).unwrap();
            c.execute(
                "INSERT INTO velocity (pk, sk, body, expires) VALUES ('P', ?1, '', 100)",
                [before],
            )
            .unwrap();
            let now = [hour, day].map(|sk| h.velocity(&c, "P", sk, 11).unwrap());
            (now, h.velocity(&c, "P", before, 11).unwrap())
        });
        assert_eq!(now.map(|v| v.map(|v| v.numbers["eh"])), [Some(1), Some(1)]);
        assert_eq!(gone, None, "held as absent, as the file had it when read");
    }

    #[test]
    fn expired_velocity_rows_are_cleared_once_a_minute_at_most() {
        let mut held = Held::default();
        assert!(held.velocity_purge_due(1_000));
        assert!(!held.velocity_purge_due(1_000));
        assert!(!held.velocity_purge_due(1_059));
        assert!(held.velocity_purge_due(1_060));
    }

    #[test]
    fn another_connections_commit_is_read_before_the_next_batch() {
        let (_dir, path, c) = file();
        let mut held = Held::default();
        batch(&c, &mut held, |h| {
            h.add_velocity(&c, "P", &visit("A", 100), 10).unwrap()
        });
        // Another process adds to the same row.
        let other = Connection::open(&path).unwrap();
        let body = crate::velocity_body::encode(&{
            let mut v = Counters::default();
            v.apply(&visit("A", 100));
            v.apply(&visit("A", 100));
            v.apply(&visit("A", 100));
            v
        })
        .unwrap();
        other
            .execute("UPDATE velocity SET body = ?1 WHERE sk = 'A'", [body])
            .unwrap();
        let next = batch(&c, &mut held, |h| {
            h.add_velocity(&c, "P", &visit("A", 100), 11).unwrap()
        });
        assert_eq!(next.numbers["eh"], 4, "the other process's three counted");
        assert_eq!(stored(&c, "A"), Some((4, 100)));
    }

    #[test]
    fn a_batch_that_does_not_commit_leaves_nothing_held() {
        let (_dir, _path, c) = file();
        let mut held = Held::default();
        batch(&c, &mut held, |h| {
            h.add_velocity(&c, "P", &visit("A", 100), 10).unwrap()
        });
        c.execute_batch("BEGIN IMMEDIATE").unwrap();
        held.begin(&c).unwrap();
        held.add_velocity(&c, "P", &visit("A", 100), 11).unwrap();
        held.add_stats(&c, "P", "S", Attributes::new(), &[("visits".to_owned(), 1)])
            .unwrap();
        held.write_back(&c).unwrap();
        c.execute_batch("ROLLBACK").unwrap();
        held.drop_all();
        let next = batch(&c, &mut held, |h| {
            h.velocity(&c, "P", "A", 12).unwrap().unwrap()
        });
        assert_eq!(
            next.numbers["eh"], 1,
            "the rolled-back visit is not counted"
        );
        assert_eq!(read_stats(&c, "P", "S").unwrap(), None);
    }

    #[test]
    fn expired_rows_read_as_absent_and_are_replaced() {
        let (_dir, _path, c) = file();
        let mut held = Held::default();
        batch(&c, &mut held, |h| {
            h.add_velocity(&c, "P", &visit("A", 100), 10).unwrap()
        });
        let (gone, fresh) = batch(&c, &mut held, |h| {
            let gone = h.velocity(&c, "P", "A", 101).unwrap();
            (
                gone,
                h.add_velocity(&c, "P", &visit("A", 300), 101).unwrap(),
            )
        });
        assert_eq!(gone, None);
        assert_eq!(fresh.numbers["eh"], 1);
        assert_eq!(stored(&c, "A"), Some((1, 300)));
        // A fresh connection (nothing held) reads the same.
        let mut cold = Held::default();
        let read = batch(&c, &mut cold, |h| h.velocity(&c, "P", "A", 102).unwrap());
        assert_eq!(read.map(|v| v.numbers["eh"]), Some(1));
    }

    #[test]
    fn statistics_add_up_across_batches_and_savepoint_writes() {
        let (_dir, _path, c) = file();
        let mut held = Held::default();
        let one = [("visits".to_owned(), 1)];
        batch(&c, &mut held, |h| {
            h.add_stats(&c, "P", "S", Attributes::new(), &one).unwrap();
            h.add_stats(&c, "P", "S", Attributes::new(), &one).unwrap();
        });
        // A write that may be rolled back: held rows written and dropped, the row changed alone.
        c.execute_batch("BEGIN IMMEDIATE").unwrap();
        held.begin(&c).unwrap();
        held.add_stats(&c, "P", "S", Attributes::new(), &one)
            .unwrap();
        held.write_back_and_drop(&c).unwrap();
        c.execute(
            "UPDATE stats SET body = json_set(body, '$.visits', 10) WHERE sk = 'S'",
            [],
        )
        .unwrap();
        held.add_stats(&c, "P", "S", Attributes::new(), &one)
            .unwrap();
        held.write_back(&c).unwrap();
        c.execute_batch("COMMIT").unwrap();
        let item = read_stats(&c, "P", "S").unwrap().unwrap();
        assert_eq!(item["visits"], 11);
    }
}
