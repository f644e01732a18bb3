//! HTTPS for `vigil serve`, and the wire evidence it sees: the server reads each connection's
//! TLS ClientHello itself before rustls does, computes its JA4 fingerprint once, and then hands
//! rustls the same bytes. Every request on the connection carries that fingerprint with its own
//! HTTP version and header order ([`vigil_detect::Wire`]).

use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tls_parser::{TlsExtension, TlsExtensionType, TlsMessage, TlsMessageHandshake};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use vigil_detect::wire::sha256_12;

/// The most ClientHello bytes read before the handshake (a post-quantum key share makes one
/// about 1.8 KB; TLS allows one to span records, each at most 16 KB).
const MAX_HELLO: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("{0} holds no PEM certificate")]
    NoCertificate(String),
    #[error("{0} holds no PEM private key")]
    NoKey(String),
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(String),
}

/// The server's TLS side: its acceptor and the SHA-256 of its certificate (what a person
/// compares before trusting a self-signed one).
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
    cert_sha256: String,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("cert_sha256", &self.cert_sha256)
            .finish()
    }
}

impl Tls {
    /// A certificate chain and its private key, from PEM files.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|source| TlsError::Read {
                path: p.display().to_string(),
                source,
            })
        };
        let (cert_pem, key_pem) = (read(cert)?, read(key)?);
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
            .filter_map(Result::ok)
            .collect();
        if chain.is_empty() {
            return Err(TlsError::NoCertificate(cert.display().to_string()));
        }
        let key = PrivateKeyDer::from_pem_slice(&key_pem)
            .map_err(|_| TlsError::NoKey(key.display().to_string()))?;
        Self::new(chain, key)
    }

    /// A certificate made now for `localhost`, `127.0.0.1` and `::1`, signed by itself.
    pub fn self_signed() -> Result<Self, TlsError> {
        let names = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        let made = rcgen::generate_simple_self_signed(names)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let key = PrivateKeyDer::try_from(made.signing_key.serialize_der())
            .map_err(|e| TlsError::Config(e.to_owned()))?;
        Self::new(vec![made.cert.der().clone()], key)
    }

    fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Self, TlsError> {
        let cert_sha256 = hex::encode(Sha256::digest(chain[0].as_ref()));
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            cert_sha256,
        })
    }

    /// The certificate's SHA-256, in hex.
    pub fn cert_sha256(&self) -> &str {
        &self.cert_sha256
    }

    /// Reads the ClientHello off `stream` within `timeout`, fingerprints it, and completes the
    /// handshake on the same bytes. Returns the TLS stream, what the handshake showed (the JA4,
    /// None when the ClientHello could not be read as one; its round trip) and whether HTTP/2
    /// was agreed.
    pub async fn accept<S>(
        &self,
        mut stream: S,
        timeout: Duration,
    ) -> io::Result<(
        tokio_rustls::server::TlsStream<Prefixed<S>>,
        Handshake,
        bool,
    )>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let (raw, hello) = tokio::time::timeout(timeout, read_client_hello(&mut stream))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no ClientHello in time"))??;
        let ja4 = hello.as_deref().and_then(ja4);
        let prefixed = Prefixed {
            prefix: raw,
            at: 0,
            inner: stream,
            first_write: None,
        };
        let tls = tokio::time::timeout(timeout, self.acceptor.accept(prefixed))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
        // The server's first flight left at the first write; the handshake ends when the
        // client's answer to it (its Finished) has been read: one round trip to the client
        // itself, wherever TCP ends, and the client's own work on the flight.
        let round_trip = tls.get_ref().0.first_write.map(|at| at.elapsed());
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        Ok((tls, Handshake { ja4, round_trip }, h2))
    }
}

/// What a connection's TLS handshake showed.
#[derive(Debug, Clone)]
pub struct Handshake {
    /// The ClientHello's JA4.
    pub ja4: Option<String>,
    /// From the server's first flight to the end of the handshake.
    pub round_trip: Option<Duration>,
}

