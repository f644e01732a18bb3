//! The single-table item layout shared by both stores (and, through the change feed, by the webhook
//! dispatcher). Every item has a partition key `pk` and sort key `sk`; the README has the full table.
//!
//! | item            | pk                  | sk                                        |
//! |-----------------|---------------------|-------------------------------------------|
//! | project         | `PROJECT#{project}` | `PROJECT`                                 |
//! | session summary | `PROJECT#{project}` | `SESSION#{session}` (in the `sessions` index by `seen`) |
//! | statistics      | `PROJECT#{project}` | `STATS#{H or D}#{bucket start}#{shard}` (expires by `ttl`) |
//! | result          | `PROJECT#{project}` | `SESSION#{session}#RESULT#{createdAt}#{seq:020}` |
//! | webhook         | `PROJECT#{project}` | `WEBHOOK#{webhook}`                       |
//! | webhook guard   | `PROJECT#{project}` | `WEBHOOKURL#{type}#{sha256(url)}`         |
//! | webhook counter | `PROJECT#{project}` | `WEBHOOKCOUNT`                            |
//! | delivery        | `PROJECT#{project}` | `DELIVERY#{webhook}#{crossedAt}#{delivery}` |
//! | account         | `ACCOUNT#{account}` | `ACCOUNT`                                 |
//! | account project | `ACCOUNT#{account}` | `PROJECT#{project}` (a copy, for listing) |
//! | project counter | `ACCOUNT#{account}` | `PROJECTCOUNT`                            |
//! | rate window     | `ACCOUNT#{account}` | `RATE#{unix second}` (expires by `ttl`)   |
//! | period usage    | `ACCOUNT#{account}` | `USAGE#{period start}` (expires by `ttl`) |
//! | API key         | `APIKEY#{sha256}`   | `APIKEY`                                  |
//! | public key      | `PUBLICKEY#{apiKeyPublic}` | `PROJECT` (a copy, for the collect route) |
//! | checkpoint      | `CHECKPOINT#{name}` | `CHECKPOINT`                              |
//! | idempotency key | `ACCOUNT#{account}` | `IDEMPOTENCY#{key}` (expires by `ttl`)    |
//!
//! Pending deliveries also carry `due` and `dueAt`, the keys of the sparse `due` index that the
//! retry sweep queries.
//!
//! Identifiers cannot contain `#`, so one session's prefix is never a prefix of another's.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::event::Judged;
use crate::domain::idempotency::{Created, IdempotencyKey, Once, Used};
use crate::domain::insight::{Counts, Granularity, SessionSummary};
use crate::domain::session::SessionState;
use crate::domain::webhook::{Secrets, WebhookSecret};
use crate::domain::{
    Account, AccountId, CheckResult, Delivery, DeliveryStatus, Event, EventId, NewResult, Project,
    ProjectId, ResultPosition, Score, SessionId, SessionScore, Timestamp, Webhook, WebhookId,
    WebhookType, WebhookUrl,
};
use vigil_detect::Reason;

use super::keys::{
    ACCOUNT_SK, CHECKPOINT_SK, DUE_PARTITION, KEY_SK, PROJECT_COUNT_SK, PROJECT_SK,
    REASON_ATTR_PREFIX, WEBHOOK_COUNT_SK, account_pk, account_project_sk, checkpoint_pk, device_pk,
    key_pk, label_sk, project_pk, public_key_pk, result_sk, seen_key, session_sk, stats_sk,
    webhook_sk,
};

/// A label, kept beside its session in the project's partition.
pub type LabelItem = Keyed<crate::domain::label::Label>;

impl LabelItem {
    pub fn of(project: &ProjectId, label: crate::domain::label::Label) -> Self {
        Keyed::new(
            project_pk(project),
            &label_sk(&label.session_id),
            Entity::Label,
            label,
        )
    }
}

/// The partition that lists the projects with labels, one item each (`PROJECT#{id}`): the weekly
/// calibration reads it instead of scanning the table.
pub const LABELLED_PK: &str = "LABELLED";
/// Every labelled project's sort key starts with this; its id follows.
pub const LABELLED_PREFIX: &str = "PROJECT#";

