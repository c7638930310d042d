//! Standalone mode: each local client gets its own upstream connection (TCP or TLS,
//! authenticated by the tunnel), and bytes are copied both ways unchanged.
//!
//! With one upstream connection per client, replies can only ever belong to that client,
//! so the relay does not need to know where frames end: copying the byte stream as it is
//! keeps pipelining, partial frames, MULTI, blocking commands, pub/sub and `HELLO 3`
//! exactly as they are on a direct connection, at the cost of a read and a write per
//! chunk. (Pinned mode, which must find certain replies, scans frames; see `tracked.rs`.)

use std::sync::Arc;

use redline::RawConnector;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::error::TunnelError;

/// Bytes moved per read in each direction: large enough that an 8 MB value or a deep
/// pipeline moves in few system calls, and matches TLS's 16 KiB records several times.
pub(crate) const CHUNK: usize = 64 * 1024;

/// Relays one client to a fresh upstream connection until either side closes.
pub(crate) async fn relay(
    mut client: TcpStream,
    upstream: Arc<RawConnector>,
) -> Result<(), TunnelError> {
    let mut server = match upstream.connect().await {
        Ok(server) => server,
        Err(e) => {
            refuse(&mut client, &e).await;
            return Err(e.into());
        }
    };
    let (up, down) =
        tokio::io::copy_bidirectional_with_sizes(&mut client, &mut server, CHUNK, CHUNK).await?;
    tracing::debug!(sent = up, received = down, "relay finished");
    Ok(())
}

/// Tells a client why it gets no upstream, the way Redis itself refuses a client it
/// cannot serve (`-ERR max number of clients reached`): one error line, then close.
pub(crate) async fn refuse(client: &mut TcpStream, error: &redline::Error) {
    let text = format!("-ERR redline tunnel: {error}").replace(['\r', '\n'], " ") + "\r\n";
    let _ = client.write_all(text.as_bytes()).await;
    let _ = client.shutdown().await;
}
