//! HTTP/2 PINGs that time the path to the client itself. hyper answers PINGs but exposes no
//! round trip of its own, so this sits between the TLS stream and hyper's HTTP/2 server: it
//! follows the frames each way, puts a PING of its own between the server's frames (never inside
//! one), and takes the client's acknowledgement of it out of what hyper reads. A relay that ends
//! TCP forwards the PING and the answer comes from the client behind it, so each PING is one
//! end-to-end round trip ([`crate::server::tcp::Physics::end_to_end`]); the client's HTTP/2 stack answers
//! at once (RFC 9113 §6.7), with little of its own work in the figure.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::server::tcp::Physics;

/// PINGs per connection: the minimum of a few is the figure; more would only cost the client.
const PINGS: u8 = 4;
/// The client's connection preface (RFC 9113 §3.4), before its first frame.
const CLIENT_PREFACE: usize = 24;
const PING: u8 = 0x6;
const ACK: u8 = 0x1;
/// hyper's own PINGs remembered until answered (it keeps one or two in flight).
const HYPER_PINGS: usize = 4;

/// Where a frame parser is in its stream.
#[derive(Debug, Default)]
struct Frames {
    /// Bytes of a header read so far.
    head: [u8; 9],
    head_len: usize,
    /// Payload bytes of the current frame still to come.
    left: usize,
}

impl Frames {
    fn at_boundary(&self) -> bool {
        self.head_len == 0 && self.left == 0
    }
}

/// The server's side of one HTTP/2 connection, with PINGs of its own.
pub struct Pinger<S> {
    inner: S,
    physics: Arc<Physics>,
    /// The server's frames as written: PINGs go only between them, after its SETTINGS.
    out: Frames,
    settings_sent: bool,
    /// A PING of ours and how much of it is written.
    pending: Option<([u8; 17], usize)>,
    /// The PING in flight: its opaque data (random: a client cannot answer it before it
    /// arrives) and when it left.
    in_flight: Option<([u8; 8], Instant)>,
    sent: u8,
    /// hyper's own PINGs as written (their opaque data), so that only their ACKs reach it, and
    /// the one being written.
    hyper_pings: Vec<[u8; 8]>,
    out_ping: Option<Vec<u8>>,
    /// ACKs of PINGs nobody sent: dropped, counted, and logged once when the connection ends
    /// (h2 would log a warning for each).
    unsolicited: u64,
    /// The client's bytes: preface left to pass, the frame parser, a held PING ACK's payload.
    preface_left: usize,
    incoming: Frames,
    held: Vec<u8>,
    /// Bytes read and ready for hyper.
    ready: Vec<u8>,
    at: usize,
}

impl<S> Pinger<S> {
    pub fn new(inner: S, physics: Arc<Physics>) -> Self {
        Self {
            inner,
            physics,
            out: Frames::default(),
            settings_sent: false,
            pending: None,
            in_flight: None,
            sent: 0,
            hyper_pings: Vec::new(),
            out_ping: None,
            unsolicited: 0,
            preface_left: CLIENT_PREFACE,
            incoming: Frames::default(),
            held: Vec::new(),
            ready: Vec::new(),
            at: 0,
        }
    }

    /// Queues the next PING when none is in flight and the count allows.
    fn want_ping(&mut self) {
        if self.settings_sent
            && self.pending.is_none()
            && self.in_flight.is_none()
            && self.sent < PINGS
        {
            self.sent += 1;
            let mut frame = [0u8; 17];
            frame[2] = 8; // length 8
            frame[3] = PING;
            frame[9..17].copy_from_slice(&rand::random::<[u8; 8]>());
            self.pending = Some((frame, 0));
        }
    }

    /// Follows the server's bytes `written` through its frames.
    fn track_out(&mut self, mut written: &[u8]) {
        while !written.is_empty() {
            let f = &mut self.out;
            if f.left > 0 {
                let n = f.left.min(written.len());
                f.left -= n;
                if let Some(p) = self.out_ping.as_mut() {
                    p.extend_from_slice(&written[..n]);
                    if f.left == 0 {
                        let data = <[u8; 8]>::try_from(&p[..]).ok();
                        self.out_ping = None;
                        if let Some(d) = data {
                            if self.hyper_pings.len() == HYPER_PINGS {
                                self.hyper_pings.remove(0);
                            }
                            self.hyper_pings.push(d);
                        }
                    }
                }
                written = &written[n..];
            } else {
                let n = (9 - f.head_len).min(written.len());
                f.head[f.head_len..f.head_len + n].copy_from_slice(&written[..n]);
                f.head_len += n;
                written = &written[n..];
                if f.head_len == 9 {
                    f.left = u32::from_be_bytes([0, f.head[0], f.head[1], f.head[2]]) as usize;
                    f.head_len = 0;
                    // One of hyper's own PINGs: its ACK is hyper's.
                    if f.head[3] == PING && f.head[4] & ACK == 0 && f.left == 8 {
                        self.out_ping = Some(Vec::with_capacity(8));
                    }
                }
            }
            if self.out.at_boundary() && !self.settings_sent {
                self.settings_sent = true;
                self.want_ping();
            }
        }
    }

