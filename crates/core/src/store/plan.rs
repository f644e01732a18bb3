//! Point reads and writes as plans. The layout ([`super::write`]) says, per operation, which items change and under
//! which conditions, as named steps; each adapter has one function, [`ItemStore::apply`], that
//! applies a whole plan or none of it and names the step whose condition failed. SQLite checks the
//! conditions inside its write transaction; DynamoDB turns the steps into one `TransactWriteItems`
//! (one conditional single-item call when the plan has one step).

use std::future::Future;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::error::StoreError;
use super::items::Entity;
use super::keys::{PK, SK, TTL};
use crate::domain::insight::Granularity;

/// An item's attributes, `pk` and `sk` included.
pub type Attributes = Map<String, Value>;

/// The condition a step's item must meet, as it stands before the plan.
#[derive(Debug, Clone, PartialEq)]
pub enum When {
    Always,
    Absent,
    Present,
    /// Present, with this attribute equal to this value (a string or a number).
    Has(&'static str, Value),
    /// Present, without this attribute.
    Lacks(&'static str),
    /// Absent, or expired: its `ttl` at or before these epoch seconds (a table's TTL lags).
    AbsentOrExpired(i64),
}

impl When {
    /// Whether `current` (None: no item) meets the condition.
    pub fn holds(&self, current: Option<&Attributes>) -> bool {
        match (self, current) {
            (When::Always, _) => true,
            (When::Absent, c) => c.is_none(),
            (When::Present, c) => c.is_some(),
            (When::Has(attr, v), Some(c)) => c.get(*attr).is_some_and(|x| same(x, v)),
            (When::Lacks(attr), Some(c)) => c.get(*attr).is_none_or(Value::is_null),
            (When::AbsentOrExpired(now), Some(c)) => c
                .get(TTL)
                .and_then(Value::as_i64)
                .is_some_and(|t| t <= *now),
            (When::AbsentOrExpired(_), None) => true,
            (When::Has(..) | When::Lacks(_), None) => false,
        }
    }
}

/// Equal as DynamoDB compares: numbers by value, whatever their JSON form.
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

/// What a step does to the item at its key.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Writes the whole item.
    Put { item: Attributes, when: When },
    /// Removes the item (nothing when it is absent and `when` allows that).
    Delete { when: When },
    /// Sets these attributes of the item, keeping the others.
    Set { attributes: Attributes, when: When },
    /// Adds `by` to the item's `count` (an absent item counts 0 and is created as `entity`),
    /// refused when the new count would exceed `max` or go below zero: limits that hold exactly
    /// under concurrent writers.
    Count {
        entity: Entity,
        by: i64,
        max: Option<u64>,
        /// The item's `ttl` (epoch seconds), for a count that belongs to a window.
        expires: Option<i64>,
    },
    /// Adds each number to its attribute, creating the item as `blank` on its first write
    /// (statistics).
    Add {
        blank: Attributes,
        adds: Vec<(String, u64)>,
    },
}

/// The steps of the layout's plans, as one table: a variant, and the text that adapters carry back
/// in a refusal and that errors and logs show.
macro_rules! step_names {
    ($($variant:ident => $name:literal,)*) => {
        /// What a plan's step is, from a closed list: a refusal is recognised by its variant
        /// ([`Applied::recognised`]), so a misspelt name is a compile error rather than a
        /// comparison that is silently false.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum StepName {
            $($variant,)*
        }

        impl StepName {
            pub const ALL: &[StepName] = &[$(StepName::$variant,)*];

            /// The step's name as adapters report it and messages show it.
            pub const fn name(self) -> &'static str {
                match self {
                    $(StepName::$variant => $name,)*
                }
            }
        }
    };
}

step_names! {
    KeyUse => "idempotency key",
    Project => "project",
    Listed => "account's copy",
    ByKey => "public key's copy",
    ProjectCount => "project count",
    ReplacedKey => "replaced public key's copy",
    FormerListed => "former account's copy",
    FormerCount => "former account's count",
    Account => "account",
    Key => "key",
    Result => "result",
    Summary => "session summary",
    HourStats => "hour",
    DayStats => "day",
    Webhook => "webhook",
    Guard => "type and url guard",
    WebhookCount => "webhook count",
    Delivery => "delivery",
    DeliveryRef => "delivery's reference",
    TestBudget => "account's test budget",
    WebhookTestBudget => "webhook's test budget",
    FirstUse => "first use",
    Directory => "directory",
    Label => "label",
    Labelled => "labelled project",
}

impl StepName {
    /// The step that adds to a granularity's statistics, named as the granularity is.
    pub fn stats(g: Granularity) -> Self {
        match g {
            Granularity::Hour => StepName::HourStats,
            Granularity::Day => StepName::DayStats,
        }
    }

    /// The step an adapter's refusal names: every step of a plan was named from this list.
    pub fn of(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.name() == name)
    }
}

