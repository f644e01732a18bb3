//! Sending one delivery attempt: HTTPS only, every resolved address checked before connecting
//! (and the connection made to the checked address), no redirects, bounded time and response size.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use http::StatusCode;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use vigil_core::domain::delivery::{Attempt, AttemptOutcome};
use vigil_core::domain::{DeliveryId, Timestamp, UrlPolicy, WebhookUrl};
use vigil_detect::net;

use super::signature::signatures;

pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
pub const TOTAL_TIMEOUT: Duration = Duration::from_secs(15);
/// How much of a receiver's answer is read (and then dropped).
pub const MAX_RESPONSE_BODY: usize = 64 * 1024;

/// Looks host names up. Injectable, so tests can make a name resolve anywhere.
pub trait Resolver: Send + Sync + 'static {
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>>;
}

/// The operating system's resolver.
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
        let host = host.to_owned();
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

/// Resolves, then refuses the whole name if any of its addresses is in a blocked range: a name
/// that points inward even partly is not a public receiver. The addresses it returns are the ones
/// the client connects to, so a second lookup cannot swap in another (no DNS rebinding).
struct GuardedResolver {
    inner: Arc<dyn Resolver>,
    policy: UrlPolicy,
}

/// A client that reaches only what `policy` allows: every resolved address checked and the
/// checked one connected to, no redirects, no proxy, https unless loopback is allowed. Webhook
/// deliveries and key directory fetches both go out through one.
pub(crate) fn guarded_client(
    policy: UrlPolicy,
    resolver: Arc<dyn Resolver>,
    connect: Duration,
    total: Duration,
    user_agent: &'static str,
) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver {
            inner: resolver,
            policy,
        }))
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(connect)
        .timeout(total)
        .no_proxy()
        .https_only(!policy.allow_loopback)
        .user_agent(user_agent)
        .build()
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let lookup = self.inner.lookup(name.as_str());
        let policy = self.policy;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let ips = lookup.await?;
            check_addresses(&host, &ips, policy)?;
            let addrs: Addrs = Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// Every address must be public (or loopback, when development allows it).
pub fn check_addresses(
    host: &str,
    ips: &[IpAddr],
    policy: UrlPolicy,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    if ips.is_empty() {
        return Err(Box::new(Refused(format!("{host} has no addresses"))));
    }
    let allowed =
        |ip: &IpAddr| (policy.allow_loopback && net::is_loopback(*ip)) || !net::is_blocked(*ip);
    // The account learns that its URL was refused, never what an internal name resolves to.
    if ips.iter().any(|ip| !allowed(ip)) {
        return Err(Box::new(Refused(format!(
            "{host}: refused: not a public address"
        ))));
    }
    Ok(())
}

/// Sends signed delivery attempts.
#[derive(Clone)]
pub struct Sender {
    client: reqwest::Client,
    policy: UrlPolicy,
}

impl Sender {
    pub fn new(policy: UrlPolicy, resolver: Arc<dyn Resolver>) -> Result<Self, reqwest::Error> {
        let client = guarded_client(
            policy,
            resolver,
            CONNECT_TIMEOUT,
            TOTAL_TIMEOUT,
            concat!("Vigil-Webhooks/", env!("CARGO_PKG_VERSION")),
        )?;
        Ok(Self { client, policy })
    }

    /// One attempt made at `at` (the dispatcher's clock): sign, post, classify. Never fails: every
    /// problem is an attempt outcome.
    pub async fn send(
        &self,
        at: Timestamp,
        url: &WebhookUrl,
        id: &DeliveryId,
        keys: &[Vec<u8>],
        body: &str,
    ) -> Attempt {
        let failed = |status_code: Option<u16>, error: String| Attempt {
            at,
            outcome: AttemptOutcome::Failed,
            status_code,
            error: Some(error),
        };
        // IP-literal hosts never reach the resolver: check them (and the scheme) here again.
        if let Err(e) = WebhookUrl::parse(url.as_str(), self.policy) {
            return failed(None, e.to_string());
        }
        let ts = at.unix_seconds();
        let res = self
            .client
            .post(url.url().clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header("webhook-id", id.as_str())
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", signatures(keys, id.as_str(), ts, body))
            .body(body.to_owned())
            .send()
            .await;
        let mut res = match res {
            Ok(r) => r,
            Err(e) => return failed(None, describe(&e)),
        };
        let status = res.status();
        // Read (a bounded part of) the answer so the connection can be reused, then drop it.
        let mut read = 0usize;
        while read < MAX_RESPONSE_BODY {
            match res.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                _ => break,
            }
        }
        let code = Some(status.as_u16());
        if status.is_success() {
            Attempt {
                at,
                outcome: AttemptOutcome::Delivered,
                status_code: code,
                error: None,
            }
        } else if status == StatusCode::GONE {
            Attempt {
                at,
                outcome: AttemptOutcome::Gone,
                status_code: code,
                error: Some("receiver answered 410 Gone: webhook disabled".into()),
            }
        } else if status.is_redirection() {
            failed(code, format!("redirect ({status}) not followed"))
        } else {
            failed(code, format!("receiver answered {status}"))
        }
    }
}

