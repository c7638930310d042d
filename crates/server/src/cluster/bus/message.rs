//! Redis 7.0's cluster bus messages, byte for byte (`clusterMsg` in Redis's
//! `cluster.h`): a 2256-byte header in network byte order, then a body that depends on
//! the type. redline-server nodes speak it with each other and with redis-server nodes.

use super::super::node::NodeId;
use super::super::state::SLOTS;

/// Message types, as numbered on the wire.
pub const PING: u16 = 0;
/// Answer to PING and MEET.
pub const PONG: u16 = 1;
/// "Join me": a PING that makes the receiver add an unknown sender.
pub const MEET: u16 = 2;
/// A node is failing (majority agreement).
pub const FAIL: u16 = 3;
/// PUBLISH propagated to every node.
pub const PUBLISH: u16 = 4;
/// A replica asks for a vote to replace its master.
pub const FAILOVER_AUTH_REQUEST: u16 = 5;
/// A master's vote.
pub const FAILOVER_AUTH_ACK: u16 = 6;
/// Another node's slots, from a node that knows a newer configuration.
pub const UPDATE: u16 = 7;
/// A replica asks its master to pause for a manual failover.
pub const MFSTART: u16 = 8;
/// A module's message (carried, not used).
pub const MODULE: u16 = 9;
/// SPUBLISH propagated within a shard.
pub const PUBLISHSHARD: u16 = 10;
/// Number of types, for per-type counters.
pub const TYPES: usize = 11;

/// The names CLUSTER INFO gives the types (`cluster_stats_messages_<name>_sent`).
pub const TYPE_NAMES: [&str; TYPES] = [
    "ping",
    "pong",
    "meet",
    "fail",
    "publish",
    "auth-req",
    "auth-ack",
    "update",
    "mfstart",
    "module",
    "publishshard",
];

/// Header length: every message is at least this long.
pub const HEADER_LEN: usize = 2256;
/// One gossip entry of PING, PONG and MEET.
const GOSSIP_LEN: usize = 104;
/// An IP address field (`NET_IP_STR_LEN`).
const IP_LEN: usize = 46;
/// The longest message accepted: a header and gossip about every node of a large
/// cluster, or a PUBLISH of a big message, fit well inside.
pub const MAX_LEN: usize = 512 << 20;

/// `mflags[0]`: the master is paused for a manual failover.
pub const FLAG0_PAUSED: u8 = 1;
/// `mflags[0]`: answer even a replica's vote request (a forced failover).
pub const FLAG0_FORCEACK: u8 = 2;
/// `mflags[0]`: the sender may carry ping extensions.
pub const FLAG0_EXT_DATA: u8 = 4;

/// The hostname ping extension.
const EXT_HOSTNAME: u16 = 0;

/// The fixed header every message starts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// One of the type constants.
    pub kind: u16,
    /// The sender's client port.
    pub port: u16,
    /// The sender's view of the current epoch.
    pub current_epoch: u64,
    /// The sender's config epoch (its master's for a replica).
    pub config_epoch: u64,
    /// The sender's replication offset.
    pub offset: u64,
    /// The sender's name.
    pub sender: NodeId,
    /// The slots the sender (or its master) serves, 2048 bytes.
    pub slots: Box<[u8; SLOTS / 8]>,
    /// The master the sender replicates (`None`: it is a master).
    pub master: Option<NodeId>,
    /// The address the sender announces (empty: use the connection's).
    pub ip: String,
    /// The sender's plaintext port when its client port is TLS.
    pub pport: u16,
    /// The sender's bus port.
    pub cport: u16,
    /// The sender's flags.
    pub flags: u16,
    /// Whether the cluster is up from the sender's point of view.
    pub state_ok: bool,
    /// Message flags.
    pub mflags: [u8; 3],
}

/// What PING, PONG and MEET say about another node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gossip {
    /// Its name.
    pub id: NodeId,
    /// When the sender last pinged it, in seconds.
    pub ping_sent: u32,
    /// When the sender last heard its PONG, in seconds.
    pub pong_received: u32,
    /// Its address.
    pub ip: String,
    /// Its client port.
    pub port: u16,
    /// Its bus port.
    pub cport: u16,
    /// Its flags.
    pub flags: u16,
    /// Its plaintext port.
    pub pport: u16,
}

