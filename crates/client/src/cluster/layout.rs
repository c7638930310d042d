//! What one node says the cluster looks like: `CLUSTER SHARDS` (Redis 7) or, on older
//! servers, `CLUSTER SLOTS`, parsed into a [`Layout`]. Every slot range of every shard is
//! kept (a master may own many ranges after resharding), with replicas, node ids and
//! health. Both RESP2 (flat arrays) and RESP3 (maps) shapes are read.

use bytes::Bytes;
use redline_resp::Frame;

/// One node as the cluster announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeInfo {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) id: Option<String>,
    /// `health: online` (CLUSTER SLOTS does not say: assumed).
    pub(crate) healthy: bool,
}

impl NodeInfo {
    /// `host:port`, the key of a node in the client (IPv6 hosts bracketed).
    pub(crate) fn addr(&self) -> String {
        addr_of(&self.host, self.port)
    }
}

/// `host:port` with IPv6 hosts in brackets, as [`Config::addr`](crate::Config::addr).
pub(crate) fn addr_of(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// One master, its replicas and the slot ranges it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShardInfo {
    /// Inclusive ranges.
    pub(crate) ranges: Vec<(u16, u16)>,
    pub(crate) master: NodeInfo,
    pub(crate) replicas: Vec<NodeInfo>,
}

/// A whole topology as one node reported it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) shards: Vec<ShardInfo>,
}

impl Layout {
    /// Slots whose master is reported healthy: how complete and current the view is.
    pub(crate) fn score(&self) -> usize {
        self.score_without(&[])
    }

    /// [`score`](Self::score), not counting slots of masters in `unreachable` (a view
    /// that still names a master the client cannot reach is likely behind a failover).
    pub(crate) fn score_without(&self, unreachable: &[String]) -> usize {
        self.shards
            .iter()
            .filter(|s| s.master.healthy && !unreachable.contains(&s.master.addr()))
            .flat_map(|s| s.ranges.iter())
            .map(|&(a, b)| usize::from(b.saturating_sub(a)) + 1)
            .sum()
    }
}

/// Where the reply came from: fills in endpoints the cluster reports as unknown
/// (`?` or empty means "the address you reached me at"), and picks TLS or plain ports.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    pub(crate) host: &'a str,
    pub(crate) tls: bool,
}

/// Parses a `CLUSTER SHARDS` reply.
pub(crate) fn from_shards(reply: &Frame, src: Source<'_>) -> Option<Layout> {
    let mut shards = Vec::new();
    for shard in items(reply)? {
        let fields = pairs(shard)?;
        let mut ranges = Vec::new();
        let mut master = None;
        let mut replicas = Vec::new();
        for (key, value) in fields {
            match &text(key)?[..] {
                b"slots" => {
                    let bounds: Vec<i64> = items(value)?.iter().filter_map(int).collect();
                    for pair in bounds.chunks_exact(2) {
                        ranges.push((slot(pair[0])?, slot(pair[1])?));
                    }
                }
                b"nodes" => {
                    for node in items(value)? {
                        let (info, is_master) = shard_node(node, src)?;
                        if is_master {
                            master = Some(info);
                        } else {
                            replicas.push(info);
                        }
                    }
                }
                _ => {}
            }
        }
        // A shard without slots (a fresh master, or one emptied by resharding) routes
        // nothing; a shard whose master failed and has no successor yet keeps its slots
        // under the failed master so a later refresh can tell.
        if let (Some(master), false) = (master, ranges.is_empty()) {
            shards.push(ShardInfo {
                ranges,
                master,
                replicas,
            });
        }
    }
    Some(Layout { shards })
}

fn shard_node(node: &Frame, src: Source<'_>) -> Option<(NodeInfo, bool)> {
    let mut id = None;
    let mut endpoint = None;
    let mut ip = None;
    let mut port = None;
    let mut tls_port = None;
    let mut master = false;
    let mut healthy = true;
    for (key, value) in pairs(node)? {
        match &text(key)?[..] {
            b"id" => id = text(value).map(|t| String::from_utf8_lossy(&t).into_owned()),
            b"endpoint" => endpoint = text(value),
            b"ip" => ip = text(value),
            b"port" => port = int(value),
            b"tls-port" => tls_port = int(value),
            b"role" => master = text(value).is_some_and(|r| &r[..] == b"master"),
            b"health" => healthy = text(value).is_some_and(|h| &h[..] == b"online"),
            _ => {}
        }
    }
    let port = if src.tls {
        tls_port.or(port)
    } else {
        port.or(tls_port)
    };
    let port = u16::try_from(port?).ok()?;
    let host = [endpoint, ip]
        .into_iter()
        .flatten()
        .find(|h| !h.is_empty() && &h[..] != b"?")
        .map(|h| String::from_utf8_lossy(&h).into_owned())
        .unwrap_or_else(|| src.host.to_owned());
    Some((
        NodeInfo {
            host,
            port,
            id,
            healthy,
        },
        master,
    ))
}

