//! The one bootstrap every Lambda function calls: tracing, typed config, the DynamoDB client built
//! and warmed once per cold start, then the runtime loop. Route functions, the authorizer, the
//! fallback, webhook dispatch and the retry sweep each have their entry point here.

use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerRequest, ApiGatewayCustomAuthorizerResponse,
};
use aws_lambda_events::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_http::{Body, Request, Response, service_fn};
use lambda_runtime::LambdaEvent;

use crate::gateway::{self, Edge};
use vigil_core::config::Config;
use vigil_core::domain::UrlPolicy;
use vigil_core::report::Chain;
use vigil_core::service::error::ServiceError;
use vigil_core::service::vigil::{Detecting, Vigil};
use vigil_core::store::{DeliveryStore, ProjectStore};
use vigil_dispatch::Dispatcher;
use vigil_http::{ApiError, Endpoint, Resolved, Router, auth, respond};
use vigil_store_dynamo::DynamoStore;

pub type Error = lambda_runtime::Error;
pub type App = Vigil<DynamoStore>;
/// The service of the functions that evaluate visits.
pub type DetectingApp = Vigil<DynamoStore, Detecting>;

/// Logs as JSON in Lambda (CloudWatch parses it), readable text elsewhere; `RUST_LOG` filters
/// them. In Lambda, metric events ([`vigil_core::metrics`]) are written to stdout as the EMF lines they
/// carry, whatever `RUST_LOG` says; elsewhere they are dropped.
pub fn init_tracing() {
    use tracing_subscriber::filter::{EnvFilter, filter_fn};
    use tracing_subscriber::prelude::*;
    let env = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = || filter_fn(|m| m.target() != vigil_core::metrics::TARGET);
    if std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some() {
        let fmt = tracing_subscriber::fmt::layer()
            .json()
            .with_ansi(false)
            .without_time()
            .with_target(false)
            .with_filter(env())
            .with_filter(logs());
        let emf = vigil_core::metrics::EmfLayer::new(std::io::stdout())
            .with_filter(filter_fn(|m| m.target() == vigil_core::metrics::TARGET));
        tracing_subscriber::registry().with(fmt).with(emf).init();
    } else {
        // Colours for a person at a terminal, plain text for a file or a pipe.
        let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let fmt = tracing_subscriber::fmt::layer()
            .with_ansi(ansi)
            .with_target(false)
            .with_writer(std::io::stderr)
            .with_filter(env())
            .with_filter(logs());
        tracing_subscriber::registry().with(fmt).init();
    }
}

/// The service over DynamoDB, built once per cold start and kept for the life of the process.
async fn app() -> Result<&'static App, Error> {
    let config = Config::from_env()?;
    let store = crate::root::warm_dynamo(&config).await;
    let app = crate::root::service(store, UrlPolicy::default(), &config);
    Ok(Box::leak(Box::new(app)))
}

/// The webhook dispatcher over DynamoDB, built once per cold start.
async fn dispatcher() -> Result<&'static Dispatcher<DynamoStore>, Error> {
    let config = Config::from_env()?;
    let store = crate::root::warm_dynamo(&config).await;
    let dispatcher = crate::root::dispatcher(store, UrlPolicy::default(), &config)?;
    Ok(Box::leak(Box::new(dispatcher)))
}

/// Runs the webhook-dispatch function on the table's stream. A storage failure reports the
/// failed record (partial batch response): Lambda retries from it, and the records before it,
/// already done, are not sent again. Receivers' failures never fail a record.
pub async fn run_webhook_dispatch() -> Result<(), Error> {
    init_tracing();
    let dispatcher = dispatcher().await?;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<aws_lambda_events::dynamodb::Event>| async move {
            Ok::<_, Error>(handle_stream_batch(dispatcher, event.payload).await)
        },
    ))
    .await
}

/// The webhook-dispatch function's answer to one batch of stream records: their feed events go
/// to the dispatcher, and a failure names the record Lambda must retry from.
pub async fn handle_stream_batch<S: ProjectStore + DeliveryStore>(
    dispatcher: &Dispatcher<S>,
    event: aws_lambda_events::dynamodb::Event,
) -> DynamoDbEventResponse {
    let mut response = DynamoDbEventResponse::default();
    let events = vigil_store_dynamo::records::feed_events(&event.records);
    if let Err((i, e)) = dispatcher
        .handle(&events, vigil_dispatch::FIRST_ATTEMPT_BUDGET)
        .await
    {
        tracing::error!(error = %Chain(&e), "dispatch failed; reporting the record for retry");
        let mut failure = DynamoDbBatchItemFailure::default();
        failure.item_identifier = event.records[i].change.sequence_number.clone();
        response.batch_item_failures.push(failure);
    }
    response
}

