//! State every connection task shares: the keyspace, the live configuration, the client
//! table, counters and the shutdown signal. Hot-path fields are plain or atomic; the
//! configuration is behind a lock that commands only take on CONFIG and at connect.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use parking_lot::RwLock;
use tokio::sync::watch;

use crate::acl::Acl;
use crate::blocking::Blocking;
use crate::config::Config;
use crate::net::registry::Clients;
use crate::pause::Pause;
use crate::pubsub::PubSub;
use crate::store::Store;
use crate::tracking::Tracking;

/// Server-wide counters for INFO.
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections accepted.
    pub connections_received: AtomicU64,
    /// Connections refused (maxclients).
    pub rejected_connections: AtomicU64,
    /// Commands run; connections add theirs once per batch, not per command.
    pub commands_processed: AtomicU64,
    /// Bytes read from and written to clients (replica links excluded), added per batch.
    pub net_input_bytes: AtomicU64,
    /// See `net_input_bytes`.
    pub net_output_bytes: AtomicU64,
    /// Bytes of replica links (ACKs in, the stream out) and of the link to our master.
    pub net_repl_input_bytes: AtomicU64,
    /// See `net_repl_input_bytes`.
    pub net_repl_output_bytes: AtomicU64,
    /// Read calls on client and replication connections (INFO `total_reads_processed`).
    pub reads_processed: AtomicU64,
    /// Write calls on them (INFO `total_writes_processed`).
    pub writes_processed: AtomicU64,
    /// Key lookups of read commands that found their key (see `store::lookups`).
    pub keyspace_hits: AtomicU64,
    /// ... and that did not.
    pub keyspace_misses: AtomicU64,
    /// Errors our master's commands met here (a diverged replica).
    pub unexpected_error_replies: AtomicU64,
    /// Background cuts begun (BGSAVE, AOF rewrites, full syncs' images): INFO's
    /// `total_forks`, as each is where Redis forks.
    pub forks: AtomicU64,
    /// Microseconds the last cut held the dataset to begin (INFO `latest_fork_usec`):
    /// the stall a fork is in Redis.
    pub latest_fork_usec: AtomicU64,
    /// `instantaneous_*` of INFO: rates sampled by the cron.
    pub instant: crate::instant::Instant,
}

impl Stats {
    /// Adds a connection's read and write calls to the totals.
    pub fn add_calls(&self, traffic: crate::net::counted::Traffic) {
        if traffic.reads > 0 {
            self.reads_processed
                .fetch_add(traffic.reads, Ordering::Relaxed);
        }
        if traffic.writes > 0 {
            self.writes_processed
                .fetch_add(traffic.writes, Ordering::Relaxed);
        }
    }
}

