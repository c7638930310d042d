//! What the server knows about one connection: its id, selected database, protocol,
//! name, authentication, and the flags commands set for the connection loop.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use redline_resp::Protocol;

use super::client_memory::ClientFigures;
use super::mailbox::Mailbox;
use super::registry::Activity;
use crate::acl::UserCell;
use crate::blocking::Waiter;
use crate::store::incremental_map::IncrementalMap;
use crate::store::Hasher;

/// A client's channels, patterns or shard channels: removal in constant time (a client
/// may unsubscribe a million channels) and an index that grows a few entries at a time,
/// as Redis's per-client dicts. UNSUBSCRIBE without arguments goes in the set's order,
/// as Redis's goes in its dict's: no order is promised.
pub type Subscriptions = IncrementalMap<Bytes, (), Hasher>;

/// A WAIT in progress.
#[derive(Debug, Clone, Copy)]
pub struct WaitReplicas {
    /// The offset replicas must acknowledge.
    pub offset: u64,
    /// How many must.
    pub needed: usize,
    /// When to answer anyway (`None`: never).
    pub deadline: Option<tokio::time::Instant>,
    /// CLIENT REPLY OFF or SKIP when it began: the answer is dropped.
    pub silent: bool,
}

/// Per-connection state, owned by the connection task (no locking).
#[derive(Debug)]
pub struct ClientState {
    /// Unique, increasing id (CLIENT ID).
    pub id: u64,
    /// Selected database.
    pub db: usize,
    /// Cluster mode: ASKING was sent; the next command may use an importing slot.
    pub asking: bool,
    /// Cluster mode: READONLY, reads of our master's slots are served here.
    pub readonly: bool,
    /// Connected over TLS: with `tls-cluster`, cluster replies name nodes' TLS ports to
    /// it and their plain ports to other clients, as Redis.
    pub tls: bool,
    /// Cluster mode: the slot of the running command's keys (a script's calls must stay
    /// in it unless it allows cross-slot keys).
    pub cluster_slot: Option<usize>,
    /// RESP2 until HELLO 3.
    pub protocol: Protocol,
    /// CLIENT SETNAME / HELLO SETNAME.
    pub name: Option<Vec<u8>>,
    /// True when no password is required or AUTH succeeded.
    pub authenticated: bool,
    /// The user AUTH chose; `None` is the default user.
    pub user: Option<Arc<UserCell>>,
    /// CLIENT SETINFO LIB-NAME.
    pub lib_name: Option<Vec<u8>>,
    /// CLIENT SETINFO LIB-VER.
    pub lib_ver: Option<Vec<u8>>,
    /// The peer's address.
    pub peer: super::peer::Peer,
    /// When the connection was accepted.
    pub created: Instant,
    /// Close the connection once the replies so far are written (QUIT, protocol errors).
    pub close_after_reply: bool,
    /// MONITOR: every command the server runs arrives in the mailbox.
    pub monitor: bool,
    /// What this command (or transaction, or script) puts in the replication stream,
    /// with the database of each, appended when the top-level command ends.
    pub propagate: Vec<crate::repl::journal::Propagated>,
    /// Where this client's changes go (`redis.set_repl` inside a script; both else).
    pub repl_targets: crate::repl::journal::Targets,
    /// A command's own stream form, set by handlers that know it better than the
    /// generic rules (a blocking pop served at once is propagated as the pop).
    pub propagate_as: Option<Vec<Vec<Bytes>>>,
    /// The last top-level command (CLIENT LIST `cmd=`).
    pub last_cmd: &'static str,
    /// Bytes in the query buffer when the current command was read (`qbuf=`).
    pub qbuf: usize,
    /// When the client last sent something (`idle=`).
    pub last_interaction: Instant,
    /// Where this connection mirrors its [`Activity`] for other clients' CLIENT LIST.
    pub activity_slot: Option<Arc<parking_lot::Mutex<Activity>>>,
    /// The blocked command and when it started, for the slow log once it is served.
    pub blocked_since: Option<(Vec<Bytes>, std::time::Instant)>,
    /// When the previous command of this batch ended: the next one's timing starts
    /// there (one clock read per command instead of two; the gap is its own parsing).
    pub batch_clock: Option<std::time::Instant>,
    /// Whether commands run from a batch read off the socket (`run_commands`), the
    /// only place where the next command follows at once; a master's stream or a
    /// served blocked command do not chain.
    pub in_batch: bool,
    /// Stream offset after this client's last propagated write (WAIT waits for it).
    pub repl_offset: u64,
    /// The port a replica said it listens on (REPLCONF listening-port).
    pub repl_listening_port: u16,
    /// REPLCONF ip-address (a replica's `replica-announce-ip`).
    pub repl_ip_address: Option<crate::repl::journal::ReplicaIp>,
    /// The replica reads an image sent disk-less, `$EOF:<mark>` (REPLCONF capa eof).
    pub repl_capa_eof: bool,
    /// REPLCONF rdb-filter-only: the sync image holds the function libraries only (or,
    /// with an empty filter, nothing), no keys; what `redis-cli --functions-rdb` asks.
    pub rdb_filter: Option<RdbFilter>,
    /// This is the link from our master: it may write to a read-only replica.
    pub is_master: bool,
    /// Our master asked for an ACK (REPLCONF GETACK).
    pub ack_requested: bool,
    /// This connection carries the stream to a replica (after SYNC/PSYNC): CLIENT LIST
    /// flag `S`, CLIENT KILL TYPE replica.
    pub is_replica: bool,
    /// SYNC/PSYNC made this connection a replica link.
    pub replica_start: Option<crate::repl::master::ReplicaStart>,
    /// WAIT is waiting for replicas.
    pub wait: Option<WaitReplicas>,
    /// SHUTDOWN is waiting for the replicas to catch up: told if it is cancelled.
    pub shutdown_wait: Option<tokio::sync::oneshot::Receiver<()>>,
    /// Dataset changes made since the last flush into the server total (Redis's
    /// `server.dirty`), added once per batch like the command count.
    pub changes: u64,
    /// Set by a command that saved the dataset (FLUSHALL with save points): the thread's
    /// change count at that moment. Changes before it are on disk, so the command's
    /// total counts only those after it, as Redis's save resets `server.dirty`.
    pub changes_saved_at: Option<u64>,
    /// FLUSHALL ran inside a script with save points set: the dataset is saved when the
    /// script is over (the image needs the interpreter the script holds).
    pub save_after_command: bool,
    /// Invalidations the evictions before this client's command sent: their recipients
    /// write them before this client's next command is read, as Redis writes every
    /// client's output before it reads again (see [`crate::maxmemory`]).
    pub eviction_invalidations: Vec<crate::tracking::Sent>,
    /// Hard `client-output-buffer-limit` of the normal and pub/sub classes (0: none).
    pub output_hard_limits: [u64; 2],
    /// A reply that alone passed the hard limit was dropped unbuilt: the client closes
    /// after its command (see [`ClientState::reply_passes_hard_limit`]).
    pub output_overflowed: bool,
    /// Commands run since the last flush of the counters to the server's stats.
    pub commands_since_flush: u64,
    /// Per-command and per-error counts since the last flush (INFO commandstats).
    pub cmdstats: crate::cmdstats::Local,
    /// A script is running this command (`redis.call`): commands that behave apart
    /// for scripts (SORT's order, XREAD BLOCK) look here.
    pub in_script: bool,
    /// Commands queued since MULTI; `None` outside a transaction.
    pub multi: Option<Vec<Vec<Bytes>>>,
    /// A command was refused while queueing: EXEC will answer EXECABORT.
    pub multi_failed: bool,
    /// Keys under WATCH.
    pub watched: Vec<WatchedKey>,
    /// What the shards know this client's WATCHes by: a fresh id for each run of
    /// WATCHes (from the first WATCH to EXEC, DISCARD, UNWATCH...), so a release done
    /// late (see `Store::release_watch`) never touches a later one.
    pub watch_id: u64,
    /// Where other connections leave pub/sub messages and served blocking replies.
    pub mailbox: Arc<Mailbox>,
    /// Set by a blocking command that found nothing: the loop waits before going on.
    pub blocked: Option<Blocked>,
    /// Keys the commands since the last check signalled ready for blocked clients
    /// (see `store::ready`).
    pub ready: Vec<crate::store::ready::Signal>,
    /// Databases the commands since the last check replaced (see `store::ready`).
    pub replaced: Vec<crate::store::ready::Replaced>,
    /// SUBSCRIBE channels.
    pub channels: Subscriptions,
    /// PSUBSCRIBE patterns.
    pub patterns: Subscriptions,
    /// SSUBSCRIBE shard channels.
    pub shard_channels: Subscriptions,
    /// CLIENT REPLY state.
    pub reply: ReplyMode,
    /// Where in the output CLIENT REPLY last switched between OFF and ON during the
    /// command being run (EXEC runs a queued one midway through its reply).
    pub reply_switched_at: Option<usize>,
    /// Set by the dispatcher: CLIENT PAUSE holds this command back.
    pub postpone: bool,
    /// The command held back by CLIENT PAUSE, run again once the pause ends.
    pub postponed: Option<Vec<Bytes>>,
    /// Set with `postpone` by the dispatcher: the command waits for the script turn or
    /// for the running script to end (see `crate::scripting::turn`), not for a pause.
    pub script_wait: Option<crate::scripting::ScriptWait>,
    /// Set with `postpone` by the dispatcher: other connections with input to run first
    /// (a PUBLISH's listeners, a replica's master link), each with the input turn to wait
    /// for (see [`crate::net::input_turns`]).
    pub input_wait: Vec<(
        std::sync::Arc<super::input_turns::InputTurns>,
        super::input_turns::Due,
    )>,
    /// The postponed command has waited for that input: it runs now, whatever it does.
    pub input_waited: bool,
    /// The script turn, held from this client's first script of a batch of commands to
    /// the end of the batch.
    pub script_turn: Option<crate::scripting::TurnPermit>,
    /// The batch just ended handed the script turn to a waiting client: this task yields
    /// once before writing its replies (see `Connection::run`).
    pub handed_turn: bool,
    /// SCRIPT DEBUG: the Lua debugger's setting and, during a session, its connection.
    pub debug: crate::scripting::debugger::ClientDebug,
    /// Raised by CLIENT KILL and the like (shared with the client table): run nothing more.
    pub killed: Arc<AtomicBool>,
    /// CLIENT TRACKING is on (the details live in `crate::tracking`).
    pub tracking: bool,
    /// CLIENT CACHING YES/NO applies to the next command (or transaction).
    pub tracking_caching: bool,
    /// BCAST prefixes it tracks (counted in its memory).
    pub tracking_prefixes: usize,
    /// Bytes of the arguments of the commands queued since MULTI (`multi-mem`).
    pub multi_bytes: usize,
    /// Capacity of the query buffer, as the connection last saw it.
    pub qbuf_capacity: usize,
    /// The most of the query buffer the commands used since the connection last
    /// looked whether to resize it (Redis's `querybuf_peak`).
    pub qbuf_peak: usize,
    /// While a tracking client runs a script: the script's own command (EVAL, FCALL),
    /// whose declared keys each read-only command it calls tracks, as in Redis.
    pub tracking_script: Option<Vec<bytes::Bytes>>,
}

