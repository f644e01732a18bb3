//! The DynamoDB store: one table, `pk`/`sk` string keys, items as in [`vigil_core::store::items`], mapped with
//! `serde_dynamo`. Conditional transactions keep the session summary and the webhook limits correct
//! under concurrent writers.

use std::collections::HashMap;
use std::fmt::Debug;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::error::{BuildError, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, GlobalSecondaryIndex, KeySchemaElement,
    KeyType, Projection, ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TimeToLiveSpecification, TransactWriteItem,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use vigil_core::domain::insight::{Bucket, SessionPage, SessionPosition, SessionQuery, StatsRange};
use vigil_core::domain::label::Label;
use vigil_core::domain::{
    AccountId, Delivery, Project, ProjectId, ResultPosition, SessionId, Timestamp, Webhook,
    WebhookId,
};
use vigil_core::store::LabelStore;
use vigil_core::store::items::{
    CheckpointItem, DeliveryItem, LABELLED_PK, LABELLED_PREFIX, LabelItem, LabelledItem,
    ProjectItem, SessionItem, StatsItem, WebhookItem, deliveries_prefix, sorted_webhooks,
};
use vigil_core::store::keys::{
    ACCOUNT_PROJECT_PREFIX, CHECKPOINT_SK, DEVICE_PK, DEVICES_INDEX, DUE, DUE_AT, DUE_INDEX,
    DUE_PARTITION, LABEL_PREFIX, PK, SEEN, SESSIONS_INDEX, SK, TTL, WEBHOOK_PREFIX, account_pk,
    checkpoint_pk, device_pk, label_sk, project_pk, result_sk, results_prefix, seen_key,
    stats_sk_bound,
};
use vigil_core::store::{
    AccountStore, AdminStore, AgentStore, DeliveryStore, IdempotencyStore, InsightStore, KeyStore,
    OpFailed, ProjectStore, ResultPage, ResultStore, StoreError, WebhookStore,
};

pub(crate) type Item = HashMap<String, AttributeValue>;

#[derive(Clone)]
pub struct DynamoStore {
    pub(crate) client: Client,
    pub(crate) table: String,
    /// Spread counters this instance saw full in every shard, and when.
    pub(crate) full: std::sync::Arc<quick_cache::sync::Cache<String, std::time::Instant>>,
}

impl Debug for DynamoStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamoStore")
            .field("table", &self.table)
            .finish()
    }
}

/// The SDK configuration: region, credentials and endpoint (`AWS_ENDPOINT_URL`) from the
/// environment, over a rustls/ring HTTPS client (smaller and faster to build than aws-lc).
/// Timeouts are bounded so that a stuck connection fails one request quickly instead of holding a
/// function until its own timeout.
pub async fn sdk_config() -> aws_config::SdkConfig {
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(1))
        .operation_attempt_timeout(Duration::from_secs(2))
        .operation_timeout(Duration::from_secs(6))
        .build();
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https();
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(http)
        .timeout_config(timeouts)
        .load()
        .await
}

pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(crate) fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(crate) fn key(pk: impl Into<String>, sk: impl Into<String>) -> Item {
    HashMap::from([(PK.to_owned(), s(pk)), (SK.to_owned(), s(sk))])
}

fn corrupt(e: serde_dynamo::Error) -> StoreError {
    StoreError::Corrupt(Box::new(e))
}

pub(crate) fn to_item<T: Serialize>(v: &T) -> Result<Item, StoreError> {
    serde_dynamo::to_item(v).map_err(corrupt)
}

pub(crate) fn from_item<T: DeserializeOwned>(item: Item) -> Result<T, StoreError> {
    serde_dynamo::from_item(item).map_err(corrupt)
}

const THROTTLE_CODES: &[&str] = &[
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
];

