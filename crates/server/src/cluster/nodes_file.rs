//! `cluster-config-file` (nodes.conf): the cluster as this node last saw it, in Redis's
//! format (CLUSTER NODES lines, then `vars currentEpoch N lastVoteEpoch M`), so a
//! restarted node keeps its name, epochs and slots. The file stays open and locked while
//! the server runs, as Redis locks it, so two nodes cannot share one.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;

use super::node::{Flags, Node, NodeId};
use super::state::{ClusterState, SLOTS};

/// Redis's words for a file it cannot read.
const CORRUPTED: &str = "Unrecoverable error: corrupted cluster config file";

/// The open, locked configuration file.
#[derive(Debug)]
pub struct NodesFile {
    file: File,
    path: String,
}

impl NodesFile {
    /// Opens (creating it if needed) and locks `path`. Returns the file and its text
    /// (empty for a new file).
    pub fn open(path: &str) -> Result<(NodesFile, String), String> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("Can't open {path} in order to acquire a lock: {e}"))?;
        if let Err(e) = lock(&file) {
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(format!("Sorry, the cluster configuration file {path} is already used by a different Redis Cluster node. Please make sure that different nodes use different cluster configuration files."));
            }
            return Err(format!("Impossible to lock {path}: {e}"));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("Loading the cluster node config from {path}: {e}"))?;
        Ok((
            NodesFile {
                file,
                path: path.to_string(),
            },
            text,
        ))
    }

    /// Writes `state` over the file; with `sync`, waits until it is on disk (Redis
    /// syncs after changes of epochs, of slots learned from the bus, and failovers, not
    /// after each CLUSTER SETSLOT of a resharding).
    pub fn save(&mut self, state: &ClusterState, sync: bool) -> std::io::Result<()> {
        let text = render(state);
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(text.as_bytes())?;
        self.file.set_len(text.len() as u64)?;
        if sync {
            self.file.sync_data()?;
        }
        Ok(())
    }

    /// The file's path.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// Takes an exclusive advisory lock on `file`, without waiting.
#[allow(unsafe_code)]
fn lock(file: &File) -> std::io::Result<()> {
    // SAFETY: `flock` on a descriptor `file` keeps open for the call; it takes an
    // advisory lock and touches no memory.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if locked == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The file's text for `state`: every node but those still in a handshake.
pub fn render(state: &ClusterState) -> String {
    let mut text = state.describe_all(Flags::HANDSHAKE, false);
    text.push_str(&format!(
        "vars currentEpoch {} lastVoteEpoch {}\n",
        state.current_epoch, state.last_vote_epoch
    ));
    text
}

/// Reads the state a file describes (`now` stands for the ping and pong times it
/// recorded, as Redis does).
pub fn parse(text: &str, now: u64) -> Result<ClusterState, String> {
    let corrupted = |line: &str| format!("{CORRUPTED} (at line: {line})");
    let mut nodes: Vec<Node> = Vec::new();
    let mut slots: Vec<(usize, NodeId)> = Vec::new();
    let mut migrating: Vec<(usize, NodeId)> = Vec::new();
    let mut importing: Vec<(usize, NodeId)> = Vec::new();
    let mut myself = None;
    let (mut current_epoch, mut last_vote_epoch) = (0, 0);
    let id_of = |word: &str| NodeId::parse(word.as_bytes());
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        if words[0] == "vars" {
            for pair in words[1..].chunks(2) {
                let [name, value] = pair else {
                    return Err(corrupted(line));
                };
                let value: u64 = value.parse().map_err(|_| corrupted(line))?;
                match *name {
                    "currentEpoch" => current_epoch = value,
                    "lastVoteEpoch" => last_vote_epoch = value,
                    _ => tracing::warn!("Skipping unknown cluster config variable '{name}'"),
                }
            }
            continue;
        }
        if words.len() < 8 {
            return Err(corrupted(line));
        }
        let id = id_of(words[0]).ok_or_else(|| corrupted(line))?;
        let (ip, port, cport, hostname) = parse_address(words[1]).ok_or_else(|| corrupted(line))?;
        let flags = Flags::parse(words[2]);
        let mut node = Node::new(id, &ip, port, cport, flags.0, now);
        node.hostname = hostname;
        if words[3] != "-" {
            node.master = Some(id_of(words[3]).ok_or_else(|| corrupted(line))?);
        }
        let number = |w: &str| w.parse::<u64>().map_err(|_| corrupted(line));
        if number(words[4])? != 0 {
            node.ping_sent = now;
        }
        if number(words[5])? != 0 {
            node.pong_received = now;
        }
        node.config_epoch = number(words[6])?;
        if flags.any(Flags::MYSELF) {
            myself = Some(id);
        }
        for word in &words[8..] {
            if let Some(inner) = word.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
                let (slot, other, list) = if let Some((slot, to)) = inner.split_once("->-") {
                    (slot, to, &mut migrating)
                } else if let Some((slot, from)) = inner.split_once("-<-") {
                    (slot, from, &mut importing)
                } else {
                    return Err(corrupted(line));
                };
                let slot = parse_slot(slot).ok_or_else(|| corrupted(line))?;
                list.push((slot, id_of(other).ok_or_else(|| corrupted(line))?));
                continue;
            }
            let (start, end) = match word.split_once('-') {
                Some((start, end)) => (parse_slot(start), parse_slot(end)),
                None => (parse_slot(word), parse_slot(word)),
            };
            let (Some(start), Some(end)) = (start, end) else {
                return Err(corrupted(line));
            };
            slots.extend((start..=end).map(|slot| (slot, id)));
        }
        nodes.push(node);
    }
    let myself = myself.ok_or_else(|| {
        format!("{CORRUPTED}: the file names no node of its own (no 'myself' flag)")
    })?;
    let mine = nodes
        .iter()
        .find(|n| n.id == myself)
        .cloned()
        .ok_or_else(|| CORRUPTED.to_string())?;
    let mut state = ClusterState::new(mine, now);
    for node in nodes {
        state.nodes.insert(node.id, node);
    }
    // A master or migration peer named without a line of its own is still a node.
    let named: Vec<NodeId> = state
        .nodes
        .values()
        .filter_map(|n| n.master)
        .chain(migrating.iter().chain(&importing).map(|(_, id)| *id))
        .collect();
    for id in named {
        state
            .nodes
            .entry(id)
            .or_insert_with(|| Node::new(id, "", 0, 0, 0, now));
    }
    let masters: Vec<NodeId> = state.nodes.values().filter_map(|n| n.master).collect();
    for master in masters {
        state.mark_has_had_replicas(&master);
    }
    for (slot, owner) in slots {
        state.add_slot(slot, owner);
    }
    for (slot, to) in migrating {
        state.migrating[slot] = Some(to);
    }
    for (slot, from) in importing {
        state.importing[slot] = Some(from);
    }
    let max_epoch = state
        .nodes
        .values()
        .map(|n| n.config_epoch)
        .max()
        .unwrap_or(0);
    state.current_epoch = current_epoch.max(max_epoch);
    state.last_vote_epoch = last_vote_epoch;
    Ok(state)
}

