//! One endpoint per route, each a few lines that read like its row in the README's route table:
//! what it takes from the path and body, which service operation answers, what it returns. Every
//! step before the handler (authentication, path ids, body) is done by [`super::pipeline`].

use serde_json::Value;

use super::ApiError;
use super::extract::{
    FromQuery, Json, JsonBody, Members, Paging, Query, page_limit, query_time, with_next_link,
};
use super::paths::BASE;
use super::pipeline::{Call, Endpoint, Reply};
use crate::domain::calibration::ModelChoice;
use crate::domain::label::{Label, LabelNote, LabelReason, LabelSpec, Quality, Truth};
use crate::domain::project::{AgentPolicy, Domain, ProjectName};
use crate::domain::webhook::{WebhookType, WebhookUrl};
use crate::domain::{
    CheckResult, DeliveryView, Plan, Project, ProjectId, SessionId, SessionScore as Score,
    Timestamp, Webhook, WebhookId,
};
use crate::service::Vigil;
use crate::service::plans::Usage;
use crate::service::projects::{ProjectChanges, ProjectSpec, SealingKeysView};
use crate::store::{
    AccountStore, DeliveryStore, IdempotencyStore, LabelStore, ProjectStore, ResultStore,
    UsageStore, WebhookStore,
};

pub use super::extract::MAX_PAGE;
pub use super::ingest::{CreateEvent, GetEvent, ListEvents};
pub use super::insight::{GetStats, ListDeviceSessions, ListSessions};
/// Largest webhook creation body accepted.
pub const MAX_WEBHOOK_BODY: usize = 8 * 1024;

/// GET /results/{projectId}/{sessionId}: a page of the session's results, newest first; `null`
/// when it has none.
pub struct ListResults;

impl<S: ProjectStore + ResultStore, D: Sync> Endpoint<S, D> for ListResults {
    type Path = (ProjectId, SessionId);
    type Body = ();
    type Query = Paging;
    type Data = Option<Vec<CheckResult>>;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<Self::Path, (), Paging>,
    ) -> Result<Reply<Self::Data>, ApiError> {
        let ((project, session), paging) = (&call.path, &call.query);
        let page = app
            .results(&call.account, project, session, paging.limit, paging.after)
            .await?;
        let results: Vec<CheckResult> = page.results.iter().map(|(_, e)| e.result()).collect();
        let path = format!("/results/{project}/{session}");
        Ok(paging.reply((!results.is_empty()).then_some(results), page.next(), &path))
    }
}

/// GET /results/{projectId}/{sessionId}/general: the session's overall score.
pub struct SessionScore;

impl<S: ProjectStore + ResultStore, D: Sync> Endpoint<S, D> for SessionScore {
    type Path = (ProjectId, SessionId);
    type Body = ();
    type Query = ();
    type Data = Score;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<Self::Path, ()>,
    ) -> Result<Reply<Score>, ApiError> {
        let (project, session) = &call.path;
        Ok(Reply::ok(
            app.session_score(&call.account, project, session).await?,
        ))
    }
}

/// GET /plan: the account's plan.
pub struct GetPlan;

impl<S: AccountStore, D: Sync> Endpoint<S, D> for GetPlan {
    // Readable while the plan is not in force, so a client can learn why it is refused.
    const WITHOUT_PLAN_IN_FORCE: bool = true;
    type Path = ();
    type Body = ();
    type Query = ();
    type Data = Plan;

    async fn handle(app: &Vigil<S, D>, call: Call<(), ()>) -> Result<Reply<Plan>, ApiError> {
        // The plan authenticating read a moment ago, or (Lambda) the account's.
        let plan = match call.plan {
            Some(plan) => plan,
            None => app.plan(&call.account).await?,
        };
        Ok(Reply::ok(plan))
    }
}

/// GET /projects/{projectId}: one project of the account.
pub struct GetProject;