/// Shared server state.
#[derive(Debug)]
pub struct Shared {
    /// The keyspace.
    pub store: Arc<Store>,
    /// The configuration as it is now (CONFIG SET changes it).
    pub config: RwLock<Config>,
    /// The parameters every command checks, copied out of `config` when it changes.
    pub hot: crate::config::HotParams,
    /// Bumped on every CONFIG SET, so connections refresh their cached limits cheaply.
    pub config_generation: AtomicU64,
    /// `hz`, read by the expiry thread each cycle.
    pub hz: Arc<AtomicU32>,
    /// Commands the config file renamed, fixed at start (every command is looked up through it).
    pub renamed: crate::config::RenamedCommands,
    /// Users and their permissions.
    pub acl: Acl,
    /// Connected clients.
    pub clients: Clients,
    /// Clients blocked on keys.
    pub blocking: Blocking,
    /// Pub/sub subscriptions.
    pub pubsub: PubSub,
    /// The connections that WATCH keys, which a write waits for (see
    /// [`crate::net::input_turns`]).
    pub watching: crate::net::input_turns::Watching,
    /// CLIENT PAUSE.
    pub pause: Pause,
    /// DEBUG SLEEP: the whole server stopped for a while.
    pub freeze: crate::freeze::Freeze,
    /// A shutdown waiting for the replicas to catch up.
    pub graceful: crate::persist::graceful::Graceful,
    /// Lua scripts and function libraries.
    pub scripting: crate::scripting::Scripting,
    /// CLIENT TRACKING: who caches which keys.
    pub tracking: Tracking,
    /// Counters.
    pub stats: Stats,
    /// Per-command and per-error counters (INFO commandstats, errorstats).
    pub cmdstats: crate::cmdstats::CommandStats,
    /// MONITOR connections.
    pub monitors: crate::monitor::Monitors,
    /// SLOWLOG.
    pub slowlog: crate::slowlog::SlowLog,
    /// MIGRATE's connections to its targets.
    pub migrate_cache: crate::cmd::migrate_cache::MigrateCache,
    /// What `oom-score-adj` changed.
    pub oom_score: crate::oom_score::OomScore,
    /// The latency monitor (LATENCY).
    pub latency: crate::latency::LatencyMonitor,
    /// The append-only file's state.
    pub aof: crate::persist::aof::Aof,
    /// Replication: the command stream, replicas, the master link.
    pub repl: crate::repl::Replication,
    /// Cluster mode: the slot table and the bus.
    pub cluster: crate::cluster::Cluster,
    /// This state's own `Arc`, for tasks a command starts (REPLICAOF).
    this: std::sync::OnceLock<std::sync::Weak<Shared>>,
    /// Save bookkeeping (INFO persistence, LASTSAVE, save schedules).
    pub persistence: Arc<crate::persist::snapshot::Persistence>,
    /// Set to true to stop the server.
    pub shutdown: watch::Sender<bool>,
    /// When the server started.
    pub started: Instant,
    /// Wall clock at start, for INFO.
    pub started_at: SystemTime,
    /// 40 hex characters identifying this run (INFO run_id).
    pub run_id: String,
    /// The TCP port actually bound.
    port: std::sync::atomic::AtomicU16,
    /// The accept loops, replaced when CONFIG SET changes `port` or `bind`.
    pub accepting: parking_lot::Mutex<crate::net::listener::Accepting>,
    /// The Unix socket's accept loop and the socket's path (`unixsocket`).
    pub unix_accepting: parking_lot::Mutex<Option<(tokio::task::AbortHandle, String)>>,
    /// TLS on the client port: the configuration new connections get, its accept loops.
    pub tls: crate::net::tls::Tls,
}