/// A project that has (or had) labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Labelled {
    pub project_id: ProjectId,
}

pub type LabelledItem = Keyed<Labelled>;

impl LabelledItem {
    pub fn of(project: &ProjectId) -> Self {
        Keyed::new(
            LABELLED_PK.to_owned(),
            &format!("{LABELLED_PREFIX}{project}"),
            Entity::Labelled,
            Labelled {
                project_id: project.clone(),
            },
        )
    }
}

pub fn deliveries_prefix(w: &WebhookId) -> String {
    format!("DELIVERY#{w}#")
}
pub fn delivery_sk(d: &Delivery) -> String {
    format!("DELIVERY#{}#{}#{}", d.webhook_id, d.crossed_at, d.id)
}
/// Where a delivery is found by its id alone (its own key starts with its webhook and time).
pub fn delivery_ref_sk(id: &crate::domain::DeliveryId) -> String {
    format!("DELIVERYREF#{id}")
}
pub fn webhook_guard_sk(kind: WebhookType, url: &WebhookUrl) -> String {
    format!(
        "WEBHOOKURL#{}#{}",
        kind.as_str(),
        hex::encode(Sha256::digest(url.as_str().as_bytes()))
    )
}

/// What kind of item a row is; lets stream filters and readers tell items apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Entity {
    Project,
    Session,
    Result,
    Webhook,
    WebhookGuard,
    WebhookCount,
    Account,
    ApiKey,
    Delivery,
    Checkpoint,
    AccountProject,
    PublicKeyProject,
    Idempotency,
    ProjectCount,
    Counter,
    Stats,
    DeliveryRef,
    /// A fetched key directory's verified keys, until its cache lifetime ends.
    Directory,
    /// A Web Bot Auth signature seen once: a second use within its validity is a replay.
    SignatureUse,
    /// A customer's label of a session (`LABEL#{session}`, in the project's partition).
    Label,
    /// A project with labels, listed for calibration ([`LABELLED_PK`]).
    Labelled,
}

/// A key directory's keys, shared with every instance once a signature verified under them
/// (`DIRECTORY#{sha256 of its origin}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    /// The directory's origin (`scheme://host[:port]`); earlier items held its URL.
    #[serde(alias = "url")]
    pub origin: String,
    /// The directory's Ed25519 keys alone, as a JWKS document.
    pub jwks: String,
    /// Epoch seconds until which it may be used.
    pub expires_at: i64,
    pub ttl: i64,
}

pub const DIRECTORY_SK: &str = "DIRECTORY";

pub fn directory_pk(origin: &str) -> String {
    format!(
        "DIRECTORY#{}",
        hex::encode(Sha256::digest(origin.as_bytes()))
    )
}

impl DirectoryItem {
    pub fn new(origin: &str, jwks: String, expires_at: i64) -> Self {
        Self {
            pk: directory_pk(origin),
            sk: DIRECTORY_SK.to_owned(),
            entity: Entity::Directory,
            origin: origin.to_owned(),
            jwks,
            expires_at,
            ttl: expires_at,
        }
    }
}

/// One use of a signature (`SIGNATURE#{replay key}`), kept until the signature expires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureUseItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub ttl: i64,
}

