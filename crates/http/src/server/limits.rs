//! What keeps slow or greedy clients from taking the server down: the server's limits, the
//! per-source cap on open connections, and the deadlines that close an idle or stuck connection.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::proxy::TrustedProxies;

/// A request in flight longer than this holds its connection for a client that does not read
/// its answer (handlers finish in milliseconds): the connection is dropped.
pub(crate) const MAX_BUSY: Duration = Duration::from_secs(60);

/// What keeps slow or greedy clients from taking the server down: each connection has a deadline
/// for every request head and body, and the number of open connections is capped (further
/// clients wait in the listen backlog until a connection closes).
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    /// For the head of each request, and again for its body.
    pub read_timeout: Duration,
    /// The proxies in front of the server that are trusted to name the client.
    pub trust_proxy: TrustedProxies,
    /// Whether `/demo` is served.
    pub demo: bool,
    /// HTTPS (HTTP/2 and HTTP/1.1 by ALPN) with this certificate; plain HTTP/1.1 when None.
    pub tls: Option<crate::server::tls::Tls>,
    /// The UDP port of the server's STUN service, which the agent it serves then uses.
    pub stun_port: Option<u16>,
    /// A connection with no request in flight for this long is closed (HTTP/1.1 keep-alive
    /// and HTTP/2 alike; HTTP/2 with a GOAWAY first).
    pub idle_timeout: Duration,
    /// Most connections open at once from one source (an IPv4 address, an IPv6 /64; trusted
    /// proxies are not counted), so one client cannot take every slot.
    pub max_per_source: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            read_timeout: Duration::from_secs(10),
            trust_proxy: TrustedProxies::default(),
            demo: false,
            tls: None,
            stun_port: None,
            idle_timeout: Duration::from_secs(30),
            max_per_source: 256,
        }
    }
}

/// Open connections per source, for the per-source cap.
pub(crate) struct Sources {
    cap: usize,
    open: std::sync::Mutex<HashMap<IpAddr, usize>>,
}

/// One counted connection of a source; uncounted when dropped.
pub(crate) struct Held {
    sources: Arc<Sources>,
    key: IpAddr,
}

