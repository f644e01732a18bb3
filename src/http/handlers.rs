//! One handler per route. Each takes the service and an API Gateway proxy request (the account in
//! its authorizer context, the path parameters already extracted) and always returns a response.

use std::str::FromStr;

use http::{StatusCode, header};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::Value;

use super::routes::{BASE, Route};
use super::{ACCOUNT_CONTEXT_KEY, ApiError, data_response, set_header};
use crate::domain::cursor;
use crate::domain::webhook::{WebhookType, WebhookUrl};
use crate::domain::{AccountId, CheckResult, IdError, ProjectId, SessionId, WebhookId};
use crate::service::Vigil;
use crate::store::{AccountStore, DeliveryStore, ProjectStore, ResultStore, Store, WebhookStore};

/// Most results per page, and the default page size.
pub const MAX_PAGE: usize = 100;
/// Largest webhook creation body accepted.
pub const MAX_WEBHOOK_BODY: usize = 8 * 1024;

type HandlerResult = Result<Response<Body>, ApiError>;

fn finish(r: HandlerResult) -> Response<Body> {
    r.unwrap_or_else(ApiError::into_response)
}

/// The account the authorizer put into the request context; 401 without it.
fn account(req: &Request) -> Result<AccountId, ApiError> {
    let Some(RequestContext::ApiGatewayV1(ctx)) = req.request_context_ref() else {
        return Err(ApiError::Unauthorized);
    };
    ctx.authorizer
        .fields
        .get(ACCOUNT_CONTEXT_KEY)
        .and_then(Value::as_str)
        .and_then(|s| AccountId::parse(s).ok())
        .ok_or(ApiError::Unauthorized)
}

fn path<T: FromStr<Err = IdError>>(req: &Request, name: &'static str) -> Result<T, ApiError> {
    let raw = req
        .path_parameters_ref()
        .and_then(|p| p.first(name))
        .ok_or_else(|| ApiError::bad_request(format!("{name} is required")))?;
    raw.parse()
        .map_err(|e: IdError| ApiError::bad_request(format!("{name} {e}")))
}

fn query<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.query_string_parameters_ref()
        .and_then(|q| q.first(name))
}

fn page_limit(req: &Request) -> Result<usize, ApiError> {
    match query(req, "limit") {
        None => Ok(MAX_PAGE),
        Some(s) => s
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .ok_or_else(|| ApiError::bad_request("limit must be an integer from 1 to 100")),
    }
}

/// GET /results/{projectId}/{sessionId}
pub async fn list_results<S: ProjectStore + ResultStore>(
    app: &Vigil<S>,
    req: Request,
) -> Response<Body> {
    finish(
        async {
            let account = account(&req)?;
            let project: ProjectId = path(&req, "projectId")?;
            let session: SessionId = path(&req, "sessionId")?;
            let limit = page_limit(&req)?;
            let after = query(&req, "cursor")
                .map(|c| cursor::decode(c, &project, &session))
                .transpose()
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            let page = app
                .results(&account, &project, &session, limit, after)
                .await?;
            let next = page
                .more
                .then(|| {
                    page.results
                        .last()
                        .map(|(at, _)| cursor::encode(&project, &session, *at))
                })
                .flatten();
            let results: Vec<&CheckResult> = page.results.iter().map(|(_, r)| r).collect();
            let mut res = if results.is_empty() {
                data_response(StatusCode::OK, &Value::Null)
            } else {
                data_response(StatusCode::OK, &results)
            };
            if let Some(c) = next {
                let limit_param =
                    query(&req, "limit").map_or(String::new(), |_| format!("&limit={limit}"));
                let link = format!(
                    "<{BASE}/results/{project}/{session}?cursor={c}{limit_param}>; rel=\"next\""
                );
                set_header(&mut res, header::LINK, &link);
            }
            Ok(res)
        }
        .await,
    )
}

/// GET /results/{projectId}/{sessionId}/general
pub async fn session_score<S: ProjectStore + ResultStore>(
    app: &Vigil<S>,
    req: Request,
) -> Response<Body> {
    finish(
        async {
            let account = account(&req)?;
            let project: ProjectId = path(&req, "projectId")?;
            let session: SessionId = path(&req, "sessionId")?;
            let score = app.session_score(&account, &project, &session).await?;
            Ok(data_response(StatusCode::OK, &score))
        }
        .await,
    )
}

/// GET /plan
pub async fn get_plan<S: AccountStore>(app: &Vigil<S>, req: Request) -> Response<Body> {
    finish(
        async {
            let account = account(&req)?;
            Ok(data_response(StatusCode::OK, &app.plan(&account).await?))
        }
        .await,
    )
}

/// GET /projects/{projectId}
pub async fn get_project<S: ProjectStore>(app: &Vigil<S>, req: Request) -> Response<Body> {
    finish(
        async {
            let account = account(&req)?;
            let project: ProjectId = path(&req, "projectId")?;
            Ok(data_response(
                StatusCode::OK,
                &app.project(&account, &project).await?,
            ))
        }
        .await,
    )
}

