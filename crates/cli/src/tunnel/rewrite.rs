//! Pinned mode's address rewriting: upstream node addresses become the tunnel's local
//! listeners, in exactly two places where Redis puts addresses: the replies to
//! `CLUSTER SLOTS`, `CLUSTER SHARDS`, `CLUSTER NODES` and `CLUSTER REPLICAS` (`SLAVES`)
//! that the relay knows it forwarded, and `-MOVED` / `-ASK` errors. Nothing else is
//! looked at, so a stored value such as `10.1.2.3:7000` passes untouched.
//!
//! Rewrites run twice over a reply: first with a [`Collect`] map that records every
//! address (so the caller can open listeners for nodes it has not seen, which needs
//! `await`), then with the resulting table. Both passes are plain functions of a
//! [`Frame`], which keeps them testable without sockets.
//!
//! What a rewritten node looks like: host = the local listener's IP, port = its port.
//! `CLUSTER SHARDS` reports one `port` (the local, plain-text one) and no `tls-port`;
//! announced host names are dropped, since they name the upstream machines.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;

use bytes::Bytes;
use redline_resp::Frame;

/// An upstream node as Redis names it in replies: `host:port`, with the port clients
/// dial (the TLS port when the tunnel talks TLS to the cluster).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct NodeAddr {
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl NodeAddr {
    pub(crate) fn new(host: impl Into<String>, port: u16) -> Self {
        NodeAddr {
            host: host.into(),
            port,
        }
    }

    /// `host:port` as Redis writes it (IPv6 hosts unbracketed, split at the last colon).
    fn parse(s: &str) -> Option<Self> {
        let (host, port) = s.rsplit_once(':')?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Some(NodeAddr::new(host, port.parse().ok()?))
    }
}

impl fmt::Display for NodeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Which cluster reply a command asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Topology {
    /// `CLUSTER SLOTS`: ranges with `[host, port, id, {metadata}]` per node.
    Slots,
    /// `CLUSTER SHARDS`: shards with node maps (`ip`, `endpoint`, `port`, `tls-port`...).
    Shards,
    /// `CLUSTER NODES`: one text line per node, address in the second field.
    Nodes,
    /// `CLUSTER REPLICAS` / `CLUSTER SLAVES`: lines as in `CLUSTER NODES`, one per bulk.
    Replicas,
}

/// Where an upstream node is reachable locally.
pub(crate) trait AddrMap {
    fn local(&mut self, node: &NodeAddr) -> Option<SocketAddr>;
}

/// First pass: remembers every address and maps none.
#[derive(Debug, Default)]
pub(crate) struct Collect(pub(crate) Vec<NodeAddr>);

impl AddrMap for Collect {
    fn local(&mut self, node: &NodeAddr) -> Option<SocketAddr> {
        if !self.0.contains(node) {
            self.0.push(node.clone());
        }
        None
    }
}

impl AddrMap for HashMap<NodeAddr, SocketAddr> {
    fn local(&mut self, node: &NodeAddr) -> Option<SocketAddr> {
        self.get(node).copied()
    }
}

/// One rewrite: the map, the node the reply came from (Redis leaves the host empty, or
/// `?`, where the client should reuse the host it dialled), and which port field of
/// `CLUSTER SHARDS` names the upstream port.
pub(crate) struct Rewriter<'a, M> {
    pub(crate) map: M,
    pub(crate) here: &'a NodeAddr,
    pub(crate) upstream_tls: bool,
}

