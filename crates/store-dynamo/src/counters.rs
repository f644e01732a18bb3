//! The plan's counters (`UsageStore`: spread per-second windows and the period's usage) and the
//! velocity counters (`VelocityStore`), each an `UpdateItem` that adds under a condition.

use std::collections::HashMap;
use std::fmt::Debug;
use std::time::Duration;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use vigil_core::domain::plan::{Counted, MAX_COUNTER_SHARDS, Period, Spread, VisitCount};
use vigil_core::domain::velocity::{CounterUpdate, CounterWork, Counters, Sketch, is_sketch};
use vigil_core::domain::{AccountId, ProjectId};
use vigil_core::store::items::CounterItem;
use vigil_core::store::keys::{
    SK, TTL, account_pk, project_pk, rate_sk, shard_sk, usage_sk, visit_rate_sk, visit_source_sk,
};
use vigil_core::store::{
    COUNTER_GRACE_SECONDS, RATE_WINDOW_TTL, StoreError, UsageStore, VelocityStore,
};

use crate::dynamo::{DynamoStore, Item, build, key, n, s, sdk_error};

impl UsageStore for DynamoStore {
    async fn count_request(
        &self,
        account: &AccountId,
        second: i64,
        max_rps: u32,
        period: &Period,
        max_requests: u64,
    ) -> Result<Counted, StoreError> {
        let pk = account_pk(account);
        let (rate_spread, usage_spread) =
            (Spread::rate(max_rps), Spread::usage(max_rps, max_requests));
        let (rate_base, usage_base) = (rate_sk(second), usage_sk(period.start));
        // Both counters at once: one round trip while their shards have room. A request the rate
        // refuses is taken back out of the period's count, which only refused requests pay for.
        let (rate, usage) = tokio::join!(
            self.bump_spread(
                &pk,
                &rate_base,
                rate_spread,
                Counter::Window,
                second + RATE_WINDOW_TTL
            ),
            self.bump_spread(
                &pk,
                &usage_base,
                usage_spread,
                Counter::Developer,
                period.end.unix_seconds() + COUNTER_GRACE_SECONDS,
            ),
        );
        match (rate?, usage?) {
            (Some((ri, in_second)), Some((ui, in_period))) => Ok(Counted::Allowed {
                in_second: u32::try_from(rate_spread.estimate(ri, in_second)).unwrap_or(u32::MAX),
                in_period: usage_spread.estimate(ui, in_period),
            }),
            (None, Some((ui, _))) => {
                self.take_back(pk, shard_sk(&usage_base, ui), Counter::Developer)
                    .await?;
                Ok(Counted::RateLimited)
            }
            (None, None) => Ok(Counted::RateLimited),
            (Some(_), None) => Ok(Counted::QuotaExceeded),
        }
    }