/// The creation body: exactly `type` and `url`, both strings.
fn parse_webhook_body(
    app_policy: crate::domain::UrlPolicy,
    body: &[u8],
) -> Result<(WebhookType, WebhookUrl), ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| ApiError::bad_request("Request body must be valid JSON"))?;
    let Value::Object(fields) = value else {
        return Err(ApiError::bad_request("Request body must be a JSON object"));
    };
    if let Some(extra) = fields.keys().find(|k| *k != "type" && *k != "url") {
        return Err(ApiError::bad_request(format!(
            "Unknown field `{}`: only `type` and `url` are allowed",
            extra.chars().take(64).collect::<String>()
        )));
    }
    let string = |name: &'static str| match fields.get(name) {
        None | Some(Value::Null) => Err(ApiError::bad_request(format!("`{name}` is required"))),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(_) => Err(ApiError::bad_request(format!("`{name}` must be a string"))),
    };
    let kind: WebhookType = serde_json::from_value(Value::String(string("type")?.to_owned()))
        .map_err(|_| ApiError::bad_request("`type` must be one of: proxy_vpn_detect"))?;
    let url = WebhookUrl::parse(string("url")?, app_policy)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((kind, url))
}

fn is_json(req: &Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// POST /projects/{projectId}/webhooks
pub async fn create_webhook<S: ProjectStore + WebhookStore>(
    app: &Vigil<S>,
    req: Request,
) -> Response<Body> {
    finish(
        async {
            let account = account(&req)?;
            let project: ProjectId = path(&req, "projectId")?;
            if !is_json(&req) {
                return Err(ApiError::UnsupportedMediaType);
            }
            let body = req.body().as_ref();
            if body.len() > MAX_WEBHOOK_BODY {
                return Err(ApiError::PayloadTooLarge);
            }
            let (kind, url) = parse_webhook_body(app.url_policy(), body)?;
            let hook = app.create_webhook(&account, &project, kind, url).await?;
            let mut res = data_response(StatusCode::CREATED, &Value::Null);
            let location = format!("{BASE}/projects/{project}/webhooks/{}", hook.id);
            set_header(&mut res, header::LOCATION, &location);
            Ok(res)
        }
        .await,
    )
}

/// GET /projects/{projectId}/webhooks
pub async fn list_webhooks<S: ProjectStore + WebhookStore>(
    app: &Vigil<S>,
    req: Request,
) -> Response<Body> {
    finish(
        async {
            let account = account(&req)?;
            let project: ProjectId = path(&req, "projectId")?;
            Ok(data_response(
                StatusCode::OK,
                &app.webhooks(&account, &project).await?,
            ))
        }
        .await,
    )
}

/// DELETE /projects/{projectId}/webhooks/{webhookId}
pub async fn delete_webhook<S: ProjectStore + WebhookStore>(
    app: &Vigil<S>,
    req: Request,
) -> Response<Body> {
    finish(
        async {
            let account = account(&req)?;
            let project: ProjectId = path(&req, "projectId")?;
            let webhook: WebhookId = path(&req, "webhookId")?;
            app.delete_webhook(&account, &project, &webhook).await?;
            Ok(data_response(StatusCode::OK, &Value::Null))
        }
        .await,
    )
}

/// GET /projects/{projectId}/webhooks/{webhookId}/deliveries
pub async fn list_deliveries<S: ProjectStore + WebhookStore + DeliveryStore>(
    app: &Vigil<S>,
    req: Request,
) -> Response<Body> {
    finish(
        async {
            let account = account(&req)?;
            let project: ProjectId = path(&req, "projectId")?;
            let webhook: WebhookId = path(&req, "webhookId")?;
            let log = app.deliveries(&account, &project, &webhook).await?;
            Ok(data_response(StatusCode::OK, &log))
        }
        .await,
    )
}

/// Runs the handler of `route` (the local server's single entry point).
pub async fn dispatch<S: Store>(app: &Vigil<S>, route: Route, req: Request) -> Response<Body> {
    match route {
        Route::ListResults => list_results(app, req).await,
        Route::SessionScore => session_score(app, req).await,
        Route::GetPlan => get_plan(app, req).await,
        Route::GetProject => get_project(app, req).await,
        Route::CreateWebhook => create_webhook(app, req).await,
        Route::ListWebhooks => list_webhooks(app, req).await,
        Route::DeleteWebhook => delete_webhook(app, req).await,
        Route::ListDeliveries => list_deliveries(app, req).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::UrlPolicy;

    fn parse(body: &str) -> Result<(WebhookType, WebhookUrl), ApiError> {
        parse_webhook_body(UrlPolicy::default(), body.as_bytes())
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
            "`type` must be one of: proxy_vpn_detect"
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
}
