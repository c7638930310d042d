//! Accepts connections and starts one task per client, after the checks Redis makes at
//! accept time (maxclients, protected mode). The plain port and the TLS port
//! (`tls-port`) have accept loops of their own; a TLS client's task makes the handshake
//! before it serves commands (`connection::serve_tls`).

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

use super::connection;
use crate::shared::Shared;

const MAX_CLIENTS_REACHED: &[u8] = b"-ERR max number of clients reached\r\n";

const PROTECTED_MODE_DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Which port a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Tls,
}

/// One listening socket that any thread can close at once: the accept loop polls it
/// through the lock, and closing takes it out, so the port is free when CONFIG SET
/// returns (as Redis closes its listeners before it answers), not whenever the aborted
/// accept task happens to be dropped.
#[derive(Debug)]
struct Slot(parking_lot::Mutex<Option<TcpListener>>);

/// The accept loops of one port (plain or TLS), closed all at once.
#[derive(Debug, Default)]
pub struct Accepting {
    loops: Vec<(Arc<Slot>, AbortHandle)>,
}

impl Accepting {
    /// Closes every listener now and ends their accept loops.
    pub fn close(&mut self) {
        for (slot, task) in self.loops.drain(..) {
            drop(slot.0.lock().take());
            task.abort();
        }
    }
}

/// Accepts until its listener is closed.
async fn accept_loop(slot: Arc<Slot>, shared: Arc<Shared>, kind: Kind) {
    loop {
        let accepted = std::future::poll_fn(|cx| match &*slot.0.lock() {
            Some(listener) => listener.poll_accept(cx).map(Some),
            None => std::task::Poll::Ready(None),
        })
        .await;
        let Some(accepted) = accepted else {
            return;
        };
        match accepted {
            Ok((stream, peer)) => admit(stream, peer, &shared, kind),
            Err(e) => {
                // Out of descriptors and the like: log, breathe, keep serving.
                tracing::warn!("Accepting client connection: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}

/// Counts a new connection, and whether `maxclients` turns it away (counted as rejected).
fn over_maxclients(shared: &Shared) -> bool {
    shared
        .stats
        .connections_received
        .fetch_add(1, Ordering::Relaxed);
    let full = shared.clients.len() as u64 >= shared.config.read().maxclients;
    if full {
        shared
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
    }
    full
}

fn admit(stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>, kind: Kind) {
    let (protected, handshake_timeout) = {
        let config = shared.config.read();
        (
            config.protected_mode,
            super::tls::handshake_timeout(&config),
        )
    };
    // Protected mode holds while the default user takes any password (Redis's check),
    // whatever set it: requirepass or ACL SETUSER.
    let has_password = !shared.acl.default_user().rules().nopass;
    let refusal = if over_maxclients(shared) {
        Some(MAX_CLIENTS_REACHED)
    } else if protected && !has_password && !super::peer::is_local_ip(peer.ip()) {
        Some(PROTECTED_MODE_DENIED)
    } else {
        None
    };
    if let Some(message) = refusal {
        // Before a handshake there is no way to say it over TLS (Redis's attempt to
        // write fails the same way): a TLS client is just closed.
        // As Redis: one non-blocking write (a fresh socket's send buffer is empty),
        // its result ignored, and the socket closed at once, so refused clients hold
        // no descriptors while more keep arriving past `maxclients`.
        if kind == Kind::Plain {
            let _ = stream.try_write(message);
        }
        return;
    }
    // Replies go out as soon as they are written; batching is done by the loop itself.
    let _ = stream.set_nodelay(true);
    let local = stream
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let task = match kind {
        Kind::Plain => {
            let (id, killed) = shared.clients.register(peer, local, fd);
            (
                id,
                killed,
                tokio::spawn(connection::serve(shared.clone(), stream, peer.into(), id)),
            )
        }
        Kind::Tls => {
            // The configuration current now: a later CONFIG SET does not touch it.
            let Some(tls) = shared.tls.server() else {
                return;
            };
            let (id, killed) = shared.clients.register(peer, local, fd);
            let serve =
                connection::serve_tls(shared.clone(), stream, peer, id, tls, handshake_timeout);
            (id, killed, tokio::spawn(serve))
        }
    };
    let (id, killed, task) = task;
    shared.clients.set_abort(id, &killed, task.abort_handle());
}

/// Binds every `bind` address on `port` (0 = a free port, the same one for all), as
/// Redis reads `bind`: a `-` prefix marks an address that may be missing, `*` is every
/// IPv4 address and `::*` every IPv6 one. Returns the listeners and the port.
pub fn bind_all(bind: &[String], port: u16) -> io::Result<(Vec<std::net::TcpListener>, u16)> {
    let mut listeners = Vec::new();
    let mut port = port;
    for address in bind {
        let (optional, host) = match address.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, address.as_str()),
        };
        let host = match host {
            "*" => "0.0.0.0",
            "::*" => "::",
            other => other,
        };
        let target = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        match listen(&target) {
            Ok(listener) => {
                port = listener.local_addr()?.port();
                listeners.push(listener);
            }
            Err(e) if optional => {
                tracing::warn!("Could not create server TCP listening socket {target}: {e}");
            }
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("Could not create server TCP listening socket {target}: {e}"),
                ))
            }
        }
    }
    Ok((listeners, port))
}

