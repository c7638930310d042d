//! Smart mode's dedicated upstream connections, for what must not share the cluster
//! client's multiplexed pipes: blocking commands (BLPOP, XREAD BLOCK, WAIT...), MULTI/EXEC
//! transactions, and the switch to pass-through for pub/sub and MONITOR.
//!
//! A dedicated exchange goes to a master and follows `-MOVED` itself (at most
//! [`MAX_REDIRECTS`] hops), remembering per slot where it ended, so the second blocking
//! pop on a key goes straight to the right node. Connections are kept per node for the
//! life of the local client and closed with it.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use redline::{ClusterClient, Config, RawConnection, RawConnector};
use redline_resp::scan::{Scanner, Side};
use redline_resp::Frame;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::error::TunnelError;

/// Redirects one dedicated exchange may follow (as redis-cli's 16 for `-c`).
pub(crate) const MAX_REDIRECTS: usize = 16;

/// One local client's dedicated connections.
pub(crate) struct Dedicated {
    upstream: Config,
    cluster: ClusterClient,
    conns: HashMap<String, Conn>,
    /// Where a slot was last found (learned from MOVED).
    slots: HashMap<u16, String>,
    /// The node whose connection holds this client's `WATCH`: until `EXEC`, `DISCARD` or
    /// `UNWATCH`, every exchange goes there and redirects are not followed (the watch
    /// would not come along).
    watching: Option<String>,
    /// Where the last exchange ran.
    last: Option<String>,
}

struct Conn {
    stream: RawConnection,
    buf: BytesMut,
}

/// A batch to run on one node: encoded commands, how many replies they produce, and the
/// slot of their keys when known.
pub(crate) struct Batch {
    pub(crate) bytes: Bytes,
    pub(crate) replies: usize,
    pub(crate) slot: Option<u16>,
}

impl Dedicated {
    pub(crate) fn new(upstream: Config, cluster: ClusterClient) -> Self {
        Dedicated {
            upstream,
            cluster,
            conns: HashMap::new(),
            slots: HashMap::new(),
            watching: None,
            last: None,
        }
    }