impl<S: ProjectStore, D: Sync> Endpoint<S, D> for GetProject {
    type Path = ProjectId;
    type Body = ();
    type Query = ();
    type Data = Project;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<ProjectId, ()>,
    ) -> Result<Reply<Project>, ApiError> {
        Ok(Reply::ok(app.project(&call.account, &call.path).await?))
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

/// POST /projects/{projectId}/webhooks: 201 with the new webhook's `Location`.
pub struct CreateWebhook;

impl<S: ProjectStore + WebhookStore, D: Sync> Endpoint<S, D> for CreateWebhook {
    type Path = ProjectId;
    type Body = Json<NewWebhook>;
    type Query = ();
    type Data = ();

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<ProjectId, Self::Body>,
    ) -> Result<Reply<()>, ApiError> {
        let Json(NewWebhook { kind, url }) = call.body;
        let url = WebhookUrl::parse(&url, app.url_policy())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let hook = app
            .create_webhook(&call.account, &call.path, kind, url)
            .await?;
        let location = format!("{BASE}/projects/{}/webhooks/{}", call.path, hook.id);
        Ok(Reply::created((), location))
    }
}

/// GET /projects/{projectId}/webhooks: the project's webhooks, oldest first.
pub struct ListWebhooks;

impl<S: ProjectStore + WebhookStore, D: Sync> Endpoint<S, D> for ListWebhooks {
    type Path = ProjectId;
    type Body = ();
    type Query = ();
    type Data = Vec<Webhook>;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<ProjectId, ()>,
    ) -> Result<Reply<Vec<Webhook>>, ApiError> {
        Ok(Reply::ok(app.webhooks(&call.account, &call.path).await?))
    }
}

/// DELETE /projects/{projectId}/webhooks/{webhookId}
pub struct DeleteWebhook;

impl<S: ProjectStore + WebhookStore, D: Sync> Endpoint<S, D> for DeleteWebhook {
    type Path = (ProjectId, WebhookId);
    type Body = ();
    type Query = ();
    type Data = ();

    async fn handle(app: &Vigil<S, D>, call: Call<Self::Path, ()>) -> Result<Reply<()>, ApiError> {
        let (project, webhook) = &call.path;
        app.delete_webhook(&call.account, project, webhook).await?;
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

/// GET /projects/{projectId}/webhooks/{webhookId}/secret: the secret its deliveries are signed
/// with (developer key; never in a listing).
pub struct GetWebhookSecret;

impl<S: ProjectStore + WebhookStore, D: Sync> Endpoint<S, D> for GetWebhookSecret {
    type Path = (ProjectId, WebhookId);
    type Body = ();
    type Query = ();
    type Data = SecretView;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<Self::Path, ()>,
    ) -> Result<Reply<SecretView>, ApiError> {
        let (project, webhook) = &call.path;
        let secret = app.webhook_secret(&call.account, project, webhook).await?;
        Ok(Reply::ok(SecretView {
            secret: secret.map(String::from),
        }))
    }
}

/// POST /projects/{projectId}/webhooks/{webhookId}/secret/rotate: a new secret; the previous one
/// keeps signing beside it for the overlap (24 hours unless configured).
pub struct RotateWebhookSecret;

impl<S: ProjectStore + WebhookStore, D: Sync> Endpoint<S, D> for RotateWebhookSecret {
    type Path = (ProjectId, WebhookId);
    type Body = ();
    type Query = ();
    type Data = SecretView;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<Self::Path, ()>,
    ) -> Result<Reply<SecretView>, ApiError> {
        let (project, webhook) = &call.path;
        let secret = app
            .rotate_webhook_secret(&call.account, project, webhook)
            .await?;
        Ok(Reply::ok(SecretView {
            secret: Some(secret.into()),
        }))
    }
}

/// GET /projects/{projectId}/sealing-key: the keys that open the project's sealed verdicts, as
/// JWKs (`kty: oct`, `alg: dir`, `enc: A256GCM`), the current one first.
pub struct GetSealingKey;

impl<S: ProjectStore, D: Sync> Endpoint<S, D> for GetSealingKey {
    type Path = ProjectId;
    type Body = ();
    type Query = ();
    type Data = SealingKeysView;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<ProjectId, ()>,
    ) -> Result<Reply<SealingKeysView>, ApiError> {
        Ok(Reply::ok(
            app.sealing_keys(&call.account, &call.path).await?,
        ))
    }
}

/// POST /projects/{projectId}/sealing-key/rotate: a new key seals from now; the replaced one stays
/// listed for the overlap (24 hours unless configured).
pub struct RotateSealingKey;

