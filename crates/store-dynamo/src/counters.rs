//! The plan's counters (`UsageStore`: spread per-second windows and the period's usage) and the
//! velocity counters (`VelocityStore`), each an `UpdateItem` that adds under a condition.

use std::collections::HashMap;
use std::fmt::Debug;
use std::time::Duration;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use vigil_core::domain::plan::{Counted, Period};
use vigil_core::domain::velocity::{CounterUpdate, CounterWork, Counters, Sketch, is_sketch};
use vigil_core::domain::{AccountId, ProjectId};
use vigil_core::store::count::{CountPlan, Decision, MAX_COUNTER_SHARDS, Spread, Tally};
use vigil_core::store::items::CounterItem;
use vigil_core::store::keys::{SK, TTL, account_pk, project_pk, shard_sk, usage_sk};
use vigil_core::store::{StoreError, UsageStore, VelocityStore};

use crate::dynamo::{DynamoStore, Item, build, key, n, s, sdk_error};

impl UsageStore for DynamoStore {
    /// Every step at once (one round trip while their shards have room), then core's decision;
    /// what a refused count must give back is taken back, writes only refused counts pay for.
    async fn count(&self, plan: &CountPlan) -> Result<Counted, StoreError> {
        let tries = plan
            .steps
            .iter()
            .map(|s| self.bump_spread(&s.pk, &s.sk, s.spread, Counter::of(s.tally), s.expires));
        let counted = futures_util::future::join_all(tries)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        match plan.decide(&counted) {
            Decision::Allowed(c) => Ok(c),
            Decision::Refused { answer, take_back } => {
                let backs = take_back.iter().filter_map(|&i| {
                    let (s, (shard, _)) = (plan.steps.get(i)?, (*counted.get(i)?)?);
                    let sk = shard_sk(&s.sk, shard);
                    Some(self.take_back(s.pk.clone(), sk, Counter::of(s.tally)))
                });
                for r in futures_util::future::join_all(backs).await {
                    r?;
                }
                Ok(answer)
            }
        }
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

/// Which attributes of a counter item one request adds to, and which of them its limit guards
/// (core's [`Tally`], in this layout's attribute names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counter {
    /// A rate window: `count`.
    Window,
    /// A developer request in the period's usage item: `count` and `total`, guarded by `count`.
    Developer,
    /// A visit in the period's usage item: `visits` and `total`, guarded by `total`.
    Visits,
}

type Attr = (&'static str, &'static str);

impl Counter {
    fn of(tally: Tally) -> Self {
        match tally {
            Tally::Window => Counter::Window,
            Tally::Developer => Counter::Developer,
            Tally::Visits => Counter::Visits,
        }
    }

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
