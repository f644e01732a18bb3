//! The one place where a request becomes an answer, for the Lambda functions and `vigil serve`
//! alike. Every route passes the same steps in the same order:
//!
//! 1. route: API Gateway (or the local router) picked the endpoint; unknown paths are 404 and known
//!    paths with another method 405, before anything here runs;
//! 2. authentication: the account the authorizer put in the request context, else 401;
//! 3. path ids: the endpoint's [`FromPath`] type, else 400;
//! 4. body: the endpoint's [`FromBody`] type, else 415, 413 or 400;
//! 5. the endpoint's handler, whose [`Reply`] or [`ApiError`] is turned into a response here.
//!
//! A step that must run for every authenticated request belongs in [`answer`], once.

use std::future::Future;

use http::{HeaderName, StatusCode, header};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;
use serde_json::Value;

use super::extract::{FromBody, FromPath};
use super::routes::{Route, with_routes};
use super::{ACCOUNT_CONTEXT_KEY, ApiError, json_response, set_header};
use crate::domain::AccountId;
use crate::service::Vigil;
use crate::store::Store;

/// One route: what it extracts from the request, and its handler.
pub trait Endpoint<S>: 'static {
    type Path: FromPath + Send + Sync;
    type Body: FromBody + Send + Sync;
    type Data: Serialize;

    fn handle(
        app: &Vigil<S>,
        call: Call<'_, Self::Path, Self::Body>,
    ) -> impl Future<Output = Result<Reply<Self::Data>, ApiError>> + Send;
}

/// A request that passed every step before the handler.
pub struct Call<'a, P, B> {
    pub account: AccountId,
    pub path: P,
    pub body: B,
    pub req: &'a Request,
}

/// A successful answer: `{"data": ...}` with its status and headers.
pub struct Reply<T> {
    status: StatusCode,
    data: T,
    headers: Vec<(HeaderName, String)>,
}

impl<T: Serialize> Reply<T> {
    /// 200 with `data`.
    pub fn ok(data: T) -> Self {
        Self {
            status: StatusCode::OK,
            data,
            headers: Vec::new(),
        }
    }

    /// 201 with `data` and the new resource's `Location`.
    pub fn created(data: T, location: String) -> Self {
        Self {
            status: StatusCode::CREATED,
            data,
            headers: vec![(header::LOCATION, location)],
        }
    }

    pub fn with_header(mut self, name: HeaderName, value: String) -> Self {
        self.headers.push((name, value));
        self
    }

    fn into_response(self) -> Result<Response<Body>, ApiError> {
        #[derive(Serialize)]
        struct Envelope<T> {
            data: T,
        }
        let body = serde_json::to_string(&Envelope { data: self.data }).map_err(|e| {
            tracing::error!(error = %e, "serialising a response failed");
            ApiError::Internal
        })?;
        let mut res = json_response(self.status, body);
        for (name, value) in self.headers {
            set_header(&mut res, name, &value);
        }
        Ok(res)
    }
}

/// The account the authorizer put into the request context; 401 without it.
fn authenticated(req: &Request) -> Result<AccountId, ApiError> {
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

/// Answers one request of endpoint `E` (steps 2 to 5 above).
pub async fn answer<E, S>(app: &Vigil<S>, req: Request) -> Response<Body>
where
    E: Endpoint<S>,
    S: Sync,
{
    let reply = async {
        let account = authenticated(&req)?;
        let path = E::Path::from_path(&req)?;
        let body = E::Body::from_body(&req)?;
        let call = Call {
            account,
            path,
            body,
            req: &req,
        };
        E::handle(app, call).await?.into_response()
    };
    reply.await.unwrap_or_else(ApiError::into_response)
}

/// Answers a request the local router resolved to `route`. Each endpoint is named after its route,
/// so the match cannot pair a route with another route's handler.
pub async fn route<S: Store>(app: &Vigil<S>, route: Route, req: Request) -> Response<Body> {
    macro_rules! endpoints {
        ($($name:ident),* $(,)?) => {
            match route {
                $(Route::$name => answer::<super::handlers::$name, S>(app, req).await,)*
            }
        };
    }
    with_routes!(endpoints)
}
