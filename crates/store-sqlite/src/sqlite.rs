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
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::items::*;
use super::{
    AccountStore, AdminStore, COUNTER_GRACE_SECONDS, Cause, DeliveryStore, IdempotencyStore,
    InsightStore, KeyStore, OpFailed, ProjectInsert, ProjectStore, RATE_WINDOW_TTL, ResultPage,
    ResultStore, StoreError, UsageStore, WebhookInsert, WebhookStore,
};
use crate::domain::idempotency::{Created, IdempotencyKey, Once, Used, Written};
use crate::domain::insight::{
    Bucket, Granularity, SessionPage, SessionPosition, SessionQuery, StatsRange, Tally,
};
use crate::domain::plan::{Counted, Period, VisitCount};
use crate::domain::webhook::MAX_WEBHOOKS_PER_PROJECT;
use crate::domain::{
    Account, AccountId, Delivery, Event, NewResult, Project, ProjectId, ResultPosition, Score,
    SessionId, SessionScore, Timestamp, Webhook, WebhookId,
};

const SCHEMA: &str = "
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
-- items: one is written per request, and they feed nothing.
CREATE TABLE IF NOT EXISTS counters (
    key     TEXT PRIMARY KEY,
    count   INTEGER NOT NULL,
    expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS counters_by_expiry ON counters (expires);
-- The sessions index (DynamoDB's sparse `sessions` GSI): each session summary by when it was last
-- seen, with the scores the list filters on.
CREATE TABLE IF NOT EXISTS sessions (
    pk              TEXT NOT NULL,
    sk              TEXT NOT NULL,
    seen            TEXT NOT NULL,
    score_bot       REAL NOT NULL,
    score_proxy_vpn REAL NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_by_seen ON sessions (pk, seen);
-- Statistics items (the table's STATS# items). Not in `items`: one is written with every event,
-- and they feed nothing.
CREATE TABLE IF NOT EXISTS stats (
    pk   TEXT NOT NULL,
    sk   TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
-- Where each change-feed consumer has got to. Not items: writing them feeds nothing.
CREATE TABLE IF NOT EXISTS checkpoints (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

const BACKFILL_SESSIONS: &str = "
INSERT OR IGNORE INTO sessions (pk, sk, seen, score_bot, score_proxy_vpn)
SELECT pk, sk,
       COALESCE(json_extract(body, '$.seen'),
                json_extract(body, '$.last.createdAt') || '#' || json_extract(body, '$.sessionId')),
       json_extract(body, '$.scoreBot'), json_extract(body, '$.scoreProxyVpn')
FROM items WHERE json_extract(body, '$.entity') = 'session';
";

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub struct SqliteStore {
    pool: Pool<SqliteConnectionManager>,
}

/// A failure inside this adapter: SQLite's and the pool's errors and the store's own, so that `?`
/// works on all three; it leaves the adapter as the [`StoreError`] it carries.
#[derive(Debug)]
pub struct Db(StoreError);

type DbResult<T> = Result<T, Db>;

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

fn corrupt(e: impl Into<Cause>) -> Db {
    Db(StoreError::Corrupt(e.into()))
}

impl SqliteStore {
    /// Opens (creating if needed) the database file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Ok(Self::open_db(path.as_ref())?)
    }

    fn open_db(path: &Path) -> DbResult<Self> {
        let manager = SqliteConnectionManager::file(path).with_init(|c| {
            c.busy_timeout(BUSY_TIMEOUT)?;
            c.pragma_update(None, "journal_mode", "WAL")?;
            c.pragma_update(None, "synchronous", "NORMAL")?;
            Ok(())
        });
        let pool = Pool::builder()
            .max_size(8)
            .connection_timeout(BUSY_TIMEOUT)
            .build(manager)?;
        let conn = pool.get()?;
        let had_sessions: bool = conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'sessions'",
            [],
            |r| r.get(0),
        )?;
        conn.execute_batch(SCHEMA)?;
        if !had_sessions {
            // A database from before the sessions index: index the summaries it already has.
            conn.execute_batch(BACKFILL_SESSIONS)?;
        }
        Ok(Self { pool })
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

    /// Runs `f` in an immediate (write-locking) transaction and commits it.
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> DbResult<T> + Send + 'static,
    {
        self.write_unless(move |tx| f(tx).map(Ok)).await
    }

    /// Like [`Self::write`], but `f` may refuse: a refusal rolls back everything it wrote.
    async fn write_unless<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> DbResult<Result<T, T>> + Send + 'static,
    {
        self.run(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            match f(&tx)? {
                Ok(out) => {
                    tx.commit()?;
                    Ok(out)
                }
                // Dropping the transaction rolls it back.
                Err(refused) => Ok(refused),
            }
        })
        .await
    }

    /// Change-feed records after `after` (exclusive), oldest first, at most `limit`.
    pub async fn changes(
        &self,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, EventRecord)>, StoreError> {
        self.run(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT seq, record FROM changes WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![after, limit as i64], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (seq, text) = row?;
                let mut rec: EventRecord = serde_json::from_str(&text).map_err(corrupt)?;
                rec.event_id = seq.to_string();
                rec.change.sequence_number = Some(format!("{seq:021}"));
                out.push((seq, rec));
            }
            Ok(out)
        })
        .await
    }
}

fn get<T: DeserializeOwned>(c: &Connection, pk: &str, sk: &str) -> Result<Option<T>, Db> {
    let mut stmt = c.prepare_cached("SELECT body FROM items WHERE pk = ?1 AND sk = ?2")?;
    let body: Option<String> = stmt.query_row(params![pk, sk], |r| r.get(0)).optional()?;
    body.map(|b| serde_json::from_str(&b).map_err(corrupt))
        .transpose()
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

/// Appends one stream-shaped record to the change feed.
fn record_change(
    tx: &Transaction<'_>,
    pk: &str,
    sk: &str,
    old: Option<serde_dynamo::Item>,
    new: Option<serde_dynamo::Item>,
) -> Result<(), Db> {
    let mut change = StreamRecord::default();
    change.approximate_creation_date_time = chrono::Utc::now();
    change.keys = serde_dynamo::to_item(serde_json::json!({ PK: pk, SK: sk })).map_err(corrupt)?;
    change.stream_view_type = Some(StreamViewType::NewAndOldImages);
    let mut rec = EventRecord::default();
    rec.event_name = match (&old, &new) {
        (None, _) => "INSERT",
        (Some(_), Some(_)) => "MODIFY",
        (Some(_), None) => "REMOVE",
    }
    .to_owned();
    change.old_image = old.unwrap_or_default();
    change.new_image = new.unwrap_or_default();
    rec.change = change;
    rec.aws_region = "local".to_owned();
    rec.event_source = Some("vigil:sqlite".to_owned());
    rec.event_version = Some("1.1".to_owned());
    let text = serde_json::to_string(&rec).map_err(corrupt)?;
    tx.prepare_cached("INSERT INTO changes (record) VALUES (?1)")?
        .execute([text])?;
    Ok(())
}

fn image<T: Serialize>(item: &T) -> Result<serde_dynamo::Item, Db> {
    serde_dynamo::to_item(item).map_err(corrupt)
}

/// Writes `new` at (pk, sk), replacing `old` (which the caller read in this transaction).
fn put<T: Serialize>(
    tx: &Transaction<'_>,
    pk: &str,
    sk: &str,
    old: Option<&T>,
    new: &T,
) -> Result<(), Db> {
    let body = serde_json::to_string(new).map_err(corrupt)?;
    tx.prepare_cached("INSERT OR REPLACE INTO items (pk, sk, body) VALUES (?1, ?2, ?3)")?
        .execute(params![pk, sk, body])?;
    record_change(tx, pk, sk, old.map(image).transpose()?, Some(image(new)?))
}

/// Writes an item whose previous version, if any, is read here (for the old image).
fn upsert<T: Serialize + DeserializeOwned>(
    tx: &Transaction<'_>,
    pk: &str,
    sk: &str,
    new: &T,
) -> Result<(), Db> {
    let old: Option<T> = get(tx, pk, sk)?;
    put(tx, pk, sk, old.as_ref(), new)
}

fn delete<T: Serialize>(tx: &Transaction<'_>, pk: &str, sk: &str, old: &T) -> Result<(), Db> {
    tx.prepare_cached("DELETE FROM items WHERE pk = ?1 AND sk = ?2")?
        .execute(params![pk, sk])?;
    record_change(tx, pk, sk, Some(image(old)?), None)
}

impl KeyStore for SqliteStore {
    async fn key_account(&self, key_hash: &str) -> Result<Option<AccountId>, StoreError> {
        let pk = key_pk(key_hash);
        self.run(move |c| {
            let key: Option<KeyItem> = get(c, &pk, KEY_SK)?;
            Ok(key.filter(|k| !k.revoked).map(|k| k.account_id))
        })
        .await
    }
}

impl AccountStore for SqliteStore {
    async fn account(&self, id: &AccountId) -> Result<Option<Account>, StoreError> {
        let pk = account_pk(id);
        self.run(move |c| Ok(get::<AccountItem>(c, &pk, ACCOUNT_SK)?.map(Account::from)))
            .await
    }
}

impl ProjectStore for SqliteStore {
    async fn project(&self, id: &ProjectId) -> Result<Option<Project>, StoreError> {
        let pk = project_pk(id);
        self.run(move |c| Ok(get::<ProjectItem>(c, &pk, PROJECT_SK)?.map(Project::from)))
            .await
    }

    async fn insert_project(
        &self,
        project: &Project,
        max_projects: u32,
        once: Option<&Once>,
    ) -> Result<Written<ProjectInsert>, StoreError> {
        let (project, once) = (project.clone(), once.cloned());
        self.write(move |tx| {
            if let Some(used) = used_key(tx, once.as_ref())? {
                return Ok(Written::Before(used));
            }
            let count_pk = account_pk(&project.account_id);
            let count: Option<ProjectCountItem> = get(tx, &count_pk, PROJECT_COUNT_SK)?;
            let n = count.as_ref().map_or(0, |c| c.count);
            if n >= max_projects {
                return Ok(Written::New(ProjectInsert::LimitReached));
            }
            let item = ProjectItem::from(&project);
            if get::<ProjectItem>(tx, &item.pk, &item.sk)?.is_some() {
                return Err(Db(StoreError::Backend(
                    format!("project id {} already exists", project.id).into(),
                )));
            }
            put(tx, &item.pk, &item.sk, None, &item)?;
            let listed = ProjectItem::listed(&project);
            put(tx, &listed.pk, &listed.sk, None, &listed)?;
            let by_key = ProjectItem::by_public_key(&project);
            if get::<ProjectItem>(tx, &by_key.pk, &by_key.sk)?.is_some() {
                return Err(Db(StoreError::Backend(
                    format!("the public key of project {} is another's", project.id).into(),
                )));
            }
            put(tx, &by_key.pk, &by_key.sk, None, &by_key)?;
            let next = ProjectCountItem::new(&project.account_id, n + 1);
            put(tx, &next.pk, &next.sk, count.as_ref(), &next)?;
            let created = || Created::Project {
                project_id: project.id.clone(),
            };
            record_key(tx, once.as_ref(), created)?;
            Ok(Written::New(ProjectInsert::Created))
        })
        .await
    }

    async fn project_by_public_key(&self, key: &str) -> Result<Option<Project>, StoreError> {
        let (pk, key) = (public_key_pk(key), key.to_owned());
        self.run(move |c| {
            let item = get::<ProjectItem>(c, &pk, PROJECT_SK)?;
            // A copy left behind by a key a seed replaced never authenticates.
            Ok(item.map(Project::from).filter(|p| p.api_key_public == key))
        })
        .await
    }

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

    async fn update_project(&self, project: &Project) -> Result<bool, StoreError> {
        let project = project.clone();
        self.write(move |tx| {
            let item = ProjectItem::from(&project);
            let Some(old) = get::<ProjectItem>(tx, &item.pk, &item.sk)? else {
                return Ok(false);
            };
            if old.value.project.account_id != project.account_id {
                return Ok(false);
            }
            put(tx, &item.pk, &item.sk, Some(&old), &item)?;
            let listed = ProjectItem::listed(&project);
            upsert(tx, &listed.pk, &listed.sk, &listed)?;
            let by_key = ProjectItem::by_public_key(&project);
            upsert(tx, &by_key.pk, &by_key.sk, &by_key)?;
            Ok(true)
        })
        .await
    }
}

impl UsageStore for SqliteStore {
    async fn count_request(
        &self,
        account: &AccountId,
        second: i64,
        max_rps: u32,
        period: &Period,
        max_requests: u64,
    ) -> Result<Counted, StoreError> {
        let pk = account_pk(account);
        let rate_key = format!("{pk}/{}", rate_sk(second));
        let usage_key = format!("{pk}/{}", usage_sk(period.start));
        let usage_expires = period.end.unix_seconds() + COUNTER_GRACE_SECONDS;
        let max_requests = i64::try_from(max_requests).unwrap_or(i64::MAX);
        self.write(move |tx| {
            let Some(in_second) =
                bump(tx, &rate_key, i64::from(max_rps), second + RATE_WINDOW_TTL)?
            else {
                return Ok(Counted::RateLimited);
            };
            if in_second == 1 {
                // The first request of a second clears windows that have expired, as a TTL would.
                tx.prepare_cached("DELETE FROM counters WHERE expires < ?1")?
                    .execute([second])?;
            }
            let Some(in_period) = bump(tx, &usage_key, max_requests, usage_expires)? else {
                return Ok(Counted::QuotaExceeded);
            };
            Ok(Counted::Allowed {
                in_second: u32::try_from(in_second).unwrap_or(u32::MAX),
                in_period: u64::try_from(in_period).unwrap_or(0),
            })
        })
        .await
    }

    async fn count_visit(&self, v: &VisitCount<'_>) -> Result<Counted, StoreError> {
        let (apk, ppk) = (account_pk(v.account), project_pk(v.project));
        let rate_key = format!("{ppk}/{}", visit_rate_sk(v.second));
        let source_key = format!("{ppk}/{}", visit_source_sk(&v.source, v.second));
        let usage_key = format!("{apk}/{}", usage_sk(v.period.start));
        let visits_key = format!("{apk}/{}", visits_sk(v.period.start));
        let usage_expires = v.period.end.unix_seconds() + COUNTER_GRACE_SECONDS;
        let max_requests = i64::try_from(v.max_requests).unwrap_or(i64::MAX);
        let (second, project_rps, source_rps) = (v.second, v.project_rps, v.source_rps);
        // A refusal rolls back what was counted before it: a refused visit counts nowhere.
        self.write_unless(move |tx| {
            let expires = second + RATE_WINDOW_TTL;
            let Some(in_second) = bump(tx, &source_key, i64::from(source_rps), expires)? else {
                return Ok(Err(Counted::RateLimited));
            };
            if bump(tx, &rate_key, i64::from(project_rps), expires)?.is_none() {
                return Ok(Err(Counted::RateLimited));
            }
            let developer = count_of(tx, &usage_key)?;
            let room = max_requests.saturating_sub(developer);
            let Some(visits) = bump(tx, &visits_key, room, usage_expires)? else {
                return Ok(Err(Counted::QuotaExceeded));
            };
            Ok(Ok(Counted::Allowed {
                in_second: u32::try_from(in_second).unwrap_or(u32::MAX),
                in_period: u64::try_from(developer + visits).unwrap_or(0),
            }))
        })
        .await
    }

    async fn period_usage(&self, account: &AccountId, period: &Period) -> Result<u64, StoreError> {
        let pk = account_pk(account);
        let keys = [
            format!("{pk}/{}", usage_sk(period.start)),
            format!("{pk}/{}", visits_sk(period.start)),
        ];
        self.run(move |c| {
            let mut n = 0;
            for key in &keys {
                n += count_of(c, key)?;
            }
            Ok(u64::try_from(n).unwrap_or(0))
        })
        .await
    }
}

/// One more under `max` in the counter `key`, or none: the guard makes the upsert the check.
fn bump(tx: &Connection, key: &str, max: i64, expires: i64) -> Result<Option<i64>, Db> {
    Ok(tx
        .prepare_cached(
            "INSERT INTO counters (key, count, expires) SELECT ?1, 1, ?3 WHERE ?2 > 0
             ON CONFLICT (key) DO UPDATE SET count = count + 1 WHERE count < ?2
             RETURNING count",
        )?
        .query_row(params![key, max, expires], |r| r.get(0))
        .optional()?)
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

    async fn event(
        &self,
        project: &ProjectId,
        session: &SessionId,
        at: ResultPosition,
    ) -> Result<Option<Event>, StoreError> {
        let (pk, sk) = (project_pk(project), result_sk(session, at));
        self.run(move |c| Ok(get::<ResultItem>(c, &pk, &sk)?.map(ResultItem::event)))
            .await
    }

    async fn session_score(
        &self,
        project: &ProjectId,
        session: &SessionId,
    ) -> Result<Option<SessionScore>, StoreError> {
        let (pk, sk) = (project_pk(project), session_sk(session));
        self.run(move |c| Ok(get::<SessionItem>(c, &pk, &sk)?.map(|s| s.score())))
            .await
    }

    async fn write_result(
        &self,
        r: &NewResult,
        once: Option<&Once>,
    ) -> Result<Written<ResultPosition>, StoreError> {
        let (r, once) = (r.clone(), once.cloned());
        self.write(move |tx| {
            if let Some(used) = used_key(tx, once.as_ref())? {
                return Ok(Written::Before(used));
            }
            let pk = project_pk(&r.project_id);
            let sk = session_sk(&r.session_id);
            let old: Option<SessionItem> = get(tx, &pk, &sk)?;
            let session = SessionItem::next(old.as_ref(), &r);
            let result = ResultItem::new(&r, session.seq);
            put(tx, &result.pk, &result.sk, None, &result)?;
            put(tx, &pk, &sk, old.as_ref(), &session)?;
            index_session(tx, &session)?;
            count_stats(tx, &r)?;
            let created = || Created::event(&r.project_id, &r.session_id, result.position());
            record_key(tx, once.as_ref(), created)?;
            Ok(Written::New(result.position()))
        })
        .await
    }
}

/// Keeps the sessions index up to date with a summary just written.
fn index_session(tx: &Transaction<'_>, s: &SessionItem) -> Result<(), Db> {
    let seen = s
        .seen
        .clone()
        .unwrap_or_else(|| seen_key(s.last_seen(), &s.session_id));
    tx.prepare_cached(
        "INSERT OR REPLACE INTO sessions (pk, sk, seen, score_bot, score_proxy_vpn) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        s.pk,
        s.sk,
        seen,
        s.score_bot.get(),
        s.score_proxy_vpn.get()
    ])?;
    Ok(())
}

/// Adds a written result to its hour's and its day's statistics.
fn count_stats(tx: &Transaction<'_>, r: &NewResult) -> Result<(), Db> {
    let counts = Tally::of(r).counts();
    let shard = stats_shard(&r.session_id);
    for g in Granularity::ALL {
        let start = g.floor(r.result.created_at);
        let mut item = StatsItem::empty(&r.project_id, g, start, shard);
        let body: Option<String> = tx
            .prepare_cached("SELECT body FROM stats WHERE pk = ?1 AND sk = ?2")?
            .query_row(params![item.pk, item.sk], |row| row.get(0))
            .optional()?;
        if let Some(b) = body {
            item = serde_json::from_str(&b).map_err(corrupt)?;
        }
        item.add(&counts);
        let body = serde_json::to_string(&item).map_err(corrupt)?;
        tx.prepare_cached("INSERT OR REPLACE INTO stats (pk, sk, body) VALUES (?1, ?2, ?3)")?
            .execute(params![item.pk, item.sk, body])?;
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
        self.run(move |c| {
            let mut stmt = c.prepare_cached(
                "SELECT i.body FROM sessions s JOIN items i ON i.pk = s.pk AND i.sk = s.sk \
                 WHERE s.pk = ?1 AND s.seen < ?2 AND s.score_bot >= ?3 AND s.score_proxy_vpn >= ?4 \
                 ORDER BY s.seen DESC LIMIT ?5",
            )?;
            let rows = stmt.query_map(params![pk, before, bot, proxy, limit as i64 + 1], |r| {
                r.get::<_, String>(0)
            })?;
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

/// The unexpired use of `once`'s key (none without a key), read inside the writing transaction.
fn used_key(tx: &Transaction<'_>, once: Option<&Once>) -> Result<Option<Used>, Db> {
    let Some(once) = once else {
        return Ok(None);
    };
    let item: Option<IdempotencyItem> =
        get(tx, &account_pk(&once.account), &idempotency_sk(&once.key))?;
    Ok(item.and_then(|i| i.used(once.at)))
}

/// Records the use of `once`'s key (nothing without a key) in the writing transaction.
fn record_key(
    tx: &Transaction<'_>,
    once: Option<&Once>,
    created: impl FnOnce() -> Created,
) -> Result<(), Db> {
    if let Some(o) = once {
        let item = IdempotencyItem::new(o, created());
        upsert(tx, &item.pk, &item.sk, &item)?;
    }
    Ok(())
}

impl IdempotencyStore for SqliteStore {
    async fn used_key(
        &self,
        account: &AccountId,
        key: &IdempotencyKey,
        now: Timestamp,
    ) -> Result<Option<Used>, StoreError> {
        let (pk, sk) = (account_pk(account), idempotency_sk(key));
        self.run(move |c| Ok(get::<IdempotencyItem>(c, &pk, &sk)?.and_then(|i| i.used(now))))
            .await
    }
}

impl WebhookStore for SqliteStore {
    async fn insert_webhook(
        &self,
        project: &ProjectId,
        webhook: &Webhook,
    ) -> Result<WebhookInsert, StoreError> {
        let item = WebhookItem::new(project, webhook);
        let project = project.clone();
        self.write(move |tx| {
            let guard = item.guard();
            if get::<WebhookGuardItem>(tx, &guard.pk, &guard.sk)?.is_some() {
                return Ok(WebhookInsert::Duplicate);
            }
            let count: Option<WebhookCountItem> = get(tx, &item.pk, WEBHOOK_COUNT_SK)?;
            let n = count.as_ref().map_or(0, |c| c.count);
            if n as usize >= MAX_WEBHOOKS_PER_PROJECT {
                return Ok(WebhookInsert::LimitReached);
            }
            if get::<WebhookItem>(tx, &item.pk, &item.sk)?.is_some() {
                return Err(Db(StoreError::Backend(
                    format!("webhook id {} already exists", item.id).into(),
                )));
            }
            put(tx, &item.pk, &item.sk, None, &item)?;
            put(tx, &guard.pk, &guard.sk, None, &guard)?;
            let next = WebhookCountItem::new(&project, n + 1);
            put(tx, &next.pk, &next.sk, count.as_ref(), &next)?;
            Ok(WebhookInsert::Created)
        })
        .await
    }

    async fn webhooks(&self, project: &ProjectId) -> Result<Vec<Webhook>, StoreError> {
        let pk = project_pk(project);
        self.run(move |c| Ok(sorted_webhooks(webhook_items(c, &pk)?)))
            .await
    }

    async fn delete_webhook(
        &self,
        project: &ProjectId,
        id: &WebhookId,
    ) -> Result<bool, StoreError> {
        let (pk, sk) = (project_pk(project), webhook_sk(id));
        let project = project.clone();
        self.write(move |tx| {
            let Some(item) = get::<WebhookItem>(tx, &pk, &sk)? else {
                return Ok(false);
            };
            let guard = item.guard();
            delete(tx, &pk, &sk, &item)?;
            delete(tx, &guard.pk, &guard.sk, &guard)?;
            let count: Option<WebhookCountItem> = get(tx, &pk, WEBHOOK_COUNT_SK)?;
            let n = count.as_ref().map_or(0, |c| c.count).saturating_sub(1);
            let next = WebhookCountItem::new(&project, n);
            put(tx, &next.pk, &next.sk, count.as_ref(), &next)?;
            Ok(true)
        })
        .await
    }
}

impl AdminStore for SqliteStore {
    async fn put_account(&self, account: &Account) -> Result<(), StoreError> {
        let item = AccountItem::from(account);
        self.write(move |tx| upsert(tx, &item.pk, &item.sk, &item))
            .await
    }

    async fn put_key(&self, key_hash: &str, account: &AccountId) -> Result<(), StoreError> {
        let item = KeyItem::new(key_hash, account);
        self.write(move |tx| upsert(tx, &item.pk, &item.sk, &item))
            .await
    }

    async fn put_project(&self, project: &Project) -> Result<(), StoreError> {
        let project = project.clone();
        self.write(move |tx| {
            let item = ProjectItem::from(&project);
            let old: Option<ProjectItem> = get(tx, &item.pk, &item.sk)?;
            put(tx, &item.pk, &item.sk, old.as_ref(), &item)?;
            let listed = ProjectItem::listed(&project);
            upsert(tx, &listed.pk, &listed.sk, &listed)?;
            let by_key = ProjectItem::by_public_key(&project);
            upsert(tx, &by_key.pk, &by_key.sk, &by_key)?;
            if let Some(old_key) = old
                .as_ref()
                .map(|o| o.value.project.api_key_public.clone())
                .filter(|k| k != &project.api_key_public)
            {
                // The seed replaced the public key: the old one must stop finding the project.
                let stale = public_key_pk(&old_key);
                if let Some(gone) = get::<ProjectItem>(tx, &stale, PROJECT_SK)? {
                    delete(tx, &stale, PROJECT_SK, &gone)?;
                }
            }
            let moved_from = old.map(|o| o.value.project.account_id);
            if moved_from.as_ref() != Some(&project.account_id) {
                if let Some(from) = moved_from {
                    // The seed gave the project another account: it leaves the old one's list.
                    let gone = ProjectItem::listed(&Project {
                        account_id: from.clone(),
                        ..project.clone()
                    });
                    if let Some(old_listed) = get::<ProjectItem>(tx, &gone.pk, &gone.sk)? {
                        delete(tx, &gone.pk, &gone.sk, &old_listed)?;
                    }
                    add_to_project_count(tx, &from, -1)?;
                }
                add_to_project_count(tx, &project.account_id, 1)?;
            }
            Ok(())
        })
        .await
    }

    async fn is_empty(&self) -> Result<bool, StoreError> {
        self.run(|c| {
            let any: bool = c.query_row("SELECT EXISTS (SELECT 1 FROM items)", [], |r| r.get(0))?;
            Ok(!any)
        })
        .await
    }
}

/// Moves an account's project counter by `delta` (seeding; creation checks the limit itself).
fn add_to_project_count(tx: &Transaction<'_>, account: &AccountId, delta: i64) -> Result<(), Db> {
    let pk = account_pk(account);
    let old: Option<ProjectCountItem> = get(tx, &pk, PROJECT_COUNT_SK)?;
    let n = i64::from(old.as_ref().map_or(0, |c| c.count)) + delta;
    let next = ProjectCountItem::new(account, u32::try_from(n.max(0)).unwrap_or(0));
    put(tx, &next.pk, &next.sk, old.as_ref(), &next)
}

/// Writes a delivery item and keeps the due index in step with it.
fn put_delivery(
    tx: &Transaction<'_>,
    old: Option<&DeliveryItem>,
    new: &DeliveryItem,
) -> Result<(), Db> {
    put(tx, &new.pk, &new.sk, old, new)?;
    match &new.due_at {
        Some(at) => tx
            .prepare_cached("INSERT OR REPLACE INTO due (pk, sk, due_at) VALUES (?1, ?2, ?3)")?
            .execute(params![new.pk, new.sk, at])?,
        None => tx
            .prepare_cached("DELETE FROM due WHERE pk = ?1 AND sk = ?2")?
            .execute(params![new.pk, new.sk])?,
    };
    Ok(())
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

    async fn disable_webhook(&self, project: &ProjectId, id: &WebhookId) -> Result<(), StoreError> {
        let (pk, sk) = (project_pk(project), webhook_sk(id));
        self.write(move |tx| {
            if let Some(old) = get::<WebhookItem>(tx, &pk, &sk)? {
                let new = WebhookItem {
                    disabled: true,
                    ..old.clone()
                };
                put(tx, &pk, &sk, Some(&old), &new)?;
            }
            Ok(())
        })
        .await
    }

    async fn create_delivery(&self, delivery: &Delivery) -> Result<bool, StoreError> {
        let item = DeliveryItem::from(delivery);
        self.write(move |tx| {
            if get::<DeliveryItem>(tx, &item.pk, &item.sk)?.is_some() {
                return Ok(false);
            }
            put_delivery(tx, None, &item)?;
            Ok(true)
        })
        .await
    }

    async fn update_delivery(
        &self,
        delivery: &Delivery,
        expected: Option<Timestamp>,
    ) -> Result<bool, StoreError> {
        let item = DeliveryItem::from(delivery);
        let expected = expected.map(|t| t.to_string());
        self.write(move |tx| {
            let Some(old) = get::<DeliveryItem>(tx, &item.pk, &item.sk)? else {
                return Ok(false);
            };
            if old.due_at != expected {
                return Ok(false);
            }
            put_delivery(tx, Some(&old), &item)?;
            Ok(true)
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
        self.run(move |c| {
            c.prepare_cached("INSERT OR REPLACE INTO checkpoints (name, value) VALUES (?1, ?2)")?
                .execute(params![name, value])?;
            Ok(())
        })
        .await
    }
}
