//! Which ports a process listens on, read from Linux's `/proc`.
//!
//! "Is the port closed?" cannot be asked by connecting: a port freed in the ephemeral
//! range (where servers started on port 0 live) may be taken by another process at once,
//! and the connection then succeeds. Asking which sockets a given process holds has no
//! such race.

use std::collections::HashSet;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use socket2::{Domain, Socket, Type};

/// TCP state code of a listening socket in `/proc/<pid>/net/tcp`.
const LISTEN: &str = "0A";

/// How many listening TCP sockets (IPv4 and IPv6) process `pid` holds on `port`.
///
/// ```
/// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let port = listener.local_addr()?.port();
/// assert_eq!(redline_testkit::listening_sockets(std::process::id(), port)?, 1);
/// drop(listener);
/// assert_eq!(redline_testkit::listening_sockets(std::process::id(), port)?, 0);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn listening_sockets(pid: u32, port: u16) -> io::Result<usize> {
    Ok(listening_socket_inodes(pid, port)?.len())
}

/// The inodes of the listening TCP sockets process `pid` holds on `port`: what tells one
/// listener from another that later takes the same port in the same process (a test's
/// in-process servers share one).
///
/// ```
/// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let port = listener.local_addr()?.port();
/// let before = redline_testkit::listening_socket_inodes(std::process::id(), port)?;
/// assert_eq!(before.len(), 1);
/// drop(listener);
/// let after = redline_testkit::listening_socket_inodes(std::process::id(), port)?;
/// assert!(before.is_disjoint(&after));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn listening_socket_inodes(pid: u32, port: u16) -> io::Result<HashSet<u64>> {
    let mut inodes = HashSet::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        // A descriptor closed while we list is simply not counted.
        let Ok(target) = std::fs::read_link(entry?.path()) else {
            continue;
        };
        let target = target.to_string_lossy();
        if let Some(inode) = target
            .strip_prefix("socket:[")
            .and_then(|rest| rest.strip_suffix(']'))
            .and_then(|inode| inode.parse::<u64>().ok())
        {
            inodes.insert(inode);
        }
    }
    let local_port = format!(":{port:04X}");
    let mut listening = HashSet::new();
    for table in ["tcp", "tcp6"] {
        let text = match std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) {
            Ok(text) => text,
            // A kernel without IPv6 has no tcp6 table.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        // Columns: sl, local_address, rem_address, st, queues, tr, retrnsmt, uid, timeout, inode.
        listening.extend(
            text.lines()
                .skip(1)
                .map(|line| line.split_whitespace().collect::<Vec<_>>())
                .filter(|fields| {
                    fields.len() > 9 && fields[1].ends_with(&local_port) && fields[3] == LISTEN
                })
                .filter_map(|fields| fields[9].parse::<u64>().ok())
                .filter(|inode| inodes.contains(inode)),
        );
    }
    Ok(listening)
}

/// A loopback port that refuses connections for as long as this value lives.
///
/// Binding port 0 and closing the listener is not enough: the freed port lies in the
/// ephemeral range, where the kernel may hand it to an outgoing connection at once (or to
/// the probing connection itself, which then connects to itself). A socket that is bound
/// but never listens keeps the port out of everyone's hands and answers SYNs with a reset.
///
/// ```
/// let closed = redline_testkit::ClosedPort::new()?;
/// let refused = std::net::TcpStream::connect(closed.addr()).unwrap_err();
/// assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ClosedPort {
    _socket: Socket,
    addr: SocketAddr,
}

impl ClosedPort {
    /// Binds a fresh loopback port without listening on it.
    pub fn new() -> io::Result<Self> {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
        socket.bind(&SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0).into())?;
        let addr = socket
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("an IPv4 socket without an IPv4 address"))?;
        Ok(Self {
            _socket: socket,
            addr,
        })
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port number.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_this_process_listeners_until_they_close() {
        let me = std::process::id();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(listening_sockets(me, port).unwrap(), 1);
        // A connected socket on the same port is not a listener.
        let _client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _accepted = listener.accept().unwrap();
        assert_eq!(listening_sockets(me, port).unwrap(), 1);
        drop(listener);
        assert_eq!(listening_sockets(me, port).unwrap(), 0);
    }
}