/// A message's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// PING, PONG, MEET: gossip, and the sender's hostname if it announces one.
    Ping {
        /// Gossip entries.
        gossip: Vec<Gossip>,
        /// The hostname extension.
        hostname: Option<String>,
    },
    /// FAIL: who failed.
    Fail(NodeId),
    /// PUBLISH, PUBLISHSHARD.
    Publish {
        /// The channel.
        channel: Vec<u8>,
        /// The message.
        message: Vec<u8>,
    },
    /// UPDATE: a node's config epoch and slots.
    Update {
        /// Its config epoch.
        config_epoch: u64,
        /// Its name.
        id: NodeId,
        /// Its slots.
        slots: Box<[u8; SLOTS / 8]>,
    },
    /// FAILOVER_AUTH_REQUEST, FAILOVER_AUTH_ACK, MFSTART, MODULE and types unknown
    /// here: nothing this node reads.
    Empty,
}

/// A whole message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The header.
    pub header: Header,
    /// The body.
    pub body: Body,
}

/// Why a message was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    /// Not "RCmb".
    #[error("bad signature")]
    Signature,
    /// A protocol version other than 1: ignored, as Redis does.
    #[error("protocol version {0} is not 1")]
    Version(u16),
    /// The length does not match the type's body.
    #[error("length {got} of a type {kind} message, expected {expected}")]
    Length {
        /// The type.
        kind: u16,
        /// The length the header says.
        got: usize,
        /// The length its body needs.
        expected: usize,
    },
}

/// Reads big-endian numbers from a checked buffer.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u16(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.0[at], self.0[at + 1]])
    }
    fn u32(&self, at: usize) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.0[at..at + 4]);
        u32::from_be_bytes(b)
    }
    fn u64(&self, at: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[at..at + 8]);
        u64::from_be_bytes(b)
    }
    fn id(&self, at: usize) -> NodeId {
        let mut name = [0u8; 40];
        name.copy_from_slice(&self.0[at..at + 40]);
        NodeId::from_bytes(name)
    }
    /// A NUL-terminated string field of `len` bytes.
    fn text(&self, at: usize, len: usize) -> String {
        let field = &self.0[at..at + len];
        let end = field.iter().position(|&b| b == 0).unwrap_or(len);
        String::from_utf8_lossy(&field[..end]).into_owned()
    }
    fn slots(&self, at: usize) -> Box<[u8; SLOTS / 8]> {
        let mut slots = Box::new([0u8; SLOTS / 8]);
        slots.copy_from_slice(&self.0[at..at + SLOTS / 8]);
        slots
    }
}

/// The total length a message announces in its first 8 bytes, once its signature is
/// checked.
pub fn announced_len(first8: &[u8; 8]) -> Result<usize, DecodeError> {
    if &first8[..4] != b"RCmb" {
        return Err(DecodeError::Signature);
    }
    Ok(u32::from_be_bytes([first8[4], first8[5], first8[6], first8[7]]) as usize)
}

fn length_error(kind: u16, got: usize, expected: usize) -> DecodeError {
    DecodeError::Length {
        kind,
        got,
        expected,
    }
}

/// The type of the encoded message `buf`, read from its header.
pub fn kind_of(buf: &[u8]) -> Option<u16> {
    let kind = buf.get(12..14)?;
    Some(u16::from_be_bytes([kind[0], kind[1]]))
}

