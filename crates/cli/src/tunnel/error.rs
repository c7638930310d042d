//! The tunnel's one error type. Start-up errors end the process with a message; errors of
//! one client connection are logged and end only that connection.

use std::io;
use std::net::SocketAddr;

use thiserror::Error;

use crate::conn::ConnError;

/// Everything that can go wrong in the tunnel.
#[derive(Debug, Error)]
pub(crate) enum TunnelError {
    /// The connection flags do not make a usable upstream configuration.
    #[error(transparent)]
    Config(#[from] ConnError),
    /// Flags that contradict each other.
    #[error("{0}")]
    Usage(&'static str),
    /// Connecting to, or talking with, an upstream server failed.
    #[error("upstream: {0}")]
    Upstream(#[from] redline::Error),
    /// A local listener could not be opened.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The local address.
        addr: SocketAddr,
        /// The operating system's error.
        source: io::Error,
    },
    /// No free local port was found for a pinned node.
    #[error("no free local port at or after {0} for a cluster node")]
    NoPort(SocketAddr),
    /// A socket error on a relayed connection.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The cluster's topology could not be read from any known node.
    #[error("cluster topology: {0}")]
    Topology(String),
}
