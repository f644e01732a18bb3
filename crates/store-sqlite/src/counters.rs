//! The plan's counters on SQLite: a developer's requests counted against blocks claimed from the
//! file (`claims.rs`), a visit's own counters through the rows the writer holds (`held.rs`), and
//! the `counters` table they are kept in. A developer plan with a counter claims do not know (a
//! limit core added) is counted step by step in the writer's transaction instead
//! ([`SqliteStore::count_in_order`]): slower, never different.

use rusqlite::{Connection, OptionalExtension, params};
use vigil_core::domain::AccountId;
use vigil_core::domain::plan::{Counted, Period};
use vigil_core::store::count::{
    CountKind, CountPlan, CountStep, Decision, RATE_WINDOW_TTL, Reports, Tally,
};
use vigil_core::store::keys::{account_pk, usage_sk, visits_sk};
use vigil_core::store::{StoreError, UsageStore};

use crate::claims::{Taken, claim_size};
use crate::error::Db;
use crate::sqlite::SqliteStore;

/// Positions `first..end` a claim took in a counter.
type Block = (i64, i64);

/// A developer request's counters, from its plan: the account's key, the second's window and
/// the period's usage as this file keys them, and their limits and expiries.
struct RequestCount {
    pk: String,
    second: i64,
    rate_key: String,
    max_rps: i64,
    rate_expires: i64,
    usage_key: String,
    max_requests: i64,
    usage_expires: i64,
}

impl RequestCount {
    /// The request's counters when its plan is the two claims know: its second's window, then
    /// the period's developer requests. None for any other plan (claims would count it short).
    fn of(plan: &CountPlan) -> Option<Self> {
        let [rate, usage] = plan.steps.as_slice() else {
            return None;
        };
        let known = rate.tally == Tally::Window
            && rate.reports == Reports::Second
            && rate.kept_when_refused
            && usage.tally == Tally::Developer
            && !usage.kept_when_refused;
        if !known {
            return None;
        }
        Some(Self {
            pk: rate.pk.clone(),
            second: plan.second,
            rate_key: window_key(rate),
            max_rps: limit(rate),
            rate_expires: rate.expires,
            usage_key: period_key(&usage.pk, &usage.sk),
            max_requests: limit(usage),
            usage_expires: usage.expires,
        })
    }
}

/// A plan this store cannot apply: core builds every plan, so this is a bug, told as a failure.
fn unfit(what: &'static str) -> StoreError {
    StoreError::Backend(what.into())
}

fn limit(step: &CountStep) -> i64 {
    i64::try_from(step.limit()).unwrap_or(i64::MAX)
}

/// The `counters` key of a period's counter.
fn period_key(pk: &str, sk: &str) -> String {
    format!("{pk}/{sk}")
}

/// A visit's step as this file keeps it: its counter's key, limit, expiry and what it refuses
/// with, and for the period's total, the developer requests' counter it is read beside.
struct HeldStep {
    key: String,
    limit: i64,
    expires: i64,
    refusal: Counted,
    reports: Reports,
    /// The period's developer requests (claimed in blocks): a visits step's limit is on the
    /// total.
    developer: Option<(String, String)>,
}