/// One named change of one item. The name is kept as text ([`StepName::name`]): that is what
/// adapters carry into a refusal and their messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub name: &'static str,
    pub pk: String,
    pub sk: String,
    pub op: Op,
}

impl Step {
    /// The new count of a [`Op::Count`] step over `current`, or None when it is refused.
    pub fn counted(by: i64, max: Option<u64>, current: Option<&Attributes>) -> Option<i64> {
        let now = current
            .and_then(|c| c.get("count"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let next = now.checked_add(by)?;
        let within = max.is_none_or(|m| by <= 0 || u64::try_from(next).is_ok_and(|n| n <= m));
        (next >= 0 && within).then_some(next)
    }
}

/// The steps of one write, all applied or none, in the order their refusals are reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WritePlan {
    pub steps: Vec<Step>,
}

/// How a plan ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    Done,
    /// Nothing was written: the first step (in plan order) whose condition failed, and its item as
    /// it stood when the backend says so.
    Refused {
        step: &'static str,
        current: Option<Attributes>,
    },
}

/// How a plan ended, its refused step recognised: what the write recipes match on.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done,
    Refused {
        step: StepName,
        current: Option<Attributes>,
    },
}

impl Applied {
    /// The outcome with the refused step as a [`StepName`]; an error for a name no plan gives (an
    /// adapter only reports the names of the plan's own steps).
    pub fn recognised(self) -> Result<Outcome, StoreError> {
        match self {
            Applied::Done => Ok(Outcome::Done),
            Applied::Refused { step, current } => match StepName::of(step) {
                Some(step) => Ok(Outcome::Refused { step, current }),
                None => Err(StoreError::Backend(
                    format!("a refusal by an unknown step `{step}`").into(),
                )),
            },
        }
    }
}

fn attributes<T: Serialize>(item: &T) -> Result<Attributes, StoreError> {
    match serde_json::to_value(item) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(StoreError::Corrupt("an item that is not a map".into())),
        Err(e) => Err(StoreError::Corrupt(Box::new(e))),
    }
}

fn key_of(item: &Attributes) -> Result<(String, String), StoreError> {
    let get = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_owned);
    get(PK)
        .zip(get(SK))
        .ok_or_else(|| StoreError::Corrupt("an item without pk and sk".into()))
}

/// An item read back from a step's report or a read.
pub fn parse<T: DeserializeOwned>(item: Attributes) -> Result<T, StoreError> {
    serde_json::from_value(Value::Object(item)).map_err(|e| StoreError::Corrupt(Box::new(e)))
}

impl Step {
    /// A step on a typed item, under the item's own `pk` and `sk`.
    fn on_item<T: Serialize>(
        name: StepName,
        item: &T,
        op: impl FnOnce(Attributes) -> Op,
    ) -> Result<Self, StoreError> {
        let item = attributes(item)?;
        let (pk, sk) = key_of(&item)?;
        Ok(Step {
            name: name.name(),
            pk,
            sk,
            op: op(item),
        })
    }

    /// Puts a typed item.
    pub fn put<T: Serialize>(name: StepName, item: &T, when: When) -> Result<Self, StoreError> {
        Self::on_item(name, item, |item| Op::Put { item, when })
    }
}

impl WritePlan {
    pub fn new() -> Self {
        Self::default()
    }

    fn then(mut self, name: StepName, pk: String, sk: String, op: Op) -> Self {
        let name = name.name();
        self.steps.push(Step { name, pk, sk, op });
        self
    }

    /// Puts a typed item (its `pk` and `sk` are its own).
    pub fn put<T: Serialize>(
        self,
        name: StepName,
        item: &T,
        when: When,
    ) -> Result<Self, StoreError> {
        Ok(self.with(Some(Step::put(name, item, when)?)))
    }

    pub fn delete(self, name: StepName, pk: String, sk: String, when: When) -> Self {
        self.then(name, pk, sk, Op::Delete { when })
    }

    pub fn set(
        self,
        name: StepName,
        pk: String,
        sk: String,
        attributes: Attributes,
        when: When,
    ) -> Self {
        self.then(name, pk, sk, Op::Set { attributes, when })
    }

    pub fn count(
        self,
        name: StepName,
        (pk, sk): (String, &str),
        entity: Entity,
        by: i64,
        max: Option<u64>,
    ) -> Self {
        let expires = None;
        self.then(
            name,
            pk,
            sk.to_owned(),
            Op::Count {
                entity,
                by,
                max,
                expires,
            },
        )
    }

    /// A [`WritePlan::count`] up to `max` of a window's item, which expires at `expires`.
    pub fn count_until(
        self,
        name: StepName,
        (pk, sk): (String, &str),
        max: u64,
        expires: i64,
    ) -> Self {
        let op = Op::Count {
            entity: Entity::Counter,
            by: 1,
            max: Some(max),
            expires: Some(expires),
        };
        self.then(name, pk, sk.to_owned(), op)
    }