    async fn count_visit(&self, v: &VisitCount<'_>) -> Result<Counted, StoreError> {
        let (apk, ppk) = (account_pk(v.account), project_pk(v.project));
        let expires = v.second + RATE_WINDOW_TTL;
        let source_base = visit_source_sk(&v.source, v.second);
        let rate_base = visit_rate_sk(v.second);
        let usage_base = usage_sk(v.period.start);
        let one = Spread::for_rate(0, u64::from(v.source_rps));
        let rate_spread = Spread::for_rate(u64::from(v.project_rps), u64::from(v.project_rps));
        let usage_spread = Spread::usage(v.max_rps, v.max_requests);
        // The three counters at once: one round trip while their shards have room.
        let (source, rate, usage) = tokio::join!(
            self.bump_spread(&ppk, &source_base, one, Counter::Window, expires),
            self.bump_spread(&ppk, &rate_base, rate_spread, Counter::Window, expires),
            self.bump_spread(
                &apk,
                &usage_base,
                usage_spread,
                Counter::Visits,
                v.period.end.unix_seconds() + COUNTER_GRACE_SECONDS,
            ),
        );
        let (source, rate, usage) = (source?, rate?, usage?);
        let counted = match (source, rate, usage) {
            (Some((_, in_second)), Some(_), Some((ui, in_period))) => {
                return Ok(Counted::Allowed {
                    in_second: u32::try_from(in_second).unwrap_or(u32::MAX),
                    in_period: usage_spread.estimate(ui, in_period),
                });
            }
            (Some(_), Some(_), None) => Counted::QuotaExceeded,
            _ => Counted::RateLimited,
        };
        // A refused visit counts nowhere: what the others counted is taken back (writes that
        // only refused visits pay for), so every limit is exact as on SQLite.
        let back = |counted: Option<(u32, u64)>, pk: &str, base: &str, counter| {
            let pk = pk.to_owned();
            let sk = counted.map(|(i, _)| shard_sk(base, i));
            async move {
                match sk {
                    Some(sk) => self.take_back(pk, sk, counter).await,
                    None => Ok(()),
                }
            }
        };
        let (a, b, c) = tokio::join!(
            back(source, &ppk, &source_base, Counter::Window),
            back(rate, &ppk, &rate_base, Counter::Window),
            back(usage, &apk, &usage_base, Counter::Visits),
        );
        a.and(b).and(c)?;
        Ok(counted)
    }

    async fn period_usage(&self, account: &AccountId, period: &Period) -> Result<u64, StoreError> {
        // Every shard of the period's usage in one Query (one item for most plans).
        let items: Vec<CounterItem> = self
            .query_prefix(
                account_pk(account),
                usage_sk(period.start),
                true,
                Some(MAX_COUNTER_SHARDS as usize),
                None,
            )
            .await?;
        // A period counted before visits were (no `total`) holds developer requests only.
        Ok(items.iter().map(|c| c.total.unwrap_or(c.count)).sum())
    }
}

/// How long an instance remembers that every shard of a counter refused: further requests in
/// that window are refused without writing. A second's window ends by itself; a period's quota
/// can be raised (a plan change), so it is asked again after this.
const FULL_MEMORY: Duration = Duration::from_secs(2);

impl DynamoStore {
    /// Adds one to a spread counter: tries its shards in turn, from a random one, until one takes
    /// it under its share. The shard and its new count, or None when every shard refused.
    async fn bump_spread(
        &self,
        pk: &str,
        base: &str,
        spread: Spread,
        counter: Counter,
        ttl: i64,
    ) -> Result<Option<(u32, u64)>, StoreError> {
        if spread.shards == 1 {
            let count = self
                .bump_counter(pk, base.to_owned(), counter, spread.limit, ttl)
                .await?;
            return Ok(count.map(|c| (0, c)));
        }
        // Full for this limit and this guard: a raised limit, or the other guard of a usage item
        // (developer requests and visits), asks the shards again.
        let memo = format!("{pk}|{base}|{}|{counter:?}", spread.limit);
        if self
            .full
            .get(&memo)
            .is_some_and(|at| at.elapsed() < FULL_MEMORY)
        {
            return Ok(None);
        }
        let first = rand::random_range(0..spread.shards);
        for k in 0..spread.shards {
            let i = (first + k) % spread.shards;
            if let Some(count) = self
                .bump_counter(pk, shard_sk(base, i), counter, spread.share(i), ttl)
                .await?
            {
                return Ok(Some((i, count)));
            }
        }
        self.full.insert(memo, std::time::Instant::now());
        Ok(None)
    }
}

/// Which attributes of a counter item one request adds to, and which of them its limit guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counter {
    /// A rate window: `count`.
    Window,
    /// A developer request in the period's usage item: `count` and `total`, guarded by `count`
    /// (visits never refuse a developer request).
    Developer,
    /// A visit in the period's usage item: `visits` and `total`, guarded by `total`.
    Visits,
}

type Attr = (&'static str, &'static str);

