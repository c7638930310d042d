//! Pinned mode's relay: one local client, one upstream connection to its node, bytes
//! forwarded as they are except the replies that carry node addresses.
//!
//! To know which reply answers which command, both directions are scanned for frame
//! boundaries ([`super::scan`]). The request side forwards every byte as soon as it is
//! read and, for each complete command, queues what its reply needs: nothing (most
//! commands, counted in runs), an address rewrite (`CLUSTER SLOTS/SHARDS/NODES/REPLICAS`
//! outside `MULTI`), or the end of pairing. The queue entry is pushed before the command's
//! last byte goes upstream, so it is always there when the reply arrives. The reply side
//! forwards runs of complete frames in one write and rebuilds only the frames that need
//! it; `-MOVED`/`-ASK` errors are rewritten wherever they appear as a reply.
//!
//! Pairing ends for good when a command breaks the one-reply-per-command rule
//! (`SUBSCRIBE` and friends, `MONITOR`, `CLIENT REPLY`, `SYNC`/`PSYNC`) or the client
//! sends something that is not RESP: from then on bytes still flow unchanged, redirects
//! are still rewritten, and topology replies are not (the tunnel can no longer tell them
//! from messages). RESP3 pushes (`>`) are never paired.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex};

use bytes::{Buf, BytesMut};
use redline::RawConnector;
use redline_resp::scan::{command_words, ScanError, Scanner, Side};
use redline_resp::Frame;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::error::TunnelError;
use super::pinned::Pinned;
use super::rewrite::{Collect, NodeAddr, Rewriter, Topology};
use super::standalone::{refuse, CHUNK};

/// One pinned node: where it is upstream and locally, and how to reach it.
pub(crate) struct NodeLink {
    pub(crate) node: NodeAddr,
    pub(crate) local: std::net::SocketAddr,
    pub(crate) connector: Arc<RawConnector>,
    pub(crate) pinned: Arc<Pinned>,
}

impl fmt::Debug for NodeLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeLink")
            .field("node", &self.node)
            .field("local", &self.local)
            .finish()
    }
}

/// What the reply to a command needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// This many replies pass as they are (redirects aside).
    Plain(u64),
    /// An address rewrite of this kind.
    Rewrite(Topology),
    /// Pairing stops here.
    Stop,
}

/// Replies still owed by upstream, oldest first. Shared by the two directions; each
/// holds the lock only to push or pop one entry.
#[derive(Debug, Default)]
struct Pending(VecDeque<Expect>);

impl Pending {
    fn push(&mut self, expect: Expect) {
        if let (Expect::Plain(n), Some(Expect::Plain(last))) = (expect, self.0.back_mut()) {
            *last += n;
            return;
        }
        self.0.push_back(expect);
    }

    /// What the next reply needs; `None` when nothing was owed.
    fn pop(&mut self) -> Option<Expect> {
        match self.0.front_mut()? {
            Expect::Plain(n) if *n > 1 => {
                *n -= 1;
                Some(Expect::Plain(1))
            }
            _ => self.0.pop_front(),
        }
    }
}

type Shared = Arc<Mutex<Pending>>;

fn lock(pending: &Shared) -> std::sync::MutexGuard<'_, Pending> {
    // The lock guards single pushes and pops: a panic cannot leave it half-updated.
    pending.lock().unwrap_or_else(|e| e.into_inner())
}

/// Relays one client of a pinned listener until either side closes.
pub(crate) async fn relay(mut client: TcpStream, link: Arc<NodeLink>) -> Result<(), TunnelError> {
    let server = match link.connector.connect().await {
        Ok(server) => server,
        Err(e) => {
            refuse(&mut client, &e).await;
            return Err(e.into());
        }
    };
    let (server_read, server_write) = tokio::io::split(server);
    let (client_read, client_write) = client.into_split();
    let pending: Shared = Arc::default();
    let requests = requests(client_read, server_write, pending.clone());
    let replies = replies(server_read, client_write, pending, &link);
    tokio::pin!(requests, replies);
    tokio::select! {
        // Upstream closed (or the client stopped reading): nothing more to deliver.
        done = &mut replies => done,
        // The client finished sending: deliver what upstream still answers.
        done = &mut requests => {
            done?;
            replies.await
        }
    }
}

