//! One endpoint per route, each a few lines that read like its row in the README's route table:
//! what it takes from the path and body, which service operation answers, what it returns. Every
//! step before the handler (authentication, path ids, body) is done by [`super::pipeline`].

use serde_json::Value;

use super::extract::{
    FromQuery, Json, JsonBody, Members, Paging, Query, page_limit, query_time, with_next_link,
};
use super::paths::BASE;
use super::pipeline::endpoint;
use super::reply::Reply;
use crate::error::ApiError;
use vigil_core::domain::calibration::ModelChoice;
use vigil_core::domain::label::{Label, LabelNote, LabelReason, LabelSpec, Quality, Truth};
use vigil_core::domain::project::{AgentPolicy, Domain, ProjectName};
use vigil_core::domain::webhook::{WebhookType, WebhookUrl};
use vigil_core::domain::{
    CheckResult, DeliveryView, Plan, Project, ProjectId, SessionId, SessionScore as Score,
    Timestamp, Webhook, WebhookId,
};
use vigil_core::service::plans::Usage;
use vigil_core::service::projects::{ProjectChanges, ProjectSpec, SealingKeysView};
use vigil_core::store::{
    AccountStore, DeliveryStore, IdempotencyStore, LabelStore, ProjectStore, ResultStore,
    UsageStore, WebhookStore,
};

/// Largest webhook creation body accepted.
pub const MAX_WEBHOOK_BODY: usize = 8 * 1024;

endpoint! {
    /// GET /results/{projectId}/{sessionId}: a page of the session's results, newest first; `null`
    /// when it has none.
    ListResults: ProjectStore + ResultStore;
    (app, call: (ProjectId, SessionId), (), Paging) -> Option<Vec<CheckResult>> {
        let ((project, session), paging) = (&call.path, &call.query);
        let page = app
            .results(&call.account, project, session, paging.limit, paging.after)
            .await?;
        let results: Vec<CheckResult> = page.results.iter().map(|(_, e)| e.result()).collect();
        let path = format!("/results/{project}/{session}");
        Ok(paging.reply((!results.is_empty()).then_some(results), page.next(), &path))
    }
}

endpoint! {
    /// GET /results/{projectId}/{sessionId}/general: the session's overall score.
    SessionScore: ProjectStore + ResultStore;
    (app, call: (ProjectId, SessionId), (), ()) -> Score {
        let (project, session) = &call.path;
        Ok(Reply::ok(
            app.session_score(&call.account, project, session).await?,
        ))
    }
}

endpoint! {
    /// GET /plan: the account's plan.
    GetPlan: AccountStore;
    const WITHOUT_PLAN_IN_FORCE;
    (app, call: (), (), ()) -> Plan {
        // The plan authenticating read a moment ago, or (Lambda) the account's.
        let plan = match call.plan {
            Some(plan) => plan,
            None => app.plans().plan(&call.account).await?,
        };
        Ok(Reply::ok(plan))
    }
}

endpoint! {
    /// GET /projects/{projectId}: one project of the account.
    GetProject: ProjectStore;
    (app, call: ProjectId, (), ()) -> Project {
        Ok(Reply::ok(app.projects().get(&call.account, &call.path).await?))
    }
}

/// The webhook creation body: exactly `type` and `url`, both strings.
pub struct NewWebhook {
    pub kind: WebhookType,
    pub url: String,
}

impl JsonBody for NewWebhook {
    const MAX_BYTES: usize = MAX_WEBHOOK_BODY;

    fn from_json(value: Value) -> Result<Self, ApiError> {
        let members = Members::only(value, &["type", "url"])?;
        let kind = serde_json::from_value(Value::String(members.string("type")?.to_owned()))
            .map_err(|_| {
                ApiError::bad_request("`type` must be one of: proxy_vpn_detect, bot_detect")
            })?;
        let url = members.string("url")?.to_owned();
        Ok(Self { kind, url })
    }
}

endpoint! {
    /// POST /projects/{projectId}/webhooks: 201 with the new webhook's `Location`.
    CreateWebhook: ProjectStore + WebhookStore;
    (app, call: ProjectId, Json<NewWebhook>, ()) -> () {
        let Json(NewWebhook { kind, url }) = call.body;
        let url = WebhookUrl::parse(&url, app.webhooks().url_policy())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let hook = app
            .webhooks().create(&call.account, &call.path, kind, url)
            .await?;
        let location = format!("{BASE}/projects/{}/webhooks/{}", call.path, hook.id);
        Ok(Reply::created((), location))
    }
}

