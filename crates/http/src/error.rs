//! The one place where failures become `{"message"}` responses. Internal detail is logged here and
//! never sent.

use std::borrow::Cow;

use http::{HeaderValue, StatusCode, header};

use crate::message::Response;
use vigil_core::domain::plan::Refusal;
use vigil_core::report::Chain;
use vigil_core::service::error::{ServiceError, TestBudget};
use vigil_core::store::StoreError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    BadRequest(Cow<'static, str>),
    Unauthorized,
    /// 401 with what was wrong with the credential the caller itself sent (a session token).
    BadCredential(&'static str),
    NotFound(&'static str),
    /// Carries the `Allow` header value.
    MethodNotAllowed(String),
    Conflict(&'static str),
    Forbidden(&'static str),
    /// Well-formed but not acceptable in this state (an idempotency key reused for another request).
    Unprocessable(&'static str),
    /// Over a plan limit: the message and the `Retry-After` seconds.
    TooManyRequests(&'static str, u64),
    PayloadTooLarge,
    /// The body did not arrive in time (`vigil serve`; API Gateway has its own).
    RequestTimeout,
    /// 415 naming every media type the route accepts.
    UnsupportedMediaType(&'static str),
    /// Storage throttled after retries: the client should retry later.
    Unavailable,
    Internal,
}

impl ApiError {
    pub fn bad_request(msg: impl Into<Cow<'static, str>>) -> Self {
        ApiError::BadRequest(msg.into())
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized | ApiError::BadCredential(_) => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::TooManyRequests(..) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            ApiError::BadRequest(m) => m,
            ApiError::Unauthorized => "Unauthorized",
            ApiError::NotFound(m)
            | ApiError::Conflict(m)
            | ApiError::Forbidden(m)
            | ApiError::BadCredential(m)
            | ApiError::UnsupportedMediaType(m)
            | ApiError::Unprocessable(m) => m,
            ApiError::TooManyRequests(m, _) => m,
            ApiError::MethodNotAllowed(_) => "Method not allowed",
            ApiError::PayloadTooLarge => "Request body is too large",
            ApiError::RequestTimeout => "Request body was not received in time",
            ApiError::Unavailable => "Service temporarily unavailable, retry later",
            ApiError::Internal => "Internal server error",
        }
    }

    pub fn into_response(self) -> Response {
        let body = serde_json::json!({ "message": self.message() }).to_string();
        let mut res = crate::response::json_response(self.status(), body);
        match &self {
            ApiError::MethodNotAllowed(allow) => {
                crate::response::set_header(&mut res, header::ALLOW, allow)
            }
            ApiError::Unavailable => {
                res.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            ApiError::TooManyRequests(_, seconds) => {
                res.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(*seconds));
            }
            _ => {}
        }
        res
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            e @ StoreError::Throttled(_) => {
                tracing::warn!(error = %Chain(&e), "answering 503");
                ApiError::Unavailable
            }
            e => {
                tracing::error!(error = %Chain(&e), "answering 500");
                ApiError::Internal
            }
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Unauthorized => ApiError::Unauthorized,
            ServiceError::ProjectNotFound => ApiError::NotFound("Project not found"),
            ServiceError::SessionNotFound => ApiError::NotFound("Session not found"),
            ServiceError::LabelNotFound => ApiError::NotFound("Label not found"),
            ServiceError::TooFewLabels { .. } => ApiError::Conflict(
                "Calibration needs at least 50 labels of each kind, at most 200 counted a day",
            ),
            ServiceError::WebhookNotFound => ApiError::NotFound("Webhook not found"),
            ServiceError::DeliveryNotFound => ApiError::NotFound("Delivery not found"),
            ServiceError::WebhookDuplicate => {
                ApiError::Conflict("A webhook with this type and url already exists on the project")
            }
            ServiceError::WebhookLimit => {
                ApiError::Conflict("The project already has the maximum of 10 webhooks")
            }
            ServiceError::ProjectLimit => ApiError::Forbidden("Project limit reached"),
            ServiceError::TestBudget(TestBudget::Webhook, s) => {
                ApiError::TooManyRequests("At most 5 test events per webhook per minute", s)
            }
            ServiceError::TestBudget(TestBudget::Account, s) => {
                ApiError::TooManyRequests("At most 20 test events per account per minute", s)
            }
            ServiceError::Refused(Refusal::PlanInactive) => {
                vigil_core::metrics::refusal("plan_inactive");
                ApiError::Forbidden("Plan is not active")
            }
            ServiceError::Refused(Refusal::RateLimited(s)) => {
                vigil_core::metrics::refusal("rate");
                ApiError::TooManyRequests("Rate limit exceeded", s)
            }
            ServiceError::Refused(Refusal::QuotaExceeded(s)) => {
                vigil_core::metrics::refusal("quota");
                ApiError::TooManyRequests("Monthly request quota exceeded", s)
            }
            ServiceError::EventNotFound => ApiError::NotFound("Event not found"),
            ServiceError::IdempotencyMismatch => {
                ApiError::Unprocessable("Idempotency-Key was already used with another request")
            }
            ServiceError::ProjectDisabled => ApiError::Forbidden("Project is disabled"),
            ServiceError::UnknownPublicKey => ApiError::Unauthorized,
            ServiceError::OriginNotAllowed => {
                ApiError::Forbidden("Origin is not allowed for this project")
            }
            ServiceError::SessionTokenRequired => {
                ApiError::BadCredential("`sessionToken` is required for this project")
            }
            ServiceError::SessionToken(_) => {
                ApiError::BadCredential("`sessionToken` is invalid or expired")
            }
            // As a store's corrupt data was answered before sealing had its own error: a 500.
            e @ (ServiceError::EngineFault(_) | ServiceError::Sealing(_)) => {
                tracing::error!(error = %Chain(&e), "answering 500");
                ApiError::Internal
            }
            ServiceError::Store(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_details_never_reach_the_body() {
        let e: ApiError = ServiceError::Store(StoreError::Backend(
            "GetItem: ResourceNotFoundException: table vigil-prod".into(),
        ))
        .into();
        let res = e.into_response();
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = std::str::from_utf8(res.body().as_ref()).unwrap().to_owned();
        assert_eq!(body, r#"{"message":"Internal server error"}"#);
    }

    #[test]
    fn a_sealing_failure_is_a_plain_500() {
        let e = ServiceError::Sealing(vigil_core::domain::sealing::SealError::BadKey);
        let res = ApiError::from(e).into_response();
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = std::str::from_utf8(res.body().as_ref()).unwrap().to_owned();
        assert_eq!(body, r#"{"message":"Internal server error"}"#);
    }

    #[test]
    fn throttling_is_503_with_retry_after() {
        let res = ApiError::from(StoreError::Throttled("x".into())).into_response();
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(res.headers()[header::RETRY_AFTER], "1");
    }

    #[test]
    fn method_not_allowed_has_allow() {
        let res = ApiError::MethodNotAllowed("GET, POST".into()).into_response();
        assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(res.headers()[header::ALLOW], "GET, POST");
        assert_eq!(res.headers()[header::CONTENT_TYPE], "application/json");
    }
}
