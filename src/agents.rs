//! `vigil agents`: a test agent for trying Web Bot Auth end to end on one machine. `directory`
//! serves a signed key directory on loopback, `sign` prints the events-route body of a request
//! signed under it; `vigil serve --allow-loopback-directories` then verifies it.
//!
//! The key is derived from a phrase (SHA-256), so both commands agree without a key file. It is a
//! test key by construction: anyone who knows the phrase can sign with it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};

use vigil_detect::RequestLine;
use vigil_detect::signature::sign::{AgentForm, Key};

/// The well-known path of a key directory (Web Bot Auth directory draft).
pub const DIRECTORY_PATH: &str = "/.well-known/http-message-signatures-directory";
/// The media type a key directory is served with.
const DIRECTORY_TYPE: &str = "application/http-message-signatures-directory+json";

#[derive(Debug, thiserror::Error)]
pub enum AgentsError {
    #[error("cannot sign: {0}")]
    Sign(String),
    #[error("cannot listen on {addr}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the output")]
    Output(#[source] serde_json::Error),
}

/// The test key named by `phrase`.
pub fn key(phrase: &str) -> Key {
    Key::from_secret(Sha256::digest(phrase.as_bytes()).into())
}

/// What `vigil agents sign` signs and how.
pub struct SignRequest<'a> {
    pub agent: &'a str,
    pub request: RequestLine,
    pub user_agent: &'a str,
    pub ip_address: std::net::IpAddr,
    pub form: AgentForm,
    pub validity: Duration,
}

/// The events-route body a customer's backend would post for the signed request: the visitor's
/// address and user agent, the three signature headers, and the request line they cover.
pub fn signed_evidence(key: &Key, r: &SignRequest<'_>) -> Result<serde_json::Value, AgentsError> {
    let nonce = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        rand::random::<[u8; 16]>(),
    );
    let mut headers: serde_json::Map<String, serde_json::Value> = key
        .sign_request(&r.request, r.agent, r.form, &nonce, r.validity)
        .map_err(AgentsError::Sign)?
        .into_iter()
        .map(|(k, v)| (k, v.into()))
        .collect();
    headers.insert("user-agent".into(), r.user_agent.into());
    Ok(serde_json::json!({
        "ipAddress": r.ip_address.to_string(),
        "userAgent": r.user_agent,
        "headers": headers,
        "request": r.request,
    }))
}

/// Serves `key`'s directory at `addr` until the process is stopped: every GET of the well-known
/// path answers the JWKS signed for `addr` as its authority (cached 10 minutes); anything else 404.
pub async fn serve_directory(key: Key, addr: SocketAddr) -> Result<(), AgentsError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| AgentsError::Listen { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| AgentsError::Listen { addr, source })?;
    let authority = bound.to_string();
    let signature = key.sign_directory(&authority).map_err(AgentsError::Sign)?;
    let body = Bytes::from(key.jwks());
    println!(
        "key directory of {} at http://{authority}{DIRECTORY_PATH}",
        key.thumbprint()
    );
    println!("sign with: vigil agents sign --agent http://{authority} ...");
    // The directory's own signature is valid for 5 minutes: re-sign as it nears its end.
    let signed = std::sync::Arc::new(tokio::sync::RwLock::new(signature));
    {
        let signed = signed.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(240)).await;
                if let Ok(fresh) = key.sign_directory(&authority) {
                    *signed.write().await = fresh;
                }
            }
        });
    }
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let body = body.clone();
        let signed = signed.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let body = body.clone();
                let signed = signed.clone();
                async move {
                    let mut r = hyper::Response::builder();
                    if req.method() != hyper::Method::GET || req.uri().path() != DIRECTORY_PATH {
                        return Ok::<_, Infallible>(
                            r.status(404)
                                .body(Full::new(Bytes::new()))
                                .unwrap_or_default(),
                        );
                    }
                    r = r
                        .header("content-type", DIRECTORY_TYPE)
                        .header("cache-control", "max-age=600");
                    for (name, value) in signed.read().await.iter() {
                        r = r.header(name.as_str(), value.as_str());
                    }
                    Ok(r.body(Full::new(body)).unwrap_or_default())
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_phrase_is_one_key_and_the_evidence_carries_the_signed_request() {
        assert_eq!(key("a").thumbprint(), key("a").thumbprint());
        assert_ne!(key("a").thumbprint(), key("b").thumbprint());
        let e = signed_evidence(
            &key("a"),
            &SignRequest {
                agent: "https://agent.example",
                request: RequestLine {
                    method: Some("GET".into()),
                    authority: Some("shop.example".into()),
                    path: Some("/checkout".into()),
                },
                user_agent: "Claude-User/1.0",
                ip_address: "203.0.113.9".parse().unwrap(),
                form: AgentForm::Dictionary,
                validity: Duration::from_secs(60),
            },
        )
        .unwrap();
        assert_eq!(e["request"]["authority"], "shop.example");
        assert_eq!(
            e["headers"]["signature-agent"],
            "agent1=\"https://agent.example\""
        );
        let input = e["headers"]["signature-input"].as_str().unwrap();
        assert!(input.contains("tag=\"web-bot-auth\""), "{input}");
        assert!(input.contains(&key("a").thumbprint()), "{input}");
    }
}