endpoint! {
    /// GET /projects/{projectId}/webhooks: the project's webhooks, oldest first.
    ListWebhooks: ProjectStore + WebhookStore;
    (app, call: ProjectId, (), ()) -> Vec<Webhook> {
        Ok(Reply::ok(app.webhooks().list(&call.account, &call.path).await?))
    }
}

endpoint! {
    /// DELETE /projects/{projectId}/webhooks/{webhookId}
    DeleteWebhook: ProjectStore + WebhookStore;
    (app, call: (ProjectId, WebhookId), (), ()) -> () {
        let (project, webhook) = &call.path;
        app.webhooks().delete(&call.account, project, webhook).await?;
        Ok(Reply::ok(()))
    }
}

/// A webhook's signing secret, as the secret routes answer it.
#[derive(Debug, serde::Serialize)]
pub struct SecretView {
    /// `whsec_...`; null for a webhook made before secrets per webhook (signed with the
    /// project's `apiKeyPrivate` until rotated).
    pub secret: Option<String>,
}

endpoint! {
    /// GET /projects/{projectId}/webhooks/{webhookId}/secret: the secret its deliveries are signed
    /// with (developer key; never in a listing).
    GetWebhookSecret: ProjectStore + WebhookStore;
    (app, call: (ProjectId, WebhookId), (), ()) -> SecretView {
        let (project, webhook) = &call.path;
        let secret = app.webhooks().secret(&call.account, project, webhook).await?;
        Ok(Reply::ok(SecretView {
            secret: secret.map(String::from),
        }))
    }
}

endpoint! {
    /// POST /projects/{projectId}/webhooks/{webhookId}/secret/rotate: a new secret; the previous one
    /// keeps signing beside it for the overlap (24 hours unless configured).
    RotateWebhookSecret: ProjectStore + WebhookStore;
    (app, call: (ProjectId, WebhookId), (), ()) -> SecretView {
        let (project, webhook) = &call.path;
        let secret = app
            .webhooks().rotate_secret(&call.account, project, webhook)
            .await?;
        Ok(Reply::ok(SecretView {
            secret: Some(secret.into()),
        }))
    }
}

endpoint! {
    /// GET /projects/{projectId}/sealing-key: the keys that open the project's sealed verdicts, as
    /// JWKs (`kty: oct`, `alg: dir`, `enc: A256GCM`), the current one first.
    GetSealingKey: ProjectStore;
    (app, call: ProjectId, (), ()) -> SealingKeysView {
        Ok(Reply::ok(
            app.projects().sealing_keys(&call.account, &call.path).await?,
        ))
    }
}

endpoint! {
    /// POST /projects/{projectId}/sealing-key/rotate: a new key seals from now; the replaced one stays
    /// listed for the overlap (24 hours unless configured).
    RotateSealingKey: ProjectStore;
    (app, call: ProjectId, (), ()) -> SealingKeysView {
        Ok(Reply::ok(
            app.projects().rotate_sealing_key(&call.account, &call.path).await?,
        ))
    }
}

/// What the test and redelivery routes answer: the delivery queued.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Queued {
    pub delivery_id: vigil_core::domain::DeliveryId,
}

endpoint! {
    /// POST /projects/{projectId}/webhooks/{webhookId}/test: queues a `webhook.test` event, signed like
    /// the rest; 202 with its delivery id (its log shows it under the session `webhook-test`).
    TestWebhook: ProjectStore + WebhookStore + DeliveryStore;
    (app, call: (ProjectId, WebhookId), (), ()) -> Queued {
        let (project, webhook) = &call.path;
        let id = app.webhooks().test(&call.account, project, webhook).await?;
        Ok(Reply::accepted(Queued { delivery_id: id }))
    }
}

endpoint! {
    /// POST /projects/{projectId}/deliveries/{deliveryId}/redeliver: the same payload and
    /// `webhook-id` again, as one more attempt; 202.
    Redeliver: ProjectStore + WebhookStore + DeliveryStore;
    (app, call: (ProjectId, vigil_core::domain::DeliveryId), (), ()) -> Queued {
        let (project, delivery) = &call.path;
        let id = app.webhooks().redeliver(&call.account, project, delivery).await?;
        Ok(Reply::accepted(Queued { delivery_id: id }))
    }
}

endpoint! {
    /// GET /projects/{projectId}/webhooks/{webhookId}/deliveries: the delivery log, newest first.
    ListDeliveries: ProjectStore + WebhookStore + DeliveryStore;
    (app, call: (ProjectId, WebhookId), (), ()) -> Vec<DeliveryView> {
        let (project, webhook) = &call.path;
        Ok(Reply::ok(
            app.webhooks().deliveries(&call.account, project, webhook).await?,
        ))
    }
}