/// Classifies an SDK error, keeping it whole as the cause (for the logs).
pub(crate) fn sdk_error<E, R>(op: &'static str, e: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: Debug + Send + Sync + 'static,
{
    // A backend that did not answer within the SDK's timeouts is, to the client, a busy one:
    // 503 with Retry-After, like throttling, rather than a failure of ours.
    let throttled = e.code().is_some_and(|c| THROTTLE_CODES.contains(&c))
        || matches!(e, SdkError::TimeoutError(_));
    let cause = OpFailed::cause(op, e);
    if throttled {
        StoreError::Throttled(cause)
    } else {
        StoreError::Backend(cause)
    }
}

/// How a transaction ended. A cancelled one says, per item, whether its condition failed and
/// (where asked for) the item as it stood; a conflict with a concurrent transaction is worth
/// retrying.
pub(crate) enum TxOutcome {
    Done,
    ConditionFailed(Vec<(bool, Option<Item>)>),
    Conflict,
}

pub(crate) fn build<T>(r: Result<T, BuildError>) -> Result<T, StoreError> {
    r.map_err(|e| StoreError::Backend(OpFailed::cause("building a request", e)))
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            full: std::sync::Arc::new(quick_cache::sync::Cache::new(1_024)),
        }
    }

    /// A store on the table, configured from the environment.
    pub async fn from_env(table: impl Into<String>) -> Self {
        Self::new(Client::new(&sdk_config().await), table)
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Opens the TLS connection and resolves credentials during init, so the first request of a
    /// cold start does not pay for them. A point read of a key that never exists.
    pub async fn warm(&self) {
        if let Err(e) = self
            .get::<serde_json::Value>("WARMUP", "WARMUP", false)
            .await
        {
            tracing::warn!(error = %vigil_core::report::Chain(&e), "warming the DynamoDB connection failed");
        }
    }

    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        pk: &str,
        sk: &str,
        consistent: bool,
    ) -> Result<Option<T>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        out.item.map(from_item).transpose()
    }

    /// Items of one partition whose sort key starts with `prefix`, in sort key order (`forward`)
    /// or reversed, at most `limit`, after the key `start` when given.
    pub(crate) async fn query_prefix<T: DeserializeOwned>(
        &self,
        pk: String,
        prefix: String,
        forward: bool,
        limit: Option<usize>,
        start: Option<Item>,
    ) -> Result<Vec<T>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", s(pk))
            .expression_attribute_values(":prefix", s(prefix))
            .scan_index_forward(forward)
            .set_limit(limit.map(|l| i32::try_from(l).unwrap_or(i32::MAX)))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| sdk_error("Query", e))?;
        out.items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Every webhook item of a project (at most ten: one small Query).
    async fn webhook_items(&self, project: &ProjectId) -> Result<Vec<WebhookItem>, StoreError> {
        self.query_prefix(
            project_pk(project),
            WEBHOOK_PREFIX.to_owned(),
            true,
            None,
            None,
        )
        .await
    }

    async fn put_plain<T: Serialize>(&self, item: &T) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_item(item)?))
            .send()
            .await
            .map_err(|e| sdk_error("PutItem", e))?;
        Ok(())
    }

    pub(crate) async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
    ) -> Result<TxOutcome, StoreError> {
        match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => Ok(TxOutcome::Done),
            Err(e) => match e {
                SdkError::ServiceError(ref se) => match se.err() {
                    TransactWriteItemsError::TransactionCanceledException(c) => {
                        let reasons = c.cancellation_reasons();
                        let failed: Vec<(bool, Option<Item>)> = reasons
                            .iter()
                            .map(|r| {
                                (
                                    r.code() == Some("ConditionalCheckFailed"),
                                    r.item().cloned(),
                                )
                            })
                            .collect();
                        if failed.iter().any(|(f, _)| *f) {
                            Ok(TxOutcome::ConditionFailed(failed))
                        } else if reasons.iter().any(|r| {
                            r.code().is_some_and(|c| {
                                THROTTLE_CODES.contains(&c) || c == "ThrottlingError"
                            })
                        }) {
                            Err(StoreError::Throttled(OpFailed::cause(
                                "TransactWriteItems",
                                e,
                            )))
                        } else {
                            Ok(TxOutcome::Conflict)
                        }
                    }
                    _ => Err(sdk_error("TransactWriteItems", e)),
                },
                _ => Err(sdk_error("TransactWriteItems", e)),
            },
        }
    }

    /// Creates the table as `template.yaml` defines it (for local emulators and first use).
    pub async fn create_table(&self) -> Result<(), StoreError> {
        let attr = |name: &str| {
            build(
                AttributeDefinition::builder()
                    .attribute_name(name)
                    .attribute_type(ScalarAttributeType::S)
                    .build(),
            )
        };
        let schema = |name: &str, kt: KeyType| {
            build(
                KeySchemaElement::builder()
                    .attribute_name(name)
                    .key_type(kt)
                    .build(),
            )
        };
        // A global secondary index projecting whole items.
        let index = |name: &str, hash: &str, range: &str| {
            build(
                GlobalSecondaryIndex::builder()
                    .index_name(name)
                    .key_schema(schema(hash, KeyType::Hash)?)
                    .key_schema(schema(range, KeyType::Range)?)
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::All)
                            .build(),
                    )
                    .build(),
            )
        };
        self.client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(attr(PK)?)
            .attribute_definitions(attr(SK)?)
            .attribute_definitions(attr(DUE)?)
            .attribute_definitions(attr(DUE_AT)?)
            .attribute_definitions(attr(SEEN)?)
            .attribute_definitions(attr(DEVICE_PK)?)
            .key_schema(schema(PK, KeyType::Hash)?)
            .key_schema(schema(SK, KeyType::Range)?)
            .global_secondary_indexes(index(DUE_INDEX, DUE, DUE_AT)?)
            .global_secondary_indexes(index(SESSIONS_INDEX, PK, SEEN)?)
            .global_secondary_indexes(index(DEVICES_INDEX, DEVICE_PK, SEEN)?)
            .stream_specification(build(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::NewAndOldImages)
                    .build(),
            )?)
            .send()
            .await
            .map_err(|e| sdk_error("CreateTable", e))?;
        // TTL can be set once the table is active. Counters of past windows and periods expire by
        // it (the template sets the same).
        self.client
            .wait_until_table_exists()
            .table_name(&self.table)
            .wait(Duration::from_secs(120))
            .await
            .map_err(|e| StoreError::Backend(OpFailed::cause("waiting for the table", e)))?;
        self.client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(build(
                TimeToLiveSpecification::builder()
                    .attribute_name(TTL)
                    .enabled(true)
                    .build(),
            )?)
            .send()
            .await
            .map_err(|e| sdk_error("UpdateTimeToLive", e))?;
        Ok(())
    }
}