/// Client to upstream: forwards every byte at once, queueing each command's expectation
/// before its bytes leave.
async fn requests<R, W>(mut client: R, mut server: W, pending: Shared) -> Result<(), TunnelError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = BytesMut::with_capacity(CHUNK);
    let mut scanner = Scanner::new(Side::Request);
    let mut classify = Classifier::default();
    let mut pairing = true;
    loop {
        buf.reserve(CHUNK);
        let before = buf.len();
        if client.read_buf(&mut buf).await? == 0 {
            // Close our side towards upstream (TLS close_notify); Redis then closes too.
            server.shutdown().await?;
            return Ok(());
        }
        // `buf` holds the unfinished frame (already forwarded) followed by the new bytes.
        let mut start = 0;
        while pairing {
            match scanner.next(&buf[start..]) {
                Ok(Some(len)) => {
                    if let Some(expect) = classify.command(&buf[start..start + len]) {
                        lock(&pending).push(expect);
                        pairing = expect != Expect::Stop;
                    }
                    start += len;
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "request is not RESP; pairing stops");
                    lock(&pending).push(Expect::Stop);
                    pairing = false;
                }
            }
        }
        server.write_all(&buf[before..]).await?;
        server.flush().await?;
        if pairing {
            buf.advance(start);
        } else {
            buf.clear();
        }
    }
}

/// Decides what a command's reply needs, following `MULTI` (replies inside a
/// transaction come back within `EXEC`'s array, where they are not rewritten).
#[derive(Debug, Default)]
struct Classifier {
    in_multi: bool,
}

impl Classifier {
    /// `None` for an empty command (Redis sends nothing back).
    fn command(&mut self, frame: &[u8]) -> Option<Expect> {
        let (name, sub) = command_words(frame)?;
        let name = &*name;
        let is = |word: &[u8], s: &str| word.eq_ignore_ascii_case(s.as_bytes());
        let sub_is = |s: &str| sub.as_deref().is_some_and(|w| is(w, s));
        let expect = if is(name, "CLUSTER") && !self.in_multi {
            if sub_is("SLOTS") {
                Expect::Rewrite(Topology::Slots)
            } else if sub_is("SHARDS") {
                Expect::Rewrite(Topology::Shards)
            } else if sub_is("NODES") {
                Expect::Rewrite(Topology::Nodes)
            } else if sub_is("REPLICAS") || sub_is("SLAVES") {
                Expect::Rewrite(Topology::Replicas)
            } else {
                Expect::Plain(1)
            }
        } else if [
            "SUBSCRIBE",
            "PSUBSCRIBE",
            "SSUBSCRIBE",
            "UNSUBSCRIBE",
            "PUNSUBSCRIBE",
            "SUNSUBSCRIBE",
            "MONITOR",
            "SYNC",
            "PSYNC",
        ]
        .iter()
        .any(|s| is(name, s))
            || (is(name, "CLIENT") && sub_is("REPLY"))
        {
            Expect::Stop
        } else {
            if is(name, "MULTI") {
                self.in_multi = true;
            } else if is(name, "EXEC") || is(name, "DISCARD") || is(name, "RESET") {
                self.in_multi = false;
            }
            Expect::Plain(1)
        };
        Some(expect)
    }
}

/// What to do with one complete reply frame.
enum Action {
    Forward,
    Redirect,
    Topology(Topology),
}

/// Upstream to client: forwards complete frames, rewriting those that carry addresses.
async fn replies<R, W>(
    mut server: R,
    mut client: W,
    pending: Shared,
    link: &Arc<NodeLink>,
) -> Result<(), TunnelError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = BytesMut::with_capacity(CHUNK);
    let mut scanner = Scanner::new(Side::Reply);
    let mut pairing = true;
    let mut scanning = true;
    loop {
        buf.reserve(CHUNK);
        if server.read_buf(&mut buf).await? == 0 {
            client.write_all(&buf).await?;
            client.shutdown().await?;
            return Ok(());
        }
        if !scanning {
            client.write_all(&buf).await?;
            buf.clear();
            continue;
        }
        // Bytes of `buf` that are complete frames to forward unchanged.
        let mut ready = 0;
        loop {
            let len = match scanner.next(&buf[ready..]) {
                Ok(Some(len)) => len,
                Ok(None) => break,
                Err(e) => {
                    let e: ScanError = e;
                    tracing::warn!(error = %e, "upstream reply is not RESP; relaying raw");
                    scanning = false;
                    ready = buf.len();
                    break;
                }
            };
            let kind = buf[ready];
            let action = if kind == b'>' {
                Action::Forward
            } else {
                let expect = if pairing { lock(&pending).pop() } else { None };
                match expect {
                    Some(Expect::Rewrite(topology)) => Action::Topology(topology),
                    Some(Expect::Plain(_)) => Action::Forward,
                    Some(Expect::Stop) | None => {
                        pairing = false;
                        Action::Forward
                    }
                }
            };
            let action = match action {
                Action::Forward if kind == b'-' && is_redirect(&buf[ready..ready + len]) => {
                    Action::Redirect
                }
                other => other,
            };
            if matches!(action, Action::Forward) {
                ready += len;
                continue;
            }
            // Flush the unchanged frames before it, then replace this one.
            client.write_all(&buf[..ready]).await?;
            buf.advance(ready);
            ready = 0;
            let original = buf.split_to(len);
            let rewritten = rewrite(action, original, link).await;
            client.write_all(&rewritten).await?;
        }
        if ready > 0 {
            client.write_all(&buf[..ready]).await?;
            buf.advance(ready);
        }
    }
}