    /// Follows the client's bytes `read`, keeping for hyper all but our PINGs' ACKs.
    fn track_in(&mut self, mut read: &[u8]) {
        if self.at == self.ready.len() {
            self.ready.clear();
            self.at = 0;
        }
        while !read.is_empty() {
            if self.preface_left > 0 {
                let n = self.preface_left.min(read.len());
                self.ready.extend_from_slice(&read[..n]);
                self.preface_left -= n;
                read = &read[n..];
                continue;
            }
            let f = &mut self.incoming;
            if f.left > 0 && self.held.is_empty() {
                let n = f.left.min(read.len());
                self.ready.extend_from_slice(&read[..n]);
                f.left -= n;
                read = &read[n..];
                continue;
            }
            if f.left > 0 {
                // A PING ACK's payload, held until it is whole.
                let n = f.left.min(read.len());
                self.held.extend_from_slice(&read[..n]);
                f.left -= n;
                read = &read[n..];
                if f.left == 0 {
                    self.ack_or_pass();
                }
                continue;
            }
            let n = (9 - f.head_len).min(read.len());
            f.head[f.head_len..f.head_len + n].copy_from_slice(&read[..n]);
            f.head_len += n;
            read = &read[n..];
            if f.head_len < 9 {
                continue;
            }
            f.head_len = 0;
            f.left = u32::from_be_bytes([0, f.head[0], f.head[1], f.head[2]]) as usize;
            let head = f.head;
            if head[3] == PING && head[4] & ACK != 0 && f.left == 8 {
                self.held.extend_from_slice(&head);
            } else {
                self.ready.extend_from_slice(&head);
            }
        }
    }

    /// A whole PING ACK is held: ours is timed and dropped, hyper's goes on to hyper, one that
    /// answers no PING is dropped and counted.
    fn ack_or_pass(&mut self) {
        let ours = self
            .in_flight
            .is_some_and(|(data, _)| self.held[9..] == data);
        let hyper = self.hyper_pings.iter().position(|d| self.held[9..] == *d);
        if ours {
            if let Some((_, at)) = self.in_flight.take() {
                self.physics.end_to_end(at.elapsed());
            }
            self.want_ping();
        } else if let Some(i) = hyper {
            self.hyper_pings.remove(i);
            self.ready.extend_from_slice(&self.held);
        } else {
            self.unsolicited += 1;
        }
        self.held.clear();
    }
}

impl<S> Drop for Pinger<S> {
    fn drop(&mut self) {
        if self.unsolicited > 0 {
            tracing::debug!(
                acks = self.unsolicited,
                "dropped PING ACKs that answered no PING on this connection"
            );
        }
    }
}

impl<S: AsyncWrite + Unpin> Pinger<S> {
    /// Writes our pending PING if the server is between frames. Ready when nothing of it is
    /// left to write (or none is due); Pending when the stream cannot take it now.
    fn poll_ping(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((frame, done)) = self.pending.as_mut() {
            if !self.out.at_boundary() {
                return Poll::Ready(Ok(()));
            }
            let n = match Pin::new(&mut self.inner).poll_write(cx, &frame[*done..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            };
            *done += n;
            if *done == frame.len() {
                let mut data = [0u8; 8];
                data.copy_from_slice(&frame[9..]);
                self.in_flight = Some((data, Instant::now()));
                self.pending = None;
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Pinger<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.at < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.at);
                buf.put_slice(&this.ready[this.at..this.at + n]);
                this.at += n;
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 8192];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) if read.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => {
                    let got = read.filled().to_vec();
                    this.track_in(&got);
                    // The next PING goes out as soon as the last was answered, between frames;
                    // what cannot be written now waits for hyper's next write or flush.
                    if this.pending.is_some()
                        && matches!(this.poll_ping(cx), Poll::Ready(Ok(())))
                        && this.pending.is_none()
                    {
                        let _ = Pin::new(&mut this.inner).poll_flush(cx);
                    }
                }
                other => return other,
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Pinger<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if let Poll::Ready(Err(e)) = this.poll_ping(cx) {
            return Poll::Ready(Err(e));
        }
        if this.pending.is_some() && this.out.at_boundary() {
            // Our PING is half written: hyper's bytes wait until it is whole.
            return Poll::Pending;
        }
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            this.track_out(&buf[..n]);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match this.poll_ping(cx) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// What the tests of HTTP/2 connections share: reading the frames a server sends.
#[cfg(test)]
pub(crate) mod testing {
    use tokio::io::{AsyncRead, AsyncReadExt};

    /// The next frame's 9-byte head and payload; None once the connection is closed.
    pub(crate) async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> Option<([u8; 9], Vec<u8>)> {
        let mut head = [0u8; 9];
        r.read_exact(&mut head).await.ok()?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0u8; len];
        r.read_exact(&mut payload).await.ok()?;
        Some((head, payload))
    }
}

#[cfg(test)]
mod tests {
    use super::testing::read_frame;
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        f.extend_from_slice(&[kind, flags, 0, 0, 0, 0]);
        f.extend_from_slice(payload);
        f
    }