/// CLIENT REPLY: whether replies are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyMode {
    /// Normal.
    #[default]
    On,
    /// No replies until CLIENT REPLY ON.
    Off,
    /// CLIENT REPLY SKIP just ran: the next command's reply is dropped.
    SkipArmed,
    /// Dropping this command's reply, then back to `On`.
    Skipping,
}

/// A blocking command waiting for its keys.
#[derive(Debug)]
pub struct Blocked {
    /// The registration.
    pub waiter: Arc<Waiter>,
    /// When it times out; `None` waits forever.
    pub deadline: Option<tokio::time::Instant>,
}

/// One WATCHed key.
#[derive(Debug, Clone)]
pub struct WatchedKey {
    /// Database of the key.
    pub db: usize,
    /// The key. Whether it changed since is kept by its shard, under the client's id.
    pub key: Vec<u8>,
}

impl ClientState {
    /// Whether the reply of the command running now is dropped (CLIENT REPLY OFF, or
    /// the command after SKIP): a blocking command's later answer is dropped too.
    pub fn reply_silenced(&self) -> bool {
        matches!(self.reply, ReplyMode::Off | ReplyMode::Skipping)
    }

    /// The command waits first for `unsettled`, others' input to run before it (see
    /// [`crate::net::input_turns`]), added to `input_wait`; whether there was any.
    pub fn waits_for_inputs(
        &mut self,
        unsettled: impl IntoIterator<
            Item = (
                std::sync::Arc<super::input_turns::InputTurns>,
                super::input_turns::Due,
            ),
        >,
    ) -> bool {
        let before = self.input_wait.len();
        self.input_wait.extend(unsettled);
        self.input_wait.len() > before
    }