/// Reads whole TLS records until they hold the first handshake message. Returns every byte
/// read (for rustls) and that message (None when the stream does not start as TLS does).
async fn read_client_hello<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> io::Result<(Vec<u8>, Option<Vec<u8>>)> {
    let mut raw = Vec::with_capacity(2048);
    let mut handshake = Vec::new();
    loop {
        let mut header = [0u8; 5];
        let n = read_up_to(stream, &mut header).await?;
        raw.extend_from_slice(&header[..n]);
        if n < 5 || header[0] != 0x16 {
            return Ok((raw, None));
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        if raw.len() + len > MAX_HELLO {
            return Ok((raw, None));
        }
        let start = raw.len();
        raw.resize(start + len, 0);
        let got = read_up_to(stream, &mut raw[start..]).await?;
        raw.truncate(start + got);
        if got < len {
            return Ok((raw, None));
        }
        handshake.extend_from_slice(&raw[start..]);
        if handshake.len() >= 4 {
            let want =
                4 + u32::from_be_bytes([0, handshake[1], handshake[2], handshake[3]]) as usize;
            if handshake.len() >= want {
                handshake.truncate(want);
                return Ok((raw, Some(handshake)));
            }
        }
    }
}

/// Reads until `buf` is full or the stream ends; the count read.
async fn read_up_to<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut [u8]) -> io::Result<usize> {
    let mut at = 0;
    while at < buf.len() {
        match stream.read(&mut buf[at..]).await? {
            0 => break,
            n => at += n,
        }
    }
    Ok(at)
}

/// GREASE values (RFC 8701): `0x?a?a` with both bytes equal. They are random by design.
fn grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && v >> 8 == v & 0xff
}

fn version_code(v: u16) -> &'static str {
    match v {
        0x0304 => "13",
        0x0303 => "12",
        0x0302 => "11",
        0x0301 => "10",
        0x0300 => "s3",
        0x0200 => "s2",
        0x0100 => "s1",
        0xfeff => "d1",
        0xfefd => "d2",
        0xfefc => "d3",
        _ => "00",
    }
}

