//! Fetching Web Bot Auth key directories, under the same guard as webhook deliveries: public
//! addresses only (every resolved address checked, the connection made to a checked one), no
//! redirects, 5 s in all, at most 64 KiB read. Loopback plain-http directories only when the
//! process allows them (`vigil serve --allow-loopback-directories`, for tests and development).

use std::sync::Arc;
use std::time::Duration;

use crate::deliver::{Resolver, guarded_client};
use vigil_core::domain::{UrlPolicy, WebhookUrl};
use vigil_core::service::web_bot_auth::directories::{DirectoryFetcher, FetchFuture, Fetched};
use vigil_detect::Headers;
use vigil_detect::signature::MAX_DIRECTORY_BYTES;

/// A directory answers within this, connection included, or is unreachable.
pub const DIRECTORY_TIMEOUT: Duration = Duration::from_secs(5);

pub struct HttpDirectories {
    client: reqwest::Client,
    policy: UrlPolicy,
}

impl HttpDirectories {
    pub fn new(policy: UrlPolicy, resolver: Arc<dyn Resolver>) -> Result<Self, reqwest::Error> {
        let client = guarded_client(
            policy,
            resolver,
            DIRECTORY_TIMEOUT,
            DIRECTORY_TIMEOUT,
            concat!("Vigil-WebBotAuth/", env!("CARGO_PKG_VERSION")),
        )?;
        Ok(Self { client, policy })
    }

    async fn get(&self, url: &str) -> Result<Fetched, String> {
        // The URL rules of webhooks: https (or loopback http when allowed), no credentials,
        // and IP literals checked here, since they never reach the resolver.
        let checked = WebhookUrl::parse(url, self.policy).map_err(|e| e.to_string())?;
        let authority = match checked.url().port() {
            Some(port) => format!("{}:{port}", checked.url().host_str().unwrap_or_default()),
            None => checked.url().host_str().unwrap_or_default().to_owned(),
        };
        let mut res = self
            .client
            .get(checked.url().clone())
            .header(
                http::header::ACCEPT,
                "application/http-message-signatures-directory+json",
            )
            .send()
            .await
            .map_err(|e| {
                if e.is_timeout() {
                    "timed out".to_owned()
                } else {
                    "connection failed".to_owned()
                }
            })?;
        if !res.status().is_success() {
            return Err(format!("it answered {}", res.status()));
        }
        let headers = Headers::from_pairs(
            res.headers()
                .iter()
                .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned()))),
        );
        let max_age = headers.get("cache-control").and_then(max_age);
        let mut body = Vec::new();
        while let Some(chunk) = res
            .chunk()
            .await
            .map_err(|_| "the answer broke off".to_owned())?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_DIRECTORY_BYTES {
                return Err("it is larger than 64 KiB".into());
            }
        }
        Ok(Fetched {
            authority,
            headers,
            body,
            max_age,
        })
    }
}

impl DirectoryFetcher for HttpDirectories {
    fn fetch<'a>(&'a self, url: &'a str) -> FetchFuture<'a> {
        Box::pin(self.get(url))
    }
}

/// `max-age=N` of a `Cache-Control` value.
fn max_age(value: &str) -> Option<i64> {
    value.split(',').find_map(|d| {
        let (k, v) = d.trim().split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("max-age")
            .then(|| v.trim().parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::future::BoxFuture;
    use std::net::IpAddr;

    /// A resolver that answers one address for every name, as an attacker's DNS would.
    struct Fixed(IpAddr);
    impl Resolver for Fixed {
        fn lookup(&self, _host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
            let ip = self.0;
            Box::pin(async move { Ok(vec![ip]) })
        }
    }

    #[tokio::test]
    async fn a_translated_internal_address_is_refused_before_any_connection() {
        // 10.0.0.1 through SIIT (`::ffff:0:0/96`) and through NAT64 (`64:ff9b::/96`).
        for hidden in ["::ffff:0:a00:1", "64:ff9b::a00:1", "::a00:1"] {
            let ip: IpAddr = hidden.parse().unwrap();
            let d = HttpDirectories::new(UrlPolicy::default(), Arc::new(Fixed(ip))).unwrap();
            let literal =
                format!("https://[{hidden}]/.well-known/http-message-signatures-directory");
            let err = d.get(&literal).await.err().unwrap();
            assert!(err.contains("public"), "{hidden}: {err}");
            let named = d
                .get("https://agent.example/.well-known/http-message-signatures-directory")
                .await
                .err()
                .unwrap();
            assert_eq!(named, "connection failed", "{hidden}");
        }
    }

    #[test]
    fn max_age_is_read_from_cache_control() {
        assert_eq!(max_age("public, max-age=600"), Some(600));
        assert_eq!(max_age("no-store"), None);
        assert_eq!(max_age("max-age=x"), None);
    }
}