    /// State of a freshly accepted connection.
    pub fn new(id: u64, peer: impl Into<super::peer::Peer>, authenticated: bool) -> Self {
        ClientState {
            id,
            db: 0,
            asking: false,
            readonly: false,
            tls: false,
            cluster_slot: None,
            protocol: Protocol::Resp2,
            name: None,
            authenticated,
            user: None,
            lib_name: None,
            lib_ver: None,
            peer: peer.into(),
            created: Instant::now(),
            close_after_reply: false,
            commands_since_flush: 0,
            monitor: false,
            propagate: Vec::new(),
            repl_targets: crate::repl::journal::Targets::ALL,
            propagate_as: None,
            last_cmd: "NULL",
            qbuf: 0,
            last_interaction: Instant::now(),
            activity_slot: None,
            blocked_since: None,
            batch_clock: None,
            in_batch: false,
            repl_offset: 0,
            repl_listening_port: 0,
            repl_ip_address: None,
            repl_capa_eof: false,
            rdb_filter: None,
            is_master: false,
            is_replica: false,
            ack_requested: false,
            replica_start: None,
            wait: None,
            shutdown_wait: None,
            changes: 0,
            changes_saved_at: None,
            save_after_command: false,
            eviction_invalidations: Vec::new(),
            output_hard_limits: [0; 2],
            output_overflowed: false,
            cmdstats: crate::cmdstats::Local::default(),
            in_script: false,
            multi: None,
            multi_failed: false,
            watched: Vec::new(),
            watch_id: 0,
            mailbox: Arc::default(),
            blocked: None,
            ready: Vec::new(),
            replaced: Vec::new(),
            channels: Subscriptions::default(),
            patterns: Subscriptions::default(),
            shard_channels: Subscriptions::default(),
            reply: ReplyMode::On,
            reply_switched_at: None,
            postpone: false,
            postponed: None,
            script_wait: None,
            input_wait: Vec::new(),
            input_waited: false,
            script_turn: None,
            handed_turn: false,
            debug: Default::default(),
            killed: Arc::default(),
            tracking: false,
            tracking_caching: false,
            tracking_prefixes: 0,
            multi_bytes: 0,
            qbuf_capacity: 0,
            qbuf_peak: 0,
            tracking_script: None,
        }
    }