/// One listening socket, as Redis opens them: address reuse, and IPv6 sockets for IPv6
/// only (so `* -::*` listens on both families instead of the second failing).
fn listen(target: &str) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    use std::net::ToSocketAddrs;
    let addr = target
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no such address"))?;
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(511)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Starts accepting on `listeners` (inside the runtime), in place of the listeners the
/// server accepted on before, which close.
pub fn serve(shared: &Arc<Shared>, listeners: Vec<TcpListener>) {
    let new = spawn_loops(shared, listeners, Kind::Plain);
    std::mem::replace(&mut *shared.accepting.lock(), new).close();
}

/// Starts accepting TLS clients on `listeners`, in place of the TLS listeners before.
pub fn serve_tls(shared: &Arc<Shared>, listeners: Vec<TcpListener>) {
    let new = spawn_loops(shared, listeners, Kind::Tls);
    std::mem::replace(&mut *shared.tls.accepting.lock(), new).close();
}

fn spawn_loops(shared: &Arc<Shared>, listeners: Vec<TcpListener>, kind: Kind) -> Accepting {
    let loops = listeners
        .into_iter()
        .map(|listener| {
            let slot = Arc::new(Slot(parking_lot::Mutex::new(Some(listener))));
            let task = tokio::spawn(accept_loop(slot.clone(), shared.clone(), kind));
            (slot, task.abort_handle())
        })
        .collect();
    Accepting { loops }
}

/// Stops accepting connections on every port and on the Unix socket, whose file is
/// removed (shutdown).
pub fn stop_accepting(shared: &Shared) {
    shared.accepting.lock().close();
    shared.tls.accepting.lock().close();
    if let Some((task, path)) = shared.unix_accepting.lock().take() {
        task.abort();
        let _ = std::fs::remove_file(path);
    }
}

/// Listens on the Unix socket `path` (`unixsocket`): a file left there by an earlier
/// run is removed first, and `perm` (`unixsocketperm`, octal; 0 keeps the umask's)
/// applied, as Redis does.
pub fn bind_unix(path: &str, perm: &str) -> io::Result<tokio::net::UnixListener> {
    let _ = std::fs::remove_file(path);
    let listener = tokio::net::UnixListener::bind(path)
        .map_err(|e| io::Error::new(e.kind(), format!("Failed opening Unix socket: {e}")))?;
    let mode = u32::from_str_radix(perm, 8).unwrap_or(0);
    if mode != 0 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(listener)
}

/// Accepts on the Unix socket until shutdown. Its clients are local: protected mode
/// does not apply to them.
pub fn serve_unix(shared: &Arc<Shared>, listener: tokio::net::UnixListener, path: String) {
    let this = shared.clone();
    let socket: std::sync::Arc<str> = path.as_str().into();
    let task = tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => admit_unix(stream, &this, &socket),
                Err(e) => {
                    tracing::warn!("Accepting client connection: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
        }
    });
    *shared.unix_accepting.lock() = Some((task.abort_handle(), path));
}

fn admit_unix(stream: tokio::net::UnixStream, shared: &Arc<Shared>, path: &Arc<str>) {
    use super::peer::Peer;
    if over_maxclients(shared) {
        let _ = stream.try_write(MAX_CLIENTS_REACHED);
        return;
    }
    let peer = Peer::Unix(path.clone());
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let (id, killed) = shared.clients.register(peer.clone(), peer.clone(), fd);
    let task = tokio::spawn(connection::serve(shared.clone(), stream, peer, id));
    shared.clients.set_abort(id, &killed, task.abort_handle());
}

/// CONFIG SET port / bind: listens on the new addresses first and only then closes the
/// old ones (port 0: closes them), so a port already in use leaves the server as it was (Redis's
/// `changeListenPort` / `changeBindAddr`).
pub fn rebind(shared: &Shared, bind: &[String], port: u16) -> io::Result<u16> {
    let Some(this) = shared.arc() else {
        return Err(io::Error::other("server not running"));
    };
    // CONFIG SET port 0 closes the plain port, as in Redis (`tls-port` may serve alone).
    if port == 0 {
        serve(&this, Vec::new());
        shared.set_port(0);
        return Ok(0);
    }
    let (std_listeners, port) = bind_all(bind, port)?;
    serve(&this, to_tokio(std_listeners)?);
    shared.set_port(port);
    Ok(port)
}

/// CONFIG SET tls-port (or bind with TLS on): listens on the new TLS addresses, then
/// closes the old ones; port 0 closes the TLS port.
pub fn rebind_tls(shared: &Shared, bind: &[String], port: u16) -> io::Result<u16> {
    let Some(this) = shared.arc() else {
        return Err(io::Error::other("server not running"));
    };
    if port == 0 {
        serve_tls(&this, Vec::new());
        shared.tls.set_port(0);
        return Ok(0);
    }
    let (std_listeners, port) = bind_all(bind, port)?;
    serve_tls(&this, to_tokio(std_listeners)?);
    shared.tls.set_port(port);
    Ok(port)
}

/// Hands bound standard listeners to tokio (inside the runtime).
pub fn to_tokio(listeners: Vec<std::net::TcpListener>) -> io::Result<Vec<TcpListener>> {
    listeners.into_iter().map(TcpListener::from_std).collect()
}
