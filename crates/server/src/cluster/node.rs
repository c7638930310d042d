//! One node of the cluster as this node knows it: its 40-hex name, addresses, role
//! flags, epochs and the times of the last PING and PONG (Redis's `clusterNode`).

use std::fmt;

/// A node's name: 40 lowercase hex characters, random when the node is created.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId([u8; 40]);

impl NodeId {
    /// The all-zero name (the bus's "no node").
    pub const ZERO: NodeId = NodeId([0; 40]);

    /// A fresh random name.
    pub fn random() -> NodeId {
        let mut id = [0u8; 40];
        for byte in &mut id {
            *byte = b"0123456789abcdef"[fastrand::usize(..16)];
        }
        NodeId(id)
    }

    /// The name in `bytes`, if it is exactly 40 characters long. Redis looks names up
    /// as given (any 40 bytes); only names it creates are hex.
    pub fn parse(bytes: &[u8]) -> Option<NodeId> {
        <[u8; 40]>::try_from(bytes).ok().map(NodeId)
    }

    /// The name made of these 40 bytes.
    pub fn from_bytes(bytes: [u8; 40]) -> NodeId {
        NodeId(bytes)
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8; 40] {
        &self.0
    }

    /// The name as text (lossy for names that are not UTF-8).
    pub fn as_str(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({self})")
    }
}

/// A node's flags, with the bit values of Redis's bus (`CLUSTER_NODE_*`), which carries
/// them in every header and gossip entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags(pub u16);

impl Flags {
    /// Serves slots (or may).
    pub const MASTER: u16 = 1;
    /// Replicates a master.
    pub const REPLICA: u16 = 2;
    /// Not answering for longer than `cluster-node-timeout`, in this node's view.
    pub const PFAIL: u16 = 4;
    /// Failed, by agreement of a majority of masters.
    pub const FAIL: u16 = 8;
    /// This node.
    pub const MYSELF: u16 = 16;
    /// Met, but its name is not known yet (its first PONG tells).
    pub const HANDSHAKE: u16 = 32;
    /// Its address is not known.
    pub const NOADDR: u16 = 64;
    /// Send it MEET rather than PING (CLUSTER MEET).
    pub const MEET: u16 = 128;
    /// A master that lost its last replica gets one (replica migration).
    pub const MIGRATE_TO: u16 = 256;
    /// A replica that never fails over its master.
    pub const NOFAILOVER: u16 = 512;

    /// Whether every bit of `bits` is set.
    pub fn has(self, bits: u16) -> bool {
        self.0 & bits == bits
    }

    /// Whether any bit of `bits` is set.
    pub fn any(self, bits: u16) -> bool {
        self.0 & bits != 0
    }

    /// Sets `bits`.
    pub fn set(&mut self, bits: u16) {
        self.0 |= bits;
    }

    /// Clears `bits`.
    pub fn clear(&mut self, bits: u16) {
        self.0 &= !bits;
    }

    /// The flags as CLUSTER NODES writes them (`myself,master`, or `noflags`).
    pub fn describe(self) -> String {
        const NAMES: [(u16, &str); 8] = [
            (Flags::MYSELF, "myself"),
            (Flags::MASTER, "master"),
            (Flags::REPLICA, "slave"),
            (Flags::PFAIL, "fail?"),
            (Flags::FAIL, "fail"),
            (Flags::HANDSHAKE, "handshake"),
            (Flags::NOADDR, "noaddr"),
            (Flags::NOFAILOVER, "nofailover"),
        ];
        let names: Vec<&str> = NAMES
            .iter()
            .filter(|(bit, _)| self.any(*bit))
            .map(|(_, name)| *name)
            .collect();
        if names.is_empty() {
            "noflags".to_string()
        } else {
            names.join(",")
        }
    }

    /// Parses CLUSTER NODES' flag list (nodes.conf); unknown words are ignored.
    pub fn parse(text: &str) -> Flags {
        let mut flags = Flags::default();
        for word in text.split(',') {
            flags.set(match word {
                "myself" => Flags::MYSELF,
                "master" => Flags::MASTER,
                "slave" => Flags::REPLICA,
                "fail?" => Flags::PFAIL,
                "fail" => Flags::FAIL,
                "handshake" => Flags::HANDSHAKE,
                "noaddr" => Flags::NOADDR,
                "nofailover" => Flags::NOFAILOVER,
                _ => 0,
            });
        }
        flags
    }
}