impl Counter {
    /// (the attributes added to, the guarded one), each as (placeholder, name).
    fn attributes(self) -> (&'static [Attr], Attr) {
        const COUNT: Attr = ("#c", "count");
        const TOTAL: Attr = ("#n", "total");
        const VISITS: Attr = ("#v", "visits");
        match self {
            Counter::Window => (&[COUNT], COUNT),
            Counter::Developer => (&[COUNT, TOTAL], COUNT),
            Counter::Visits => (&[VISITS, TOTAL], TOTAL),
        }
    }

    /// The placeholders the counter's expressions use (DynamoDB refuses unused ones).
    fn names(self) -> HashMap<String, String> {
        self.attributes()
            .0
            .iter()
            .map(|(p, n)| ((*p).to_owned(), (*n).to_owned()))
            .collect()
    }
}

/// Attempts at a batch read's unprocessed keys before the read fails.
const BATCH_GET_ATTEMPTS: u32 = 5;

impl VelocityStore for DynamoStore {
    /// One `UpdateItem` per counter item (`ADD` to numbers and string sets, returning the item)
    /// and one `BatchGetItem` for the previous windows, all at once: one round trip of latency.
    async fn count_velocity(
        &self,
        project: &ProjectId,
        work: &CounterWork,
    ) -> Result<(Vec<Counters>, Vec<Counters>), StoreError> {
        let pk = project_pk(project);
        let updates = futures_util::future::try_join_all(
            work.updates.iter().map(|u| self.add_counters(&pk, u)),
        );
        let (updated, read) = tokio::join!(updates, self.read_counters(&pk, &work.reads));
        Ok((updated?, read?))
    }
}

impl DynamoStore {
    async fn add_counters(&self, pk: &str, u: &CounterUpdate) -> Result<Counters, StoreError> {
        let mut names = HashMap::new();
        let mut values = HashMap::new();
        let mut adds = Vec::new();
        for (i, (attr, n)) in u.adds.iter().enumerate() {
            names.insert(format!("#n{i}"), attr.clone());
            values.insert(format!(":n{i}"), AttributeValue::N(n.to_string()));
            adds.push(format!("#n{i} :n{i}"));
        }
        // Sketch buckets go into string sets as their decimal numbers, as exact members do.
        let mut sets: Vec<(&str, Vec<String>)> = Vec::new();
        let members = u.buckets.iter().map(|(a, b)| (a, b.to_string()));
        for (attr, member) in members.chain(u.members.iter().map(|(a, m)| (a, m.clone()))) {
            match sets.iter_mut().find(|(a, _)| *a == attr.as_str()) {
                Some((_, m)) => m.push(member),
                None => sets.push((attr.as_str(), vec![member])),
            }
        }
        for (i, (attr, mut members)) in sets.into_iter().enumerate() {
            members.sort();
            members.dedup();
            names.insert(format!("#m{i}"), attr.to_owned());
            values.insert(format!(":m{i}"), AttributeValue::Ss(members));
            adds.push(format!("#m{i} :m{i}"));
        }
        names.insert("#t".to_owned(), TTL.to_owned());
        values.insert(":t".to_owned(), AttributeValue::N(u.expires.to_string()));
        let expression = if adds.is_empty() {
            "SET #t = :t".to_owned()
        } else {
            format!("ADD {} SET #t = :t", adds.join(", "))
        };
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(pk.to_owned(), u.sk.clone())))
            .update_expression(expression)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .map_err(|e| sdk_error("UpdateItem", e))?;
        Ok(out.attributes.map(|a| counters_of(&a)).unwrap_or_default())
    }

    /// The items at `sks`, in their order (empty for absent ones), by `BatchGetItem`.
    async fn read_counters(&self, pk: &str, sks: &[String]) -> Result<Vec<Counters>, StoreError> {
        if sks.is_empty() {
            return Ok(Vec::new());
        }
        let mut found: HashMap<String, Counters> = HashMap::new();
        let keys: Vec<Item> = sks
            .iter()
            .map(|sk| key(pk.to_owned(), sk.clone()))
            .collect();
        let mut pending = Some(build(
            aws_sdk_dynamodb::types::KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .build(),
        )?);
        for attempt in 0..BATCH_GET_ATTEMPTS {
            let Some(request) = pending.take() else { break };
            if attempt > 0 {
                tokio::time::sleep(vigil_core::store::write::backoff(attempt)).await;
            }
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .send()
                .await
                .map_err(|e| sdk_error("BatchGetItem", e))?;
            for item in out
                .responses
                .and_then(|mut r| r.remove(&self.table))
                .unwrap_or_default()
            {
                if let Some(AttributeValue::S(sk)) = item.get(SK) {
                    found.insert(sk.clone(), counters_of(&item));
                }
            }
            pending = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .filter(|k| !k.keys.is_empty());
        }
        if pending.is_some() {
            return Err(StoreError::Throttled(
                "velocity counters unread after retries".into(),
            ));
        }
        Ok(sks
            .iter()
            .map(|sk| found.remove(sk).unwrap_or_default())
            .collect())
    }
}

