//! Where a client is connected from: a TCP address, or the Unix socket (`unixsocket`).

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// A client's (or the server's own) end of a connection.
///
/// ```
/// use redline_server::net::peer::Peer;
///
/// let tcp = Peer::from("10.0.0.1:5000".parse::<std::net::SocketAddr>().unwrap());
/// assert_eq!(tcp.to_string(), "10.0.0.1:5000");
/// assert!(!tcp.is_local());
/// let unix = Peer::Unix("/tmp/redis.sock".into());
/// assert_eq!(unix.to_string(), "/tmp/redis.sock:0");
/// assert!(unix.is_local());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peer {
    /// A TCP connection.
    Tcp(SocketAddr),
    /// A connection on the Unix socket at this path.
    Unix(Arc<str>),
}

impl Peer {
    /// The IP address of a TCP peer.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Peer::Tcp(addr) => Some(addr.ip()),
            Peer::Unix(_) => None,
        }
    }

    /// A client on this host, as Redis's `islocalClient` decides: the Unix socket, or
    /// exactly 127.0.0.1 or ::1.
    pub fn is_local(&self) -> bool {
        match self {
            Peer::Tcp(addr) => is_local_ip(addr.ip()),
            Peer::Unix(_) => true,
        }
    }
}

/// A TCP client on the loopback address, as Redis's `islocalClient` decides: exactly
/// 127.0.0.1 or ::1 (not the rest of 127/8).
pub fn is_local_ip(ip: IpAddr) -> bool {
    ip == IpAddr::from([127, 0, 0, 1]) || ip == IpAddr::from(std::net::Ipv6Addr::LOCALHOST)
}

impl From<SocketAddr> for Peer {
    fn from(addr: SocketAddr) -> Peer {
        Peer::Tcp(addr)
    }
}

/// As CLIENT LIST shows it: `ip:port`, `[ipv6]:port`, or the socket's path and port 0.
impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Tcp(addr) => write!(f, "{addr}"),
            Peer::Unix(path) => write!(f, "{path}:0"),
        }
    }
}