/// Decodes one whole message (`buf` is exactly the announced length).
pub fn decode(buf: &[u8]) -> Result<Message, DecodeError> {
    if buf.len() < 8 || &buf[..4] != b"RCmb" {
        return Err(DecodeError::Signature);
    }
    if buf.len() < HEADER_LEN {
        return Err(length_error(0, buf.len(), HEADER_LEN));
    }
    let r = Reader(buf);
    let version = r.u16(8);
    if version != 1 {
        return Err(DecodeError::Version(version));
    }
    let kind = r.u16(12);
    let count = usize::from(r.u16(14));
    let master_bytes = &buf[2128..2168];
    let mflags = [buf[2253], buf[2254], buf[2255]];
    let header = Header {
        kind,
        port: r.u16(10),
        current_epoch: r.u64(16),
        config_epoch: r.u64(24),
        offset: r.u64(32),
        sender: r.id(40),
        slots: r.slots(80),
        master: if master_bytes.iter().all(|&b| b == 0) {
            None
        } else {
            NodeId::parse(master_bytes)
        },
        ip: r.text(2168, IP_LEN),
        pport: r.u16(2246),
        cport: r.u16(2248),
        flags: r.u16(2250),
        state_ok: buf[2252] == 0,
        mflags,
    };
    let extensions = usize::from(r.u16(2214));
    let total = buf.len();
    let body = match kind {
        PING | PONG | MEET => {
            let mut expected = HEADER_LEN + count * GOSSIP_LEN;
            if total < expected {
                return Err(length_error(kind, total, expected));
            }
            let gossip = (0..count)
                .map(|i| {
                    let at = HEADER_LEN + i * GOSSIP_LEN;
                    Gossip {
                        id: r.id(at),
                        ping_sent: r.u32(at + 40),
                        pong_received: r.u32(at + 44),
                        ip: r.text(at + 48, IP_LEN),
                        port: r.u16(at + 94),
                        cport: r.u16(at + 96),
                        flags: r.u16(at + 98),
                        pport: r.u16(at + 100),
                    }
                })
                .collect();
            let mut hostname = None;
            if mflags[0] & FLAG0_EXT_DATA != 0 {
                for _ in 0..extensions {
                    if total < expected + 8 {
                        return Err(length_error(kind, total, expected + 8));
                    }
                    let len = r.u32(expected) as usize;
                    let ext_kind = r.u16(expected + 4);
                    if len < 8 || len % 8 != 0 || total - expected < len {
                        return Err(length_error(kind, total, expected + len.max(8)));
                    }
                    if ext_kind == EXT_HOSTNAME {
                        hostname = Some(r.text(expected + 8, len - 8));
                    }
                    expected += len;
                }
            }
            if total != expected {
                return Err(length_error(kind, total, expected));
            }
            Body::Ping { gossip, hostname }
        }
        FAIL => {
            check_len(kind, total, HEADER_LEN + 40)?;
            Body::Fail(r.id(HEADER_LEN))
        }
        PUBLISH | PUBLISHSHARD => {
            if total < HEADER_LEN + 8 {
                return Err(length_error(kind, total, HEADER_LEN + 8));
            }
            let channel_len = r.u32(HEADER_LEN) as usize;
            let message_len = r.u32(HEADER_LEN + 4) as usize;
            let expected = (HEADER_LEN + 8)
                .saturating_add(channel_len)
                .saturating_add(message_len);
            check_len(kind, total, expected)?;
            let data = &buf[HEADER_LEN + 8..];
            Body::Publish {
                channel: data[..channel_len].to_vec(),
                message: data[channel_len..].to_vec(),
            }
        }
        UPDATE => {
            check_len(kind, total, HEADER_LEN + 8 + 40 + SLOTS / 8)?;
            Body::Update {
                config_epoch: r.u64(HEADER_LEN),
                id: r.id(HEADER_LEN + 8),
                slots: r.slots(HEADER_LEN + 48),
            }
        }
        FAILOVER_AUTH_REQUEST | FAILOVER_AUTH_ACK | MFSTART => {
            check_len(kind, total, HEADER_LEN)?;
            Body::Empty
        }
        _ => Body::Empty,
    };
    Ok(Message { header, body })
}

fn check_len(kind: u16, got: usize, expected: usize) -> Result<(), DecodeError> {
    if got == expected {
        Ok(())
    } else {
        Err(length_error(kind, got, expected))
    }
}

/// Writes big-endian numbers into a message being built.
struct Writer(Vec<u8>);

impl Writer {
    fn put(&mut self, at: usize, bytes: &[u8]) {
        self.0[at..at + bytes.len()].copy_from_slice(bytes);
    }
    fn text(&mut self, at: usize, len: usize, text: &str) {
        // NUL-terminated within the field.
        let bytes = text.as_bytes();
        let n = bytes.len().min(len - 1);
        self.put(at, &bytes[..n]);
    }
}