impl SqliteStore {
    /// One try of a developer request's count: positions held here, else a claim.
    async fn count_request_once(&self, r: &RequestCount) -> Result<Counted, StoreError> {
        let claims = &self.shared.claims;
        let (pk, second) = (r.pk.as_str(), r.second);
        let (held, want) = match claims.take(pk, second, r.max_rps, &r.usage_key, r.max_requests) {
            Taken {
                rate: Some(rt),
                quota: Some(q),
                ..
            } => return Ok(allowed(rt, q)),
            Taken { rate, want, .. } => (rate, want),
        };
        let (account, key, held_here) = (pk.to_owned(), r.usage_key.clone(), claims.clone());
        let (filed_for, filed_at, filed_in) = (pk.to_owned(), r.usage_key.clone(), claims.clone());
        let (rate_key, max_rps, rate_expires) = (r.rate_key.clone(), r.max_rps, r.rate_expires);
        let (max_requests, usage_expires) = (r.max_requests, r.usage_expires);
        // What the claim got is filed on the writer thread as its batch commits, before any
        // claim queued after it is answered: a request the file refuses because earlier claims
        // took the room finds their unused positions held here ([`UsageStore::count`]).
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
                            let back = held_here.surrender_rate(&account, second);
                            match claim(tx, &rate_key, max_rps, want, rate_expires, back)? {
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
            (Some((rt, _)), Some((q, _))) => allowed(rt, q),
        })
    }

    /// A developer request: counted against the positions this process holds, claiming a block
    /// from the file when it holds none (see [`crate::claims`]): one write per claim, not per
    /// request. The plan's rules hold as they are: a request the rate refuses claims nothing in
    /// the period; one the period refuses keeps its place in the second.
    async fn count_claimed(&self, r: RequestCount) -> Result<Counted, StoreError> {
        let claims = &self.shared.claims;
        // A request the file refuses may find positions held here that claims before its own
        // took (they are filed before it is answered): it tries once more and takes one, or
        // those positions would go unused while the second or the period had room. (Its second
        // try takes a position in the second again, as any request refused for the period has.)
        let mut counted = self.count_request_once(&r).await?;
        if matches!(counted, Counted::RateLimited | Counted::QuotaExceeded)
            && claims.holds(&r.pk, r.second, &r.usage_key)
        {
            counted = self.count_request_once(&r).await?;
        }
        if let Counted::Allowed { .. } = counted {
            claims.admitted(&r.pk, r.second);
        }
        Ok(counted)
    }

    /// A visit: every step's room read before anything is counted, in the batch's write
    /// transaction (no other writer meanwhile), so a refused visit counts nowhere and no
    /// savepoint is needed. The windows and the visits are the counters the writer holds
    /// (`held.rs`); the period's developer requests are claimed in blocks and written as they
    /// are claimed, so they are read from the file.
    async fn count_held(&self, plan: &CountPlan) -> Result<Counted, StoreError> {
        let second = plan.second;
        let steps = plan
            .steps
            .iter()
            .map(|s| {
                let (key, developer) = match s.tally {
                    Tally::Window => (window_key(s), None),
                    Tally::Visits => {
                        let own = plan
                            .visits_sk
                            .as_deref()
                            .ok_or_else(|| unfit("a visit's plan names its visits' counter"))?;
                        let usage = period_key(&s.pk, &s.sk);
                        (period_key(&s.pk, own), Some((s.pk.clone(), usage)))
                    }
                    Tally::Developer => {
                        return Err(unfit("a developer request is counted by claims"));
                    }
                };
                Ok(HeldStep {
                    key,
                    limit: limit(s),
                    expires: s.expires,
                    refusal: s.refusal,
                    reports: s.reports,
                    developer,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let claims = self.shared.claims.clone();
        self.write_checked(
            move |tx, held| {
                let mut developer = 0;
                for s in &steps {
                    let room = match &s.developer {
                        None => s.limit,
                        Some((pk, usage)) => {
                            // Period positions this process holds unused are claimed, not spent.
                            developer = count_of(tx, usage)? - claims.unused(pk, usage);
                            s.limit.saturating_sub(developer)
                        }
                    };
                    if held.count(tx, &s.key)? >= room {
                        return Ok(Err(s.refusal));
                    }
                }
                Ok(Ok((steps, developer)))
            },
            move |tx, held, (steps, developer)| {
                if held.counters_purge_due(second) {
                    purge_counters(tx, second)?;
                }
                let (mut in_second, mut in_period) = (0, 0);
                for s in &steps {
                    let n = held.add_one(tx, &s.key, s.expires)?;
                    match s.reports {
                        Reports::Second => in_second = n,
                        Reports::Period => in_period = n + developer,
                        Reports::Nothing => {}
                    }
                }
                Ok(allowed(in_second, in_period))
            },
        )
        .await
    }

    /// A developer request whose plan has a counter claims do not know (a limit core added):
    /// every step read, then counted, in the writer's transaction (one write per request, not per
    /// claim), and the answer given by the plan's own rules ([`CountPlan::decide`]). Positions
    /// this process holds unused for the account's second and period go back to the file first,
    /// so the counts read are the ones spent.
    async fn count_in_order(&self, plan: &CountPlan) -> Result<Counted, StoreError> {
        let second = plan.second;
        let keys = plan
            .steps
            .iter()
            .map(|s| match s.tally {
                Tally::Window => Ok(window_key(s)),
                Tally::Developer => Ok(period_key(&s.pk, &s.sk)),
                Tally::Visits => Err(unfit("a developer request's plan counts no visits")),
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let plan = plan.clone();
        let claims = self.shared.claims.clone();
        let counted = move |tx: &Connection, held: &mut crate::held::Held| {
            if held.counters_purge_due(second) {
                purge_counters(tx, second)?;
            }
            let mut found = Vec::with_capacity(keys.len());
            for (s, key) in plan.steps.iter().zip(&keys) {
                let back = match (s.tally, s.reports) {
                    (Tally::Window, Reports::Second) => claims.surrender_rate(&s.pk, second),
                    (Tally::Developer, _) => claims.surrender_quota(&s.pk, key),
                    _ => 0,
                };
                let count = (count_of(tx, key)? - back).max(0);
                found.push((count, back));
            }
            let room: Vec<_> = plan
                .steps
                .iter()
                .zip(&found)
                .map(|(s, &(count, _))| {
                    (count < limit(s)).then(|| (0, u64::try_from(count + 1).unwrap_or(0)))
                })
                .collect();
            let (answer, take_back) = match plan.decide(&room) {
                Decision::Allowed(_) => (None, Vec::new()),
                Decision::Refused { answer, take_back } => (Some(answer), take_back),
            };
            let (mut in_second, mut in_period) = (0, 0);
            for (i, ((s, key), &(count, back))) in
                plan.steps.iter().zip(&keys).zip(&found).enumerate()
            {
                // A step with room keeps its count unless the refusal takes it back.
                let add = room[i].is_some() && !take_back.contains(&i);
                let now = count + i64::from(add);
                if add || back > 0 {
                    set_count(tx, key, now, s.expires)?;
                }
                match s.reports {
                    Reports::Second => in_second = now,
                    Reports::Period => in_period = now,
                    Reports::Nothing => {}
                }
            }
            Ok(answer.unwrap_or_else(|| allowed(in_second, in_period)))
        };
        self.write_held_then(counted, |_| ()).await
    }
}

impl UsageStore for SqliteStore {
    async fn count(&self, plan: &CountPlan) -> Result<Counted, StoreError> {
        match plan.kind {
            CountKind::Request => match RequestCount::of(plan) {
                Some(r) => self.count_claimed(r).await,
                None => self.count_in_order(plan).await,
            },
            CountKind::Visit => self.count_held(plan).await,
        }
    }

    async fn period_usage(&self, account: &AccountId, period: &Period) -> Result<u64, StoreError> {
        let pk = account_pk(account);
        let keys = [
            format!("{pk}/{}", usage_sk(period.start)),
            format!("{pk}/{}", visits_sk(period.start)),
        ];
        // Period positions this process holds unused are claimed, not spent.
        let unused = self.shared.claims.unused(&pk, &keys[0]);
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
        set_count(tx, key, total, expires)?;
    }
    Ok((k > 0).then_some((total - k + 1, total + 1)))
}

/// Sets the counter `key` to `count` (made with `expires` when it is new).
fn set_count(tx: &Connection, key: &str, count: i64, expires: i64) -> Result<(), Db> {
    tx.prepare_cached(
        "INSERT INTO counters (key, count, expires) VALUES (?1, ?2, ?3)
         ON CONFLICT (key) DO UPDATE SET count = ?2",
    )?
    .execute(params![key, count, expires])?;
    Ok(())
}

/// Where the counters of one second (a developer's requests, a project's visits, a source's)
/// begin in the `counters` table: after every period counter's key (`ACCOUNT#…`), since `~` sorts
/// after them.
const SECOND_KEYS: &str = "~";

/// The `counters` key of a counter of one `second`: the second first (fixed width), then its
/// item's key. A second's counters are then written side by side at the table's end (not at
/// random places), and expired seconds are cleared from the table's start by key
/// ([`purge_counters`]).
fn second_key(second: i64, pk: &str, sk: &str) -> String {
    format!("{SECOND_KEYS}{second:015}/{pk}/{sk}")
}

/// The `counters` key of a window's counter: [`second_key`] at the second it may be cleared from
/// (its expiry less [`RATE_WINDOW_TTL`]). For a second's window that is the second itself; a
/// longer window core adds (a minute's) is one counter for all its seconds, cleared when it
/// expires.
fn window_key(s: &CountStep) -> String {
    second_key(s.expires - RATE_WINDOW_TTL, &s.pk, &s.sk)
}

/// Clears the counters that have expired at `now`, as the table's TTL would: the seconds whose
/// window has passed by key, the few others (the periods', and any kept under the keys used
/// before [`second_key`]) by their expiry. They are never read again once expired (their keys
/// name a second or a period that has passed), so this is housekeeping, done once a second at
/// most ([`Held::counters_purge_due`](crate::held::Held::counters_purge_due)).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::SCHEMA;
    use crate::testing::texts;

    /// Requests at a second's limit while other claims of the process are on their way: the file
    /// counts those claims' positions before they are filed here, and a request refused then
    /// finds them filed and takes one, so the second admits exactly its limit (it admitted a few
    /// fewer now and then, and the positions were left unused).
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_burst_at_the_seconds_limit_admits_exactly_the_limit() {
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
}