impl<M: AddrMap> Rewriter<'_, M> {
    fn lookup(&mut self, host: &str, port: u16) -> Option<SocketAddr> {
        let host = if host.is_empty() || host == "?" {
            self.here.host.as_str()
        } else {
            host
        };
        self.map.local(&NodeAddr::new(host, port))
    }

    /// `MOVED <slot> <host:port>` or `ASK <slot> <host:port>` (an error line without the
    /// leading `-`), rewritten; `None` for any other error.
    pub(crate) fn redirect(&mut self, error: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(error).ok()?;
        let mut parts = text.splitn(3, ' ');
        let kind = parts.next()?;
        let slot = parts.next()?;
        let addr = parts.next()?;
        if kind != "MOVED" && kind != "ASK" {
            return None;
        }
        let node = NodeAddr::parse(addr)?;
        let local = self.lookup(&node.host, node.port)?;
        Some(format!("{kind} {slot} {}", show(local)).into_bytes())
    }

    /// A `CLUSTER SLOTS/SHARDS/NODES/REPLICAS` reply, rewritten; shapes it does not
    /// recognise (an error, a `+QUEUED`) come back as they were.
    pub(crate) fn topology(&mut self, kind: Topology, frame: Frame) -> Frame {
        match kind {
            Topology::Slots => map_items(frame, |_, range| {
                map_items(range, |i, node| {
                    // Elements 0 and 1 are the slot bounds; nodes follow.
                    if i >= 2 {
                        self.slots_node(node)
                    } else {
                        node
                    }
                })
            }),
            Topology::Shards => map_items(frame, |_, shard| {
                map_pairs(shard, |key, value| {
                    let value = if key == b"nodes" {
                        map_items(value, |_, node| self.shard_node(node))
                    } else {
                        value
                    };
                    vec![(Some(value), None)]
                })
            }),
            Topology::Nodes => self.text(frame, |rw, text| rw.node_lines(text)),
            Topology::Replicas => map_items(frame, |_, line| {
                self.text(line, |rw, text| rw.node_lines(text))
            }),
        }
    }

    /// `[host, port, id, {hostname: ...}]`.
    fn slots_node(&mut self, node: Frame) -> Frame {
        let Frame::Array(mut items) = node else {
            return node;
        };
        let host = items.first().and_then(text_of).map(str::to_owned);
        let port = match items.get(1) {
            Some(Frame::Integer(p)) => u16::try_from(*p).ok(),
            _ => None,
        };
        if let (Some(host), Some(port)) = (host, port) {
            if let Some(local) = self.lookup(&host, port) {
                items[0] = Frame::Bulk(Bytes::from(local.ip().to_string()));
                items[1] = Frame::Integer(i64::from(local.port()));
                for meta in items.iter_mut().skip(3) {
                    let taken = std::mem::replace(meta, Frame::Null);
                    *meta = drop_keys(taken, &[b"hostname"]);
                }
            }
        }
        Frame::Array(items)
    }

    /// A node map of `CLUSTER SHARDS`.
    fn shard_node(&mut self, node: Frame) -> Frame {
        let pairs = pairs_of(&node);
        let field = |name: &[u8]| pairs.iter().find(|(k, _)| key_is(k, name)).map(|(_, v)| *v);
        let host = field(b"ip")
            .or_else(|| field(b"endpoint"))
            .and_then(text_of)
            .map(str::to_owned);
        let (first, second): (&[u8], &[u8]) = if self.upstream_tls {
            (b"tls-port", b"port")
        } else {
            (b"port", b"tls-port")
        };
        let port = match field(first).or_else(|| field(second)) {
            Some(Frame::Integer(p)) => u16::try_from(*p).ok(),
            _ => None,
        };
        let (Some(host), Some(port)) = (host, port) else {
            return node;
        };
        let Some(local) = self.lookup(&host, port) else {
            return node;
        };
        let mut port_written = false;
        map_pairs(node, |key, value| {
            if key == b"ip" || key == b"endpoint" {
                vec![(Some(Frame::Bulk(Bytes::from(local.ip().to_string()))), None)]
            } else if key == b"port" || key == b"tls-port" {
                if std::mem::replace(&mut port_written, true) {
                    vec![]
                } else {
                    vec![(
                        Some(Frame::Integer(i64::from(local.port()))),
                        Some(Frame::Bulk(Bytes::from_static(b"port"))),
                    )]
                }
            } else if key == b"hostname" {
                vec![]
            } else {
                vec![(Some(value), None)]
            }
        })
    }

    /// Applies `f` to the text of a bulk or verbatim string.
    fn text(&mut self, frame: Frame, f: impl FnOnce(&mut Self, &str) -> String) -> Frame {
        match &frame {
            Frame::Bulk(b) => match std::str::from_utf8(b) {
                Ok(text) => Frame::Bulk(Bytes::from(f(self, text))),
                Err(_) => frame,
            },
            Frame::Verbatim { format, text } => match std::str::from_utf8(text) {
                Ok(t) => Frame::Verbatim {
                    format: *format,
                    text: Bytes::from(f(self, t)),
                },
                Err(_) => frame,
            },
            _ => frame,
        }
    }

    /// `CLUSTER NODES` text: the second field of each line,
    /// `host:port@cport[,hostname]`, becomes `localip:localport@cport`.
    fn node_lines(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&self.node_line(line));
        }
        out
    }

    fn node_line(&mut self, line: &str) -> String {
        let mut fields: Vec<&str> = line.split(' ').collect();
        let Some(addr) = fields.get(1).copied() else {
            return line.to_owned();
        };
        let addr = addr.split(',').next().unwrap_or(addr);
        let (host_port, bus) = match addr.split_once('@') {
            Some((hp, bus)) => (hp, Some(bus)),
            None => (addr, None),
        };
        let Some(node) = NodeAddr::parse(host_port) else {
            return line.to_owned();
        };
        let Some(local) = self.lookup(&node.host, node.port) else {
            return line.to_owned();
        };
        let new_addr = match bus {
            Some(bus) => format!("{}@{bus}", show(local)),
            None => show(local),
        };
        fields[1] = &new_addr;
        fields.join(" ")
    }
}

