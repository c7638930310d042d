//! Connections this server opens (to its master, its cluster peers, MIGRATE's target),
//! from the address `bind-source-addr` names when it is set, as Redis binds them, and
//! over TLS when `tls-replication` or `tls-cluster` asks for it ([`PeerStream`]).

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_util::either::Either;

/// A connection between this server and another one (its master, a cluster peer on
/// either side of the bus): plain TCP, or TLS from either side of the handshake. TLS
/// writes stay in the session until flushed, so writers flush after each message.
pub type PeerStream = Either<TcpStream, Box<tokio_rustls::TlsStream<TcpStream>>>;

/// Opens a connection to `host:port` from `source_setting` (`bind-source-addr`), with
/// `tls` over it when given.
pub async fn connect_peer(
    host: &str,
    port: u16,
    source_setting: &str,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> io::Result<PeerStream> {
    let stream = connect(host, port, source_setting).await?;
    let _ = stream.set_nodelay(true);
    match tls {
        None => Ok(Either::Left(stream)),
        Some(config) => {
            let tls = super::tls::connect(config, host, stream).await?;
            Ok(Either::Right(Box::new(tls.into())))
        }
    }
}

/// The TCP connection under `stream` (its addresses).
pub fn tcp_of(stream: &PeerStream) -> &TcpStream {
    match stream {
        Either::Left(stream) => stream,
        Either::Right(stream) => stream.get_ref().0,
    }
}

/// The source address `bind-source-addr` holds, if any (a bad one is an error, so the
/// connection fails as Redis's does instead of leaving from another address).
fn source(setting: &str) -> io::Result<Option<IpAddr>> {
    if setting.is_empty() {
        return Ok(None);
    }
    setting
        .parse()
        .map(Some)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "bad bind-source-addr"))
}

/// Connects to `host:port` (the first address that answers) from `source_setting`.
pub async fn connect(host: &str, port: u16, source_setting: &str) -> io::Result<TcpStream> {
    let from = source(source_setting)?;
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for addr in tokio::net::lookup_host((host, port)).await? {
        let socket = if addr.is_ipv6() {
            tokio::net::TcpSocket::new_v6()?
        } else {
            tokio::net::TcpSocket::new_v4()?
        };
        if let Some(from) = from {
            socket.bind(SocketAddr::new(from, 0))?;
        }
        match socket.connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Connects to `host:port` within `timeout` (blocking), from `source_setting`.
pub fn connect_blocking(
    host: &str,
    port: u16,
    source_setting: &str,
    timeout: Duration,
) -> io::Result<std::net::TcpStream> {
    let from = source(source_setting)?;
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for addr in (host, port).to_socket_addrs()? {
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            None,
        )?;
        if let Some(from) = from {
            socket.bind(&SocketAddr::new(from, 0).into())?;
        }
        match socket.connect_timeout(&addr.into(), timeout) {
            Ok(()) => return Ok(socket.into()),
            Err(e) => last = e,
        }
    }
    Err(last)
}