impl SignatureUseItem {
    pub fn new(replay_key: &str, until: i64) -> Self {
        Self {
            pk: format!("SIGNATURE#{replay_key}"),
            sk: "SIGNATURE".to_owned(),
            entity: Entity::SignatureUse,
            ttl: until,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub project_id: ProjectId,
    pub session_id: SessionId,
    pub seq: u64,
    pub score_bot: Score,
    pub score_proxy_vpn: Score,
    pub ip_address: IpAddr,
    pub created_at: Timestamp,
    /// The engine's reasons; absent for a result written without evaluation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<Reason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<String>,
    /// The weights the event was judged by, when not the shared ones (`v3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ja4: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<vigil_detect::transport::Transport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<vigil_detect::Agent>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allowed: bool,
}

impl ResultItem {
    pub fn new(r: &NewResult, seq: u64) -> Self {
        let at = ResultPosition {
            created_at: r.result.created_at,
            seq,
        };
        Self {
            pk: project_pk(&r.project_id),
            sk: result_sk(&r.session_id, at),
            entity: Entity::Result,
            project_id: r.project_id.clone(),
            session_id: r.session_id.clone(),
            seq,
            score_bot: r.result.score_bot,
            score_proxy_vpn: r.result.score_proxy_vpn,
            ip_address: r.result.ip_address,
            created_at: r.result.created_at,
            reasons: r
                .evaluation
                .as_ref()
                .map(|e| e.reasons.clone())
                .unwrap_or_default(),
            engine_version: r.evaluation.as_ref().map(|e| e.engine_version.clone()),
            // Shared is every evaluated event's default, so only a calibration is written.
            model: r
                .evaluation
                .as_ref()
                .map(|e| e.model.clone())
                .filter(|m| m != crate::domain::calibration::SHARED),
            ja4: r.evaluation.as_ref().and_then(|e| e.ja4.clone()),
            transport: r.evaluation.as_ref().and_then(|e| e.transport.clone()),
            device: r
                .evaluation
                .as_ref()
                .and_then(|e| e.device.as_ref())
                .map(|d| d.as_str().to_owned()),
            agent: r.evaluation.as_ref().map(|e| e.agent.clone()),
            allowed: r.evaluation.as_ref().is_some_and(|e| e.allowed),
        }
    }

    pub fn position(&self) -> ResultPosition {
        ResultPosition {
            created_at: self.created_at,
            seq: self.seq,
        }
    }

    /// The stored result as an event ([`Event::of`]).
    pub fn event(self) -> Event {
        let at = self.position();
        let result = CheckResult {
            score_bot: self.score_bot,
            score_proxy_vpn: self.score_proxy_vpn,
            ip_address: self.ip_address,
            created_at: self.created_at,
        };
        let judged = Judged {
            reasons: self.reasons,
            // Results evaluated before calibration were judged by the shared weights.
            model: self.model.or_else(|| {
                self.engine_version
                    .as_ref()
                    .map(|_| crate::domain::calibration::SHARED.to_owned())
            }),
            engine_version: self.engine_version,
            ja4: self.ja4,
            transport: self.transport,
            device: self.device,
            agent: self.agent,
            allowed: self.allowed,
        };
        Event::of(at, self.session_id, result, judged)
    }
}

/// A session's summary: its overall score, kept up to date on every write, and the write counter
/// that orders results written with the same `createdAt`. `last` is the result of the latest write,
/// so a stream consumer sees which result moved the score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub project_id: ProjectId,
    pub session_id: SessionId,
    pub seq: u64,
    pub score_bot: Score,
    pub score_proxy_vpn: Score,
    pub last: CheckResult,
    /// The reasons of the latest write's result, so a webhook can say why the session crossed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_reasons: Vec<Reason>,
    /// The latest `createdAt` of the session's results (absent on summaries written before it
    /// was kept: their latest write's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen_at: Option<Timestamp>,
    /// The sessions index's sort key ([`seen_key`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<String>,
    /// The device key of the session's latest event that had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The devices index's partition key ([`device_pk`]), beside `device`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_pk: Option<String>,
    /// The agent status of the session's latest evaluated event (`verified`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<vigil_detect::agents::Status>,
    /// The session's `scoreBot` counting only events of agents the project does not allow
    /// (absent on summaries written before: `scoreBot`); `bot_detect` crosses on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_bot_counted: Option<Score>,
    /// How the session's pages were reached, so far (absent until a page says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<vigil_detect::path::Path>,
}

impl SessionItem {
    /// The summary after writing `r` on top of `previous` (None for the session's first result):
    /// the session's state as the domain decides it ([`SessionState::after`]), with its keys.
    pub fn next(previous: Option<&SessionItem>, r: &NewResult) -> Self {
        let state = SessionState::after(previous.map(SessionItem::state).as_ref(), r);
        Self {
            pk: project_pk(&r.project_id),
            sk: session_sk(&r.session_id),
            entity: Entity::Session,
            project_id: r.project_id.clone(),
            session_id: r.session_id.clone(),
            seq: state.seq,
            score_bot: state.score.score_bot,
            score_proxy_vpn: state.score.score_proxy_vpn,
            last: r.result.clone(),
            last_reasons: r
                .evaluation
                .as_ref()
                .map(|e| e.reasons.clone())
                .unwrap_or_default(),
            last_seen_at: Some(state.last_seen_at),
            seen: Some(seen_key(state.last_seen_at, &r.session_id)),
            device_pk: state.device.as_deref().map(|d| device_pk(&r.project_id, d)),
            device: state.device,
            agent: state.agent,
            score_bot_counted: Some(state.score_bot_counted),
            path: state.path,
        }
    }