impl Shared {
    /// Fresh state for `config`, listening on `port`.
    pub fn new(config: Config, port: u16) -> Shared {
        let store = Arc::new(Store::new(config.databases, config.effective_shards()));
        let hz = Arc::new(AtomicU32::new(config.hz));
        let run_id = (0..40)
            .map(|_| char::from(b"0123456789abcdef"[fastrand::usize(..16)]))
            .collect();
        let acl = Acl::new(&config.requirepass);
        let tracking = Tracking::default();
        tracking
            .set_max_keys(usize::try_from(config.tracking_table_max_keys).unwrap_or(usize::MAX));
        store
            .events()
            .set_notify_flags(config.notify_keyspace_events);
        configure_eviction(&store, &config);
        crate::persist::rdb::encode::set_compression(config.param_bool("rdbcompression"));
        let repl = crate::repl::Replication::default();
        store.events().set_deletion_feed(repl.journal.clone());
        {
            let mut stream = repl.journal.stream();
            stream.replica_buffers = store.events().eviction.replica_buffers.clone();
            stream.replica_limit = replica_output_limit(&config);
        }
        let clients = Clients::default();
        clients.memory.configure(&config);
        clients
            .memory
            .count_closing_in(store.events().eviction.clients_closing.clone());
        let persistence = Arc::new(crate::persist::snapshot::Persistence::default());
        persistence.save_points.store(
            crate::persist::snapshot::configured_save_points(&config.save),
            Ordering::Relaxed,
        );
        let blocking = Blocking::new(store.events().waited.clone());
        let shared = Shared {
            store,
            renamed: config.renamed.clone(),
            acl,
            hz,
            config: RwLock::new(config),
            hot: crate::config::HotParams::default(),
            config_generation: AtomicU64::new(0),
            clients,
            blocking,
            pubsub: PubSub::default(),
            watching: Default::default(),
            pause: Pause::default(),
            freeze: crate::freeze::Freeze::default(),
            graceful: Default::default(),
            scripting: crate::scripting::Scripting::default(),
            tracking,
            stats: Stats::default(),
            cmdstats: crate::cmdstats::CommandStats::default(),
            persistence,
            repl,
            cluster: crate::cluster::Cluster::default(),
            aof: crate::persist::aof::Aof::default(),
            monitors: crate::monitor::Monitors::default(),
            slowlog: crate::slowlog::SlowLog::default(),
            migrate_cache: crate::cmd::migrate_cache::MigrateCache::default(),
            oom_score: crate::oom_score::OomScore::default(),
            latency: crate::latency::LatencyMonitor::default(),
            this: std::sync::OnceLock::new(),
            shutdown: watch::channel(false).0,
            started: Instant::now(),
            started_at: SystemTime::now(),
            run_id,
            port: std::sync::atomic::AtomicU16::new(port),
            accepting: parking_lot::Mutex::default(),
            unix_accepting: parking_lot::Mutex::default(),
            tls: crate::net::tls::Tls::default(),
        };
        let config = shared.config.read().clone();
        shared.configure_monitoring(&config);
        shared.hot.load(&config);
        shared
    }

    /// The TCP port the server listens on.
    pub fn port(&self) -> u16 {
        self.port.load(Ordering::Relaxed)
    }

    /// Whether this server is a master (Redis's `iAmMaster`): in cluster mode as its
    /// node's role says (nodes.conf is read before the data), else when it has no
    /// `replicaof`.
    pub fn is_master(&self) -> bool {
        if self.cluster.enabled() {
            self.cluster.state.read().me().is_master()
        } else {
            self.config.read().replicaof().is_none()
        }
    }

    /// Records the port after CONFIG SET port.
    pub fn set_port(&self, port: u16) {
        self.port.store(port, Ordering::Relaxed);
    }

    /// Applies `oom-score-adj` for the current role (after CONFIG SET and REPLICAOF).
    pub fn apply_oom_score(&self, config: &Config) {
        let applied = self.oom_score.apply(
            config.param("oom-score-adj"),
            config.param("oom-score-adj-values"),
            config.replicaof().is_some(),
        );
        if let Err(e) = applied {
            tracing::warn!("Unable to write oom_score_adj: {e}");
        }
    }

    /// Shows `proc-title-template` as the process title (at start, and after CONFIG
    /// SET, so that it follows the template and the ports); nothing in a process that
    /// did not make room for titles (see [`crate::proc_title`]).
    pub fn apply_proc_title(&self, config: &Config) {
        if !config.param_bool("set-proc-title") {
            return;
        }
        let Some(program) = crate::proc_title::program() else {
            return;
        };
        if let Some(title) = crate::proc_title::title_for(config, &program, self.port()) {
            crate::proc_title::set(&title);
        }
    }

    /// Applies the slow log's, the latency monitor's and lazy freeing's parameters.
    fn configure_monitoring(&self, config: &Config) {
        crate::stall_watchdog::configure(config.param_int("watchdog-period"), config.hz);
        self.slowlog.configure(
            config.param_int("slowlog-log-slower-than"),
            usize::try_from(config.param_int("slowlog-max-len")).unwrap_or(usize::MAX),
        );
        self.latency
            .configure(u64::try_from(config.param_int("latency-monitor-threshold")).unwrap_or(0));
        self.cmdstats
            .set_latency_tracking(config.param_bool("latency-tracking"));
        self.acl
            .set_pubsub_default(crate::acl::PubsubDefault::from_config(
                config.param("acl-pubsub-default"),
            ));
        self.acl
            .log
            .set_max_len(usize::try_from(config.param_int("acllog-max-len")).unwrap_or(usize::MAX));
        let lazyfree = &self.store.lazyfree;
        lazyfree.user_del.store(
            config.param_bool("lazyfree-lazy-user-del"),
            Ordering::Relaxed,
        );
        lazyfree.user_flush.store(
            config.param_bool("lazyfree-lazy-user-flush"),
            Ordering::Relaxed,
        );
    }

