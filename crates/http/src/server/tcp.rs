//! What the kernel knows of each TCP connection `vigil serve` accepts: the SYN that opened it
//! (the listener saves it, `TCP_SAVE_SYN`) and the smallest round trip it has measured
//! (`TCP_INFO`), with the end-to-end round trips the TLS and HTTP/2 layers time. Two socket
//! options, no raw socket and no privilege. Elsewhere than Linux there is no SYN and no TCP
//! round trip; the end-to-end ones remain.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use vigil_detect::transport::{Syn, Transport};

/// "No sample yet" in the atomics below.
const NONE: u32 = u32::MAX;

/// One connection's measurements, shared by its stream (which takes them) and its requests
/// (which read them into their wire evidence).
#[derive(Debug)]
pub struct Physics {
    syn: Option<Syn>,
    tcp_min_us: AtomicU32,
    end_to_end_min_us: AtomicU32,
    end_to_end_samples: AtomicU32,
    /// Woken at each end-to-end sample, for a request that waits for its first PING.
    answered: tokio::sync::Notify,
}

impl Physics {
    pub fn new(syn: Option<Syn>) -> Arc<Self> {
        Arc::new(Self {
            syn,
            tcp_min_us: AtomicU32::new(NONE),
            end_to_end_min_us: AtomicU32::new(NONE),
            end_to_end_samples: AtomicU32::new(0),
            answered: tokio::sync::Notify::new(),
        })
    }

    fn tcp(&self, us: u32) {
        self.tcp_min_us.fetch_min(us, Ordering::Relaxed);
    }

    /// One end-to-end exchange: the client answered `took` after the server's message left.
    pub fn end_to_end(&self, took: Duration) {
        let us = u32::try_from(took.as_micros()).unwrap_or(NONE - 1);
        self.end_to_end_min_us.fetch_min(us, Ordering::Relaxed);
        self.end_to_end_samples.fetch_add(1, Ordering::Relaxed);
        self.answered.notify_waiters();
    }

    /// Waits, at most `limit`, until `n` end-to-end exchanges have been timed.
    pub async fn samples(&self, n: u32, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            // Registered before the count is read, so a sample in between still wakes it.
            let answered = self.answered.notified();
            if self.end_to_end_samples.load(Ordering::Relaxed) >= n {
                return;
            }
            if tokio::time::timeout_at(deadline, answered).await.is_err() {
                return;
            }
        }
    }

    /// The smallest end-to-end round trip so far.
    pub fn end_to_end_min(&self) -> Option<Duration> {
        match self.end_to_end_min_us.load(Ordering::Relaxed) {
            NONE => None,
            us => Some(Duration::from_micros(u64::from(us))),
        }
    }

    /// What has been measured so far; None when nothing has.
    pub fn transport(&self) -> Option<Transport> {
        let ms = |a: &AtomicU32| match a.load(Ordering::Relaxed) {
            NONE => None,
            // Microseconds to milliseconds, kept to a tenth.
            us => Some((f64::from(us) / 100.0).round() / 10.0),
        };
        let samples = self.end_to_end_samples.load(Ordering::Relaxed);
        let t = Transport {
            tcp_rtt_ms: ms(&self.tcp_min_us),
            end_to_end_rtt_ms: ms(&self.end_to_end_min_us),
            end_to_end_samples: (samples > 0).then(|| u16::try_from(samples).unwrap_or(u16::MAX)),
            syn: self.syn.clone(),
        };
        (t != Transport::default()).then_some(t)
    }
}

/// A TCP stream that takes the kernel's smallest round trip each time bytes arrive.
pub struct Metered<S> {
    inner: S,
    physics: Arc<Physics>,
}