    /// The session as this summary keeps it.
    pub fn state(&self) -> SessionState {
        SessionState {
            seq: self.seq,
            score: self.score(),
            score_bot_counted: self.bot_counted(),
            device: self.device.clone(),
            agent: self.agent,
            last_seen_at: self.last_seen(),
            path: self.path,
        }
    }

    /// The session's `scoreBot` without the events of allowed agents.
    pub fn bot_counted(&self) -> Score {
        self.score_bot_counted.unwrap_or(self.score_bot)
    }

    pub fn last_seen(&self) -> Timestamp {
        self.last_seen_at.unwrap_or(self.last.created_at)
    }

    /// The session as the sessions list shows it.
    pub fn summary(self) -> SessionSummary {
        SessionSummary {
            last_seen_at: self.last_seen(),
            session_id: self.session_id,
            score_bot: self.score_bot,
            score_proxy_vpn: self.score_proxy_vpn,
            events: self.seq,
            last_reasons: self.last_reasons,
            agent: self.agent,
        }
    }

    /// The id of the latest write's event.
    pub fn last_id(&self) -> EventId {
        EventId::new(ResultPosition {
            created_at: self.last.created_at,
            seq: self.seq,
        })
    }

    pub fn score(&self) -> SessionScore {
        SessionScore {
            score_bot: self.score_bot,
            score_proxy_vpn: self.score_proxy_vpn,
        }
    }
}

/// One shard of one statistics bucket. Reason counters are top-level attributes named
/// `r_{code}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub start: Timestamp,
    #[serde(default)]
    pub visits: u64,
    #[serde(default)]
    pub bots: u64,
    #[serde(default)]
    pub proxies: u64,
    pub ttl: i64,
    #[serde(flatten)]
    pub reasons: std::collections::BTreeMap<String, u64>,
}

impl StatsItem {
    pub fn empty(project: &ProjectId, g: Granularity, start: Timestamp, shard: u64) -> Self {
        Self {
            pk: project_pk(project),
            sk: stats_sk(g, start, shard),
            entity: Entity::Stats,
            start,
            visits: 0,
            bots: 0,
            proxies: 0,
            ttl: start.unix_seconds() + g.retention_seconds(),
            reasons: Default::default(),
        }
    }

    pub fn add(&mut self, c: &Counts) {
        self.visits += c.visits;
        self.bots += c.bots;
        self.proxies += c.proxies;
        for (code, n) in &c.reasons {
            *self
                .reasons
                .entry(format!("{REASON_ATTR_PREFIX}{code}"))
                .or_default() += n;
        }
    }

    pub fn counts(&self) -> Counts {
        Counts {
            visits: self.visits,
            bots: self.bots,
            proxies: self.proxies,
            reasons: self
                .reasons
                .iter()
                .filter_map(|(k, n)| Some((k.strip_prefix(REASON_ATTR_PREFIX)?.to_owned(), *n)))
                .collect(),
        }
    }
}

/// An item that stores a domain value whole: its keys, its kind, and the value's own fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Keyed<T> {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    #[serde(flatten)]
    pub value: T,
}

impl<T> Keyed<T> {
    pub fn new(pk: String, sk: &str, entity: Entity, value: T) -> Self {
        Self {
            pk,
            sk: sk.to_owned(),
            entity,
            value,
        }
    }
}