impl<S: ProjectStore, D: Sync> Endpoint<S, D> for RotateSealingKey {
    type Path = ProjectId;
    type Body = ();
    type Query = ();
    type Data = SealingKeysView;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<ProjectId, ()>,
    ) -> Result<Reply<SealingKeysView>, ApiError> {
        Ok(Reply::ok(
            app.rotate_sealing_key(&call.account, &call.path).await?,
        ))
    }
}

/// What the test and redelivery routes answer: the delivery queued.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Queued {
    pub delivery_id: crate::domain::DeliveryId,
}

/// POST /projects/{projectId}/webhooks/{webhookId}/test: queues a `webhook.test` event, signed like
/// the rest; 202 with its delivery id (its log shows it under the session `webhook-test`).
pub struct TestWebhook;

impl<S: ProjectStore + WebhookStore + DeliveryStore, D: Sync> Endpoint<S, D> for TestWebhook {
    type Path = (ProjectId, WebhookId);
    type Body = ();
    type Query = ();
    type Data = Queued;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<Self::Path, ()>,
    ) -> Result<Reply<Queued>, ApiError> {
        let (project, webhook) = &call.path;
        let id = app.test_webhook(&call.account, project, webhook).await?;
        Ok(Reply::accepted(Queued { delivery_id: id }))
    }
}

/// POST /projects/{projectId}/deliveries/{deliveryId}/redeliver: the same payload and
/// `webhook-id` again, as one more attempt; 202.
pub struct Redeliver;

impl<S: ProjectStore + WebhookStore + DeliveryStore, D: Sync> Endpoint<S, D> for Redeliver {
    type Path = (ProjectId, crate::domain::DeliveryId);
    type Body = ();
    type Query = ();
    type Data = Queued;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<Self::Path, ()>,
    ) -> Result<Reply<Queued>, ApiError> {
        let (project, delivery) = &call.path;
        let id = app.redeliver(&call.account, project, delivery).await?;
        Ok(Reply::accepted(Queued { delivery_id: id }))
    }
}

/// GET /projects/{projectId}/webhooks/{webhookId}/deliveries: the delivery log, newest first.
pub struct ListDeliveries;

