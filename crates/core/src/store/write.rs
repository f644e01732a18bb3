//! Every write recipe of the layout, once: which items an operation writes, under which
//! conditions, and what each refusal means. The adapters only apply plans ([`ItemStore`]); the
//! store traits' write methods call these.

use std::time::Duration;

use serde_json::{Value, json};

use super::error::StoreError;
use super::items::{
    AccountItem, DeliveryItem, DeliveryRefItem, Entity, IdempotencyItem, KeyItem, ProjectItem,
    ResultItem, SessionItem, StatsItem, WebhookItem, idempotency_sk,
};
use super::keys::{
    DUE_AT, PROJECT_COUNT_SK, PROJECT_SK, REASON_ATTR_PREFIX, WEBHOOK_COUNT_SK, account_pk,
    account_project_sk, project_pk, public_key_pk, session_sk, stats_shard, webhook_sk,
};
use super::outcome::{ProjectInsert, WebhookInsert};
use super::plan::{
    Applied, Attributes, ItemStore, Outcome, Read, Step, StepName, When, WritePlan, parse,
};
use crate::domain::idempotency::{Created, Once, Used, Written};
use crate::domain::insight::{Granularity, Tally};
use crate::domain::webhook::MAX_WEBHOOKS_PER_PROJECT;
use crate::domain::{
    Account, AccountId, Delivery, NewResult, Project, ProjectId, ResultPosition, Timestamp,
    Webhook, WebhookId,
};

type Res<T> = Result<T, StoreError>;

/// Optimistic writes re-planned this many times under contention before giving up. Contention on
/// one session is rare in practice (a visitor's results arrive one after another); the bound only
/// stops a pathological hot key from looping forever.
pub const MAX_WRITE_ATTEMPTS: u32 = 40;

/// "Full jitter" backoff: a random delay up to an exponentially growing, capped ceiling, so
/// contending writers spread out instead of colliding again in lockstep.
pub fn backoff(attempt: u32) -> Duration {
    let ceiling = (10u64 << attempt.min(5)).min(250);
    Duration::from_millis(rand::random_range(1..=ceiling))
}

/// The step that records an idempotency key's use, unless it is in use and unexpired.
fn key_use(once: Option<&Once>, created: impl FnOnce() -> Created) -> Res<Option<Step>> {
    let Some(o) = once else { return Ok(None) };
    let item = IdempotencyItem::new(o, created());
    Step::put(
        StepName::KeyUse,
        &item,
        When::AbsentOrExpired(o.at.unix_seconds()),
    )
    .map(Some)
}

/// The use of `once`'s key that refused a write: the item the backend returned, or read now.
async fn used<S: ItemStore + ?Sized>(
    s: &S,
    once: Option<&Once>,
    current: Option<Attributes>,
) -> Res<Used> {
    let Some(once) = once else {
        return Err(StoreError::Backend("a key's refusal without a key".into()));
    };
    let item: Option<IdempotencyItem> = match current {
        Some(c) => Some(parse(c)?),
        None => {
            s.item(
                &account_pk(&once.account),
                &idempotency_sk(&once.key),
                Read::Consistent,
            )
            .await?
        }
    };
    item.and_then(|i| i.used(once.at))
        .ok_or_else(|| StoreError::Backend(format!("idempotency key {} vanished", once.key).into()))
}

pub(crate) fn refused(what: &str, step: &str) -> StoreError {
    StoreError::Backend(format!("{what}: step `{step}` refused").into())
}

// ---- Projects