fn parse_slot(text: &str) -> Option<usize> {
    text.parse::<usize>().ok().filter(|&s| s < SLOTS)
}

/// `ip:port@cport[,hostname]`, or the older `ip:port` (bus port = port + 10000).
fn parse_address(text: &str) -> Option<(String, u16, u16, String)> {
    let (address, hostname) = match text.split_once(',') {
        Some((a, h)) => (a, h.to_string()),
        None => (text, String::new()),
    };
    let (address, cport) = match address.split_once('@') {
        Some((a, c)) => (a, Some(c.parse::<u16>().ok()?)),
        None => (address, None),
    };
    let (ip, port) = address.rsplit_once(':')?;
    let port = port.parse::<u16>().ok()?;
    let cport = cport.unwrap_or_else(|| port.wrapping_add(10000));
    Some((ip.to_string(), port, cport, hostname))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_back_as_written() {
        let me = Node::new(
            NodeId::random(),
            "127.0.0.1",
            30001,
            40001,
            Flags::MYSELF | Flags::MASTER,
            0,
        );
        let mut state = ClusterState::new(me, 0);
        let other = NodeId::random();
        let mut peer = Node::new(other, "127.0.0.1", 30002, 40002, Flags::REPLICA, 0);
        peer.master = Some(state.myself);
        peer.hostname = "peer.example".into();
        state.nodes.insert(other, peer);
        let myself = state.myself;
        for slot in 0..100 {
            state.add_slot(slot, myself);
        }
        state.migrating[7] = Some(other);
        state.me_mut().config_epoch = 4;
        state.current_epoch = 5;
        state.last_vote_epoch = 2;
        let text = render(&state);
        let back = parse(&text, 0).unwrap();
        assert_eq!(render(&back), text);
        assert_eq!(back.myself, myself);
        assert_eq!(back.nodes[&other].hostname, "peer.example");
        assert_eq!(back.migrating[7], Some(other));
    }

    #[test]
    fn broken_files_are_refused() {
        for text in [
            "garbage\n",
            "0123456789012345678901234567890123456789 1.2.3.4:1@2 master - 0 0 0 connected\n",
            "0123456789012345678901234567890123456789 nonsense myself,master - 0 0 0 connected\n",
            "0123456789012345678901234567890123456789 :1@2 myself,master - 0 0 0 connected 99999\n",
            "0123456789012345678901234567890123456789 :1@2 myself,master - x 0 0 connected\n",
            "vars currentEpoch\n",
        ] {
            assert!(parse(text, 0).is_err(), "{text}");
        }
        let old = parse(
            "0123456789012345678901234567890123456789 127.0.0.1:7000 myself,master - 0 0 1 connected 0-10\nvars currentEpoch 3 lastVoteEpoch 0\n",
            0,
        )
        .unwrap();
        assert_eq!(old.me().cport, 17000);
        assert_eq!(old.current_epoch, 3);
        assert_eq!(old.slot_count(&old.myself), 11);
    }
}