/// Encodes `msg`.
pub fn encode(msg: &Message) -> Vec<u8> {
    let h = &msg.header;
    let mut w = Writer(vec![0u8; HEADER_LEN]);
    w.put(0, b"RCmb");
    w.put(8, &1u16.to_be_bytes());
    w.put(10, &h.port.to_be_bytes());
    w.put(12, &h.kind.to_be_bytes());
    w.put(16, &h.current_epoch.to_be_bytes());
    w.put(24, &h.config_epoch.to_be_bytes());
    w.put(32, &h.offset.to_be_bytes());
    w.put(40, h.sender.as_bytes());
    w.put(80, &h.slots[..]);
    if let Some(master) = &h.master {
        w.put(2128, master.as_bytes());
    }
    w.text(2168, IP_LEN, &h.ip);
    w.put(2246, &h.pport.to_be_bytes());
    w.put(2248, &h.cport.to_be_bytes());
    w.put(2250, &h.flags.to_be_bytes());
    w.0[2252] = u8::from(!h.state_ok);
    let mut mflags = h.mflags;
    match &msg.body {
        Body::Ping { gossip, hostname } => {
            w.put(14, &(gossip.len() as u16).to_be_bytes());
            for g in gossip {
                let at = w.0.len();
                w.0.resize(at + GOSSIP_LEN, 0);
                w.put(at, g.id.as_bytes());
                w.put(at + 40, &g.ping_sent.to_be_bytes());
                w.put(at + 44, &g.pong_received.to_be_bytes());
                w.text(at + 48, IP_LEN, &g.ip);
                w.put(at + 94, &g.port.to_be_bytes());
                w.put(at + 96, &g.cport.to_be_bytes());
                w.put(at + 98, &g.flags.to_be_bytes());
                w.put(at + 100, &g.pport.to_be_bytes());
            }
            if let Some(hostname) = hostname.as_deref().filter(|h| !h.is_empty()) {
                mflags[0] |= FLAG0_EXT_DATA;
                w.put(2214, &1u16.to_be_bytes());
                let padded = (hostname.len() + 1).div_ceil(8) * 8;
                let at = w.0.len();
                w.0.resize(at + 8 + padded, 0);
                w.put(at, &((8 + padded) as u32).to_be_bytes());
                w.put(at + 4, &EXT_HOSTNAME.to_be_bytes());
                w.put(at + 8, hostname.as_bytes());
            }
        }
        Body::Fail(id) => w.0.extend_from_slice(id.as_bytes()),
        Body::Publish { channel, message } => {
            w.0.extend_from_slice(&(channel.len() as u32).to_be_bytes());
            w.0.extend_from_slice(&(message.len() as u32).to_be_bytes());
            w.0.extend_from_slice(channel);
            w.0.extend_from_slice(message);
        }
        Body::Update {
            config_epoch,
            id,
            slots,
        } => {
            w.0.extend_from_slice(&config_epoch.to_be_bytes());
            w.0.extend_from_slice(id.as_bytes());
            w.0.extend_from_slice(&slots[..]);
        }
        Body::Empty => {}
    }
    w.put(2253, &mflags);
    let total = w.0.len() as u32;
    w.put(4, &total.to_be_bytes());
    w.0
}

#[cfg(test)]
mod tests {
    use super::super::super::node::Flags;
    use super::*;

    fn header(kind: u16) -> Header {
        let mut slots = Box::new([0u8; SLOTS / 8]);
        slots[0] = 0b101;
        slots[2047] = 0x80;
        Header {
            kind,
            port: 30001,
            current_epoch: 7,
            config_epoch: 3,
            offset: 12345,
            sender: NodeId::random(),
            slots,
            master: None,
            ip: "127.0.0.1".into(),
            pport: 0,
            cport: 40001,
            flags: Flags::MASTER,
            state_ok: true,
            mflags: [0; 3],
        }
    }