/// A project, its account's copy and its public key's copy, each new, under the account's limit;
/// with `once`, only if the key is unused.
pub async fn insert_project<S: ItemStore + ?Sized>(
    s: &S,
    project: &Project,
    max_projects: u32,
    once: Option<&Once>,
) -> Res<Written<ProjectInsert>> {
    let created = || Created::Project {
        project_id: project.id.clone(),
    };
    // The key first and the items before the count: a retried creation is a replay, not a
    // refusal by a limit it has itself reached.
    let plan = WritePlan::new()
        .with(key_use(once, created)?)
        .put(StepName::Project, &ProjectItem::from(project), When::Absent)?
        .put(
            StepName::Listed,
            &ProjectItem::listed(project),
            When::Absent,
        )?
        .put(
            StepName::ByKey,
            &ProjectItem::by_public_key(project),
            When::Absent,
        )?
        .count(
            StepName::ProjectCount,
            (account_pk(&project.account_id), PROJECT_COUNT_SK),
            Entity::ProjectCount,
            1,
            Some(u64::from(max_projects)),
        );
    match s.apply(plan).await?.recognised()? {
        Outcome::Done => Ok(Written::New(ProjectInsert::Created)),
        Outcome::Refused {
            step: StepName::KeyUse,
            current,
        } => Ok(Written::Before(used(s, once, current).await?)),
        Outcome::Refused {
            step: StepName::ProjectCount,
            ..
        } => Ok(Written::New(ProjectInsert::LimitReached)),
        // The SDK retried a transaction that had been applied (its answer was lost or late): the
        // items it finds are its own.
        Outcome::Refused { .. }
            if stored_project(s, &project.id).await?.as_ref() == Some(project) =>
        {
            Ok(Written::New(ProjectInsert::Created))
        }
        Outcome::Refused {
            step: StepName::ByKey,
            ..
        } => Err(StoreError::Backend(
            format!("the public key of project {} is another's", project.id).into(),
        )),
        Outcome::Refused { .. } => Err(StoreError::Backend(
            format!("project id {} already exists", project.id).into(),
        )),
    }
}

async fn stored_project<S: ItemStore + ?Sized>(s: &S, id: &ProjectId) -> Res<Option<Project>> {
    let item: Option<ProjectItem> = s
        .item(&project_pk(id), PROJECT_SK, Read::Consistent)
        .await?;
    Ok(item.map(Project::from))
}

/// Replaces an existing project of the same account and its copies; false when there is none.
pub async fn update_project<S: ItemStore + ?Sized>(s: &S, project: &Project) -> Res<bool> {
    let owner = When::Has("accountId", json!(project.account_id.as_str()));
    let plan = WritePlan::new()
        .put(StepName::Project, &ProjectItem::from(project), owner)?
        .put(
            StepName::Listed,
            &ProjectItem::listed(project),
            When::Present,
        )?
        .put(
            StepName::ByKey,
            &ProjectItem::by_public_key(project),
            When::Always,
        )?;
    Ok(s.apply(plan).await? == Applied::Done)
}

/// Seeds a project whole: its items as given, the copies of a replaced public key or a former
/// account removed, and both accounts' counts moved.
pub async fn seed_project<S: ItemStore + ?Sized>(s: &S, project: &Project) -> Res<()> {
    let old: Option<Project> = stored_project(s, &project.id).await?;
    let mut plan = WritePlan::new()
        .put(StepName::Project, &ProjectItem::from(project), When::Always)?
        .put(
            StepName::Listed,
            &ProjectItem::listed(project),
            When::Always,
        )?
        .put(
            StepName::ByKey,
            &ProjectItem::by_public_key(project),
            When::Always,
        )?;
    if let Some(old_key) = old
        .as_ref()
        .map(|o| &o.api_key_public)
        .filter(|k| *k != &project.api_key_public)
    {
        // The seed replaced the public key: the old one must stop finding the project.
        plan = plan.delete(
            StepName::ReplacedKey,
            public_key_pk(old_key),
            PROJECT_SK.to_owned(),
            When::Always,
        );
    }
    let moved_from = old.map(|o| o.account_id);
    if moved_from.as_ref() != Some(&project.account_id) {
        let count = |a: &AccountId| (account_pk(a), PROJECT_COUNT_SK);
        plan = plan.count(
            StepName::ProjectCount,
            count(&project.account_id),
            Entity::ProjectCount,
            1,
            None,
        );
        if let Some(from) = moved_from {
            // The seed gave the project another account: it leaves the old one's list.
            plan = plan
                .delete(
                    StepName::FormerListed,
                    account_pk(&from),
                    account_project_sk(&project.id),
                    When::Always,
                )
                .count(
                    StepName::FormerCount,
                    count(&from),
                    Entity::ProjectCount,
                    -1,
                    None,
                );
        }
    }
    done(
        s.apply(plan).await?,
        &format!("seeding project {}", project.id),
    )
}

pub async fn put_account<S: ItemStore + ?Sized>(s: &S, account: &Account) -> Res<()> {
    let plan =
        WritePlan::new().put(StepName::Account, &AccountItem::from(account), When::Always)?;
    done(s.apply(plan).await?, "writing an account")
}

pub async fn put_key<S: ItemStore + ?Sized>(s: &S, key_hash: &str, account: &AccountId) -> Res<()> {
    let plan = WritePlan::new().put(
        StepName::Key,
        &KeyItem::new(key_hash, account),
        When::Always,
    )?;
    done(s.apply(plan).await?, "writing a key")
}