/// The project creation body: `name` and `domain`, and optionally `requireSessionToken`.
pub struct NewProject(pub ProjectSpec);

/// Largest project body accepted.
pub const MAX_PROJECT_BODY: usize = 8 * 1024;

impl JsonBody for NewProject {
    const MAX_BYTES: usize = MAX_PROJECT_BODY;

    fn from_json(value: Value) -> Result<Self, ApiError> {
        let members = Members::only(value, &["name", "domain", "requireSessionToken"])?;
        Ok(Self(ProjectSpec {
            name: project_name(members.string("name")?)?,
            domain: project_domain(members.string("domain")?)?,
            require_session_token: members
                .optional_bool("requireSessionToken")?
                .unwrap_or(true),
        }))
    }
}

fn project_name(s: &str) -> Result<ProjectName, ApiError> {
    ProjectName::parse(s).map_err(|e| ApiError::bad_request(format!("`name` {e}")))
}

fn project_domain(s: &str) -> Result<Domain, ApiError> {
    Domain::parse(s).map_err(|e| ApiError::bad_request(format!("`domain` {e}")))
}

endpoint! {
    /// POST /projects: 201 with the new project (its keys included) and its `Location`.
    CreateProject: ProjectStore + IdempotencyStore;
    const IDEMPOTENT;
    (app, call: (), Json<NewProject>, ()) -> Project {
        let Json(NewProject(spec)) = call.body;
        let project = app
            .projects().create(&call.account, &call.terms, spec, call.once.as_ref())
            .await?;
        let location = format!("{BASE}/projects/{}", project.id);
        Ok(Reply::created(project, location))
    }
}

endpoint! {
    /// GET /projects: the account's projects, oldest first.
    ListProjects: ProjectStore;
    (app, call: (), (), ()) -> Vec<Project> {
        Ok(Reply::ok(app.projects().list(&call.account).await?))
    }
}

impl JsonBody for ProjectChanges {
    const MAX_BYTES: usize = MAX_PROJECT_BODY;

    fn from_json(value: Value) -> Result<Self, ApiError> {
        let mut members = Members::only(
            value,
            &[
                "name",
                "domain",
                "disabled",
                "requireSessionToken",
                "webhookLegacySignature",
                "agents",
                "sealedResults",
                "model",
            ],
        )?;
        // A member is a change: null would say nothing, so it is refused rather than ignored.
        members.no_nulls()?;
        let changes = ProjectChanges {
            name: members
                .optional_string("name")?
                .map(project_name)
                .transpose()?,
            domain: members
                .optional_string("domain")?
                .map(project_domain)
                .transpose()?,
            disabled: members.optional_bool("disabled")?,
            require_session_token: members.optional_bool("requireSessionToken")?,
            webhook_legacy_signature: members.optional_bool("webhookLegacySignature")?,
            agents: members.take("agents").map(agent_policy).transpose()?,
            sealed_results: members.optional_bool("sealedResults")?,
            model: members
                .optional_string("model")?
                .map(|m| {
                    ModelChoice::parse(m).ok_or_else(|| {
                        ApiError::bad_request("`model` must be \"latest\" or \"shared\"")
                    })
                })
                .transpose()?,
        };
        if changes == ProjectChanges::default() {
            return Err(ApiError::bad_request(
                "Request body must set at least one of `name`, `domain`, `disabled`, `requireSessionToken`, `webhookLegacySignature`, `agents`, `sealedResults` and `model`",
            ));
        }
        Ok(changes)
    }
}

