//! Local listeners and their accept loops: one task per accepted client, logged at info
//! level when it connects and disconnects. A failing client (or a failing accept, such as
//! running out of file descriptors) never stops the loop; only shutdown does.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

use super::error::TunnelError;
use super::shutdown::Shutdown;

/// Pause after a failed accept, so a full file table does not spin the loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Binds a local listener.
pub(crate) async fn bind(addr: SocketAddr) -> Result<TcpListener, TunnelError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| TunnelError::Bind { addr, source })
}

/// Accepts clients until shutdown and runs `handle` for each on its own task.
///
/// `upstream` names where this listener's clients go, for the log lines.
pub(crate) fn serve<H, F>(listener: TcpListener, upstream: Arc<str>, shutdown: Shutdown, handle: H)
where
    H: Fn(TcpStream) -> F + Send + Sync + 'static,
    F: Future<Output = Result<(), TunnelError>> + Send + 'static,
{
    let local = listener
        .local_addr()
        .map_or_else(|_| "?".to_owned(), |a| a.to_string());
    let tasks = shutdown.clone();
    tasks.spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = shutdown.cancelled() => break,
            };
            let (stream, peer) = match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!(listener = %local, error = %e, "accept failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            };
            // Commands are small and latency-bound; batching is the client's business.
            if let Err(e) = stream.set_nodelay(true) {
                tracing::debug!(%peer, error = %e, "TCP_NODELAY not set");
            }
            tracing::info!(%peer, listener = %local, upstream = %upstream, "client connected");
            let conn = handle(stream);
            let stop = shutdown.clone();
            shutdown.spawn(async move {
                let outcome = tokio::select! {
                    result = conn => result,
                    _ = stop.cancelled() => Ok(()),
                };
                match outcome {
                    Ok(()) => tracing::info!(%peer, "client disconnected"),
                    Err(e) => tracing::info!(%peer, error = %e, "client disconnected"),
                }
            });
        }
        tracing::debug!(listener = %local, "listener closed");
    });
}