    /// Records the `Arc` this state lives in (once, when the server is built).
    pub fn set_arc(self: &Arc<Self>) {
        let _ = self.this.set(Arc::downgrade(self));
    }

    /// This state as an `Arc`, for tasks that outlive a command.
    pub fn arc(&self) -> Option<Arc<Shared>> {
        self.this.get().and_then(std::sync::Weak::upgrade)
    }

    /// Asks the server to stop: listeners close, connections end.
    pub fn request_shutdown(&self) {
        // No client connects from now on (Redis exits before it answers anyone else).
        crate::net::listener::stop_accepting(self);
        self.shutdown.send_replace(true);
    }

    /// Replaces the configuration (CONFIG SET) and tells connections to refresh.
    pub fn update_config(&self, config: Config) {
        self.hz.store(config.hz, Ordering::Relaxed);
        self.configure_monitoring(&config);
        self.hot.load(&config);
        self.apply_oom_score(&config);
        self.apply_proc_title(&config);
        configure_eviction(&self.store, &config);
        crate::persist::rdb::encode::set_compression(config.param_bool("rdbcompression"));
        self.clients.memory.configure(&config);
        self.persistence.save_points.store(
            crate::persist::snapshot::configured_save_points(&config.save),
            Ordering::Relaxed,
        );
        // A lower limit (or one just turned on) evicts at once, as in Redis.
        self.clients.recount_memory();
        {
            let mut stream = self.repl.journal.stream();
            stream.replica_limit = replica_output_limit(&config);
            // A smaller backlog gives back its oldest bytes at once, as Redis trims it.
            let backlog_size = config.param_int("repl-backlog-size");
            stream.resize_backlog(usize::try_from(backlog_size).unwrap_or(1 << 20));
        }
        self.store
            .events()
            .set_notify_flags(config.notify_keyspace_events);
        self.tracking
            .set_max_keys(usize::try_from(config.tracking_table_max_keys).unwrap_or(usize::MAX));
        let mut current = self.config.write();
        if current.requirepass != config.requirepass {
            // As in Redis, setting `requirepass` replaces the default user's passwords.
            self.acl.set_requirepass(&config.requirepass);
        }
        *current = config;
        drop(current);
        self.config_generation.fetch_add(1, Ordering::Release);
    }
}

/// The replica class's output limit as Redis applies it: a hard limit below
/// `repl-backlog-size` counts as that size (a replica continuing with PSYNC would
/// otherwise be dropped as soon as it is sent what it missed). The backlog's memory is
/// shared, so this costs nothing.
fn replica_output_limit(config: &Config) -> crate::config::OutputBufferLimit {
    let mut limit = config.client_output_buffer_limit[1];
    let backlog = u64::try_from(config.param_int("repl-backlog-size")).unwrap_or(0);
    if limit.hard != 0 && limit.hard < backlog {
        limit.hard = backlog;
    }
    limit
}

/// Hands `maxmemory` and its policy settings to the store.
fn configure_eviction(store: &Store, config: &Config) {
    let int = |name: &str| u32::try_from(config.param_int(name).max(0)).unwrap_or(u32::MAX);
    store.events().eviction.configure(
        u64::try_from(config.param_int("maxmemory").max(0)).unwrap_or(0),
        crate::store::evict::Policy::from_name(config.param("maxmemory-policy")),
        int("maxmemory-samples"),
        int("lfu-log-factor"),
        int("lfu-decay-time"),
    );
}