/// `agents`: `{"allow": [category or operator, ...]}`, nothing else.
fn agent_policy(v: Value) -> Result<AgentPolicy, ApiError> {
    let shape =
        || ApiError::bad_request("`agents` must be {\"allow\": [category or operator, ...]}");
    let Value::Object(mut m) = v else {
        return Err(shape());
    };
    let allow = m.remove("allow").ok_or_else(shape)?;
    if !m.is_empty() {
        return Err(shape());
    }
    let Value::Array(items) = allow else {
        return Err(shape());
    };
    let entries = items
        .into_iter()
        .map(|i| match i {
            Value::String(s) => Ok(s),
            _ => Err(shape()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    AgentPolicy::parse(entries).map_err(ApiError::bad_request)
}

endpoint! {
    /// PATCH /projects/{projectId}: changes `name`, `domain` or `disabled`; the project as it now is.
    UpdateProject: ProjectStore;
    (app, call: ProjectId, Json<ProjectChanges>, ()) -> Project {
        let Json(changes) = call.body;
        Ok(Reply::ok(
            app.projects().update(&call.account, &call.path, changes)
                .await?,
        ))
    }
}

endpoint! {
    /// GET /usage: the current billing period's requests against `maxRequests`.
    GetUsage: UsageStore;
    (app, call: (), (), ()) -> Usage {
        Ok(Reply::ok(app.plans().usage(&call.account, &call.terms).await?))
    }
}

/// A label's body: `label` (`bot` or `human`), optional `reason` (the customer's own code) and
/// `note`.
impl JsonBody for LabelSpec {
    const MAX_BYTES: usize = MAX_LABEL_BODY;

    fn from_json(value: Value) -> Result<Self, ApiError> {
        let members = Members::only(value, &["label", "reason", "note"])?;
        // An absent member is no reason or note; null is not a value of either.
        members.no_nulls()?;
        let label = match members.string("label")? {
            "bot" => Truth::Bot,
            "human" => Truth::Human,
            _ => return Err(ApiError::bad_request("`label` must be one of: bot, human")),
        };
        let bad = |e: vigil_core::domain::label::LabelError| ApiError::bad_request(e.to_string());
        let reason = members
            .optional_string("reason")?
            .map(|r| LabelReason::try_from(r.to_owned()).map_err(bad))
            .transpose()?;
        let note = members
            .optional_string("note")?
            .map(|n| LabelNote::try_from(n.to_owned()).map_err(bad))
            .transpose()?;
        Ok(Self {
            label,
            reason,
            note,
        })
    }
}

/// The largest label body read: a note of 500 characters of up to 4 bytes, and the rest.
const MAX_LABEL_BODY: usize = 4 * 1024;

endpoint! {
    /// PUT /projects/{projectId}/sessions/{sessionId}/label: labels one of the project's sessions
    /// (`bot` or `human`), replacing its label if it had one. Idempotent; stored scores never change.
    PutLabel: ProjectStore + ResultStore + LabelStore;
    (app, call: (ProjectId, SessionId), Json<LabelSpec>, ()) -> Label {
        let (project, session) = &call.path;
        let Json(spec) = call.body;
        Ok(Reply::ok(
            app.label_session(&call.account, project, session, spec)
                .await?,
        ))
    }
}

endpoint! {
    /// GET /projects/{projectId}/sessions/{sessionId}/label: the session's label (404 without one).
    GetLabel: ProjectStore + ResultStore + LabelStore;
    (app, call: (ProjectId, SessionId), (), ()) -> Label {
        let (project, session) = &call.path;
        Ok(Reply::ok(app.label(&call.account, project, session).await?))
    }
}

endpoint! {
    /// DELETE /projects/{projectId}/sessions/{sessionId}/label: withdraws the session's label.
    DeleteLabel: ProjectStore + ResultStore + LabelStore;
    (app, call: (ProjectId, SessionId), (), ()) -> () {
        let (project, session) = &call.path;
        app.unlabel_session(&call.account, project, session).await?;
        Ok(Reply::ok(()))
    }
}

/// The labels list's `limit` and `cursor` (bound to the project).
pub struct LabelsQuery {
    limit: usize,
    after: Option<SessionId>,
    explicit_limit: bool,
}

impl FromQuery<ProjectId> for LabelsQuery {
    fn from_query(q: Query<'_>, project: &ProjectId, _: Timestamp) -> Result<Self, ApiError> {
        Ok(Self {
            limit: page_limit(q)?,
            after: q
                .first("cursor")
                .map(|c| vigil_core::domain::cursor::decode_labels(c, project))
                .transpose()
                .map_err(|_| ApiError::bad_request("cursor is not valid for this project"))?,
            explicit_limit: q.first("limit").is_some(),
        })
    }
}

endpoint! {
    /// GET /projects/{projectId}/labels: the project's labels by session id, paged by `Link`.
    ListLabels: ProjectStore + ResultStore + LabelStore;
    (app, call: ProjectId, (), LabelsQuery) -> Vec<Label> {
        let (project, q) = (&call.path, &call.query);
        let page = app
            .labels(&call.account, project, q.limit, q.after.as_ref())
            .await?;
        let last = page
            .more
            .then(|| page.labels.last().map(|l| l.session_id.clone()));
        let reply = Reply::ok(page.labels);
        Ok(match last.flatten() {
            None => reply,
            Some(last) => {
                let kept = if q.explicit_limit {
                    format!("&limit={}", q.limit)
                } else {
                    String::new()
                };
                with_next_link(
                    reply,
                    &format!("/projects/{project}/labels"),
                    &vigil_core::domain::cursor::encode_labels(project, &last),
                    &kept,
                )
            }
        })
    }
}

/// The quality report's range: `from` and `to` (RFC 3339), by default the last 30 days.
pub struct QualityRange {
    from: Timestamp,
    to: Timestamp,
}

impl FromQuery<ProjectId> for QualityRange {
    fn from_query(q: Query<'_>, _: &ProjectId, now: Timestamp) -> Result<Self, ApiError> {
        let to =
            query_time(q, "to")?.unwrap_or_else(|| now.plus(std::time::Duration::from_millis(1)));
        let from = match query_time(q, "from")? {
            Some(f) => f,
            None => Timestamp::from_unix_millis(to.unix_millis() - 30 * 86_400_000)
                .map_err(|_| ApiError::bad_request("to is out of range"))?,
        };
        if from >= to {
            return Err(ApiError::bad_request("from must be before to"));
        }
        Ok(Self { from, to })
    }
}

endpoint! {
    /// GET /projects/{projectId}/quality: how right the engine was on the sessions labelled in the
    /// range: precision and recall at the webhook threshold, and the reasons behind its mistakes.
    GetQuality: ProjectStore + ResultStore + LabelStore;
    (app, call: ProjectId, (), QualityRange) -> Quality {
        let r = &call.query;
        Ok(Reply::ok(
            app.quality(&call.account, &call.path, r.from, r.to).await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::FromBody;
    use vigil_core::domain::UrlPolicy;

    /// The creation body as the pipeline's body step and the handler read it.
    fn parse(body: &str) -> Result<(WebhookType, WebhookUrl), ApiError> {
        let mut req = crate::message::Request::new(body.to_owned().into());
        req.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        let Json(NewWebhook { kind, url }) = Json::<NewWebhook>::from_body(&req)?;
        let url = WebhookUrl::parse(&url, UrlPolicy::default())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok((kind, url))
    }

    #[test]
    fn webhook_body_happy_path() {
        let (k, u) = parse(r#"{"type":"proxy_vpn_detect","url":"https://h.example/x"}"#).unwrap();
        assert_eq!(k, WebhookType::ProxyVpnDetect);
        assert_eq!(u.as_str(), "https://h.example/x");
    }

    #[test]
    fn webhook_body_errors_are_specific() {
        let msg = |b: &str| parse(b).unwrap_err().message().to_owned();
        assert_eq!(msg("{"), "Request body must be valid JSON");
        assert_eq!(msg("[]"), "Request body must be a JSON object");
        assert_eq!(msg(r#"{"url":"https://h.example"}"#), "`type` is required");
        assert_eq!(msg(r#"{"type":"proxy_vpn_detect"}"#), "`url` is required");
        assert_eq!(
            msg(r#"{"type":1,"url":"https://h.example"}"#),
            "`type` must be a string"
        );
        assert_eq!(
            msg(r#"{"type":"bot","url":"https://h.example"}"#),
            "`type` must be one of: proxy_vpn_detect, bot_detect"
        );
        assert!(
            msg(r#"{"type":"proxy_vpn_detect","url":"https://h.example","x":1}"#)
                .starts_with("Unknown field `x`")
        );
        assert_eq!(
            msg(r#"{"type":"proxy_vpn_detect","url":"http://h.example"}"#),
            "url must use https"
        );
    }

    /// Any JSON value: a body is accepted or refused with a message, never a panic.
    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z:/.]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("type".to_owned()),
                        Just("url".to_owned()),
                        Just("name".to_owned()),
                        Just("domain".to_owned()),
                        Just("disabled".to_owned()),
                        "[a-z]{1,6}"
                    ],
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_json_is_a_body_or_a_400(v in json_value()) {
            for result in [
                NewWebhook::from_json(v.clone()).map(|_| ()),
                NewProject::from_json(v.clone()).map(|_| ()),
                ProjectChanges::from_json(v.clone()).map(|_| ()),
            ] {
                if let Err(e) = result {
                    proptest::prop_assert_eq!(e.status(), http::StatusCode::BAD_REQUEST);
                }
            }
        }

        #[test]
        fn any_bytes_are_a_body_or_a_client_error(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            if let Err(e) = parse(&String::from_utf8_lossy(&bytes)) {
                proptest::prop_assert!(e.status().is_client_error());
            }
        }
    }
}