/// `ip:port` as Redis writes it (IPv6 unbracketed).
fn show(addr: SocketAddr) -> String {
    format!("{}:{}", addr.ip(), addr.port())
}

fn text_of(frame: &Frame) -> Option<&str> {
    match frame {
        Frame::Bulk(b) | Frame::Simple(b) => std::str::from_utf8(b).ok(),
        _ => None,
    }
}

fn key_is(key: &Frame, name: &[u8]) -> bool {
    matches!(key, Frame::Bulk(b) | Frame::Simple(b) if b.as_ref() == name)
}

/// Maps the elements of an array (RESP2 and RESP3 alike); anything else is returned as is.
fn map_items(frame: Frame, mut f: impl FnMut(usize, Frame) -> Frame) -> Frame {
    match frame {
        Frame::Array(items) => Frame::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| f(i, item))
                .collect(),
        ),
        other => other,
    }
}

/// Key/value view of a RESP3 map or a RESP2 flat array.
fn pairs_of(frame: &Frame) -> Vec<(&Frame, &Frame)> {
    match frame {
        Frame::Map(pairs) => pairs.iter().map(|(k, v)| (k, v)).collect(),
        Frame::Array(flat) => flat.chunks_exact(2).map(|c| (&c[0], &c[1])).collect(),
        _ => Vec::new(),
    }
}

/// Rebuilds a map (or flat array) pair by pair. `f` gets the key's bytes and the value
/// and returns the replacement pairs: `(value, new key or None to keep the key)`;
/// an empty list drops the pair.
fn map_pairs(
    frame: Frame,
    mut f: impl FnMut(&[u8], Frame) -> Vec<(Option<Frame>, Option<Frame>)>,
) -> Frame {
    let mut apply = |k: Frame, v: Frame, out: &mut Vec<(Frame, Frame)>| {
        let key_bytes = match &k {
            Frame::Bulk(b) | Frame::Simple(b) => b.clone(),
            _ => Bytes::new(),
        };
        for (value, new_key) in f(&key_bytes, v) {
            if let Some(value) = value {
                out.push((new_key.unwrap_or_else(|| k.clone()), value));
            }
        }
    };
    match frame {
        Frame::Map(pairs) => {
            let mut out = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                apply(k, v, &mut out);
            }
            Frame::Map(out)
        }
        Frame::Array(flat) if flat.len() % 2 == 0 => {
            let mut out = Vec::with_capacity(flat.len() / 2);
            let mut it = flat.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                apply(k, v, &mut out);
            }
            Frame::Array(out.into_iter().flat_map(|(k, v)| [k, v]).collect())
        }
        other => other,
    }
}