impl KeyStore for DynamoStore {}

impl AgentStore for DynamoStore {}

impl LabelStore for DynamoStore {
    async fn labels(
        &self,
        project: &ProjectId,
        after: Option<&SessionId>,
        limit: usize,
    ) -> Result<Vec<Label>, StoreError> {
        let pk = project_pk(project);
        // The key to start after: the previous page's last label.
        let start = after.map(|s| {
            Item::from([
                ("pk".to_owned(), AttributeValue::S(pk.clone())),
                ("sk".to_owned(), AttributeValue::S(label_sk(s))),
            ])
        });
        let rows: Vec<LabelItem> = self
            .query_prefix(pk, LABEL_PREFIX.to_owned(), true, Some(limit), start)
            .await?;
        Ok(rows.into_iter().map(|i| i.value).collect())
    }

    async fn labelled_projects(
        &self,
        after: Option<&ProjectId>,
        limit: usize,
    ) -> Result<Vec<ProjectId>, StoreError> {
        let start = after.map(|p| {
            Item::from([
                ("pk".to_owned(), AttributeValue::S(LABELLED_PK.to_owned())),
                (
                    "sk".to_owned(),
                    AttributeValue::S(format!("{LABELLED_PREFIX}{p}")),
                ),
            ])
        });
        let rows: Vec<LabelledItem> = self
            .query_prefix(
                LABELLED_PK.to_owned(),
                LABELLED_PREFIX.to_owned(),
                true,
                Some(limit),
                start,
            )
            .await?;
        Ok(rows.into_iter().map(|i| i.value.project_id).collect())
    }
}