impl<S: sys::Socket> Metered<S> {
    pub fn new(inner: S, physics: Arc<Physics>) -> Self {
        if let Some(us) = sys::min_rtt_us(&inner) {
            physics.tcp(us);
        }
        Self { inner, physics }
    }

    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncRead + sys::Socket + Unpin> AsyncRead for Metered<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(())))
            && buf.filled().len() > before
            && let Some(us) = sys::min_rtt_us(&self.inner)
        {
            self.physics.tcp(us);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Metered<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

pub use sys::{min_rtt_us, save_syns, saved_syn};

#[cfg(target_os = "linux")]
mod sys {
    use std::os::fd::AsRawFd;

    use vigil_detect::transport::Syn;

    pub trait Socket: AsRawFd {}
    impl<T: AsRawFd> Socket for T {}

    /// Has the listener keep each connection's SYN for [`saved_syn`].
    pub fn save_syns(listener: &impl AsRawFd) -> std::io::Result<()> {
        let on: libc::c_int = 1;
        // SAFETY: a valid descriptor borrowed for the call, and a pointer to a c_int with its size.
        let rc = unsafe {
            libc::setsockopt(
                listener.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_SAVE_SYN,
                (&raw const on).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// The SYN the listener saved for this connection (the kernel hands it over once).
    pub fn saved_syn(stream: &impl AsRawFd) -> Option<Syn> {
        // An IPv6 header (40) and a TCP header with the most options (60), with room to spare.
        let mut buf = [0u8; 256];
        let mut len = buf.len() as libc::socklen_t;
        // SAFETY: a valid descriptor borrowed for the call; the kernel writes at most `len`
        // bytes into `buf` and the count into `len`.
        let rc = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_SAVED_SYN,
                buf.as_mut_ptr().cast(),
                &raw mut len,
            )
        };
        if rc != 0 {
            return None;
        }
        Syn::parse(buf.get(..len as usize)?)
    }

    /// The smallest round trip the kernel has measured on the connection, in microseconds.
    pub fn min_rtt_us(stream: &impl AsRawFd) -> Option<u32> {
        // SAFETY: tcp_info is plain integers, valid when zeroed.
        let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
        // SAFETY: as above: the kernel writes at most `len` bytes into `info`.
        let rc = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                (&raw mut info).cast(),
                &raw mut len,
            )
        };
        // Kernels before 4.6 end the structure before tcpi_min_rtt; "no sample" is ~0.
        let has_min = len as usize >= std::mem::offset_of!(libc::tcp_info, tcpi_min_rtt) + 4;
        (rc == 0 && has_min && info.tcpi_min_rtt != u32::MAX).then_some(info.tcpi_min_rtt)
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    use vigil_detect::transport::Syn;

    pub trait Socket {}
    impl<T> Socket for T {}

    pub fn save_syns<T>(_: &T) -> std::io::Result<()> {
        Ok(())
    }

    pub fn saved_syn<T>(_: &T) -> Option<Syn> {
        None
    }

    pub fn min_rtt_us<T>(_: &T) -> Option<u32> {
        None
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A loopback connection through a listener that saves SYNs: the server sees the client's
    /// SYN (Linux's own) and a round trip under a millisecond.
    #[tokio::test]
    async fn a_loopback_connection_shows_its_syn_and_round_trip() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        save_syns(&listener).unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
            c.write_all(b"ping").await.unwrap();
            let mut back = [0u8; 4];
            c.read_exact(&mut back).await.unwrap();
        });
        let (stream, _) = listener.accept().await.unwrap();
        let syn = saved_syn(&stream).expect("the listener saved the SYN");
        assert_eq!(saved_syn(&stream), None, "the kernel hands it over once");
        let physics = Physics::new(Some(syn.clone()));
        let mut s = Metered::new(stream, physics.clone());
        let mut got = [0u8; 4];
        s.read_exact(&mut got).await.unwrap();
        s.write_all(b"pong").await.unwrap();
        client.await.unwrap();
        physics.end_to_end(Duration::from_micros(1500));
        let t = physics.transport().unwrap();
        assert!(t.tcp_rtt_ms.unwrap() < 5.0, "{t:?}");
        assert_eq!(
            (t.end_to_end_rtt_ms, t.end_to_end_samples),
            (Some(1.5), Some(1))
        );
        assert_eq!(syn.initial_ttl(), 64);
        assert_eq!(
            syn.family(),
            Some(vigil_detect::transport::Family::Linux),
            "{}",
            syn.describe()
        );
        assert_eq!(Physics::new(None).transport(), None);
    }
}
