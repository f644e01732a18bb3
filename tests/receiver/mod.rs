//! A scripted webhook receiver for the delivery tests: a small HTTP/1.1 server on `127.0.0.1:0`
//! that records every request (path, headers, body, arrival time) and answers from a script: a
//! queue of replies used first, then a default reply. A reply may wait before answering (a slow
//! receiver) and carry headers (a redirect's `Location`).
//!
//! It runs on a runtime of its own, in its own thread, so it keeps answering whatever the test's
//! thread does (blocking on a child process, say). Dropping it stops it.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

/// How the receiver answers one request.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub delay: Duration,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    /// Answers only after `delay` (the request is recorded at once).
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Hit {
    pub method: String,
    pub path: String,
    pub headers: http::HeaderMap,
    pub body: String,
    pub at: Instant,
    /// The status it was (or will be, after the delay) answered with.
    pub answered: u16,
}

impl Hit {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("request to {} has no {name} header", self.path))
            .to_str()
            .unwrap()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body {:?} is not JSON: {e}", self.body))
    }
}

struct State {
    hits: Vec<Hit>,
    script: VecDeque<Reply>,
    default: Reply,
}

pub struct Receiver {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Receiver {
    /// A receiver answering every request with `default`.
    pub fn start(default: Reply) -> Self {
        let state = Arc::new(Mutex::new(State {
            hits: Vec::new(),
            script: VecDeque::new(),
            default,
        }));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let shared = state.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let accept = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        let state = shared.clone();
                        tokio::spawn(async move {
                            let svc = service_fn(move |req| handle(state.clone(), req));
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), svc)
                                .await;
                        });
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = stop_rx => {}
                }
            });
            // Dropping the runtime here cancels connections still waiting to answer.
        });
        Self {
            addr,
            state,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Answers the next requests with `replies`, in order, before falling back to the default.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.state.lock().unwrap().script.extend(replies);
    }

    /// Changes the default reply (the receiver "comes back up").
    pub fn set_default(&self, reply: Reply) {
        self.state.lock().unwrap().default = reply;
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.state.lock().unwrap().hits.clone()
    }

    /// The requests to `path`.
    pub fn hits_to(&self, path: &str) -> Vec<Hit> {
        self.hits().into_iter().filter(|h| h.path == path).collect()
    }

    /// Waits until at least `n` requests matching `pred` arrived; panics after `timeout` with what
    /// did arrive.
    pub async fn wait_for(
        &self,
        n: usize,
        timeout: Duration,
        pred: impl Fn(&Hit) -> bool,
    ) -> Vec<Hit> {
        let deadline = Instant::now() + timeout;
        loop {
            let hits: Vec<Hit> = self.hits().into_iter().filter(|h| pred(h)).collect();
            if hits.len() >= n {
                return hits;
            }
            if Instant::now() > deadline {
                panic!(
                    "receiver on {}: expected {n} matching requests within {timeout:?}, got {}; \
                     all requests: {:#?}",
                    self.addr,
                    hits.len(),
                    self.hits()
                        .iter()
                        .map(|h| (h.path.clone(), h.answered, h.body.clone()))
                        .collect::<Vec<_>>()
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn handle(
    state: Arc<Mutex<State>>,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let reply = {
        let mut s = state.lock().unwrap();
        let reply = s.script.pop_front().unwrap_or_else(|| s.default.clone());
        s.hits.push(Hit {
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
            headers: parts.headers,
            body: String::from_utf8_lossy(&body).into_owned(),
            at: Instant::now(),
            answered: reply.status,
        });
        reply
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let mut res = Response::builder().status(reply.status);
    for (k, v) in &reply.headers {
        res = res.header(k, v);
    }
    Ok(res.body(Full::new(Bytes::new())).unwrap())
}
