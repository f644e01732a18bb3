//! Write plans on DynamoDB: a plan of several steps is one `TransactWriteItems` (retried on
//! conflicts with concurrent transactions), a plan of one step one conditional PutItem,
//! DeleteItem or UpdateItem (half the write capacity). Every condition asks for the item as it
//! stood when it failed, so a refusal names its step and carries the current item.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use serde_json::Value;

use crate::dynamo::{DynamoStore, Item, TxOutcome, build, from_item, key, n, sdk_error, to_item};
use vigil_core::store::StoreError;
use vigil_core::store::keys::{PK, SK, TTL};
use vigil_core::store::plan::{Applied, Attributes, ItemStore, Op, Read, Step, When, WritePlan};
use vigil_core::store::write::{MAX_WRITE_ATTEMPTS, backoff};

/// What a step writes.
enum Write {
    Put(Item),
    Delete,
    Update(String),
}

/// One step as DynamoDB expressions.
struct Expr {
    name: &'static str,
    key: Item,
    write: Write,
    condition: Option<String>,
    names: HashMap<String, String>,
    values: Item,
}

fn attribute(v: &Value) -> Result<AttributeValue, StoreError> {
    serde_dynamo::to_attribute_value(v).map_err(|e| StoreError::Corrupt(Box::new(e)))
}

fn current(item: Option<Item>) -> Result<Option<Attributes>, StoreError> {
    item.map(from_item::<Attributes>).transpose()
}

impl Expr {
    fn name(&mut self, placeholder: &str, attr: &str) {
        self.names.insert(placeholder.to_owned(), attr.to_owned());
    }

    fn when(&mut self, when: &When) -> Result<(), StoreError> {
        self.condition = match when {
            When::Always => None,
            When::Absent => Some("attribute_not_exists(pk)".to_owned()),
            When::Present => Some("attribute_exists(pk)".to_owned()),
            When::Has(attr, v) => {
                self.name("#w", attr);
                self.values.insert(":w".to_owned(), attribute(v)?);
                Some("#w = :w".to_owned())
            }
            When::Lacks(attr) => {
                self.name("#w", attr);
                Some("attribute_exists(pk) AND attribute_not_exists(#w)".to_owned())
            }
            When::AbsentOrExpired(now) => {
                self.name("#w", TTL);
                self.values.insert(":w".to_owned(), n(now));
                Some("attribute_not_exists(pk) OR #w <= :w".to_owned())
            }
        };
        Ok(())
    }

    fn of(step: Step) -> Result<Self, StoreError> {
        let mut e = Expr {
            name: step.name,
            key: key(step.pk, step.sk),
            write: Write::Delete,
            condition: None,
            names: HashMap::new(),
            values: Item::new(),
        };
        match step.op {
            Op::Put { item, when } => {
                e.write = Write::Put(to_item(&item)?);
                e.when(&when)?;
            }
            Op::Delete { when } => e.when(&when)?,
            Op::Set { attributes, when } => {
                let mut sets = Vec::new();
                for (i, (attr, v)) in attributes.iter().enumerate() {
                    e.name(&format!("#s{i}"), attr);
                    e.values.insert(format!(":s{i}"), attribute(v)?);
                    sets.push(format!("#s{i} = :s{i}"));
                }
                e.write = Write::Update(format!("SET {}", sets.join(", ")));
                e.when(&when)?;
            }
            Op::Count {
                entity,
                by,
                max,
                expires,
            } => {
                e.name("#c", "count");
                e.name("#e", "entity");
                e.values.insert(":zero".to_owned(), n(0));
                e.values.insert(":by".to_owned(), n(by));
                let entity =
                    serde_json::to_value(entity).map_err(|x| StoreError::Corrupt(Box::new(x)))?;
                e.values.insert(":entity".to_owned(), attribute(&entity)?);
                let mut set = "SET #c = if_not_exists(#c, :zero) + :by, #e = :entity".to_owned();
                if let Some(t) = expires {
                    e.name("#t", TTL);
                    e.values.insert(":ttl".to_owned(), n(t));
                    set.push_str(", #t = :ttl");
                }
                e.write = Write::Update(set);
                // The same bounds as `Step::counted`: never below zero, never above `max`.
                e.condition = if by < 0 {
                    e.values.insert(":need".to_owned(), n(-by));
                    Some("#c >= :need".to_owned())
                } else if let Some(max) = max {
                    let room = i64::try_from(max).unwrap_or(i64::MAX) - by;
                    e.values.insert(":room".to_owned(), n(room));
                    Some(
                        if room >= 0 {
                            "attribute_not_exists(#c) OR #c <= :room"
                        } else {
                            "#c <= :room"
                        }
                        .to_owned(),
                    )
                } else {
                    None
                };
            }
            Op::Add { blank, adds } => {
                let mut sets = Vec::new();
                let mut added = Vec::new();
                for (i, (attr, v)) in blank.iter().enumerate() {
                    if attr == PK || attr == SK || adds.iter().any(|(a, _)| a == attr) {
                        continue;
                    }
                    e.name(&format!("#a{i}"), attr);
                    e.values.insert(format!(":a{i}"), attribute(v)?);
                    sets.push(format!("#a{i} = if_not_exists(#a{i}, :a{i})"));
                }
                for (i, (attr, by)) in adds.iter().enumerate() {
                    e.name(&format!("#n{i}"), attr);
                    e.values.insert(format!(":n{i}"), n(by));
                    added.push(format!("#n{i} :n{i}"));
                }
                let set = if sets.is_empty() {
                    String::new()
                } else {
                    format!("SET {} ", sets.join(", "))
                };
                e.write = Write::Update(format!("{set}ADD {}", added.join(", ")));
            }
        }
        Ok(e)
    }

