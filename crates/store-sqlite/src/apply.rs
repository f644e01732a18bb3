//! Write plans on SQLite: a plan's steps are decided and written in one transaction of the
//! writer's batch, each condition checked against the item as that transaction reads it; a
//! refusal names its step, carries the current item, and leaves nothing of the plan written.
//! Each item written appends its change record, and keeps the tables that index it in step.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use vigil_core::store::StoreError;
use vigil_core::store::items::Entity;
use vigil_core::store::keys::{DUE_AT, PK, SK};
use vigil_core::store::plan::{Applied, Attributes, ItemStore, Op, Read, Step, WritePlan};

use crate::changes::record_change;
use crate::error::{Db, corrupt};
use crate::held::{Held, add_numbers, read_stats, write_stats};
use crate::sessions::{index_session, is_summary_sk, stored_summary, unindex_session};
use crate::sqlite::SqliteStore;

/// The item at (`pk`, `sk`), read as a `T`.
pub(crate) fn get<T: DeserializeOwned>(
    c: &Connection,
    pk: &str,
    sk: &str,
) -> Result<Option<T>, Db> {
    body(c, pk, sk)?
        .map(|b| serde_json::from_str(&b).map_err(corrupt))
        .transpose()
}

/// An item's body as stored (JSON text).
fn body(c: &Connection, pk: &str, sk: &str) -> Result<Option<String>, Db> {
    let mut stmt = c.prepare_cached("SELECT body FROM items WHERE pk = ?1 AND sk = ?2")?;
    Ok(stmt.query_row(params![pk, sk], |r| r.get(0)).optional()?)
}

/// Writes `new` at (pk, sk) over `old` (read in this transaction), with its change record and the
/// tables that index some kinds of item: the sessions index and the due index.
fn put(
    tx: &Connection,
    held: Option<&mut Held>,
    pk: &str,
    sk: &str,
    old: Option<&str>,
    new: &Attributes,
) -> Result<(), Db> {
    let body = serde_json::to_string(new).map_err(corrupt)?;
    tx.prepare_cached("INSERT OR REPLACE INTO items (pk, sk, body) VALUES (?1, ?2, ?3)")?
        .execute(params![pk, sk, body])?;
    record_change(tx, pk, sk, old, Some(&body))?;
    // Only a string names an entity; one this build does not know indexes nothing.
    let entity = new
        .get("entity")
        .filter(|e| e.is_string())
        .and_then(|e| Entity::deserialize(e).ok());
    match entity {
        // Read back from the text just written: no copy of the attribute map.
        Some(Entity::Session) => {
            if let Some(held) = held {
                held.summary_written(pk, sk, Some(&body));
            }
            index_session(
                tx,
                old.map(stored_summary),
                &serde_json::from_str(&body).map_err(corrupt)?,
            )
        }
        Some(Entity::Delivery) => index_due(tx, pk, sk, new.get(DUE_AT).and_then(|v| v.as_str())),
        _ => Ok(()),
    }
}

fn delete(
    tx: &Connection,
    held: Option<&mut Held>,
    pk: &str,
    sk: &str,
    old: &str,
) -> Result<(), Db> {
    tx.prepare_cached("DELETE FROM items WHERE pk = ?1 AND sk = ?2")?
        .execute(params![pk, sk])?;
    record_change(tx, pk, sk, Some(old), None)?;
    if is_summary_sk(sk) {
        if let Some(held) = held {
            held.summary_written(pk, sk, None);
        }
        unindex_session(tx, pk, sk, &stored_summary(old), None)?;
    }
    index_due(tx, pk, sk, None)
}

/// Keeps the due index in step with a delivery item (None: not due, or gone).
fn index_due(tx: &Connection, pk: &str, sk: &str, due_at: Option<&str>) -> Result<(), Db> {
    match due_at {
        Some(at) => tx
            .prepare_cached("INSERT OR REPLACE INTO due (pk, sk, due_at) VALUES (?1, ?2, ?3)")?
            .execute(params![pk, sk, at])?,
        None => tx
            .prepare_cached("DELETE FROM due WHERE pk = ?1 AND sk = ?2")?
            .execute(params![pk, sk])?,
    };
    Ok(())
}

/// Adds numbers to a statistics item (created as `blank`), kept in its own table: statistics feed
/// nothing. Through what the writer holds when it may ([`crate::held`]), else straight to the row.
fn add_stats(
    tx: &Connection,
    held: Option<&mut Held>,
    pk: &str,
    sk: &str,
    blank: Attributes,
    adds: &[(String, u64)],
) -> Result<(), Db> {
    if let Some(held) = held {
        return held.add_stats(tx, pk, sk, blank, adds);
    }
    let mut item = read_stats(tx, pk, sk)?.unwrap_or(blank);
    add_numbers(&mut item, adds);
    write_stats(tx, pk, sk, &item)
}

/// What a step writes, decided from its item as the transaction read it.
enum Outcome {
    Put {
        stored: Option<String>,
        new: Attributes,
    },
    Delete {
        stored: String,
    },
    Add {
        blank: Attributes,
        adds: Vec<(String, u64)>,
    },
    Nothing,
}

/// A step's item and what it writes there.
struct Decided {
    pk: String,
    sk: String,
    outcome: Outcome,
}