/// Runs the retry sweep, invoked on a schedule. It sweeps round after round while it finds due
/// deliveries, and stops starting rounds once a round could outlast the invocation.
pub async fn run_sweep() -> Result<(), Error> {
    init_tracing();
    let dispatcher = dispatcher().await?;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<serde_json::Value>| async move {
            let deadline = event.context.deadline();
            let round = vigil_dispatch::deliver::TOTAL_TIMEOUT + std::time::Duration::from_secs(5);
            let mut total = 0;
            loop {
                let n = dispatcher.sweep().await?;
                total += n;
                let left = deadline
                    .duration_since(std::time::SystemTime::now())
                    .unwrap_or_default();
                if n == 0 || left < round {
                    break;
                }
            }
            Ok::<_, Error>(serde_json::json!({ "attempted": total }))
        },
    ))
    .await
}

/// Runs the weekly calibration: every project with labels enough is fitted, and keeps the fit
/// only where it beats the shared weights. One project's failure is logged and the rest go on;
/// the invocation fails only when the list of labelled projects cannot be read.
pub async fn run_calibrate() -> Result<(), Error> {
    init_tracing();
    let app = app().await?;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |_: LambdaEvent<serde_json::Value>| async move {
            let done = app.calibrate_all().await?;
            let kept = done
                .iter()
                .filter(|d| d.as_ref().is_ok_and(|c| c.kept))
                .count();
            let failed = done.iter().filter(|d| d.is_err()).count();
            Ok::<_, Error>(serde_json::json!({
                "calibrated": done.len() - failed, "kept": kept, "failed": failed
            }))
        },
    ))
    .await
}

/// Runs one endpoint as a Lambda function behind API Gateway, through the shared pipeline.
pub async fn run_http<E: Endpoint<DynamoStore>>() -> Result<(), Error> {
    init_tracing();
    serve_http::<E, ()>(app().await?).await
}

/// Runs an endpoint that evaluates visits: the same, with the detection engine built at the cold
/// start from the data compiled into the binary (no file is read).
pub async fn run_http_detecting<E: Endpoint<DynamoStore, Detecting>>() -> Result<(), Error> {
    init_tracing();
    serve_http::<E, Detecting>(detecting_app().await?).await
}

/// Runs the collect function: the browser's visits and their preflight, on their own path.
pub async fn run_collect() -> Result<(), Error> {
    init_tracing();
    let app = detecting_app().await?;
    let edge: &'static Edge = Box::leak(Box::new(Edge::new(
        Config::from_env()?.origin_verify.as_deref(),
    )));
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, std::convert::Infallible>(measured("Collect", collect(app, edge, req)).await)
    }))
    .await
}

/// The collect function's answer to one request: its typed context from API Gateway's, with
/// what CloudFront saw of the viewer when the request proves it came through it, then the
/// collect route.
pub async fn collect<S>(app: &Vigil<S, Detecting>, edge: &Edge, req: Request) -> Response<Body>
where
    S: vigil_core::store::AccountStore
        + ProjectStore
        + vigil_core::store::ResultStore
        + vigil_core::store::UsageStore
        + vigil_core::store::VelocityStore
        + vigil_core::store::AgentStore,
{
    match gateway::request_context(app, &req).await {
        Ok(ctx) => {
            let ctx = edge.viewer(ctx, req.headers());
            let req = gateway::request(req);
            gateway::response(vigil_http::ingest::collect(app, &ctx, &req).await)
        }
        Err(e) => gateway::response(ApiError::from(e).into_response()),
    }
}

/// The service with the detection engine, built once per cold start.
async fn detecting_app() -> Result<&'static DetectingApp, Error> {
    let config = Config::from_env()?;
    // The engine is built on a blocking thread while the DynamoDB connection warms.
    let (store, engine) = tokio::join!(
        crate::root::warm_dynamo(&config),
        tokio::task::spawn_blocking(|| crate::root::engine(None))
    );
    let engine = engine.map_err(|e| format!("building the engine: {e}"))??;
    let app = crate::root::detecting(
        store,
        UrlPolicy::default(),
        UrlPolicy::default(),
        &config,
        engine,
    )?;
    Ok(Box::leak(Box::new(app)))
}

async fn serve_http<E, D>(app: &'static Vigil<DynamoStore, D>) -> Result<(), Error>
where
    E: Endpoint<DynamoStore, D>,
    D: Send + Sync + 'static,
{
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, std::convert::Infallible>(answer_measured::<E, _, D>(app, req).await)
    }))
    .await
}