impl AccountStore for DynamoStore {}

impl ProjectStore for DynamoStore {
    async fn account_projects(&self, account: &AccountId) -> Result<Vec<Project>, StoreError> {
        let items: Vec<ProjectItem> = self
            .query_prefix(
                account_pk(account),
                ACCOUNT_PROJECT_PREFIX.to_owned(),
                true,
                None,
                None,
            )
            .await?;
        Ok(items.into_iter().map(Project::from).collect())
    }
}

impl ResultStore for DynamoStore {
    async fn results(
        &self,
        project: &ProjectId,
        session: &SessionId,
        limit: usize,
        after: Option<ResultPosition>,
    ) -> Result<ResultPage, StoreError> {
        let pk = project_pk(project);
        let start = after.map(|at| key(pk.clone(), result_sk(session, at)));
        let rows = self
            .query_prefix(pk, results_prefix(session), false, Some(limit + 1), start)
            .await?;
        Ok(ResultPage::from_rows(rows, limit))
    }
}

/// Query pages read at most for one page of filtered sessions: a filter that matches rarely
/// returns a short page with a cursor rather than reading a whole project.
const MAX_SESSION_QUERY_PAGES: usize = 8;

impl InsightStore for DynamoStore {
    async fn sessions(
        &self,
        project: &ProjectId,
        query: &SessionQuery,
    ) -> Result<SessionPage, StoreError> {
        let filtered = query.min_score_bot.is_some()
            || query.min_score_proxy_vpn.is_some()
            || query.agent.is_some();
        let want = query.limit + 1;
        let mut found: Vec<SessionItem> = Vec::with_capacity(want);
        let mut start: Option<Item> = None;
        // One device's sessions are read from the devices index, under its own partition.
        let (index, partition) = match &query.device {
            None => (SESSIONS_INDEX, project_pk(project)),
            Some(d) => (DEVICES_INDEX, device_pk(project, d.as_str())),
        };
        let partition_attr = if query.device.is_some() {
            DEVICE_PK
        } else {
            PK
        };
        for _ in 0..MAX_SESSION_QUERY_PAGES {
            let mut req = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index)
                .scan_index_forward(false)
                .expression_attribute_names("#p", partition_attr)
                .expression_attribute_values(":pk", s(partition.clone()))
                .set_exclusive_start_key(start.take())
                // Unfiltered, the extra item says whether more exist; filtered, read more at a
                // time, since some items read are dropped.
                .limit(if filtered { 200 } else { want as i32 });
            req = match &query.after {
                Some(a) => req
                    .key_condition_expression("#p = :pk AND #seen < :after")
                    .expression_attribute_names("#seen", SEEN)
                    .expression_attribute_values(
                        ":after",
                        s(seen_key(a.last_seen_at, &a.session_id)),
                    ),
                None => req.key_condition_expression("#p = :pk"),
            };
            let mut filter = Vec::new();
            if let Some(m) = query.min_score_bot {
                filter.push("scoreBot >= :bot");
                req = req.expression_attribute_values(":bot", n(m.get()));
            }
            if let Some(m) = query.min_score_proxy_vpn {
                filter.push("scoreProxyVpn >= :proxy");
                req = req.expression_attribute_values(":proxy", n(m.get()));
            }
            if let Some(a) = query.agent {
                filter.push("#agent = :agent");
                req = req
                    .expression_attribute_names("#agent", "agent")
                    .expression_attribute_values(":agent", s(a.as_str().to_owned()));
            }
            if !filter.is_empty() {
                req = req.filter_expression(filter.join(" AND "));
            }
            let out = req.send().await.map_err(|e| sdk_error("Query", e))?;
            for item in out.items.unwrap_or_default() {
                found.push(from_item(item)?);
            }
            start = out.last_evaluated_key;
            if found.len() >= want || start.is_none() {
                break;
            }
        }
        let more = found.len() > query.limit;
        found.truncate(query.limit);
        let next = if more {
            found.last().map(|s| SessionPosition {
                last_seen_at: s.last_seen(),
                session_id: s.session_id.clone(),
            })
        } else {
            // The reading bound was reached first: go on from the last item read.
            start.as_ref().and_then(position_of)
        };
        Ok(SessionPage {
            sessions: found.into_iter().map(SessionItem::summary).collect(),
            next,
        })
    }

    async fn stats(
        &self,
        project: &ProjectId,
        range: &StatsRange,
    ) -> Result<Vec<Bucket>, StoreError> {
        let g = range.granularity();
        let mut rows: Vec<StatsItem> = Vec::new();
        let mut start: Option<Item> = None;
        // One query; DynamoDB pages it past 1 MB (about 5,000 shard items).
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
                .expression_attribute_values(":pk", s(project_pk(project)))
                .expression_attribute_values(":lo", s(stats_sk_bound(g, range.from())))
                .expression_attribute_values(":hi", s(stats_sk_bound(g, range.to())))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| sdk_error("Query", e))?;
            for item in out.items.unwrap_or_default() {
                rows.push(from_item(item)?);
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        Ok(vigil_core::store::buckets(range, &rows))
    }
}