/// Drops the named keys from a map or flat key/value array.
fn drop_keys(frame: Frame, names: &[&[u8]]) -> Frame {
    map_pairs(frame, |key, value| {
        if names.contains(&key) {
            vec![]
        } else {
            vec![(Some(value), None)]
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    fn table() -> HashMap<NodeAddr, SocketAddr> {
        let mut m = HashMap::new();
        m.insert(
            NodeAddr::new("10.0.0.1", 6380),
            "127.0.0.1:7001".parse().unwrap(),
        );
        m.insert(
            NodeAddr::new("10.0.0.2", 6380),
            "127.0.0.1:7002".parse().unwrap(),
        );
        m
    }

    fn frame(wire: &[u8]) -> Frame {
        redline_resp::parse(&mut BytesMut::from(wire))
            .unwrap()
            .unwrap()
    }

    fn wire(frame: &Frame) -> Vec<u8> {
        let mut out = BytesMut::new();
        redline_resp::encode::frame(&mut out, frame);
        out.to_vec()
    }

    fn rewrite(kind: Topology, wire_in: &[u8], tls: bool) -> Vec<u8> {
        let here = NodeAddr::new("10.0.0.1", 6380);
        let mut rw = Rewriter {
            map: table(),
            here: &here,
            upstream_tls: tls,
        };
        wire(&rw.topology(kind, frame(wire_in)))
    }

    #[test]
    fn redirects() {
        let here = NodeAddr::new("10.0.0.1", 6380);
        let mut rw = Rewriter {
            map: table(),
            here: &here,
            upstream_tls: true,
        };
        assert_eq!(
            rw.redirect(b"MOVED 3999 10.0.0.2:6380").unwrap(),
            b"MOVED 3999 127.0.0.1:7002"
        );
        assert_eq!(
            rw.redirect(b"ASK 1 :6380").unwrap(),
            b"ASK 1 127.0.0.1:7001"
        );
        assert_eq!(rw.redirect(b"ERR MOVED 1 10.0.0.2:6380"), None);
        assert_eq!(rw.redirect(b"MOVED 1 10.9.9.9:6380"), None);
    }

    #[test]
    fn slots_resp2_and_resp3() {
        let resp2 = b"*1\r\n*4\r\n:0\r\n:5460\r\n\
            *4\r\n$8\r\n10.0.0.1\r\n:6380\r\n$2\r\nid\r\n*2\r\n$8\r\nhostname\r\n$4\r\nhost\r\n\
            *3\r\n$8\r\n10.0.0.2\r\n:6380\r\n$3\r\nid2\r\n";
        let want = b"*1\r\n*4\r\n:0\r\n:5460\r\n\
            *4\r\n$9\r\n127.0.0.1\r\n:7001\r\n$2\r\nid\r\n*0\r\n\
            *3\r\n$9\r\n127.0.0.1\r\n:7002\r\n$3\r\nid2\r\n";
        assert_eq!(rewrite(Topology::Slots, resp2, true), want);
        let resp3 =
            b"*1\r\n*3\r\n:0\r\n:5460\r\n*4\r\n$8\r\n10.0.0.1\r\n:6380\r\n$2\r\nid\r\n%0\r\n";
        let want3 =
            b"*1\r\n*3\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:7001\r\n$2\r\nid\r\n%0\r\n";
        assert_eq!(rewrite(Topology::Slots, resp3, false), want3);
    }

    #[test]
    fn shards_keep_shape_and_report_the_local_port() {
        // RESP2 flat arrays, TLS-only node (no plain port).
        let node = b"*12\r\n$2\r\nid\r\n$1\r\nx\r\n$8\r\ntls-port\r\n:6380\r\n\
            $2\r\nip\r\n$8\r\n10.0.0.1\r\n$8\r\nendpoint\r\n$8\r\n10.0.0.1\r\n\
            $8\r\nhostname\r\n$1\r\nh\r\n$4\r\nrole\r\n$6\r\nmaster\r\n";
        let mut shard =
            b"*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:5460\r\n$5\r\nnodes\r\n*1\r\n".to_vec();
        shard.extend_from_slice(node);
        let out = frame(&rewrite(Topology::Shards, &shard, true));
        let text = format!("{out:?}");
        assert!(
            text.contains("7001") && !text.contains("10.0.0.1"),
            "{text}"
        );
        assert!(
            !text.contains("tls-port") && !text.contains("hostname"),
            "{text}"
        );
        let Frame::Array(shards) = out else { panic!() };
        let Frame::Array(fields) = &shards[0] else {
            panic!()
        };
        let Frame::Array(nodes) = &fields[3] else {
            panic!()
        };
        let Frame::Array(node) = &nodes[0] else {
            panic!()
        };
        assert_eq!(node.len(), 10);
        assert_eq!(node[2], Frame::Bulk("port".into()));
        assert_eq!(node[3], Frame::Integer(7001));
    }

    #[test]
    fn nodes_text_and_replicas() {
        let text = "abc 10.0.0.1:6380@16380,host myself,master - 0 0 1 connected 0-5460\n\
                    def 10.0.0.2:6380@16380 slave abc 0 1 1 connected\n";
        let mut bulk = format!("${}\r\n{text}\r\n", text.len()).into_bytes();
        let out = frame(&rewrite(Topology::Nodes, &bulk, true));
        let Frame::Bulk(out) = out else { panic!() };
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            "abc 127.0.0.1:7001@16380 myself,master - 0 0 1 connected 0-5460\n\
             def 127.0.0.1:7002@16380 slave abc 0 1 1 connected\n"
        );
        // Unknown nodes and other replies stay as they were.
        bulk = b"+QUEUED\r\n".to_vec();
        assert_eq!(rewrite(Topology::Nodes, &bulk, true), bulk);
        let line = "def 10.0.0.9:1@2 slave abc 0 1 1 connected";
        let replicas = format!("*1\r\n${}\r\n{line}\r\n", line.len()).into_bytes();
        assert_eq!(rewrite(Topology::Replicas, &replicas, true), replicas);
    }

    #[test]
    fn collect_lists_every_address_once() {
        let here = NodeAddr::new("10.0.0.1", 6380);
        let mut rw = Rewriter {
            map: Collect::default(),
            here: &here,
            upstream_tls: true,
        };
        let text = "a 10.0.0.5:1@2 master - 0 0 1 connected\nb :6380@2 slave a 0 0 1 connected\n\
                    c 10.0.0.5:1@2 slave a 0 0 1 connected";
        rw.topology(Topology::Nodes, Frame::Bulk(Bytes::from(text)));
        assert_eq!(
            rw.map.0,
            vec![
                NodeAddr::new("10.0.0.5", 1),
                NodeAddr::new("10.0.0.1", 6380)
            ]
        );
    }
}