fn done(applied: Applied, what: &str) -> Res<()> {
    match applied {
        Applied::Done => Ok(()),
        Applied::Refused { step, .. } => Err(refused(what, step)),
    }
}

// ---- Results

/// One result, its session's summary (optimistically, on the summary's `seq`), its hour's and
/// day's statistics and the key's use, together; re-planned on the summary a concurrent writer
/// left.
pub async fn write_result<S: ItemStore + ?Sized>(
    s: &S,
    r: &NewResult,
    once: Option<&Once>,
    prior: Option<PriorSummary>,
) -> Res<Written<ResultPosition>> {
    let (pk, sk) = (project_pk(&r.project_id), session_sk(&r.session_id));
    let tally = Tally::of(r);
    let counts = tally.counts();
    let mut adds = vec![
        ("visits".to_owned(), 1),
        ("bots".to_owned(), u64::from(tally.bot)),
        ("proxies".to_owned(), u64::from(tally.proxy)),
    ];
    adds.extend(
        counts
            .reasons
            .iter()
            .map(|(code, n)| (format!("{REASON_ATTR_PREFIX}{code}"), *n)),
    );
    // The first attempt plans on a summary read beside other work, a retry on the summary that
    // the refusal returned: each saves a read.
    let mut known: Option<Option<SessionItem>> = prior.map(|p| p.0);
    for attempt in 0..MAX_WRITE_ATTEMPTS {
        let old = match known.take() {
            Some(current) => current,
            None => s.item::<SessionItem>(&pk, &sk, Read::Consistent).await?,
        };
        let session = SessionItem::next(old.as_ref(), r);
        let result = ResultItem::new(r, session.seq);
        let position = result.position();
        let written = match &old {
            None => When::Absent,
            Some(o) => When::Has("seq", json!(o.seq)),
        };
        let mut plan = WritePlan::new()
            .with(key_use(once, || {
                Created::event(&r.project_id, &r.session_id, position)
            })?)
            .put(StepName::Result, &result, When::Absent)?
            .put(StepName::Summary, &session, written)?;
        for g in Granularity::ALL {
            let blank = StatsItem::empty(
                &r.project_id,
                g,
                g.floor(r.result.created_at),
                stats_shard(&r.session_id),
            );
            plan = plan.add(StepName::stats(g), &blank, adds.clone())?;
        }
        match s.apply(plan).await?.recognised()? {
            Outcome::Done => return Ok(Written::New(position)),
            // An identical result under the same key is no sign that this write landed:
            // concurrent writers of the same scores at the same millisecond build identical
            // items. (A retry of an applied DynamoDB transaction is answered from its
            // ClientRequestToken, which the SDK sets.)
            Outcome::Refused {
                step: StepName::KeyUse,
                current,
            } => {
                return Ok(Written::Before(used(s, once, current).await?));
            }
            Outcome::Refused {
                step: StepName::Summary,
                current,
            } => {
                known = current.map(parse).transpose()?.map(Some);
            }
            Outcome::Refused { .. } => {}
        }
        tokio::time::sleep(backoff(attempt)).await;
    }
    Err(StoreError::Throttled(
        format!(
            "session {} too contended after {MAX_WRITE_ATTEMPTS} attempts",
            r.session_id
        )
        .into(),
    ))
}

/// A session's summary as read before its next result is written ([`ResultStore::prior_summary`]),
/// so that the read can go out beside other work. Only the store makes one; a stale one costs a
/// refused attempt and a re-plan, never a wrong write.
///
/// [`ResultStore::prior_summary`]: super::ResultStore::prior_summary
#[derive(Debug, Clone)]
pub struct PriorSummary(Option<SessionItem>);

impl PriorSummary {
    /// A summary the store knows without reading it (the one it wrote last, kept in memory).
    pub fn known(summary: SessionItem) -> Self {
        Self(Some(summary))
    }

    /// The session's path with this visit's page added ([`SessionState::path_after`]).
    ///
    /// [`SessionState::path_after`]: crate::domain::session::SessionState::path_after
    pub fn path_after(&self, page: Option<vigil_detect::path::Page>) -> vigil_detect::path::Path {
        crate::domain::session::SessionState::path_after(self.0.as_ref().and_then(|s| s.path), page)
            .unwrap_or_default()
    }
}

