//! Accepts connections and starts one task per client, after the checks Redis makes at
//! accept time (maxclients, protected mode).

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use super::connection;
use crate::shared::Shared;

const MAX_CLIENTS_REACHED: &[u8] = b"-ERR max number of clients reached\r\n";

const PROTECTED_MODE_DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Accepts until the task is aborted at shutdown.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => admit(stream, peer, &shared),
            Err(e) => {
                // Out of descriptors and the like: log, breathe, keep serving.
                tracing::warn!("Accepting client connection: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
    }
}

fn admit(mut stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>) {
    shared
        .stats
        .connections_received
        .fetch_add(1, Ordering::Relaxed);
    let (maxclients, protected, has_password) = {
        let config = shared.config.read();
        (
            config.maxclients,
            config.protected_mode,
            !config.requirepass.is_empty(),
        )
    };
    let refusal = if shared.clients.len() as u64 >= maxclients {
        shared
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        Some(MAX_CLIENTS_REACHED)
    } else if protected && !has_password && !peer.ip().is_loopback() {
        Some(PROTECTED_MODE_DENIED)
    } else {
        None
    };
    if let Some(message) = refusal {
        tokio::spawn(async move {
            let _ = stream.write_all(message).await;
        });
        return;
    }
    let id = shared.clients.register(peer);
    let task = tokio::spawn(connection::serve(shared.clone(), stream, peer, id));
    shared.clients.set_abort(id, task.abort_handle());
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
        match std::net::TcpListener::bind(&target) {
            Ok(listener) => {
                listener.set_nonblocking(true)?;
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
    if listeners.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "Configured to not listen anywhere, exiting.",
        ));
    }
    Ok((listeners, port))
}

/// Starts accepting on `listeners` (inside the runtime), in place of the listeners the
/// server accepted on before, which close.
pub fn serve(shared: &Arc<Shared>, listeners: Vec<TcpListener>) {
    let tasks: Vec<_> = listeners
        .into_iter()
        .map(|l| tokio::spawn(accept_loop(l, shared.clone())).abort_handle())
        .collect();
    let old = std::mem::replace(&mut *shared.accepting.lock(), tasks);
    for task in old {
        task.abort();
    }
}

/// Stops accepting connections (shutdown).
pub fn stop_accepting(shared: &Shared) {
    for task in shared.accepting.lock().drain(..) {
        task.abort();
    }
}

/// CONFIG SET port / bind: listens on the new addresses first and only then closes the
/// old ones, so a port already in use leaves the server as it was (Redis's
/// `changeListenPort` / `changeBindAddr`).
pub fn rebind(shared: &Shared, bind: &[String], port: u16) -> io::Result<u16> {
    let Some(this) = shared.arc() else {
        return Err(io::Error::other("server not running"));
    };
    let (std_listeners, port) = bind_all(bind, port)?;
    let listeners = std_listeners
        .into_iter()
        .map(TcpListener::from_std)
        .collect::<io::Result<Vec<_>>>()?;
    serve(&this, listeners);
    shared.set_port(port);
    Ok(port)
}
