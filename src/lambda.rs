//! The one bootstrap every Lambda function calls: tracing, typed config, the DynamoDB client built
//! and warmed once per cold start, then the runtime loop.

use std::future::Future;

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerRequest, ApiGatewayCustomAuthorizerResponse,
};
use lambda_http::{Body, Request, Response, service_fn};
use lambda_runtime::LambdaEvent;

use crate::config::Config;
use crate::domain::UrlPolicy;
use crate::http::auth;
use crate::http::{ApiError, Resolved, Router};
use crate::service::{ServiceError, Vigil};
use crate::store::DynamoStore;

pub type Error = lambda_runtime::Error;
pub type App = Vigil<DynamoStore>;

/// Logs as JSON in Lambda (CloudWatch parses it), readable text elsewhere. `RUST_LOG` filters.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    if std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some() {
        builder.json().with_ansi(false).without_time().init();
    } else {
        builder.with_writer(std::io::stderr).init();
    }
}

/// The service over DynamoDB, built once per cold start and kept for the life of the process.
async fn app() -> Result<&'static App, Error> {
    let config = Config::from_env()?;
    let store = DynamoStore::from_env(config.table).await;
    store.warm().await;
    Ok(Box::leak(Box::new(Vigil::new(store, UrlPolicy::default()))))
}

/// Runs one HTTP route handler as a Lambda function behind API Gateway.
pub async fn run_http<F, Fut>(handler: F) -> Result<(), Error>
where
    F: Fn(&'static App, Request) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Response<Body>> + Send,
{
    init_tracing();
    let app = app().await?;
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, std::convert::Infallible>(handler(app, req).await)
    }))
    .await
}

/// Runs the TOKEN authorizer. An unknown key is answered with the error `Unauthorized`, which API
/// Gateway turns into 401; a storage failure is any other error (500).
pub async fn run_authorizer() -> Result<(), Error> {
    init_tracing();
    let app = app().await?;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<ApiGatewayCustomAuthorizerRequest>| async move {
            authorizer(app, event.payload).await
        },
    ))
    .await
}

/// The authorizer's decision for one event.
pub async fn authorizer<S: crate::store::KeyStore>(
    app: &Vigil<S>,
    event: ApiGatewayCustomAuthorizerRequest,
) -> Result<ApiGatewayCustomAuthorizerResponse, Error> {
    match auth::authorize(app, event.authorization_token.as_deref()).await {
        Ok(account) => Ok(auth::allow_policy(
            event.method_arn.as_deref().unwrap_or("*"),
            &account,
        )),
        Err(ServiceError::Unauthorized) => Err("Unauthorized".into()),
        Err(e) => {
            tracing::error!(error = %e, "authorizer failed");
            Err("Authorizer failure".into())
        }
    }
}

/// Answers requests API Gateway routed to no function: 404, or 405 with `Allow` for known paths.
pub async fn fallback(req: Request) -> Response<Body> {
    let path = req.uri().path();
    let path = path.strip_prefix(crate::http::routes::BASE).unwrap_or(path);
    static ROUTER: std::sync::LazyLock<Router> = std::sync::LazyLock::new(Router::new);
    match ROUTER.resolve(req.method(), path) {
        Resolved::MethodNotAllowed(allow) => ApiError::MethodNotAllowed(allow).into_response(),
        // A known route reaching the fallback means API Gateway and the table disagree; still 404.
        _ => ApiError::NotFound("Not found").into_response(),
    }
}

/// Runs the fallback function; it needs no storage.
pub async fn run_fallback() -> Result<(), Error> {
    init_tracing();
    lambda_http::run(service_fn(|req: Request| async move {
        Ok::<_, std::convert::Infallible>(fallback(req).await)
    }))
    .await
}