/// Parses a `CLUSTER SLOTS` reply: `[start, end, [ip, port, id, ...], replicas...]` per
/// range; ranges of one master are gathered into one shard.
pub(crate) fn from_slots(reply: &Frame, src: Source<'_>) -> Option<Layout> {
    let mut layout = Layout::default();
    for range in items(reply)? {
        let parts = items(range)?;
        let (start, end) = (slot(int(parts.first()?)?)?, slot(int(parts.get(1)?)?)?);
        let mut nodes = parts.get(2..)?.iter().filter_map(|n| slots_node(n, src));
        let master = nodes.next()?;
        let replicas: Vec<NodeInfo> = nodes.collect();
        match layout
            .shards
            .iter_mut()
            .find(|s| s.master.addr() == master.addr())
        {
            Some(shard) => shard.ranges.push((start, end)),
            None => layout.shards.push(ShardInfo {
                ranges: vec![(start, end)],
                master,
                replicas,
            }),
        }
    }
    Some(layout)
}

fn slots_node(node: &Frame, src: Source<'_>) -> Option<NodeInfo> {
    let parts = items(node)?;
    let ip = text(parts.first()?)?;
    let port = u16::try_from(int(parts.get(1)?)?).ok()?;
    let host = if ip.is_empty() || &ip[..] == b"?" {
        src.host.to_owned()
    } else {
        String::from_utf8_lossy(&ip).into_owned()
    };
    let id = parts
        .get(2)
        .and_then(text)
        .map(|t| String::from_utf8_lossy(&t).into_owned());
    Some(NodeInfo {
        host,
        port,
        id,
        healthy: true,
    })
}

fn items(frame: &Frame) -> Option<&[Frame]> {
    match frame {
        Frame::Array(items) | Frame::Set(items) => Some(items),
        Frame::Attribute { value, .. } => items(value),
        _ => None,
    }
}

/// Key/value pairs of a RESP3 map or a RESP2 flat array.
fn pairs(frame: &Frame) -> Option<Vec<(&Frame, &Frame)>> {
    match frame {
        Frame::Map(pairs) => Some(pairs.iter().map(|(k, v)| (k, v)).collect()),
        Frame::Array(flat) => Some(
            flat.chunks_exact(2)
                .map(|pair| (&pair[0], &pair[1]))
                .collect(),
        ),
        Frame::Attribute { value, .. } => pairs(value),
        _ => None,
    }
}

fn text(frame: &Frame) -> Option<Bytes> {
    match frame {
        Frame::Bulk(b) | Frame::Simple(b) => Some(b.clone()),
        Frame::Verbatim { text, .. } => Some(text.clone()),
        _ => None,
    }
}

fn int(frame: &Frame) -> Option<i64> {
    match frame {
        Frame::Integer(n) => Some(*n),
        Frame::Bulk(b) | Frame::Simple(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

fn slot(n: i64) -> Option<u16> {
    u16::try_from(n).ok().filter(|&s| s < 16384)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Frame {
        Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
    }

    const SRC: Source<'static> = Source {
        host: "10.0.0.9",
        tls: false,
    };

    #[test]
    fn shards_resp2_and_resp3() {
        let node = |ip: &str, port: i64, role: &str, health: &str| {
            Frame::Array(vec![
                bulk("id"),
                bulk("abc"),
                bulk("port"),
                Frame::Integer(port),
                bulk("ip"),
                bulk(ip),
                bulk("endpoint"),
                bulk(ip),
                bulk("role"),
                bulk(role),
                bulk("health"),
                bulk(health),
            ])
        };
        let reply = Frame::Array(vec![Frame::Array(vec![
            bulk("slots"),
            Frame::Array(vec![
                Frame::Integer(0),
                Frame::Integer(10),
                Frame::Integer(100),
                Frame::Integer(200),
            ]),
            bulk("nodes"),
            Frame::Array(vec![
                node("1.1.1.1", 7000, "master", "online"),
                node("?", 7001, "replica", "failed"),
            ]),
        ])]);
        let layout = from_shards(&reply, SRC).unwrap();
        assert_eq!(layout.shards.len(), 1);
        let shard = &layout.shards[0];
        assert_eq!(shard.ranges, vec![(0, 10), (100, 200)]);
        assert_eq!(shard.master.addr(), "1.1.1.1:7000");
        assert_eq!(shard.replicas[0].addr(), "10.0.0.9:7001");
        assert!(!shard.replicas[0].healthy);
        assert_eq!(layout.score(), 11 + 101);

        let Frame::Array(shards) = reply else {
            unreachable!()
        };
        let Frame::Array(fields) = &shards[0] else {
            unreachable!()
        };
        let map = Frame::Array(vec![Frame::Map(
            fields
                .chunks(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect(),
        )]);
        assert_eq!(from_shards(&map, SRC).unwrap(), layout);
    }

    #[test]
    fn slots_gathers_ranges() {
        let node =
            |ip: &str, port: i64| Frame::Array(vec![bulk(ip), Frame::Integer(port), bulk("id")]);
        let reply = Frame::Array(vec![
            Frame::Array(vec![
                Frame::Integer(0),
                Frame::Integer(5),
                node("", 7000),
                node("1.1.1.1", 7003),
            ]),
            Frame::Array(vec![Frame::Integer(9), Frame::Integer(9), node("", 7000)]),
        ]);
        let layout = from_slots(&reply, SRC).unwrap();
        assert_eq!(layout.shards.len(), 1);
        assert_eq!(layout.shards[0].ranges, vec![(0, 5), (9, 9)]);
        assert_eq!(layout.shards[0].master.addr(), "10.0.0.9:7000");
        assert_eq!(layout.shards[0].replicas[0].addr(), "1.1.1.1:7003");
    }
}
