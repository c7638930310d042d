//! Connections: TCP or TLS streams, opened with a timeout and handed over ready for
//! commands (handshake done).
//!
//! [`connect`] is the only way in: dial (TCP_NODELAY), start TLS if configured, run the
//! [`handshake`], all within the connect timeout. The returned [`Connection`] carries the
//! read buffer and decoder along with the stream, so bytes that arrived behind the
//! handshake replies are not lost when the multiplexer takes over.

mod handshake;
mod stream;
pub(crate) mod tls;

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use redline_resp::{Decoder, Frame, Limits, Protocol};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::Config;
use crate::error::{Error, IoOp};
use crate::sentinel::{Discovery, Retire};

pub(crate) use stream::Stream;

/// How many bytes a read asks the socket for at least; large enough that a burst of
/// pipelined replies comes in a few reads.
pub(crate) const READ_CHUNK: usize = 64 * 1024;

/// Idle time before the first keepalive probe, and the time between probes.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);

/// Everything needed to open (and reopen) a connection to one server, prepared once.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub(crate) host: String,
    pub(crate) port: u16,
    /// `host:port`, shared into every error about this server.
    pub(crate) addr: Arc<str>,
    pub(crate) tls: Option<tls::TlsSetup>,
    pub(crate) connect_timeout: Duration,
    pub(crate) limits: Limits,
    pub(crate) handshake: handshake::Handshake,
    /// Set when the master is found through Sentinel: `host` and `port` are unused then.
    pub(crate) discovery: Option<Arc<Discovery>>,
}

impl Endpoint {
    /// Validates TLS material and prepares the handshake; fails early on bad settings.
    pub(crate) fn new(cfg: &Config) -> Result<Endpoint, Error> {
        cfg.validate()?;
        let tls = cfg
            .tls
            .as_ref()
            .map(|t| tls::setup(t, &cfg.host))
            .transpose()?;
        let discovery = cfg
            .sentinel
            .as_ref()
            .map(|s| Discovery::new(cfg, s).map(Arc::new))
            .transpose()?;
        let addr = match &discovery {
            Some(d) => d.label(),
            None => cfg.addr(),
        };
        Ok(Endpoint {
            discovery,
            host: cfg.host.clone(),
            port: cfg.port,
            addr: Arc::from(addr),
            tls,
            connect_timeout: cfg.connect_timeout,
            limits: cfg.limits,
            handshake: handshake::Handshake::from_config(cfg),
        })
    }
}

impl Endpoint {
    /// Through Sentinel, how many times the master moved so far (0 otherwise): the
    /// supervisor skips its reconnect backoff when this changed since the failure.
    pub(crate) fn master_moves(&self) -> u64 {
        self.discovery.as_ref().map_or(0, |d| d.moves())
    }
}

/// An open, authenticated connection.
pub(crate) struct Connection {
    pub(crate) stream: Stream,
    /// Bytes read but not yet decoded.
    pub(crate) rbuf: BytesMut,
    pub(crate) decoder: Decoder,
    /// What the server agreed to speak.
    pub(crate) protocol: Protocol,
    /// For a connection to a master found through Sentinel: resolves when Sentinel moved
    /// the master elsewhere, and the multiplexer must close this connection.
    pub(crate) retire: Option<Retire>,
}

/// Dials, starts TLS and runs the handshake within the connect timeout. Through
/// Sentinel, the master's address is asked first (see [`crate::sentinel`]), within the
/// same limit.
pub(crate) async fn connect(ep: &Endpoint) -> Result<Connection, Error> {
    let opened = match &ep.discovery {
        None => {
            tokio::time::timeout(ep.connect_timeout, dial(ep, &ep.host, ep.port, &ep.addr)).await
        }
        Some(discovery) => tokio::time::timeout(ep.connect_timeout, discovery.connect(ep)).await,
    };
    match opened {
        Ok(result) => result,
        Err(_) => Err(Error::ConnectTimeout {
            addr: ep.addr.clone(),
            timeout: ep.connect_timeout,
        }),
    }
}

/// Opens a connection to `host:port` with `ep`'s TLS and handshake (no time limit of
/// its own: callers bound it).
pub(crate) async fn dial(
    ep: &Endpoint,
    host: &str,
    port: u16,
    addr: &Arc<str>,
) -> Result<Connection, Error> {
    let tcp = TcpStream::connect((host, port))
        .await
        .map_err(|e| Error::io(IoOp::Connect, addr, e))?;
    // Commands are small and latency-bound; the multiplexer already batches writes.
    tcp.set_nodelay(true)
        .map_err(|e| Error::io(IoOp::Connect, addr, e))?;
    // A peer that vanished without a FIN or RST (host down, network cut) is detected by
    // keepalive probes even when no command is waiting. Best effort: not every platform
    // supports every knob.
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL);
    if let Err(e) = socket2::SockRef::from(&tcp).set_tcp_keepalive(&keepalive) {
        tracing::debug!(%addr, error = %e, "TCP keepalive not set");
    }
    let stream = match &ep.tls {
        None => Stream::Tcp(tcp),
        Some(tls) => {
            let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
            let tls_stream = connector
                .connect(tls.server_name.clone(), tcp)
                .await
                .map_err(|e| Error::io(IoOp::TlsHandshake, addr, e))?;
            Stream::Tls(Box::new(tls_stream))
        }
    };
    let mut conn = Connection {
        stream,
        rbuf: BytesMut::with_capacity(READ_CHUNK),
        decoder: Decoder::new(ep.limits),
        protocol: Protocol::Resp2,
        retire: None,
    };
    conn.protocol = ep.handshake.run(&mut conn, addr).await?;
    Ok(conn)
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("protocol", &self.protocol)
            .field("tls", &matches!(self.stream, Stream::Tls(_)))
            .field("buffered", &self.rbuf.len())
            .field("retires", &self.retire.is_some())
            .finish()
    }
}

impl Connection {
    /// Writes `bytes` completely (handshake only; the multiplexer has its own write loop).
    pub(crate) async fn write_all(&mut self, bytes: &[u8], addr: &Arc<str>) -> Result<(), Error> {
        self.stream
            .write_all(bytes)
            .await
            .map_err(|e| Error::io(IoOp::Write, addr, e))?;
        self.stream
            .flush()
            .await
            .map_err(|e| Error::io(IoOp::Write, addr, e))
    }

    /// Reads the next reply, skipping push frames (handshake and dedicated connections).
    pub(crate) async fn read_reply(&mut self, addr: &Arc<str>) -> Result<Frame, Error> {
        loop {
            let frame = self.read_frame(addr).await?;
            if !matches!(frame, Frame::Push(_)) {
                return Ok(frame);
            }
        }
    }

    /// Reads the next frame of any kind. Cancel-safe: bytes read stay buffered.
    pub(crate) async fn read_frame(&mut self, addr: &Arc<str>) -> Result<Frame, Error> {
        loop {
            if let Some(frame) = self.decoder.decode(&mut self.rbuf)? {
                return Ok(frame);
            }
            self.rbuf.reserve(READ_CHUNK);
            let n = self
                .stream
                .read_buf(&mut self.rbuf)
                .await
                .map_err(|e| Error::io(IoOp::Read, addr, e))?;
            if n == 0 {
                return Err(Error::ConnectionClosed { addr: addr.clone() });
            }
        }
    }
}