    /// Adds numbers to a typed item's attributes, creating it as `blank`.
    pub fn add<T: Serialize>(
        self,
        name: StepName,
        blank: &T,
        adds: Vec<(String, u64)>,
    ) -> Result<Self, StoreError> {
        let step = Step::on_item(name, blank, |blank| Op::Add { blank, adds })?;
        Ok(self.with(Some(step)))
    }

    /// Appends `step` when given.
    pub fn with(mut self, step: Option<Step>) -> Self {
        self.steps.extend(step);
        self
    }
}

type Res<T> = Result<T, StoreError>;

/// How fresh a read must be. DynamoDB's eventually consistent reads cost half and may miss a
/// write of the last second; SQLite's are always current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    Consistent,
    Eventual,
}

/// What the layout's write recipes need of a backend: a consistent read of one item, and plans
/// applied whole.
pub trait ItemStore: Send + Sync {
    /// The item at (pk, sk); None when absent.
    fn item<T: DeserializeOwned + Send + 'static>(
        &self,
        pk: &str,
        sk: &str,
        read: Read,
    ) -> impl Future<Output = Res<Option<T>>> + Send;

    /// Applies every step or none; a refusal names the first failed step in plan order.
    /// Contention that is nobody's refusal (a concurrent transaction) is retried inside.
    fn apply(&self, plan: WritePlan) -> impl Future<Output = Res<Applied>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(v: Value) -> Attributes {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn conditions_read_the_item_as_it_stands() {
        let it = item(json!({"pk": "P", "sk": "S", "seq": 3, "dueAt": "x", "ttl": 100}));
        assert!(When::Always.holds(None) && When::Always.holds(Some(&it)));
        assert!(When::Absent.holds(None) && !When::Absent.holds(Some(&it)));
        assert!(!When::Present.holds(None) && When::Present.holds(Some(&it)));
        assert!(When::Has("seq", json!(3)).holds(Some(&it)));
        assert!(
            When::Has("seq", json!(3.0)).holds(Some(&it)),
            "numbers by value"
        );
        assert!(!When::Has("seq", json!(4)).holds(Some(&it)));
        assert!(!When::Has("seq", json!(3)).holds(None));
        assert!(When::Has("dueAt", json!("x")).holds(Some(&it)));
        assert!(!When::Lacks("dueAt").holds(Some(&it)) && When::Lacks("other").holds(Some(&it)));
        assert!(!When::Lacks("other").holds(None));
        assert!(When::AbsentOrExpired(100).holds(Some(&it)));
        assert!(!When::AbsentOrExpired(99).holds(Some(&it)));
        assert!(When::AbsentOrExpired(0).holds(None));
    }

    #[test]
    fn step_names_are_distinct_and_recognised_by_their_text() {
        for (i, a) in StepName::ALL.iter().enumerate() {
            assert_eq!(StepName::of(a.name()), Some(*a));
            assert!(StepName::ALL[..i].iter().all(|b| b.name() != a.name()));
        }
        for g in Granularity::ALL {
            assert_eq!(StepName::stats(g).name(), g.as_str(), "as before the list");
        }
        let refused = |step| Applied::Refused {
            step,
            current: None,
        };
        assert_eq!(
            refused("session summary").recognised().unwrap(),
            Outcome::Refused {
                step: StepName::Summary,
                current: None
            }
        );
        assert!(refused("no such step").recognised().is_err());
    }

    #[test]
    fn counts_stay_within_their_limit_and_above_zero() {
        let at = |n: i64| item(json!({"count": n}));
        assert_eq!(Step::counted(1, Some(2), None), Some(1));
        assert_eq!(Step::counted(1, Some(2), Some(&at(1))), Some(2));
        assert_eq!(Step::counted(1, Some(2), Some(&at(2))), None);
        assert_eq!(Step::counted(1, Some(0), None), None, "a limit of zero");
        assert_eq!(Step::counted(1, None, Some(&at(7))), Some(8));
        assert_eq!(Step::counted(-1, None, Some(&at(1))), Some(0));
        assert_eq!(Step::counted(-1, None, Some(&at(0))), None);
        assert_eq!(Step::counted(-1, Some(5), None), None);
    }

    #[test]
    fn steps_take_their_keys_from_their_items() {
        let plan = WritePlan::new()
            .put(
                StepName::Project,
                &json!({"pk": "P", "sk": "S", "x": 1}),
                When::Absent,
            )
            .unwrap();
        assert_eq!(
            (plan.steps[0].pk.as_str(), plan.steps[0].sk.as_str()),
            ("P", "S")
        );
        assert!(
            WritePlan::new()
                .put(StepName::Project, &json!({"pk": "P"}), When::Always)
                .is_err()
        );
        assert!(
            WritePlan::new()
                .put(StepName::Project, &json!([1]), When::Always)
                .is_err()
        );
    }
}