/// A node of the cluster.
#[derive(Clone, Debug)]
pub struct Node {
    /// Its name.
    pub id: NodeId,
    /// The address clients reach it at (empty until known).
    pub ip: String,
    /// Its announced hostname, if any.
    pub hostname: String,
    /// Its client port.
    pub port: u16,
    /// Its plaintext client port when `port` is TLS (0 otherwise).
    pub pport: u16,
    /// Its bus port.
    pub cport: u16,
    /// Role and state.
    pub flags: Flags,
    /// The master it replicates (replicas only).
    pub master: Option<NodeId>,
    /// The configuration epoch it claims its slots with.
    pub config_epoch: u64,
    /// Milliseconds since the epoch of the PING in flight to it (0: none).
    pub ping_sent: u64,
    /// Milliseconds since the epoch of its last PONG.
    pub pong_received: u64,
    /// Milliseconds since the epoch of anything last heard from it.
    pub data_received: u64,
    /// When it was marked FAIL.
    pub fail_time: u64,
    /// Its replication offset, from its last message.
    pub repl_offset: u64,
    /// Whether this node holds an outbound link to it that completed a handshake.
    pub linked: bool,
    /// When this node last voted for one of its replicas (a master's).
    pub voted_time: u64,
    /// When it was created here (handshakes time out).
    pub created: u64,
    /// Masters that reported it failing, with the time of their last report.
    pub fail_reports: Vec<(NodeId, u64)>,
    /// Since when it has been a master with slots and no working replica (0: it is
    /// not), for replica migration.
    pub orphaned_since: u64,
}

impl Node {
    /// The port a client reaches this node on: its plain port for a plain client of a
    /// `tls-cluster` (`plain_client`) where it announced one, its port otherwise (Redis's
    /// `use_pport`).
    pub fn client_port(&self, plain_client: bool) -> u16 {
        if plain_client && self.pport != 0 {
            self.pport
        } else {
            self.port
        }
    }

    /// A node known only by name and flags, with no address yet.
    pub const fn unknown(id: NodeId, flags: u16) -> Node {
        Node {
            id,
            ip: String::new(),
            hostname: String::new(),
            port: 0,
            pport: 0,
            cport: 0,
            flags: Flags(flags),
            master: None,
            config_epoch: 0,
            ping_sent: 0,
            pong_received: 0,
            data_received: 0,
            fail_time: 0,
            repl_offset: 0,
            linked: false,
            voted_time: 0,
            created: 0,
            fail_reports: Vec::new(),
            orphaned_since: 0,
        }
    }

    /// A node known only by name and address.
    pub fn new(id: NodeId, ip: &str, port: u16, cport: u16, flags: u16, now: u64) -> Node {
        Node {
            ip: ip.to_string(),
            port,
            cport,
            created: now,
            ..Node::unknown(id, flags)
        }
    }

    /// A master (not a replica).
    pub fn is_master(&self) -> bool {
        self.flags.any(Flags::MASTER)
    }

    /// A replica.
    pub fn is_replica(&self) -> bool {
        self.flags.any(Flags::REPLICA)
    }

    /// Marked FAIL.
    pub fn failed(&self) -> bool {
        self.flags.any(Flags::FAIL)
    }

    /// Marked PFAIL.
    pub fn timed_out(&self) -> bool {
        self.flags.any(Flags::PFAIL)
    }

    /// Still in the handshake.
    pub fn in_handshake(&self) -> bool {
        self.flags.any(Flags::HANDSHAKE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_back_as_written() {
        let flags = Flags(Flags::MYSELF | Flags::MASTER);
        assert_eq!(flags.describe(), "myself,master");
        assert_eq!(Flags::parse(&flags.describe()), flags);
        assert_eq!(Flags::default().describe(), "noflags");
        assert_eq!(Flags::parse("noflags"), Flags::default());
        assert_eq!(Flags::parse("slave,fail?").0, Flags::REPLICA | Flags::PFAIL);
    }

    #[test]
    fn random_names_are_40_hex_characters() {
        let id = NodeId::random();
        assert!(id.as_bytes().iter().all(u8::is_ascii_hexdigit));
        assert_eq!(NodeId::parse(id.as_bytes()), Some(id));
        assert_eq!(NodeId::parse(b"short"), None);
    }
}
