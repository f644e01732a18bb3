//! The local server: the whole API on one port. Each request is routed with the shared route
//! table, authenticated with the authorizer's code, given the same typed [`Context`] a Lambda
//! function builds from API Gateway's, and answered by the same pipeline and handler.

// The connection's machinery, each in its own file: TLS and the ClientHello's JA4, the TCP facts
// (SYN, round trips), HTTP/2 PINGs, the STUN server beside the port, the limits and deadlines,
// and the trusted proxies. This file is the request side: accepting, routing, the door's context.
pub mod limits;
pub mod ping;
pub mod proxy;
pub mod stun;
pub mod tcp;
pub mod tls;

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::FutureExt;
use http::header;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::auth;
use crate::context::Context;
use crate::error::ApiError;
use crate::extract::UnreadableBody;
use crate::message::{PathParams, Request, Response};
use crate::routes::{Resolved, Router};
use crate::routes::{Route, with_routes};
use crate::server::limits::{Activity, Limits, MAX_STREAMS, Sources, closing_when_idle};
use crate::server::proxy::TrustedProxies;
use crate::server::tcp::{Metered, Physics};
use vigil_core::domain::token::time_ordered_token;
use vigil_core::service::vigil::{Detecting, Vigil};
use vigil_core::store::Store;
use vigil_detect::Wire;
use vigil_detect::wire::header_order_of;

/// Largest request body read, bounded while it is read: the largest any route reads (a visit's
/// evidence); a body declared larger is 413 before a byte of it is read.
const MAX_BODY: usize = crate::ingest::MAX_EVIDENCE_BODY;
/// How long a visit on a new HTTP/2 connection waits for its first PING's answer: twice the
/// handshake's round trip, within these bounds.
const PING_WAIT_MIN: Duration = Duration::from_millis(20);
const PING_WAIT_MAX: Duration = Duration::from_secs(1);
/// Largest request head (request line and headers) read; a larger one is refused with 431.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// How long a shutdown waits for the open connections' requests in flight to be answered.
pub const SHUTDOWN_DRAIN: Duration = Duration::from_secs(20);