impl Sources {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            open: Default::default(),
        }
    }

    /// The source of `ip`: an IPv4 address, an IPv6 address's /64 (one subscriber's prefix).
    fn key(ip: IpAddr) -> IpAddr {
        match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
            v4 => v4,
        }
    }

    /// Counts a connection of `ip`'s source; None when the source is at its cap.
    pub(crate) fn enter(self: &Arc<Self>, ip: IpAddr) -> Option<Held> {
        let key = Self::key(ip);
        let mut open = self.open.lock().ok()?;
        let n = open.entry(key).or_insert(0);
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(Held {
            sources: self.clone(),
            key,
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Ok(mut open) = self.sources.open.lock()
            && let Some(n) = open.get_mut(&self.key)
        {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// Streams at once on one HTTP/2 connection (hyper's default is 200).
pub(crate) const MAX_STREAMS: u32 = 32;

/// When a connection last started or finished a request, and how many it has in flight.
#[derive(Debug)]
pub(crate) struct Activity {
    in_flight: std::sync::atomic::AtomicUsize,
    last: std::sync::Mutex<Instant>,
}

impl Activity {
    pub(crate) fn new() -> Self {
        Self {
            in_flight: Default::default(),
            last: std::sync::Mutex::new(Instant::now()),
        }
    }

    fn stamp(&self) {
        if let Ok(mut last) = self.last.lock() {
            *last = Instant::now();
        }
    }

    pub(crate) fn start(&self) {
        self.in_flight
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.stamp();
    }

    pub(crate) fn end(&self) {
        self.in_flight
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        self.stamp();
    }

    /// How long since the last change, and whether a request is in flight.
    fn state(&self) -> (Duration, bool) {
        let since = self.last.lock().map_or(Duration::ZERO, |l| l.elapsed());
        let busy = self.in_flight.load(std::sync::atomic::Ordering::Relaxed) > 0;
        (since, busy)
    }
}

/// Serves `conn` until it ends. Idle for `idle` (no request in flight), or once the server is
/// `stopping`, it is shut down gracefully (HTTP/2: GOAWAY; its requests in flight are answered);
/// a request in flight for [`MAX_BUSY`] (its client does not read the answer) or a shutdown not
/// done within `idle` drops it.
pub(crate) async fn closing_when_idle<C>(
    conn: C,
    activity: &Activity,
    idle: Duration,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<(), C::Error>
where
    C: hyper_util::server::graceful::GracefulConnection,
{
    tokio::pin!(conn);
    let mut shutting = None::<Instant>;
    loop {
        let (since, busy) = activity.state();
        let wait = match (shutting, busy) {
            (Some(at), _) => idle.saturating_sub(at.elapsed()),
            (None, true) => MAX_BUSY.saturating_sub(since),
            (None, false) => idle.saturating_sub(since),
        };
        tokio::select! {
            done = conn.as_mut() => return done,
            () = tokio::time::sleep(wait.max(Duration::from_millis(10))) => {}
            // A closed sender is a server gone too.
            _ = stopping.wait_for(|s| *s), if shutting.is_none() => {
                conn.as_mut().graceful_shutdown();
                shutting = Some(Instant::now());
                continue;
            }
        }
        let (since, busy) = activity.state();
        match shutting {
            Some(at) if at.elapsed() >= idle => return Ok(()),
            Some(_) => {}
            None if busy && since >= MAX_BUSY => return Ok(()),
            None if !busy && since >= idle => {
                conn.as_mut().graceful_shutdown();
                shutting = Some(Instant::now());
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use bytes::Bytes;
    use http_body_util::Full;
    use hyper::server::conn::http2;
    use hyper_util::rt::{TokioExecutor, TokioIo};

    use super::*;

    /// Issue 52: an HTTP/2 connection whose handshake is done but which sends no request is
    /// told GOAWAY after the idle deadline and closed, rather than holding a slot for good.
    #[tokio::test]
    async fn an_idle_http2_connection_is_sent_away() {
        use tokio::io::AsyncWriteExt;
        let (server_io, mut client) = tokio::io::duplex(1 << 16);
        let service = hyper::service::service_fn(|_req| async {
            Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::new())))
        });
        let served = http2::Builder::new(TokioExecutor::new())
            .serve_connection(TokioIo::new(server_io), service);
        let activity = Activity::new();
        let (_stop, stopping) = tokio::sync::watch::channel(false);
        let server = async {
            closing_when_idle(served, &activity, Duration::from_millis(300), stopping)
                .await
                .ok();
        };
        let client = async {
            client
                .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
                .await
                .unwrap();
            let mut kinds = Vec::new();
            while let Some((head, _)) = crate::server::ping::testing::read_frame(&mut client).await
            {
                kinds.push(head[3]);
            }
            kinds
        };
        let started = Instant::now();
        let ((), kinds) = tokio::time::timeout(Duration::from_secs(5), async {
            tokio::join!(server, client)
        })
        .await
        .expect("the idle connection was closed");
        assert!(kinds.contains(&0x7), "a GOAWAY: {kinds:?}");
        assert!(started.elapsed() >= Duration::from_millis(300));
    }

    #[test]
    fn each_source_holds_at_most_its_cap_and_gets_it_back() {
        let sources = Arc::new(Sources::new(2));
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let a = sources.enter(ip("198.51.100.7")).unwrap();
        let _b = sources.enter(ip("::ffff:198.51.100.7")).unwrap();
        assert!(sources.enter(ip("198.51.100.7")).is_none(), "at the cap");
        assert!(
            sources.enter(ip("198.51.100.8")).is_some(),
            "another source"
        );
        // One IPv6 /64 is one source.
        let _c = sources.enter(ip("2001:db8:1:2::1")).unwrap();
        let _d = sources.enter(ip("2001:db8:1:2:ffff::9")).unwrap();
        assert!(sources.enter(ip("2001:db8:1:2::77")).is_none());
        drop(a);
        assert!(
            sources.enter(ip("198.51.100.7")).is_some(),
            "a slot came back"
        );
    }
}