/// A project with its owner. [`Project`] hides its owner when shown, so the item writes
/// `accountId` itself; on reading, the attribute goes to the project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnedProject {
    #[serde(rename = "accountId", skip_deserializing)]
    owner: Option<AccountId>,
    /// The project's sealing keys, which it never shows either: written here, read back into it.
    #[serde(
        rename = "sealingKeys",
        skip_deserializing,
        skip_serializing_if = "Option::is_none"
    )]
    sealing: Option<crate::domain::sealing::SealingKeys>,
    #[serde(flatten)]
    pub project: Project,
}

pub type ProjectItem = Keyed<OwnedProject>;

impl From<&Project> for ProjectItem {
    fn from(p: &Project) -> Self {
        let owned = OwnedProject {
            owner: Some(p.account_id.clone()),
            sealing: p.sealing_keys.clone(),
            project: p.clone(),
        };
        Keyed::new(project_pk(&p.id), PROJECT_SK, Entity::Project, owned)
    }
}

impl From<ProjectItem> for Project {
    fn from(i: ProjectItem) -> Self {
        i.value.project
    }
}

impl ProjectItem {
    /// The copy under the account's partition, which lists its projects in one query.
    pub fn listed(p: &Project) -> Self {
        Self {
            pk: account_pk(&p.account_id),
            sk: account_project_sk(&p.id),
            entity: Entity::AccountProject,
            ..Self::from(p)
        }
    }

    /// The copy under the project's public key, which the collect route finds it by.
    pub fn by_public_key(p: &Project) -> Self {
        Self {
            pk: public_key_pk(&p.api_key_public),
            sk: PROJECT_SK.to_owned(),
            entity: Entity::PublicKeyProject,
            ..Self::from(p)
        }
    }
}

/// How many projects an account has; `maxProjects` is a condition on this counter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectCountItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub count: u32,
}

impl ProjectCountItem {
    pub fn new(account: &AccountId, count: u32) -> Self {
        Self {
            pk: account_pk(account),
            sk: PROJECT_COUNT_SK.to_owned(),
            entity: Entity::ProjectCount,
            count,
        }
    }
}

/// A request counter: one second's requests (`RATE#`) or one billing period's (`USAGE#`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CounterItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    /// Requests of the window; on a period's usage item, developer requests only.
    #[serde(default)]
    pub count: u64,
    /// On a period's usage item: developer requests and visits together (what the month bills).
    #[serde(default)]
    pub total: Option<u64>,
    /// Epoch seconds after which the table may delete it.
    pub ttl: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub project_id: ProjectId,
    pub id: WebhookId,
    #[serde(rename = "type")]
    pub kind: WebhookType,
    pub url: WebhookUrl,
    pub created_at: Timestamp,
    /// Set when a receiver answered 410 Gone: no further deliveries.
    #[serde(default)]
    pub disabled: bool,
    /// Its signing secret (absent on webhooks made before secrets per webhook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<WebhookSecret>,
    /// The secret before the latest rotation, and until when it still signs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_secret: Option<WebhookSecret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_until: Option<Timestamp>,
    /// Secrets replaced before that one, still in their overlaps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_secrets: Vec<crate::domain::webhook::EarlierSecret>,
}

impl WebhookItem {
    pub fn new(project: &ProjectId, w: &Webhook) -> Self {
        Self {
            pk: project_pk(project),
            sk: webhook_sk(&w.id),
            entity: Entity::Webhook,
            project_id: project.clone(),
            id: w.id.clone(),
            kind: w.kind,
            url: w.url.clone(),
            created_at: w.created_at,
            disabled: false,
            secret: w.secrets.current.clone(),
            previous_secret: w.secrets.previous.clone(),
            previous_until: w.secrets.previous_until,
            earlier_secrets: w.secrets.earlier.clone(),
        }
    }

    pub fn guard(&self) -> WebhookGuardItem {
        WebhookGuardItem {
            pk: self.pk.clone(),
            sk: webhook_guard_sk(self.kind, &self.url),
            entity: Entity::WebhookGuard,
            webhook_id: self.id.clone(),
        }
    }

    pub fn webhook(self) -> Webhook {
        Webhook {
            id: self.id,
            kind: self.kind,
            url: self.url,
            created_at: self.created_at,
            secrets: Secrets {
                current: self.secret,
                previous: self.previous_secret,
                previous_until: self.previous_until,
                earlier: self.earlier_secrets,
            },
        }
    }
}