impl<S: ProjectStore + WebhookStore + DeliveryStore, D: Sync> Endpoint<S, D> for ListDeliveries {
    type Path = (ProjectId, WebhookId);
    type Body = ();
    type Query = ();
    type Data = Vec<DeliveryView>;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<Self::Path, ()>,
    ) -> Result<Reply<Self::Data>, ApiError> {
        let (project, webhook) = &call.path;
        Ok(Reply::ok(
            app.deliveries(&call.account, project, webhook).await?,
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

/// POST /projects: 201 with the new project (its keys included) and its `Location`.
pub struct CreateProject;

impl<S: ProjectStore + IdempotencyStore, D: Sync> Endpoint<S, D> for CreateProject {
    const IDEMPOTENT: bool = true;
    type Path = ();
    type Body = Json<NewProject>;
    type Query = ();
    type Data = Project;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<(), Self::Body>,
    ) -> Result<Reply<Project>, ApiError> {
        let Json(NewProject(spec)) = call.body;
        let project = app
            .create_project(&call.account, &call.terms, spec, call.once.as_ref())
            .await?;
        let location = format!("{BASE}/projects/{}", project.id);
        Ok(Reply::created(project, location))
    }
}

/// GET /projects: the account's projects, oldest first.
pub struct ListProjects;

impl<S: ProjectStore, D: Sync> Endpoint<S, D> for ListProjects {
    type Path = ();
    type Body = ();
    type Query = ();
    type Data = Vec<Project>;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<(), ()>,
    ) -> Result<Reply<Vec<Project>>, ApiError> {
        Ok(Reply::ok(app.projects(&call.account).await?))
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

/// PATCH /projects/{projectId}: changes `name`, `domain` or `disabled`; the project as it now is.
pub struct UpdateProject;

impl<S: ProjectStore, D: Sync> Endpoint<S, D> for UpdateProject {
    type Path = ProjectId;
    type Body = Json<ProjectChanges>;
    type Query = ();
    type Data = Project;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<ProjectId, Self::Body>,
    ) -> Result<Reply<Project>, ApiError> {
        let Json(changes) = call.body;
        Ok(Reply::ok(
            app.update_project(&call.account, &call.path, changes)
                .await?,
        ))
    }
}

/// GET /usage: the current billing period's requests against `maxRequests`.
pub struct GetUsage;

impl<S: UsageStore, D: Sync> Endpoint<S, D> for GetUsage {
    type Path = ();
    type Body = ();
    type Query = ();
    type Data = Usage;

    async fn handle(app: &Vigil<S, D>, call: Call<(), ()>) -> Result<Reply<Usage>, ApiError> {
        Ok(Reply::ok(app.usage(&call.account, &call.terms).await?))
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
        let bad = |e: crate::domain::label::LabelError| ApiError::bad_request(e.to_string());
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

/// PUT /projects/{projectId}/sessions/{sessionId}/label: labels one of the project's sessions
/// (`bot` or `human`), replacing its label if it had one. Idempotent; stored scores never change.
pub struct PutLabel;

impl<S: ProjectStore + ResultStore + LabelStore, D: Sync> Endpoint<S, D> for PutLabel {
    type Path = (ProjectId, SessionId);
    type Body = Json<LabelSpec>;
    type Query = ();
    type Data = Label;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<Self::Path, Json<LabelSpec>>,
    ) -> Result<Reply<Label>, ApiError> {
        let (project, session) = &call.path;
        let Json(spec) = call.body;
        Ok(Reply::ok(
            app.label_session(&call.account, project, session, spec)
                .await?,
        ))
    }
}

/// GET /projects/{projectId}/sessions/{sessionId}/label: the session's label (404 without one).
pub struct GetLabel;

impl<S: ProjectStore + ResultStore + LabelStore, D: Sync> Endpoint<S, D> for GetLabel {
    type Path = (ProjectId, SessionId);
    type Body = ();
    type Query = ();
    type Data = Label;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<Self::Path, ()>,
    ) -> Result<Reply<Label>, ApiError> {
        let (project, session) = &call.path;
        Ok(Reply::ok(app.label(&call.account, project, session).await?))
    }
}

/// DELETE /projects/{projectId}/sessions/{sessionId}/label: withdraws the session's label.
pub struct DeleteLabel;

impl<S: ProjectStore + ResultStore + LabelStore, D: Sync> Endpoint<S, D> for DeleteLabel {
    type Path = (ProjectId, SessionId);
    type Body = ();
    type Query = ();
    type Data = ();

    async fn handle(app: &Vigil<S, D>, call: Call<Self::Path, ()>) -> Result<Reply<()>, ApiError> {
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
                .map(|c| crate::domain::cursor::decode_labels(c, project))
                .transpose()
                .map_err(|_| ApiError::bad_request("cursor is not valid for this project"))?,
            explicit_limit: q.first("limit").is_some(),
        })
    }
}

/// GET /projects/{projectId}/labels: the project's labels by session id, paged by `Link`.
pub struct ListLabels;

impl<S: ProjectStore + ResultStore + LabelStore, D: Sync> Endpoint<S, D> for ListLabels {
    type Path = ProjectId;
    type Body = ();
    type Query = LabelsQuery;
    type Data = Vec<Label>;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<ProjectId, (), LabelsQuery>,
    ) -> Result<Reply<Vec<Label>>, ApiError> {
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
                    &crate::domain::cursor::encode_labels(project, &last),
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

/// GET /projects/{projectId}/quality: how right the engine was on the sessions labelled in the
/// range: precision and recall at the webhook threshold, and the reasons behind its mistakes.
pub struct GetQuality;

impl<S: ProjectStore + ResultStore + LabelStore, D: Sync> Endpoint<S, D> for GetQuality {
    type Path = ProjectId;
    type Body = ();
    type Query = QualityRange;
    type Data = Quality;

    async fn handle(
        app: &Vigil<S, D>,
        call: Call<ProjectId, (), QualityRange>,
    ) -> Result<Reply<Quality>, ApiError> {
        let r = &call.query;
        Ok(Reply::ok(
            app.quality(&call.account, &call.path, r.from, r.to).await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::UrlPolicy;
    use crate::extract::FromBody;

    /// The creation body as the pipeline's body step and the handler read it.
    fn parse(body: &str) -> Result<(WebhookType, WebhookUrl), ApiError> {
        let req = lambda_http::Request::new(lambda_http::Body::from(body));
        let (mut parts, body) = req.into_parts();
        parts.headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        let req = lambda_http::Request::from_parts(parts, body);
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