/// Answers one request that API Gateway passed to endpoint `E`'s function: its typed context
/// from API Gateway's ([`gateway::request_context`]), then the pipeline ([`respond`]).
pub async fn answer<E, S, D>(app: &Vigil<S, D>, req: Request) -> Response<Body>
where
    E: Endpoint<S, D>,
    S: vigil_core::store::AccountStore + ProjectStore + vigil_core::store::UsageStore + Sync,
    D: Sync,
{
    gateway::response(match gateway::request_context(app, &req).await {
        Ok(ctx) => respond::<E, S, D>(app, ctx, gateway::request(req)).await,
        Err(e) => ApiError::from(e).into_response(),
    })
}

/// [`answer`], with the request's metrics: count and latency by route and status class.
pub async fn answer_measured<E, S, D>(app: &Vigil<S, D>, req: Request) -> Response<Body>
where
    E: Endpoint<S, D>,
    S: vigil_core::store::AccountStore + ProjectStore + vigil_core::store::UsageStore + Sync,
    D: Sync,
{
    let route = std::any::type_name::<E>()
        .rsplit("::")
        .next()
        .unwrap_or("unknown");
    measured(route, answer::<E, S, D>(app, req)).await
}

/// `answer`, with its count and latency written as `route`'s request metrics.
async fn measured(
    route: &str,
    answer: impl std::future::Future<Output = Response<Body>>,
) -> Response<Body> {
    let started = std::time::Instant::now();
    let res = answer.await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    vigil_core::metrics::request(route, res.status().as_u16(), ms);
    res
}

/// Runs the agent-script function: a static answer, no store, no engine.
pub async fn run_agent_script() -> Result<(), Error> {
    init_tracing();
    lambda_http::run(service_fn(|req: Request| async move {
        Ok::<_, std::convert::Infallible>(agent_script(req))
    }))
    .await
}

/// The agent script's answer to one request (no store, no engine).
pub fn agent_script(req: Request) -> Response<Body> {
    gateway::response(vigil_http::ingest::agent_script(&gateway::request(req)))
}

/// The dashboard page's answer to one request.
pub fn dashboard(req: Request) -> Response<Body> {
    gateway::response(vigil_http::insight::dashboard(&gateway::request(req)))
}

/// The API reference's answer to one request.
pub fn reference(req: Request) -> Response<Body> {
    gateway::response(vigil_http::reference::reference(&gateway::request(req)))
}

/// Runs the dashboard page's function: a static page, no key, no table.
pub async fn run_dashboard() -> Result<(), Error> {
    init_tracing();
    lambda_http::run(service_fn(|req: Request| async move {
        Ok::<_, std::convert::Infallible>(dashboard(req))
    }))
    .await
}

/// Runs the API reference's function: the page, its renderer and `openapi.yaml`; no key, no table.
pub async fn run_reference() -> Result<(), Error> {
    init_tracing();
    lambda_http::run(service_fn(|req: Request| async move {
        Ok::<_, std::convert::Infallible>(reference(req))
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
pub async fn authorizer<S: vigil_core::store::KeyStore + vigil_core::store::AccountStore, D>(
    app: &Vigil<S, D>,
    event: ApiGatewayCustomAuthorizerRequest,
) -> Result<ApiGatewayCustomAuthorizerResponse, Error> {
    match auth::authorize(app, event.authorization_token.as_deref()).await {
        Ok(principal) => Ok(gateway::allow_policy(
            event.method_arn.as_deref().unwrap_or("*"),
            &principal,
        )),
        Err(ServiceError::Unauthorized) => Err("Unauthorized".into()),
        Err(e) => {
            tracing::error!(error = %Chain(&e), "authorizer failed");
            Err("Authorizer failure".into())
        }
    }
}

/// Answers requests API Gateway routed to no function: 404, or 405 with `Allow` for known paths.
pub async fn fallback(req: Request) -> Response<Body> {
    let path = req.uri().path();
    let path = path.strip_prefix(vigil_http::paths::BASE).unwrap_or(path);
    static ROUTER: std::sync::LazyLock<Router> = std::sync::LazyLock::new(Router::new);
    gateway::response(match ROUTER.resolve(req.method(), path) {
        Resolved::MethodNotAllowed(allow) => ApiError::MethodNotAllowed(allow).into_response(),
        // A known route reaching the fallback means API Gateway and the table disagree; still 404.
        _ => ApiError::NotFound("Not found").into_response(),
    })
}

/// Runs the fallback function; it needs no storage.
pub async fn run_fallback() -> Result<(), Error> {
    init_tracing();
    lambda_http::run(service_fn(|req: Request| async move {
        Ok::<_, std::convert::Infallible>(fallback(req).await)
    }))
    .await
}