/// Holds a (type, url) pair of a project, so a second webhook with the same pair fails its write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookGuardItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub webhook_id: WebhookId,
}

/// How many webhooks a project has; the limit is a condition on this counter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookCountItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub count: u32,
}

impl WebhookCountItem {
    pub fn new(project: &ProjectId, count: u32) -> Self {
        Self {
            pk: project_pk(project),
            sk: WEBHOOK_COUNT_SK.to_owned(),
            entity: Entity::WebhookCount,
            count,
        }
    }
}

pub type AccountItem = Keyed<Account>;

impl From<&Account> for AccountItem {
    fn from(a: &Account) -> Self {
        Keyed::new(account_pk(&a.id), ACCOUNT_SK, Entity::Account, a.clone())
    }
}

impl From<AccountItem> for Account {
    fn from(i: AccountItem) -> Self {
        i.value
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub account_id: AccountId,
    /// A revoked key stays stored (for audit) but no longer authenticates.
    #[serde(default)]
    pub revoked: bool,
}

impl KeyItem {
    pub fn new(hash: &str, account: &AccountId) -> Self {
        Self {
            pk: key_pk(hash),
            sk: KEY_SK.to_owned(),
            entity: Entity::ApiKey,
            account_id: account.clone(),
            revoked: false,
        }
    }
}

/// A delivery, with the keys of the due index while it is pending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due_at: Option<String>,
    pub delivery: Delivery,
}

impl From<&Delivery> for DeliveryItem {
    fn from(d: &Delivery) -> Self {
        let due_at = match d.status {
            DeliveryStatus::Pending => d.next_attempt_at.map(|t| t.to_string()),
            _ => None,
        };
        Self {
            pk: project_pk(&d.project_id),
            sk: delivery_sk(d),
            entity: Entity::Delivery,
            due: due_at.as_ref().map(|_| DUE_PARTITION.to_owned()),
            due_at,
            delivery: d.clone(),
        }
    }
}

/// Points from a delivery's id to its item, for the redelivery route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryRefItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub delivery_sk: String,
}

impl From<&Delivery> for DeliveryRefItem {
    fn from(d: &Delivery) -> Self {
        Self {
            pk: project_pk(&d.project_id),
            sk: delivery_ref_sk(&d.id),
            entity: Entity::DeliveryRef,
            delivery_sk: delivery_sk(d),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub value: String,
}

impl CheckpointItem {
    pub fn new(name: &str, value: &str) -> Self {
        Self {
            pk: checkpoint_pk(name),
            sk: CHECKPOINT_SK.to_owned(),
            entity: Entity::Checkpoint,
            value: value.to_owned(),
        }
    }
}

/// Oldest first; ids break ties so the order is deterministic.
pub fn sorted_webhooks(rows: Vec<WebhookItem>) -> Vec<Webhook> {
    let mut hooks: Vec<Webhook> = rows.into_iter().map(WebhookItem::webhook).collect();
    hooks.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    hooks
}

#[cfg(test)]
mod tests;

/// A used idempotency key: the request's fingerprint and what it created. Expired by the table's
/// TTL, which may lag by days, so readers also compare `ttl` with the time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdempotencyItem {
    pub pk: String,
    pub sk: String,
    pub entity: Entity,
    pub fingerprint: String,
    pub created: Created,
    pub ttl: i64,
}

pub fn idempotency_sk(key: &IdempotencyKey) -> String {
    format!("IDEMPOTENCY#{key}")
}

impl IdempotencyItem {
    pub fn new(once: &Once, created: Created) -> Self {
        Self {
            pk: account_pk(&once.account),
            sk: idempotency_sk(&once.key),
            entity: Entity::Idempotency,
            fingerprint: once.fingerprint.clone(),
            created,
            ttl: once.expires(),
        }
    }

    /// The key's use, unless it has expired by `now`.
    pub fn used(self, now: Timestamp) -> Option<Used> {
        (self.ttl > now.unix_seconds()).then_some(Used {
            fingerprint: self.fingerprint,
            created: self.created,
        })
    }
}
