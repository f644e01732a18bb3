//! The store's reads, and the store traits that are not the write plan (`apply.rs`), the plan's
//! counters (`counters.rs`) or the change feed (`feed.rs`): one `impl` per trait, in the order
//! `vigil_core::store` declares them.

use rusqlite::{Connection, OptionalExtension, params};
use serde::de::DeserializeOwned;
use vigil_core::domain::insight::{Bucket, SessionPage, SessionPosition, SessionQuery, StatsRange};
use vigil_core::domain::label::Label;
use vigil_core::domain::velocity::{CounterWork, Counters};
use vigil_core::domain::webhook::MAX_WEBHOOKS_PER_PROJECT;
use vigil_core::domain::{
    AccountId, Delivery, Project, ProjectId, ResultPosition, Score, SessionId, Timestamp, Webhook,
    WebhookId,
};
use vigil_core::store::items::{
    DeliveryItem, LABELLED_PK, LABELLED_PREFIX, LabelItem, LabelledItem, ProjectItem, SessionItem,
    StatsItem, WebhookItem, deliveries_prefix, sorted_webhooks,
};
use vigil_core::store::keys::{
    ACCOUNT_PROJECT_PREFIX, LABEL_PREFIX, WEBHOOK_PREFIX, account_pk, device_pk, label_sk,
    project_pk, result_sk, results_prefix, seen_key, session_sk, stats_sk_bound,
};
use vigil_core::store::write::{PriorSummary, prior_summary};
use vigil_core::store::{
    AccountStore, AdminStore, AgentStore, DeliveryStore, IdempotencyStore, InsightStore, KeyStore,
    LabelStore, ProjectStore, ResultPage, ResultStore, StoreError, VelocityStore, WebhookStore,
    buckets,
};

use crate::error::{Db, corrupt};
use crate::sqlite::SqliteStore;

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

impl KeyStore for SqliteStore {}

impl AgentStore for SqliteStore {}

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

impl VelocityStore for SqliteStore {
    /// Every item the visit names read and added to as the writer holds them (`held.rs`),
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
                // (they read as absent meanwhile), not on every visit.
                tx.prepare_cached("DELETE FROM velocity WHERE expires < ?1")?
                    .execute([work.at])?;
            }
            Ok((updated, read))
        })
        .await
    }
}

impl ResultStore for SqliteStore {
    /// The summary this process's writer committed last, when it has it ([`Summaries`](crate::held::Summaries)): no
    /// read. Else read from the file.
    async fn prior_summary(
        &self,
        project: &ProjectId,
        session: &SessionId,
    ) -> Result<PriorSummary, StoreError> {
        let key = (project_pk(project), session_sk(session));
        if let Some(body) = self.shared.summaries.get(&key)
            && let Ok(summary) = serde_json::from_str::<SessionItem>(&body)
        {
            return Ok(PriorSummary::known(summary));
        }
        prior_summary(self, project, session).await
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
            Ok(buckets(&range, &items))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::get;
    use crate::testing::visit;

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
            .shared
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
        let held = store.shared.summaries.get(&key).unwrap();
        assert_eq!(serde_json::from_str::<SessionItem>(&held).unwrap(), now);
    }
}
