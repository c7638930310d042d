//! Raw connections: the client's dialling (TCP, TLS with SNI override or insecure mode,
//! handshake with AUTH) without the multiplexer on top, for callers that speak RESP
//! themselves byte for byte, such as `redline tunnel`.
//!
//! A [`RawConnector`] prepares an endpoint once (TLS material parsed, handshake encoded);
//! each [`RawConnector::connect`] opens a fresh [`RawConnection`] that is a plain
//! `AsyncRead + AsyncWrite` stream. Bytes the server sent behind the handshake replies
//! (none, in practice) are returned by the first reads, so nothing is lost.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use redline_resp::Protocol;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::config::Config;
use crate::error::Error;
use crate::net::{self, Endpoint, Stream};

/// Opens authenticated connections to one server, per a [`Config`].
///
/// The handshake follows the config: `protocol` RESP2 sends only `AUTH` (when a password
/// is set), `CLIENT SETINFO` and `SELECT`, so the connection then behaves like a fresh
/// RESP2 connection that is already logged in.
///
/// ```no_run
/// # async fn demo() -> redline::Result<()> {
/// use redline::{Config, Protocol, RawConnector};
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// let mut cfg = Config::from_url("rediss://:secret@cache.example:6380")?;
/// cfg.protocol = Protocol::Resp2;
/// let connector = RawConnector::new(&cfg)?;
/// let mut conn = connector.connect().await?;
/// conn.write_all(b"*1\r\n$4\r\nPING\r\n").await.ok();
/// let mut reply = [0u8; 7];
/// conn.read_exact(&mut reply).await.ok();
/// assert_eq!(&reply, b"+PONG\r\n");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RawConnector {
    endpoint: Endpoint,
}

impl RawConnector {
    /// Validates the config and prepares TLS and the handshake; no connection is made.
    pub fn new(cfg: &Config) -> Result<Self, Error> {
        Ok(RawConnector {
            endpoint: Endpoint::new(cfg)?,
        })
    }

    /// `host:port` this connector dials.
    pub fn addr(&self) -> &str {
        &self.endpoint.addr
    }

    /// Dials, starts TLS and runs the handshake, all within the connect timeout.
    pub async fn connect(&self) -> Result<RawConnection, Error> {
        let conn = net::connect(&self.endpoint).await?;
        Ok(RawConnection {
            stream: conn.stream,
            buffered: conn.rbuf,
            protocol: conn.protocol,
        })
    }
}

/// An open, authenticated connection as a byte stream (TCP or TLS).
pub struct RawConnection {
    stream: Stream,
    /// Bytes read during the handshake but not consumed by it; handed out first.
    buffered: BytesMut,
    protocol: Protocol,
}

impl RawConnection {
    /// The protocol the handshake settled on.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// True when the connection runs over TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self.stream, Stream::Tls(_))
    }
}

impl std::fmt::Debug for RawConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawConnection")
            .field("protocol", &self.protocol)
            .field("tls", &self.is_tls())
            .field("buffered", &self.buffered.len())
            .finish()
    }
}

impl AsyncRead for RawConnection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.buffered.is_empty() {
            let n = this.buffered.len().min(buf.remaining());
            buf.put_slice(&this.buffered[..n]);
            this.buffered.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for RawConnection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