    #[test]
    fn the_header_has_redis_s_layout() {
        let bytes = encode(&Message {
            header: header(PING),
            body: Body::Ping {
                gossip: vec![],
                hostname: None,
            },
        });
        assert_eq!(bytes.len(), HEADER_LEN);
        assert_eq!(&bytes[..4], b"RCmb");
        assert_eq!(&bytes[4..8], &(HEADER_LEN as u32).to_be_bytes());
        assert_eq!(&bytes[10..12], &30001u16.to_be_bytes());
        assert_eq!(bytes[80], 0b101);
        assert_eq!(bytes[80 + 2047], 0x80);
        assert_eq!(&bytes[2168..2177], b"127.0.0.1");
        assert_eq!(&bytes[2248..2250], &40001u16.to_be_bytes());
        assert_eq!(
            announced_len(&bytes[..8].try_into().unwrap()),
            Ok(HEADER_LEN)
        );
    }

    #[test]
    fn every_body_reads_back_as_written() {
        let gossip = Gossip {
            id: NodeId::random(),
            ping_sent: 1,
            pong_received: 2,
            ip: "10.0.0.1".into(),
            port: 6379,
            cport: 16379,
            flags: Flags::REPLICA,
            pport: 0,
        };
        let mut replica = header(PONG);
        replica.master = Some(NodeId::random());
        let bodies = [
            (
                header(MEET),
                Body::Ping {
                    gossip: vec![gossip.clone(), gossip],
                    hostname: Some("host-1.example".into()),
                },
            ),
            (
                replica,
                Body::Ping {
                    gossip: vec![],
                    hostname: None,
                },
            ),
            (header(FAIL), Body::Fail(NodeId::random())),
            (
                header(PUBLISH),
                Body::Publish {
                    channel: b"ch".to_vec(),
                    message: b"hello".to_vec(),
                },
            ),
            (
                header(UPDATE),
                Body::Update {
                    config_epoch: 9,
                    id: NodeId::random(),
                    slots: Box::new([0xff; SLOTS / 8]),
                },
            ),
            (header(FAILOVER_AUTH_ACK), Body::Empty),
        ];
        for (mut header, body) in bodies {
            let message = Message {
                header: header.clone(),
                body: body.clone(),
            };
            let decoded = decode(&encode(&message)).unwrap();
            if let Body::Ping {
                hostname: Some(_), ..
            } = &body
            {
                header.mflags[0] |= FLAG0_EXT_DATA;
            }
            assert_eq!(decoded, Message { header, body });
        }
    }

    #[test]
    fn bad_messages_are_refused_without_panicking() {
        let good = encode(&Message {
            header: header(FAIL),
            body: Body::Fail(NodeId::random()),
        });
        assert!(decode(&good[..good.len() - 1]).is_err());
        assert_eq!(decode(b"RCmx"), Err(DecodeError::Signature));
        let mut ping = encode(&Message {
            header: header(PING),
            body: Body::Ping {
                gossip: vec![],
                hostname: None,
            },
        });
        ping[14..16].copy_from_slice(&500u16.to_be_bytes());
        assert!(decode(&ping).is_err());
        let mut publish = encode(&Message {
            header: header(PUBLISH),
            body: Body::Publish {
                channel: b"c".to_vec(),
                message: b"m".to_vec(),
            },
        });
        publish[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode(&publish).is_err());
        let mut ext = encode(&Message {
            header: header(PING),
            body: Body::Ping {
                gossip: vec![],
                hostname: Some("h".into()),
            },
        });
        ext[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&3u32.to_be_bytes());
        assert!(decode(&ext).is_err());
        for cut in 0..good.len() {
            let _ = decode(&good[..cut]);
        }
    }

    proptest::proptest! {
        /// Any bytes after a valid signature and version decode or are refused; none
        /// panics (the bus port is reachable by anyone who can reach the server).
        #[test]
        fn arbitrary_bytes_never_panic(
            kind in 0u16..12,
            count in proptest::prelude::any::<u16>(),
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
            extensions in 0u16..4,
            ext_flag in proptest::prelude::any::<bool>(),
        ) {
            let mut bytes = encode(&Message {
                header: header(kind),
                body: Body::Empty,
            });
            bytes[14..16].copy_from_slice(&count.to_be_bytes());
            bytes[2214..2216].copy_from_slice(&extensions.to_be_bytes());
            if ext_flag {
                bytes[2253] |= FLAG0_EXT_DATA;
            }
            bytes.extend_from_slice(&body);
            let total = bytes.len() as u32;
            bytes[4..8].copy_from_slice(&total.to_be_bytes());
            let _ = decode(&bytes);
        }
    }
}