    /// A client that answers every PING at once, as HTTP/2 stacks do: the server side sees
    /// every other frame and the ACK of its own PING, never our PINGs' ACKs nor ACKs of PINGs
    /// nobody sent, and the physics gets one sample per PING.
    #[tokio::test]
    async fn pings_go_between_frames_and_their_answers_are_taken_out() {
        let (server_io, mut client) = tokio::io::duplex(1 << 16);
        let physics = Physics::new(None);
        let mut server = Pinger::new(server_io, physics.clone());
        let client_task = tokio::spawn(async move {
            let mut preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
            preface.extend(frame(0x4, 0, &[])); // SETTINGS
            client.write_all(&preface).await.unwrap();
            let mut seen = Vec::new();
            let mut acks = 0;
            while let Some((head, payload)) = read_frame(&mut client).await {
                seen.push(head[3]);
                if head[3] == PING && head[4] & ACK == 0 && payload == b"hyper123" {
                    client.write_all(&frame(PING, ACK, &payload)).await.unwrap();
                } else if head[3] == PING && head[4] & ACK == 0 {
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    // An ACK of a PING nobody sent first, then ours.
                    client
                        .write_all(&frame(PING, ACK, b"stranger"))
                        .await
                        .unwrap();
                    client.write_all(&frame(PING, ACK, &payload)).await.unwrap();
                    acks += 1;
                }
                if acks == PINGS as usize {
                    client
                        .write_all(&frame(0x3, 0, &[0, 0, 0, 8]))
                        .await
                        .unwrap(); // RST_STREAM
                    break;
                }
            }
            seen
        });
        // hyper's side: its SETTINGS, written in two pieces, then a large DATA frame.
        server
            .write_all(&frame(0x4, 0, &[0, 3, 0, 0, 0, 100])[..5])
            .await
            .unwrap();
        server
            .write_all(&frame(0x4, 0, &[0, 3, 0, 0, 0, 100])[5..])
            .await
            .unwrap();
        server.flush().await.unwrap();
        // hyper's own PING, then a large DATA frame.
        server
            .write_all(&frame(PING, 0, b"hyper123"))
            .await
            .unwrap();
        server
            .write_all(&frame(0x0, 0, &[7u8; 5000]))
            .await
            .unwrap();
        server.flush().await.unwrap();
        // What hyper reads: the preface, SETTINGS, its PING's ACK, the RST_STREAM.
        let mut want = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        want.extend(frame(0x4, 0, &[]));
        want.extend(frame(PING, ACK, b"hyper123"));
        want.extend(frame(0x3, 0, &[0, 0, 0, 8]));
        let mut got = vec![0u8; want.len()];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(got, want);
        let seen = client_task.await.unwrap();
        assert_eq!(seen[0], 0x4, "SETTINGS first: {seen:?}");
        assert_eq!(
            seen.iter().filter(|k| **k == PING).count(),
            PINGS as usize + 1
        );
        assert_eq!(seen.iter().filter(|k| **k == 0x0).count(), 1, "{seen:?}");
        let t = physics.transport().unwrap();
        assert_eq!(t.end_to_end_samples, Some(u16::from(PINGS)));
        assert!(t.end_to_end_rtt_ms.unwrap() >= 3.0, "{t:?}");
    }

    /// A client behind a relay that answers PINGs before they arrive (with the payloads of
    /// earlier builds, `vigil\0\0` and a counter, or any guess) times nothing, and a flood of
    /// such ACKs reaches neither hyper nor the log line by line.
    #[tokio::test]
    async fn acks_sent_before_the_ping_count_for_nothing() {
        let (server_io, mut client) = tokio::io::duplex(1 << 20);
        let physics = Physics::new(None);
        let mut server = Pinger::new(server_io, physics.clone());
        let mut flood = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        flood.extend(frame(0x4, 0, &[]));
        for n in 0..2_000u32 {
            let mut guess = *b"vigil\0\0\0";
            guess[7] = (n % 5) as u8;
            if n % 2 == 1 {
                guess = rand::random();
            }
            flood.extend(frame(PING, ACK, &guess));
        }
        flood.extend(frame(0x3, 0, &[0, 0, 0, 8]));
        server
            .write_all(&frame(0x4, 0, &[0, 3, 0, 0, 0, 100]))
            .await
            .unwrap();
        server.flush().await.unwrap();
        client.write_all(&flood).await.unwrap();
        let mut want = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        want.extend(frame(0x4, 0, &[]));
        want.extend(frame(0x3, 0, &[0, 0, 0, 8]));
        let mut got = vec![0u8; want.len()];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(got, want);
        assert_eq!(server.unsolicited, 2_000);
        assert!(
            physics
                .transport()
                .and_then(|t| t.end_to_end_samples)
                .is_none()
        );
    }
}