/// A counter item's numbers and string sets (its keys and other attributes left out).
fn counters_of(item: &Item) -> Counters {
    let mut c = Counters::default();
    for (name, value) in item {
        match value {
            AttributeValue::N(n) if name != TTL => {
                if let Ok(n) = n.parse() {
                    c.numbers.insert(name.clone(), n);
                }
            }
            AttributeValue::Ss(members) if is_sketch(name) => {
                let sketch = members.iter().filter_map(|m| Sketch::parse_bucket(m));
                c.sketches.insert(name.clone(), sketch.collect());
            }
            AttributeValue::Ss(members) => {
                c.sets
                    .insert(name.clone(), members.iter().cloned().collect());
            }
            _ => {}
        }
    }
    c
}

impl DynamoStore {
    /// Adds one to `counter`'s attributes of the item unless its guarded attribute has reached
    /// `max`; the guarded attribute's new value, or None when refused.
    async fn bump_counter(
        &self,
        pk: &str,
        sk: String,
        counter: Counter,
        max: u64,
        ttl: i64,
    ) -> Result<Option<u64>, StoreError> {
        let (added, guard) = counter.attributes();
        let adds: Vec<String> = added.iter().map(|(p, _)| format!("{p} :one")).collect();
        let (g, guarded) = guard;
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .update_expression(format!(
                "ADD {} SET #t = :ttl, #e = :entity",
                adds.join(", ")
            ))
            .condition_expression(format!("attribute_not_exists({g}) OR {g} < :max"))
            .set_expression_attribute_names(Some(counter.names()))
            .expression_attribute_names("#t", TTL)
            .expression_attribute_names("#e", "entity")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(max))
            .expression_attribute_values(":ttl", n(ttl))
            .expression_attribute_values(":entity", s("counter"))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await;
        match out {
            Ok(o) => {
                let count = o
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get(guarded))
                    .and_then(|v| v.as_n().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| StoreError::Corrupt("counter without a count".into()))?;
                Ok(Some(count))
            }
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
                Ok(None)
            }
            Err(e) => Err(sdk_error("UpdateItem", e)),
        }
    }

    /// Takes one back out of `counter`'s attributes: a request counted in the period that a rate
    /// then refused.
    async fn take_back(&self, pk: String, sk: String, counter: Counter) -> Result<(), StoreError> {
        let (added, _) = counter.attributes();
        let adds: Vec<String> = added.iter().map(|(p, _)| format!("{p} :minus")).collect();
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .update_expression(format!("ADD {}", adds.join(", ")))
            .set_expression_attribute_names(Some(counter.names()))
            .expression_attribute_values(":minus", n(-1))
            .send()
            .await
            .map_err(|e| sdk_error("UpdateItem", e))?;
        Ok(())
    }
}