/// A short, receiver-facing description of a transport failure.
fn describe(e: &reqwest::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(s) = source {
        if let Some(r) = s.downcast_ref::<Refused>() {
            return r.0.clone();
        }
        source = s.source();
    }
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection failed".into()
    } else {
        "request failed".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: UrlPolicy = UrlPolicy {
        allow_loopback: false,
    };
    const DEV: UrlPolicy = UrlPolicy {
        allow_loopback: true,
    };

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn all_public_addresses_pass() {
        assert!(check_addresses("h", &ips(&["93.184.216.34", "2606:4700::1111"]), STRICT).is_ok());
    }

    #[test]
    fn one_blocked_address_refuses_the_name() {
        for bad in [
            "127.0.0.1",
            "10.0.0.7",
            "169.254.169.254",
            "::1",
            "fd00::1",
            "::ffff:192.168.1.1",
            "64:ff9b::a00:1",
            "::ffff:0:7f00:1",
            "::ffff:0:a00:1",
            "::a00:1",
        ] {
            let mixed = ips(&["93.184.216.34", bad]);
            let err = check_addresses("h", &mixed, STRICT)
                .unwrap_err()
                .to_string();
            assert_eq!(err, "h: refused: not a public address", "{bad}");
        }
        assert!(check_addresses("h", &[], STRICT).is_err());
    }

    #[test]
    fn development_allows_loopback_only() {
        assert!(check_addresses("h", &ips(&["127.0.0.1", "::1"]), DEV).is_ok());
        assert!(check_addresses("h", &ips(&["127.0.0.1", "10.0.0.1"]), DEV).is_err());
    }

    /// A resolver that answers from a table, as an attacker's DNS would.
    struct Fixed(Vec<IpAddr>);
    impl Resolver for Fixed {
        fn lookup(&self, _host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
            let ips = self.0.clone();
            Box::pin(async move { Ok(ips) })
        }
    }

    #[tokio::test]
    async fn a_name_resolving_inward_is_never_contacted() {
        // A listener on loopback that must not see a connection.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let sender = Sender::new(STRICT, Arc::new(Fixed(ips(&["127.0.0.1"])))).unwrap();
        let url = WebhookUrl::parse(&format!("https://evil.example:{port}/"), STRICT).unwrap();
        let id = DeliveryId::parse("msg_1").unwrap();
        let attempt = sender
            .send(Timestamp::now(), &url, &id, &[b"k".to_vec()], "{}")
            .await;
        assert_eq!(attempt.outcome, AttemptOutcome::Failed);
        assert_eq!(
            attempt.error.as_deref(),
            Some("evil.example: refused: not a public address")
        );
        let accepted = tokio::time::timeout(Duration::from_millis(100), listener.accept()).await;
        assert!(accepted.is_err(), "no connection was made");
    }

    #[tokio::test]
    async fn an_ip_literal_is_checked_without_the_resolver() {
        let sender = Sender::new(STRICT, Arc::new(SystemResolver)).unwrap();
        // Stored under a development policy, delivered under the strict one.
        let url = WebhookUrl::parse("http://127.0.0.1:9999/x", DEV).unwrap();
        let attempt = sender
            .send(
                Timestamp::now(),
                &url,
                &DeliveryId::parse("msg_1").unwrap(),
                &[b"k".to_vec()],
                "{}",
            )
            .await;
        assert_eq!(attempt.outcome, AttemptOutcome::Failed);
        assert_eq!(
            attempt.error.as_deref(),
            Some("url must point to a public host")
        );
    }
}