/// Reads a step's item and decides what the step writes, or why it is refused. Only reads.
fn decide(tx: &Connection, step: Step) -> Result<Result<Decided, Applied>, Db> {
    let Step { name, pk, sk, op } = step;
    if let Op::Add { blank, adds } = op {
        let outcome = Outcome::Add { blank, adds };
        return Ok(Ok(Decided { pk, sk, outcome }));
    }
    // The body as stored goes into the change record as it is.
    let stored = body(tx, &pk, &sk)?;
    let current: Option<Attributes> = stored
        .as_deref()
        .map(|b| serde_json::from_str(b).map_err(corrupt))
        .transpose()?;
    let refused = |current| {
        Ok(Err(Applied::Refused {
            step: name,
            current,
        }))
    };
    let keyed = || {
        let mut item = Attributes::new();
        item.insert(PK.to_owned(), pk.clone().into());
        item.insert(SK.to_owned(), sk.clone().into());
        item
    };
    let new = match op {
        Op::Put { when, .. } | Op::Delete { when } | Op::Set { when, .. }
            if !when.holds(current.as_ref()) =>
        {
            return refused(current);
        }
        Op::Put { item, .. } => item,
        Op::Delete { .. } => {
            let outcome = match stored {
                Some(stored) => Outcome::Delete { stored },
                None => Outcome::Nothing,
            };
            return Ok(Ok(Decided { pk, sk, outcome }));
        }
        Op::Set { attributes, .. } => {
            let mut item = current.unwrap_or_else(keyed);
            item.extend(attributes);
            item
        }
        Op::Count {
            entity,
            by,
            max,
            expires,
        } => {
            let Some(count) = Step::counted(by, max, current.as_ref()) else {
                return refused(current);
            };
            let mut item = current.unwrap_or_else(keyed);
            item.insert(
                "entity".to_owned(),
                serde_json::to_value(entity).map_err(corrupt)?,
            );
            item.insert("count".to_owned(), count.into());
            if let Some(t) = expires {
                item.insert("ttl".to_owned(), t.into());
            }
            item
        }
        // Taken above; nothing to write here.
        Op::Add { .. } => {
            let outcome = Outcome::Nothing;
            return Ok(Ok(Decided { pk, sk, outcome }));
        }
    };
    let outcome = Outcome::Put { stored, new };
    Ok(Ok(Decided { pk, sk, outcome }))
}

/// Writes what [`decide`] decided; statistics through what the writer holds, when given.
fn write_decided(tx: &Connection, held: Option<&mut Held>, d: Decided) -> Result<(), Db> {
    let Decided { pk, sk, outcome } = d;
    match outcome {
        Outcome::Put { stored, new } => put(tx, held, &pk, &sk, stored.as_deref(), &new),
        Outcome::Delete { stored } => delete(tx, held, &pk, &sk, &stored),
        Outcome::Add { blank, adds } => add_stats(tx, held, &pk, &sk, blank, &adds),
        Outcome::Nothing => Ok(()),
    }
}

/// Whether no two steps name the same item: then none reads what another writes, and every
/// step can be decided before any is written.
fn distinct_items(steps: &[Step]) -> bool {
    steps.iter().enumerate().all(|(i, a)| {
        steps[..i]
            .iter()
            .all(|b| (a.pk.as_str(), a.sk.as_str()) != (b.pk.as_str(), b.sk.as_str()))
    })
}

impl ItemStore for SqliteStore {
    async fn item<T: DeserializeOwned + Send + 'static>(
        &self,
        pk: &str,
        sk: &str,
        _read: Read,
    ) -> Result<Option<T>, StoreError> {
        // One file: every read sees every committed write, whatever was asked.
        // A point read by primary key is cheaper than a hop to the blocking pool (a thread woken
        // each way): it runs on the request's thread when a connection is free at once, and
        // waits in the pool otherwise.
        if let Some(c) = self.pool.try_get() {
            return Ok(get(&c, pk, sk)?);
        }
        let (pk, sk) = (pk.to_owned(), sk.to_owned());
        self.run(move |c| get(c, &pk, &sk)).await
    }

    /// The plan's steps in one immediate transaction, each condition checked against the item
    /// as the transaction sees it; a refusal leaves nothing of the plan written. Steps on
    /// distinct items (every plan the service builds) are all decided before any is written, with
    /// no savepoint; a plan that names an item twice runs step by step in a savepoint, so that a
    /// later step sees an earlier one's write.
    async fn apply(&self, plan: WritePlan) -> Result<Applied, StoreError> {
        let steps = plan.steps;
        if distinct_items(&steps) {
            return self
                .write_checked(
                    move |tx, _| {
                        let mut decided = Vec::with_capacity(steps.len());
                        for step in steps {
                            match decide(tx, step)? {
                                Ok(d) => decided.push(d),
                                Err(refused) => return Ok(Err(refused)),
                            }
                        }
                        Ok(Ok(decided))
                    },
                    |tx, held, decided| {
                        for d in decided {
                            write_decided(tx, Some(&mut *held), d)?;
                        }
                        Ok(Applied::Done)
                    },
                )
                .await;
        }
        self.write_unless(move |tx| {
            for step in steps {
                match decide(tx, step)? {
                    Ok(d) => write_decided(tx, None, d)?,
                    Err(refused) => return Ok(Err(refused)),
                }
            }
            Ok(Ok(Applied::Done))
        })
        .await
    }
}