    /// Channels plus patterns (the count SUBSCRIBE and PSUBSCRIBE report).
    pub fn subscription_count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// Whether the client is in pub/sub mode (any subscription of any kind).
    pub fn in_pubsub(&self) -> bool {
        self.subscription_count() + self.shard_channels.len() > 0
    }

    /// Whether a reply of `len` bytes after the `buffered` ones would pass this client's
    /// hard output limit, or an earlier reply already did (even under the limit of the
    /// class the client has moved to since, as after an UNSUBSCRIBE of everything); if
    /// so the client is marked to be closed after its command, and the reply need not
    /// be built, as Redis adds nothing to a client it is closing.
    pub fn reply_passes_hard_limit(&mut self, buffered: usize, len: usize) -> bool {
        if !self.output_overflowed {
            let hard = self.output_hard_limits[usize::from(self.in_pubsub())];
            self.output_overflowed = hard != 0 && buffered.saturating_add(len) as u64 > hard;
        }
        self.output_overflowed
    }

    /// Redis's CLIENT LIST flag letters for this client (`N` for none).
    pub fn flags(&self) -> String {
        let mut flags = String::new();
        if self.monitor {
            flags.push('O');
        } else if self.is_replica {
            flags.push('S');
        }
        if self.is_master {
            flags.push('M');
        }
        if self.in_pubsub() {
            flags.push('P');
        }
        if self.multi.is_some() {
            flags.push('x');
        }
        if self.blocked.is_some() || self.wait.is_some() {
            flags.push('b');
        }
        if self.tracking {
            flags.push('t');
        }
        if self.close_after_reply {
            flags.push('c');
        }
        if self.readonly {
            flags.push('r');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        flags
    }

    /// What CLIENT LIST shows of this client, with `qbuf` bytes unread and its memory.
    pub fn activity(&self, qbuf: usize, memory: ClientFigures) -> Activity {
        let flags = self.flags();
        Activity {
            last_cmd: self.last_cmd,
            flags,
            subscriptions: (
                self.channels.len(),
                self.patterns.len(),
                self.shard_channels.len(),
            ),
            multi: self.multi.as_ref().map_or(-1, |q| q.len() as i64),
            qbuf,
            memory,
            resp: if self.protocol == Protocol::Resp3 {
                3
            } else {
                2
            },
            last_interaction: self.last_interaction,
        }
    }

    /// Mirrors [`Self::activity`] for other clients to see.
    pub fn publish_activity(&self, qbuf: usize, memory: ClientFigures) {
        if let Some(slot) = &self.activity_slot {
            *slot.lock() = self.activity(qbuf, memory);
        }
    }
}

/// What a filtered sync image keeps (REPLCONF rdb-filter-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdbFilter {
    /// Neither keys nor functions: an image with the header and aux fields only.
    Nothing,
    /// The function libraries, no keys.
    Functions,
}