/// The session's summary, read for [`write_result`].
pub async fn prior_summary<S: ItemStore + ?Sized>(
    s: &S,
    project: &crate::domain::ProjectId,
    session: &crate::domain::SessionId,
) -> Res<PriorSummary> {
    let (pk, sk) = (project_pk(project), session_sk(session));
    Ok(PriorSummary(s.item(&pk, &sk, Read::Consistent).await?))
}

// ---- Webhooks and deliveries

/// A webhook and its (type, url) guard, both new, under the project's limit.
pub async fn insert_webhook<S: ItemStore + ?Sized>(
    s: &S,
    project: &ProjectId,
    webhook: &Webhook,
) -> Res<WebhookInsert> {
    let item = WebhookItem::new(project, webhook);
    let plan = WritePlan::new()
        .put(StepName::Guard, &item.guard(), When::Absent)?
        .put(StepName::Webhook, &item, When::Absent)?
        .count(
            StepName::WebhookCount,
            (project_pk(project), WEBHOOK_COUNT_SK),
            Entity::WebhookCount,
            1,
            Some(MAX_WEBHOOKS_PER_PROJECT as u64),
        );
    match s.apply(plan).await?.recognised()? {
        Outcome::Done => Ok(WebhookInsert::Created),
        Outcome::Refused {
            step: StepName::Guard,
            ..
        } => Ok(WebhookInsert::Duplicate),
        Outcome::Refused {
            step: StepName::WebhookCount,
            ..
        } => Ok(WebhookInsert::LimitReached),
        Outcome::Refused { .. } => Err(StoreError::Backend(
            format!("webhook id {} already exists", item.id).into(),
        )),
    }
}

/// Removes a webhook, its guard and one from the count; false when it did not exist (or another
/// deletion got there first).
pub async fn delete_webhook<S: ItemStore + ?Sized>(
    s: &S,
    project: &ProjectId,
    id: &WebhookId,
) -> Res<bool> {
    let (pk, sk) = (project_pk(project), webhook_sk(id));
    let Some(item) = s.item::<WebhookItem>(&pk, &sk, Read::Consistent).await? else {
        return Ok(false);
    };
    let guard = item.guard();
    let plan = WritePlan::new()
        .delete(StepName::Webhook, pk.clone(), sk, When::Present)
        .delete(StepName::Guard, guard.pk, guard.sk, When::Present)
        .count(
            StepName::WebhookCount,
            (pk, WEBHOOK_COUNT_SK),
            Entity::WebhookCount,
            -1,
            None,
        );
    Ok(s.apply(plan).await? == Applied::Done)
}

/// A webhook's secrets, if it exists and its secret is still `expected` (None: it had none): a
/// concurrent rotation makes this one refuse rather than be lost.
pub async fn set_webhook_secrets<S: ItemStore + ?Sized>(
    s: &S,
    project: &ProjectId,
    id: &WebhookId,
    expected: Option<&crate::domain::webhook::WebhookSecret>,
    secrets: &crate::domain::webhook::Secrets,
) -> Res<bool> {
    let value = |v: Option<&str>| v.map_or(Value::Null, |s| Value::String(s.to_owned()));
    let mut attrs = Attributes::new();
    attrs.insert(
        "secret".into(),
        value(secrets.current.as_ref().map(|s| s.as_str())),
    );
    attrs.insert(
        "previousSecret".into(),
        value(secrets.previous.as_ref().map(|s| s.as_str())),
    );
    attrs.insert(
        "previousUntil".into(),
        secrets
            .previous_until
            .map_or(Value::Null, |t| Value::String(t.to_string())),
    );
    attrs.insert(
        "earlierSecrets".into(),
        serde_json::to_value(&secrets.earlier).map_err(|e| StoreError::Backend(e.into()))?,
    );
    let when = match expected {
        Some(old) => When::Has("secret", json!(old.as_str())),
        None => When::Lacks("secret"),
    };
    let plan = WritePlan::new().set(
        StepName::Webhook,
        project_pk(project),
        webhook_sk(id),
        attrs,
        when,
    );
    Ok(s.apply(plan).await? == Applied::Done)
}

/// Stops deliveries to a webhook; nothing when it was deleted meanwhile.
pub async fn disable_webhook<S: ItemStore + ?Sized>(
    s: &S,
    project: &ProjectId,
    id: &WebhookId,
) -> Res<()> {
    let mut disabled = Attributes::new();
    disabled.insert("disabled".to_owned(), Value::Bool(true));
    let plan = WritePlan::new().set(
        StepName::Webhook,
        project_pk(project),
        webhook_sk(id),
        disabled,
        When::Present,
    );
    s.apply(plan).await.map(drop)
}