    fn names(&self) -> Option<HashMap<String, String>> {
        (!self.names.is_empty()).then(|| self.names.clone())
    }

    fn values(&self) -> Option<Item> {
        (!self.values.is_empty()).then(|| self.values.clone())
    }
}

/// The table, the condition, its placeholders and the item on a failed condition, for any of
/// the SDK's write builders (they share these setters but no trait).
macro_rules! conditioned {
    ($builder:expr, $table:expr, $e:expr) => {
        $builder
            .table_name($table)
            .set_condition_expression($e.condition.clone())
            .set_expression_attribute_names($e.names())
            .set_expression_attribute_values($e.values())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    };
}

/// A single-item call's outcome: a failed condition is a refusal with the item it found.
macro_rules! single {
    ($sent:expr, $op:literal, $error:ident, $name:expr) => {
        match $sent {
            Ok(_) => Ok(Applied::Done),
            Err(SdkError::ServiceError(se)) if se.err().is_conditional_check_failed_exception() => {
                let item = match se.into_err() {
                    $error::ConditionalCheckFailedException(c) => c.item().cloned(),
                    _ => None,
                };
                Ok(Applied::Refused {
                    step: $name,
                    current: current(item)?,
                })
            }
            Err(e) => Err(sdk_error($op, e)),
        }
    };
}

impl DynamoStore {
    fn transact_item(&self, e: &Expr) -> Result<TransactWriteItem, StoreError> {
        let table = self.table();
        let b = TransactWriteItem::builder();
        Ok(match &e.write {
            Write::Put(item) => b.put(build(
                conditioned!(Put::builder(), table, e)
                    .set_item(Some(item.clone()))
                    .build(),
            )?),
            Write::Delete => b.delete(build(
                conditioned!(Delete::builder(), table, e)
                    .set_key(Some(e.key.clone()))
                    .build(),
            )?),
            Write::Update(expr) => b.update(build(
                conditioned!(Update::builder(), table, e)
                    .set_key(Some(e.key.clone()))
                    .update_expression(expr)
                    .build(),
            )?),
        }
        .build())
    }

    async fn apply_one(&self, e: Expr) -> Result<Applied, StoreError> {
        let (c, table) = (self.client(), self.table());
        match &e.write {
            Write::Put(item) => single!(
                conditioned!(c.put_item(), table, e)
                    .set_item(Some(item.clone()))
                    .send()
                    .await,
                "PutItem",
                PutItemError,
                e.name
            ),
            Write::Delete => single!(
                conditioned!(c.delete_item(), table, e)
                    .set_key(Some(e.key.clone()))
                    .send()
                    .await,
                "DeleteItem",
                DeleteItemError,
                e.name
            ),
            Write::Update(expr) => single!(
                conditioned!(c.update_item(), table, e)
                    .set_key(Some(e.key.clone()))
                    .update_expression(expr)
                    .send()
                    .await,
                "UpdateItem",
                UpdateItemError,
                e.name
            ),
        }
    }
}

impl ItemStore for DynamoStore {
    async fn item<T: serde::de::DeserializeOwned + Send + 'static>(
        &self,
        pk: &str,
        sk: &str,
        read: Read,
    ) -> Result<Option<T>, StoreError> {
        self.get(pk, sk, read == Read::Consistent).await
    }

    async fn apply(&self, plan: WritePlan) -> Result<Applied, StoreError> {
        let mut steps = plan
            .steps
            .into_iter()
            .map(Expr::of)
            .collect::<Result<Vec<_>, _>>()?;
        if steps.len() == 1
            && let Some(e) = steps.pop()
        {
            return self.apply_one(e).await;
        }
        let tx = steps
            .iter()
            .map(|e| self.transact_item(e))
            .collect::<Result<Vec<_>, _>>()?;
        for attempt in 0..MAX_WRITE_ATTEMPTS {
            match self.transact(tx.clone()).await? {
                TxOutcome::Done => return Ok(Applied::Done),
                TxOutcome::ConditionFailed(reasons) => {
                    let failed = reasons.into_iter().zip(&steps).find(|((f, _), _)| *f);
                    return match failed {
                        Some(((_, item), e)) => Ok(Applied::Refused {
                            step: e.name,
                            current: current(item)?,
                        }),
                        None => Err(StoreError::Backend(
                            "a refusal without a failed condition".into(),
                        )),
                    };
                }
                TxOutcome::Conflict => tokio::time::sleep(backoff(attempt)).await,
            }
        }
        let names: Vec<&str> = steps.iter().map(|e| e.name).collect();
        Err(StoreError::Throttled(
            format!(
                "{} too contended after {MAX_WRITE_ATTEMPTS} attempts",
                names.join(", ")
            )
            .into(),
        ))
    }
}