/// Serves until `shutdown` resolves, then stops accepting, asks every open connection to close
/// once its requests in flight are answered (HTTP/2: GOAWAY), and returns when they have, or
/// after [`SHUTDOWN_DRAIN`]: a visit that was answered is stored, and one that was not is
/// refused by the closed listener, never half-taken.
pub async fn serve<S: Store>(
    app: Arc<Vigil<S, Detecting>>,
    listener: TcpListener,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let router = Arc::new(Router::new());
    let agent = limits
        .stun_port
        .map(|p| Arc::new(crate::ingest::StunAgent::new(p)));
    // Each connection's SYN, for the wire evidence (`crate::server::tcp`); a kernel that refuses it
    // costs that evidence only.
    if let Err(e) = crate::server::tcp::save_syns(&listener) {
        tracing::warn!(error = %e, "the listener cannot save SYNs; visits carry no SYN");
    }
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let sources = Arc::new(Sources::new(limits.max_per_source.max(1)));
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.read_timeout)
        .max_buf_size(MAX_HEAD_BYTES);
    tokio::pin!(shutdown);
    let (stop, stopping) = tokio::sync::watch::channel(false);
    loop {
        // A slot first: at the cap, new clients wait in the backlog rather than take memory.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => return Ok(()),
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: log and keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // A source at its cap is closed at once; a trusted proxy speaks for many.
        let source = if limits.trust_proxy.trusts(peer.ip()) {
            None
        } else {
            match sources.enter(peer.ip()) {
                Some(held) => Some(held),
                None => {
                    tracing::debug!(peer = %peer.ip(), "source at its connection cap; closed");
                    continue;
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let physics = Physics::new(crate::server::tcp::saved_syn(&stream));
        let stream = Metered::new(stream, physics.clone());
        let (app, router, http) = (app.clone(), router.clone(), http.clone());
        let mut conn = Connection {
            peer: peer.ip(),
            body_timeout: limits.read_timeout,
            trust_proxy: limits.trust_proxy.clone(),
            demo: limits.demo,
            tls: None,
            physics,
            agent: agent.clone(),
            activity: Arc::new(Activity::new()),
        };
        let idle = limits.idle_timeout;
        let tls = limits.tls.clone();
        let stopping = stopping.clone();
        tokio::spawn(async move {
            let activity = conn.activity.clone();
            let served = match tls {
                None => {
                    let service = service(app, router, conn);
                    let served = http.serve_connection(TokioIo::new(stream), service);
                    closing_when_idle(served, &activity, idle, stopping).await
                }
                Some(tls) => {
                    let (stream, shook, h2) = match tls.accept(stream, conn.body_timeout).await {
                        Ok(accepted) => accepted,
                        Err(e) => {
                            tracing::debug!(error = %e, "TLS handshake failed");
                            return;
                        }
                    };
                    if let Some(took) = shook.round_trip {
                        conn.physics.end_to_end(took);
                    }
                    conn.tls = Some(ConnectionTls {
                        ja4: shook.ja4.map(Arc::from),
                        h2,
                    });
                    let physics = conn.physics.clone();
                    let service = service(app, router, conn);
                    if h2 {
                        // PINGs of the server's own time the path to the client (crate::server::ping).
                        let io = TokioIo::new(crate::server::ping::Pinger::new(stream, physics));
                        let served = http2::Builder::new(TokioExecutor::new())
                            .max_header_list_size(MAX_HEAD_BYTES as u32)
                            // Each stream may hold a body of MAX_BODY while it is read.
                            .max_concurrent_streams(MAX_STREAMS)
                            .serve_connection(io, service);
                        closing_when_idle(served, &activity, idle, stopping).await
                    } else {
                        let served = http.serve_connection(TokioIo::new(stream), service);
                        closing_when_idle(served, &activity, idle, stopping).await
                    }
                }
            };
            if let Err(e) = served {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(slot);
            drop(source);
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a slot until it ends: all of them back means all are closed.
    let all = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    match tokio::time::timeout(SHUTDOWN_DRAIN, slots.acquire_many(all)).await {
        Ok(_) => tracing::info!("shutdown: every connection closed"),
        Err(_) => tracing::warn!(
            available = slots.available_permits(),
            "shutdown: connections still open after the drain; closing them"
        ),
    }
    Ok(())
}

/// The service of one connection: each request handled with what the connection knows.
fn service<S: Store>(
    app: Arc<Vigil<S, Detecting>>,
    router: Arc<Router>,
    conn: Connection,
) -> impl hyper::service::Service<
    hyper::Request<Incoming>,
    Response = hyper::Response<Full<Bytes>>,
    Error = Infallible,
    Future = impl Future<Output = Result<hyper::Response<Full<Bytes>>, Infallible>> + Send,
> + Clone {
    hyper::service::service_fn(move |req| {
        let (app, router, conn) = (app.clone(), router.clone(), conn.clone());
        async move { Ok::<_, Infallible>(handle(&app, &router, req, conn).await) }
    })
}

/// What a request's handling knows of its connection.
#[derive(Debug, Clone)]
struct Connection {
    peer: IpAddr,
    body_timeout: Duration,
    trust_proxy: TrustedProxies,
    demo: bool,
    /// What the TLS handshake showed; None on plain HTTP.
    tls: Option<ConnectionTls>,
    /// The connection's SYN and round trips, as measured so far.
    physics: Arc<Physics>,
    /// The agent that names the server's STUN port, when it runs one.
    agent: Option<Arc<crate::ingest::StunAgent>>,
    /// Its requests in flight and when one last started or ended, for the idle deadline.
    activity: Arc<Activity>,
}

#[derive(Debug, Clone)]
struct ConnectionTls {
    /// The ClientHello's JA4, computed once for the connection.
    ja4: Option<Arc<str>>,
    /// HTTP/2, whose PINGs time the path to the client (`crate::server::ping`).
    h2: bool,
}

impl Connection {
    /// The wire evidence of one request on this connection: the connection's SYN and round
    /// trips so far and, on HTTPS, its JA4 with the request's HTTP version and header order
    /// (not on plain HTTP, where the server cannot tell a browser's connection from a script's).
    async fn wire<B>(&self, req: &http::Request<B>) -> Option<Wire> {
        // A visit that opens its HTTP/2 connection comes with the first PING still out: it
        // waits for that answer, at most about one round trip, so that it is judged on a PING
        // (which the client answers at once) and not only on the handshake (which carries the
        // client's certificate checks).
        if self.tls.as_ref().is_some_and(|t| t.h2)
            && let Some(handshake) = self.physics.end_to_end_min()
        {
            let limit = (handshake * 2).clamp(PING_WAIT_MIN, PING_WAIT_MAX);
            self.physics.samples(2, limit).await;
        }
        let transport = self.physics.transport();
        let Some(tls) = self.tls.as_ref() else {
            return transport.map(|t| Wire {
                transport: Some(t),
                ..Wire::default()
            });
        };
        let version = match req.version() {
            http::Version::HTTP_10 => "1.0",
            http::Version::HTTP_2 => "2",
            http::Version::HTTP_3 => "3",
            _ => "1.1",
        };
        let wire = Wire {
            ja4: tls.ja4.as_deref().map(str::to_owned),
            http_version: Some(version.to_owned()),
            header_order: header_order_of(req.headers().keys().map(|k| k.as_str())),
            transport,
        };
        tracing::debug!(ja4 = ?wire.ja4, version, headers = ?wire.header_order, transport = ?wire.transport, "wire");
        Some(wire)
    }
}

async fn handle<S: Store>(
    app: &Vigil<S, Detecting>,
    router: &Router,
    req: hyper::Request<Incoming>,
    conn: Connection,
) -> hyper::Response<Full<Bytes>> {
    let request_id = time_ordered_token();
    let span = tracing::debug_span!("request", id = %request_id, method = %req.method(), path = %req.uri().path());
    conn.activity.start();
    let res = async {
        let started = Instant::now();
        // A bug that panics costs its own request a 500, never the connection or the process.
        let res = std::panic::AssertUnwindSafe(answer(app, router, req, &conn))
            .catch_unwind()
            .await
            .unwrap_or_else(|_| {
                tracing::error!("request handler panicked; answering 500");
                ApiError::Internal.into_response()
            });
        tracing::debug!(
            status = res.status().as_u16(),
            micros = started.elapsed().as_micros() as u64,
            "answered"
        );
        res.map(Full::new)
    }
    .instrument(span)
    .await;
    conn.activity.end();
    res
}

/// API Gateway hands functions percent-decoded path parameters; so does the local server. A
/// segment that does not decode to UTF-8 stays as it was (and fails id validation).
fn decode_segment(raw: String) -> String {
    match percent_encoding::percent_decode_str(&raw).decode_utf8() {
        Ok(decoded) => decoded.into_owned(),
        Err(_) => raw,
    }
}

async fn answer<S: Store>(
    app: &Vigil<S, Detecting>,
    router: &Router,
    req: hyper::Request<Incoming>,
    conn: &Connection,
) -> Response {
    // The demo answers loopback clients only: behind a trusted proxy, the client it forwards.
    if conn.demo
        && let Some(res) =
            crate::demo::answer(app, &req, conn.trust_proxy.client(conn.peer, req.headers())).await
    {
        return res;
    }
    let (route, params) = match router.resolve_full(req.method(), req.uri().path()) {
        Resolved::Found(route, params) => (route, params),
        Resolved::NotFound => return ApiError::NotFound("Not found").into_response(),
        Resolved::MethodNotAllowed(allow) => {
            return ApiError::MethodNotAllowed(allow).into_response();
        }
    };
    let ctx = match context(app, route, &req, conn).await {
        Ok(ctx) => ctx,
        Err(e) => return e.into_response(),
    };
    let (mut parts, body) = req.into_parts();
    // A body declared larger than any route reads is refused before a byte of it is read; any
    // other is bounded while it is read. Either way the pipeline's body step answers, after the
    // plan stage, like every other bad body (and with the same rate-limit headers).
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let bytes = if declared.is_some_and(|n| n > MAX_BODY as u64) {
        parts
            .extensions
            .insert(UnreadableBody(ApiError::PayloadTooLarge));
        Bytes::new()
    } else {
        let collected =
            tokio::time::timeout(conn.body_timeout, Limited::new(body, MAX_BODY).collect());
        match collected.await {
            Ok(Ok(c)) => c.to_bytes(),
            Ok(Err(_)) => {
                parts
                    .extensions
                    .insert(UnreadableBody(ApiError::PayloadTooLarge));
                Bytes::new()
            }
            Err(_) => {
                parts
                    .extensions
                    .insert(UnreadableBody(ApiError::RequestTimeout));
                Bytes::new()
            }
        }
    };
    parts.extensions.insert(
        params
            .into_iter()
            .map(|(k, v)| (k, decode_segment(v)))
            .collect::<PathParams>(),
    );
    let req = Request::from_parts(parts, bytes);
    if route == Route::AgentScript
        && let Some(agent) = &conn.agent
    {
        return agent.answer(&req);
    }
    route_to(app, route, ctx, req).await
}

/// This door's typed context: the principal the request's key authenticates (the public routes
/// run without the authorizer under API Gateway, and so here), the client as the peer or a
/// trusted proxy names it, and whether the peer is the client itself.
async fn context<S: Store, B>(
    app: &Vigil<S, Detecting>,
    route: Route,
    req: &http::Request<B>,
    conn: &Connection,
) -> Result<Context, ApiError> {
    let principal = if route.is_public() {
        None
    } else {
        let header = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        Some(auth::authorize(app, header).await?)
    };
    let trusted = conn.trust_proxy.trusts(conn.peer);
    Ok(Context {
        principal,
        client: Some(conn.trust_proxy.client(conn.peer, req.headers())),
        direct: !trusted,
        // Only a visit is judged on its connection (the events route takes a backend's `wire`).
        // A trusted proxy's connection is its own, never its client's: its TLS, SYN, round
        // trips and PINGs say nothing of the visitor, who is judged on what it forwards.
        wire: match route {
            Route::Collect if trusted => crate::forwarded::wire(req.headers()),
            Route::Collect => conn.wire(req).await,
            _ => None,
        },
    })
}

/// Answers a request the local router resolved to `route`. Each endpoint is named after its route,
/// so the match cannot pair a route with another route's handler.
async fn route_to<S: Store>(
    app: &Vigil<S, Detecting>,
    route: Route,
    ctx: Context,
    req: Request,
) -> Response {
    macro_rules! endpoints {
        ($($module:ident :: $name:ident),* $(,)?) => {
            match route {
                $(Route::$name => crate::pipeline::respond::<crate::$module::$name, S, Detecting>(app, ctx, req).await,)*
                Route::Collect => crate::ingest::collect(app, &ctx, &req).await,
                Route::AgentScript => crate::ingest::agent_script(&req),
                Route::Dashboard => crate::insight::dashboard(&req),
                Route::Reference => crate::reference::reference(&req),
            }
        };
    }
    with_routes!(endpoints)
}