/// The list position of a sessions index key (`seen` holds both the time and the session).
fn position_of(key: &Item) -> Option<SessionPosition> {
    let seen = key.get(SEEN)?.as_s().ok()?;
    let (at, session) = seen.split_once('#')?;
    Some(SessionPosition {
        last_seen_at: at.parse().ok()?,
        session_id: SessionId::parse(session).ok()?,
    })
}

impl IdempotencyStore for DynamoStore {}

impl WebhookStore for DynamoStore {
    async fn webhooks(&self, project: &ProjectId) -> Result<Vec<Webhook>, StoreError> {
        let rows = self.webhook_items(project).await?;
        Ok(sorted_webhooks(rows))
    }
}

impl AdminStore for DynamoStore {
    async fn is_empty(&self) -> Result<bool, StoreError> {
        let out = self
            .client
            .scan()
            .table_name(&self.table)
            .limit(1)
            .send()
            .await
            .map_err(|e| sdk_error("Scan", e))?;
        Ok(out.items.unwrap_or_default().is_empty())
    }
}

impl DeliveryStore for DynamoStore {
    async fn active_webhooks(&self, project: &ProjectId) -> Result<Vec<Webhook>, StoreError> {
        let rows = self.webhook_items(project).await?;
        Ok(sorted_webhooks(
            rows.into_iter().filter(|w| !w.disabled).collect(),
        ))
    }

    async fn due_deliveries(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(DUE_INDEX)
            .key_condition_expression("#due = :due AND #dueAt <= :now")
            .expression_attribute_names("#due", DUE)
            .expression_attribute_names("#dueAt", DUE_AT)
            .expression_attribute_values(":due", s(DUE_PARTITION))
            .expression_attribute_values(":now", s(now.to_string()))
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(|e| sdk_error("Query", e))?;
        out.items
            .unwrap_or_default()
            .into_iter()
            .map(|i| from_item::<DeliveryItem>(i).map(|d| d.delivery))
            .collect()
    }

    async fn deliveries(
        &self,
        project: &ProjectId,
        webhook: &WebhookId,
        limit: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        let rows: Vec<DeliveryItem> = self
            .query_prefix(
                project_pk(project),
                deliveries_prefix(webhook),
                false,
                Some(limit),
                None,
            )
            .await?;
        Ok(rows.into_iter().map(|i| i.delivery).collect())
    }

    async fn checkpoint(&self, name: &str) -> Result<Option<String>, StoreError> {
        let item: Option<CheckpointItem> =
            self.get(&checkpoint_pk(name), CHECKPOINT_SK, true).await?;
        Ok(item.map(|c| c.value))
    }

    async fn set_checkpoint(&self, name: &str, value: &str) -> Result<(), StoreError> {
        self.put_plain(&CheckpointItem::new(name, value)).await
    }
}