    /// Runs `batch` on the node that owns its slot and returns every reply. A `-MOVED`
    /// among the replies sends the whole batch to the named node (nothing ran: a moved
    /// command is refused, and a transaction with a refused command is aborted).
    pub(crate) async fn exchange(&mut self, batch: &Batch) -> Result<Vec<Frame>, TunnelError> {
        let pinned = self.watching.clone();
        let mut addr = match &pinned {
            Some(addr) => addr.clone(),
            None => self.first_addr(batch.slot)?,
        };
        for _ in 0..MAX_REDIRECTS {
            let replies = match self.round_trip(&addr, &batch.bytes, batch.replies).await {
                Ok(replies) => replies,
                Err(e) => {
                    // The connection's state is unknown: never reuse it.
                    self.conns.remove(&addr);
                    self.watching = None;
                    return Err(e);
                }
            };
            self.last = Some(addr.clone());
            match replies.iter().find_map(moved_to) {
                Some(_) if pinned.is_some() => return Ok(replies),
                Some(target) => {
                    if let Some(slot) = batch.slot {
                        self.slots.insert(slot, target.clone());
                    }
                    addr = target;
                }
                None => return Ok(replies),
            }
        }
        Err(TunnelError::Topology(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }

    /// Keeps the following exchanges on the node of the last one (after a `WATCH`).
    pub(crate) fn watch_last(&mut self) {
        self.watching = self.last.clone();
    }

    /// Ends [`Dedicated::watch_last`] (after `EXEC`, `DISCARD`, `UNWATCH`).
    pub(crate) fn unwatch(&mut self) {
        self.watching = None;
    }

    /// Opens a connection for pass-through to the node that accepts `first` (the command
    /// that starts it), sends it, and returns the connection with the bytes read so far
    /// (its reply, at least in part).
    pub(crate) async fn take_over(
        self,
        first: Bytes,
        slot: Option<u16>,
    ) -> Result<(RawConnection, BytesMut), TunnelError> {
        let mut addr = self.first_addr(slot)?;
        for _ in 0..MAX_REDIRECTS {
            let mut conn = self.open(&addr).await?;
            conn.stream.write_all(&first).await?;
            conn.stream.flush().await?;
            if slot.is_none() {
                return Ok((conn.stream, conn.buf));
            }
            // Sharded pub/sub: the first reply says whether this node owns the channel.
            // It is found without consuming it, so the client gets the original bytes.
            let mut scanner = Scanner::new(Side::Reply);
            let len = loop {
                match scanner.next(&conn.buf) {
                    Ok(Some(len)) => break len,
                    Ok(None) => {}
                    Err(e) => return Err(TunnelError::Topology(format!("upstream: {e}"))),
                }
                conn.buf.reserve(16 * 1024);
                if conn.stream.read_buf(&mut conn.buf).await? == 0 {
                    return Err(TunnelError::Io(std::io::ErrorKind::UnexpectedEof.into()));
                }
            };
            let reply = conn.buf[..len].strip_prefix(b"-").map(|line| {
                Frame::Error(Bytes::copy_from_slice(
                    line.strip_suffix(b"\r\n").unwrap_or(line),
                ))
            });
            match reply.as_ref().and_then(moved_to) {
                Some(target) => addr = target,
                None => return Ok((conn.stream, conn.buf)),
            }
        }
        Err(TunnelError::Topology(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }

    fn first_addr(&self, slot: Option<u16>) -> Result<String, TunnelError> {
        if let Some(addr) = slot.and_then(|s| self.slots.get(&s)) {
            return Ok(addr.clone());
        }
        let mut masters = self.cluster.masters();
        masters.sort();
        masters
            .into_iter()
            .next()
            .ok_or_else(|| TunnelError::Topology("no master is known".into()))
    }

    async fn round_trip(
        &mut self,
        addr: &str,
        bytes: &[u8],
        replies: usize,
    ) -> Result<Vec<Frame>, TunnelError> {
        if !self.conns.contains_key(addr) {
            let conn = self.open(addr).await?;
            self.conns.insert(addr.to_owned(), conn);
        }
        let conn = self
            .conns
            .get_mut(addr)
            .ok_or_else(|| TunnelError::Topology(format!("no connection to {addr}")))?;
        conn.stream.write_all(bytes).await?;
        conn.stream.flush().await?;
        let mut out = Vec::with_capacity(replies);
        for _ in 0..replies {
            out.push(read_frame(conn).await?);
        }
        Ok(out)
    }

    async fn open(&self, addr: &str) -> Result<Conn, TunnelError> {
        let (host, port) = addr
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse().ok()?)))
            .ok_or_else(|| TunnelError::Topology(format!("bad node address {addr}")))?;
        let mut cfg = self.upstream.clone();
        cfg.host = host.to_owned();
        cfg.port = port;
        let stream = RawConnector::new(&cfg)?.connect().await?;
        Ok(Conn {
            stream,
            buf: BytesMut::with_capacity(16 * 1024),
        })
    }
}

async fn read_frame(conn: &mut Conn) -> Result<Frame, TunnelError> {
    loop {
        if let Some(frame) = redline_resp::parse(&mut conn.buf)
            .map_err(|e| TunnelError::Topology(format!("upstream sent bad RESP: {e}")))?
        {
            return Ok(frame);
        }
        conn.buf.reserve(16 * 1024);
        if conn.stream.read_buf(&mut conn.buf).await? == 0 {
            return Err(TunnelError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
    }
}

/// The node a `-MOVED slot host:port` error names.
fn moved_to(frame: &Frame) -> Option<String> {
    let Frame::Error(e) = frame else { return None };
    let text = std::str::from_utf8(e).ok()?;
    let rest = text.strip_prefix("MOVED ")?;
    let (_slot, addr) = rest.split_once(' ')?;
    Some(addr.to_owned())
}

/// Shared by a smart listener's clients: the cluster client and upstream settings.
#[derive(Clone)]
pub(crate) struct Upstream {
    pub(crate) cluster: ClusterClient,
    pub(crate) config: Arc<Config>,
}

impl Upstream {
    pub(crate) fn dedicated(&self) -> Dedicated {
        Dedicated::new((*self.config).clone(), self.cluster.clone())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn moved_targets() {
        assert_eq!(
            moved_to(&Frame::Error("MOVED 12 10.0.0.1:7000".into())).as_deref(),
            Some("10.0.0.1:7000")
        );
        assert_eq!(moved_to(&Frame::Error("ASK 12 10.0.0.1:7000".into())), None);
        assert_eq!(moved_to(&Frame::Bulk("MOVED 12 a:1".into())), None);
    }
}