fn is_redirect(frame: &[u8]) -> bool {
    frame.starts_with(b"-MOVED ") || frame.starts_with(b"-ASK ")
}

/// Rewrites one reply frame; on any surprise the original bytes go out unchanged.
async fn rewrite(action: Action, original: BytesMut, link: &Arc<NodeLink>) -> BytesMut {
    let pinned = &link.pinned;
    let tls = pinned.upstream_tls();
    match action {
        Action::Forward => original,
        Action::Redirect => {
            // `-<text>\r\n`
            let text = &original[1..original.len() - 2];
            let mut collect = Rewriter {
                map: Collect::default(),
                here: &link.node,
                upstream_tls: tls,
            };
            collect.redirect(text);
            let table = pinned.local_addrs(&collect.map.0).await;
            let mut rw = Rewriter {
                map: table,
                here: &link.node,
                upstream_tls: tls,
            };
            match rw.redirect(text) {
                Some(new) => {
                    let mut out = BytesMut::with_capacity(new.len() + 3);
                    out.extend_from_slice(b"-");
                    out.extend_from_slice(&new);
                    out.extend_from_slice(b"\r\n");
                    out
                }
                None => original,
            }
        }
        Action::Topology(kind) => {
            let mut parse_buf = original.clone();
            let frame: Frame = match redline_resp::parse(&mut parse_buf) {
                Ok(Some(frame)) => frame,
                _ => return original,
            };
            let mut collect = Rewriter {
                map: Collect::default(),
                here: &link.node,
                upstream_tls: tls,
            };
            collect.topology(kind, frame.clone());
            let table = pinned.local_addrs(&collect.map.0).await;
            let mut rw = Rewriter {
                map: table,
                here: &link.node,
                upstream_tls: tls,
            };
            let out_frame = rw.topology(kind, frame);
            let mut out = BytesMut::with_capacity(original.len() + 64);
            redline_resp::encode::frame(&mut out, &out_frame);
            out
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn pending_runs_and_markers() {
        let mut p = Pending::default();
        p.push(Expect::Plain(1));
        p.push(Expect::Plain(1));
        p.push(Expect::Rewrite(Topology::Nodes));
        p.push(Expect::Plain(1));
        assert_eq!(p.0.len(), 3);
        assert_eq!(p.pop(), Some(Expect::Plain(1)));
        assert_eq!(p.pop(), Some(Expect::Plain(1)));
        assert_eq!(p.pop(), Some(Expect::Rewrite(Topology::Nodes)));
        assert_eq!(p.pop(), Some(Expect::Plain(1)));
        assert_eq!(p.pop(), None);
    }

    #[test]
    fn classifies_commands() {
        let mut c = Classifier::default();
        let cmd = |c: &mut Classifier, args: &[&str]| {
            let mut out = BytesMut::new();
            redline_resp::encode::command(&mut out, args.iter());
            c.command(&out)
        };
        assert_eq!(
            cmd(&mut c, &["cluster", "nodes"]),
            Some(Expect::Rewrite(Topology::Nodes))
        );
        assert_eq!(cmd(&mut c, &["GET", "CLUSTER"]), Some(Expect::Plain(1)));
        assert_eq!(cmd(&mut c, &["CLUSTER", "INFO"]), Some(Expect::Plain(1)));
        assert_eq!(cmd(&mut c, &["MULTI"]), Some(Expect::Plain(1)));
        assert_eq!(cmd(&mut c, &["CLUSTER", "SLOTS"]), Some(Expect::Plain(1)));
        assert_eq!(cmd(&mut c, &["EXEC"]), Some(Expect::Plain(1)));
        assert_eq!(
            cmd(&mut c, &["CLUSTER", "SHARDS"]),
            Some(Expect::Rewrite(Topology::Shards))
        );
        assert_eq!(
            c.command(b"cluster slaves x\r\n"),
            Some(Expect::Rewrite(Topology::Replicas))
        );
        assert_eq!(c.command(b"\r\n"), None);
        assert_eq!(cmd(&mut c, &["subscribe", "ch"]), Some(Expect::Stop));
        assert_eq!(cmd(&mut c, &["CLIENT", "REPLY", "OFF"]), Some(Expect::Stop));
    }
}