/// The JA4 fingerprint (FoxIO's JA4 TLS client specification, BSD 3-Clause) of a ClientHello
/// handshake message over TCP: None when it does not parse as one.
pub fn ja4(handshake: &[u8]) -> Option<String> {
    let (_, TlsMessage::Handshake(TlsMessageHandshake::ClientHello(hello))) =
        tls_parser::parse_tls_message_handshake(handshake).ok()?
    else {
        return None;
    };
    let extensions = match hello.ext {
        Some(bytes) => {
            let (rest, parsed) = tls_parser::parse_tls_client_hello_extensions(bytes).ok()?;
            // An extension that did not parse would silently drop the ones after it.
            if !rest.is_empty() {
                return None;
            }
            parsed
        }
        None => Vec::new(),
    };
    let ciphers: Vec<u16> = hello
        .ciphers
        .iter()
        .map(|c| c.0)
        .filter(|c| !grease(*c))
        .collect();
    let mut types = Vec::new();
    let (mut sni, mut alpn, mut versions, mut sigalgs) = (false, None, None, Vec::new());
    for ext in &extensions {
        let kind = match ext {
            TlsExtension::Grease(..) => continue,
            other => TlsExtensionType::from(other).0,
        };
        if grease(kind) {
            continue;
        }
        types.push(kind);
        match ext {
            TlsExtension::SNI(_) => sni = true,
            TlsExtension::ALPN(list) => alpn = list.first().copied(),
            TlsExtension::SupportedVersions(list) => {
                versions = list.iter().map(|v| v.0).filter(|v| !grease(*v)).max();
            }
            TlsExtension::SignatureAlgorithms(list) => {
                sigalgs = list.iter().copied().filter(|s| !grease(*s)).collect();
            }
            _ => {}
        }
    }
    let version = version_code(versions.unwrap_or(hello.version.0));
    let alpn = match alpn {
        Some(a) if !a.is_empty() => {
            let (first, last) = (a[0], a[a.len() - 1]);
            if first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() {
                format!("{}{}", first as char, last as char)
            } else {
                let (f, l) = (format!("{first:02x}"), format!("{last:02x}"));
                format!("{}{}", &f[..1], &l[1..])
            }
        }
        _ => "00".to_owned(),
    };
    let a = format!(
        "t{version}{}{:02}{:02}{alpn}",
        if sni { 'd' } else { 'i' },
        ciphers.len().min(99),
        types.len().min(99),
    );
    let hex_list = |mut v: Vec<u16>, sort: bool| {
        if sort {
            v.sort_unstable();
        }
        v.iter()
            .map(|x| format!("{x:04x}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let b = sha256_12(&hex_list(ciphers, true));
    let mut c_text = hex_list(
        types
            .into_iter()
            .filter(|t| *t != 0x0000 && *t != 0x0010)
            .collect(),
        true,
    );
    if !sigalgs.is_empty() {
        c_text.push('_');
        c_text.push_str(&hex_list(sigalgs, false));
    }
    Some(format!("{a}_{b}_{}", sha256_12(&c_text)))
}

/// A stream whose first bytes were already read: they are handed out again before the rest.
/// It notes when the server first wrote (its first handshake flight).
pub struct Prefixed<S> {
    prefix: Vec<u8>,
    at: usize,
    inner: S,
    first_write: Option<std::time::Instant>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.at < self.prefix.len() {
            let n = buf.remaining().min(self.prefix.len() - self.at);
            let at = self.at;
            buf.put_slice(&self.prefix[at..at + n]);
            self.at += n;
            if self.at == self.prefix.len() {
                self.prefix = Vec::new();
                self.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.first_write.is_none() && !buf.is_empty() {
            self.first_write = Some(std::time::Instant::now());
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello built by hand: TLS 1.2 legacy version, GREASE cipher and extension,
    /// SNI, ALPN h2 + http/1.1, supported_versions (GREASE, 1.3, 1.2), signature algorithms.
    fn hello() -> Vec<u8> {
        let mut ext = Vec::new();
        let mut push = |t: u16, body: &[u8]| {
            ext.extend_from_slice(&t.to_be_bytes());
            ext.extend_from_slice(&(body.len() as u16).to_be_bytes());
            ext.extend_from_slice(body);
        };
        push(0x1a1a, &[]);
        // server_name: list len, type 0, name len, "a.io"
        push(0x0000, &[0, 7, 0, 0, 4, b'a', b'.', b'i', b'o']);
        push(
            0x0010,
            &[
                0, 12, 2, b'h', b'2', 8, b'h', b't', b't', b'p', b'/', b'1', b'.', b'1',
            ],
        );
        push(0x002b, &[6, 0x3a, 0x3a, 3, 4, 3, 3]);
        push(0x000d, &[0, 6, 4, 3, 8, 4, 4, 1]);
        push(0x0017, &[]);
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7u8; 32]);
        body.push(0); // session id
        let ciphers: [u16; 4] = [0x0a0a, 0x1301, 0xc02b, 0x1302];
        body.extend_from_slice(&((ciphers.len() * 2) as u16).to_be_bytes());
        for c in ciphers {
            body.extend_from_slice(&c.to_be_bytes());
        }
        body.extend_from_slice(&[1, 0]); // compression: null
        body.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        body.extend_from_slice(&ext);
        let mut msg = vec![1];
        msg.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        msg.extend_from_slice(&body);
        msg
    }

    #[test]
    fn ja4_of_a_hand_made_client_hello() {
        let got = ja4(&hello()).unwrap();
        // a: TCP, TLS 1.3 from supported_versions, SNI, 3 ciphers and 5 extensions without
        // GREASE, ALPN h2. b: the sorted ciphers. c: sorted extensions less SNI and ALPN, then
        // the signature algorithms in their order.
        let b = sha256_12("1301,1302,c02b");
        let c = sha256_12("000d,0017,002b_0403,0804,0401");
        assert_eq!(got, format!("t13d0305h2_{b}_{c}"));
        assert!(vigil_detect::wire::is_ja4(&got));
        assert_eq!(b, hex::encode(&Sha256::digest(b"1301,1302,c02b")[..6]));
    }

    #[test]
    fn what_is_not_a_client_hello_has_no_fingerprint() {
        assert_eq!(ja4(b""), None);
        assert_eq!(ja4(b"GET / HTTP/1.1\r\n\r\n"), None);
        let mut cut = hello();
        cut.truncate(cut.len() - 3);
        assert_eq!(ja4(&cut), None);
        assert!(grease(0x0a0a) && grease(0xfafa) && !grease(0x0a0b) && !grease(0x1301));
        assert_eq!(sha256_12(""), "000000000000");
    }

    #[tokio::test]
    async fn records_are_reassembled_and_replayed_whole() {
        let msg = hello();
        // The message split over two records, then application bytes that must stay unread.
        let (one, two) = msg.split_at(20);
        let mut wire = Vec::new();
        for part in [one, two] {
            wire.extend_from_slice(&[0x16, 3, 1]);
            wire.extend_from_slice(&(part.len() as u16).to_be_bytes());
            wire.extend_from_slice(part);
        }
        let mut reader = &wire[..];
        let (raw, got) = read_client_hello(&mut reader).await.unwrap();
        assert_eq!(got.as_deref(), Some(&msg[..]));
        assert_eq!(raw, wire);
        let mut plain = &b"GET / HTTP/1.1\r\n"[..];
        let (raw, got) = read_client_hello(&mut plain).await.unwrap();
        assert_eq!((raw.as_slice(), got), (&b"GET /"[..], None));
        let mut p = Prefixed {
            prefix: b"ab".to_vec(),
            at: 0,
            inner: &b"cd"[..],
            first_write: None,
        };
        let mut all = String::new();
        p.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "abcd");
    }
}