/// A new delivery, and where its id finds it; false when it exists (a replayed record).
pub async fn create_delivery<S: ItemStore + ?Sized>(s: &S, delivery: &Delivery) -> Res<bool> {
    let plan = WritePlan::new()
        .put(
            StepName::Delivery,
            &DeliveryItem::from(delivery),
            When::Absent,
        )?
        .put(
            StepName::DeliveryRef,
            &DeliveryRefItem::from(delivery),
            When::Always,
        )?;
    Ok(s.apply(plan).await? == Applied::Done)
}

/// Queues a test event's delivery, counted in its account's minute up to `max`: the count and
/// the delivery are written together or not at all. False when the minute's budget is spent.
pub async fn create_test_delivery<S: ItemStore + ?Sized>(
    s: &S,
    account: &AccountId,
    delivery: &Delivery,
    max: TestCaps,
) -> Res<TestAdmission> {
    let minute = delivery.created_at.unix_seconds().div_euclid(60);
    let sk = format!("TESTS#{minute}");
    // The webhook's own cap is a counter in the same write as the delivery it admits, as the
    // account's is: concurrent test events cannot all read a log with room and all be queued.
    let webhook_sk = format!("TESTS#{}#{minute}", delivery.webhook_id);
    let plan = WritePlan::new()
        .count_until(
            StepName::TestBudget,
            (account_pk(account), &sk),
            max.account,
            (minute + 2) * 60,
        )
        .count_until(
            StepName::WebhookTestBudget,
            (project_pk(&delivery.project_id), &webhook_sk),
            max.webhook,
            (minute + 2) * 60,
        )
        .put(
            StepName::Delivery,
            &DeliveryItem::from(delivery),
            When::Absent,
        )?
        .put(
            StepName::DeliveryRef,
            &DeliveryRefItem::from(delivery),
            When::Always,
        )?;
    match s.apply(plan).await?.recognised()? {
        Outcome::Done => Ok(TestAdmission::Queued),
        Outcome::Refused {
            step: StepName::TestBudget,
            ..
        } => Ok(TestAdmission::AccountFull),
        Outcome::Refused {
            step: StepName::WebhookTestBudget,
            ..
        } => Ok(TestAdmission::WebhookFull),
        Outcome::Refused { step, .. } => Err(refused("a test delivery", step.name())),
    }
}

/// The test events a calendar minute admits: per account, and per webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestCaps {
    pub account: u64,
    pub webhook: u64,
}

/// Whether a test delivery was queued, or which budget of its minute was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestAdmission {
    Queued,
    AccountFull,
    WebhookFull,
}

/// A delivery's new state if its due time is still `expected` (None: not due).
pub async fn update_delivery<S: ItemStore + ?Sized>(
    s: &S,
    delivery: &Delivery,
    expected: Option<Timestamp>,
) -> Res<bool> {
    let when = match expected {
        Some(t) => When::Has(DUE_AT, json!(t.to_string())),
        None => When::Lacks(DUE_AT),
    };
    let plan = WritePlan::new().put(StepName::Delivery, &DeliveryItem::from(delivery), when)?;
    Ok(s.apply(plan).await? == Applied::Done)
}

// ---- Agents

/// Writes `item` whole, whatever stood at its key.
pub async fn put_item<S: ItemStore + ?Sized, T: serde::Serialize>(
    s: &S,
    step: StepName,
    item: &T,
) -> Res<()> {
    let plan = WritePlan::new().put(step, item, When::Always)?;
    match s.apply(plan).await? {
        Applied::Done => Ok(()),
        Applied::Refused { step, .. } => Err(refused("an unconditional put", step)),
    }
}

/// Writes `item` unless an unexpired one stands at its key; whether it was written.
pub async fn put_once<S: ItemStore + ?Sized, T: serde::Serialize>(
    s: &S,
    item: &T,
    now: i64,
) -> Res<bool> {
    let plan = WritePlan::new().put(StepName::FirstUse, item, When::AbsentOrExpired(now))?;
    match s.apply(plan).await?.recognised()? {
        Outcome::Done => Ok(true),
        Outcome::Refused {
            step: StepName::FirstUse,
            ..
        } => Ok(false),
        Outcome::Refused { step, .. } => Err(refused("a first use", step.name())),
    }
}
