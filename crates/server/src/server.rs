//! The library entry point: bind a [`Server`] from a [`Config`], then `run` it until
//! SHUTDOWN or [`ShutdownHandle::shutdown`]. `redline bench` embeds it this way on a free
//! loopback port; the `redline-server` binary wraps it with a runtime and signals.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::config::Config;
use crate::net::{listener, tls};
use crate::shared::Shared;
use crate::store::expiry;

/// A bound, not yet running server.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use redline_server::{Config, Server};
///
/// let config = Config { port: 0, ..Config::default() };
/// let server = Server::bind(config).await?;
/// println!("listening on {}", server.local_addr());
/// let stop = server.shutdown_handle();
/// let running = tokio::spawn(server.run());
/// stop.shutdown();
/// running.await.ok();
/// # Ok(()) }
/// ```
pub struct Server {
    listeners: Vec<TcpListener>,
    /// The cluster bus's listeners (cluster mode).
    bus_listeners: Vec<TcpListener>,
    tls_listeners: Vec<TcpListener>,
    /// The Unix socket (`unixsocket`) and its path.
    unix: Option<(tokio::net::UnixListener, String)>,
    shared: Arc<Shared>,
}

/// Stops a running server from anywhere; cheap to clone.
#[derive(Clone)]
pub struct ShutdownHandle {
    shared: Arc<Shared>,
}

impl ShutdownHandle {
    /// Stops accepting, closes every connection, and makes [`Server::run`] return.
    pub fn shutdown(&self) {
        self.shared.request_shutdown();
    }
}

/// What the expiry thread does after each cycle besides expiring (Redis's cron): sample
/// INFO's rates, publish the key events the cycle queued, send BCAST invalidations, keep
/// the tracking table under its limit.
fn background_events(shared: &Shared) {
    if shared.freeze.stopped() {
        return;
    }
    let stats = &shared.stats;
    stats.instant.sample(
        [
            &stats.commands_processed,
            &stats.net_input_bytes,
            &stats.net_output_bytes,
            &stats.net_repl_input_bytes,
            &stats.net_repl_output_bytes,
        ]
        .map(|total| total.load(std::sync::atomic::Ordering::Relaxed)),
    );
    crate::persist::snapshot::cron(shared);
    crate::persist::graceful::cron(shared);
    crate::repl::failover::cron(shared);
    crate::repl::master::cron(shared);
    crate::persist::aof::cron(shared);
    shared.migrate_cache.close_idle();
    shared.blocking.forget_old_stream_waits();
    shared.clients.trim_idle();
    let pubsub_limit = shared.config.read().client_output_buffer_limit[2];
    shared.clients.close_over_output_limit(&pubsub_limit);
    crate::maxmemory::cron(shared);
    // An eviction pass here signals the streams it deleted on this thread.
    crate::cmd::blocking::serve_background_signals(shared);
    publish_expired(shared);
    if shared.tracking.active() {
        shared.tracking.broadcast(shared);
        shared.tracking.enforce_limit(shared);
    }
}

/// Publishes the events of keys the background removed (expired, evicted).
fn publish_expired(shared: &Shared) {
    if shared.store.events().pending() {
        crate::notify::publish_pending(shared, 0, &mut bytes::BytesMut::new());
    }
}

/// A listening port that could not be bound: the cause is logged, the error says what
/// redis-server says (its test suite looks for those words to try another port).
fn failed(port: u16, what: &'static str) -> impl FnOnce(io::Error) -> io::Error {
    move |e| {
        tracing::warn!("{e}");
        io::Error::new(
            e.kind(),
            format!("Failed listening on port {port} ({what}), aborting."),
        )
    }
}

impl Server {
    /// Binds every `bind` address on `port` (0 = a free port, the same one for all) and,
    /// with `tls-port`, on the TLS port after loading the certificates. `port 0` with a
    /// TLS port serves TLS only, as in Redis.
    pub async fn bind(config: Config) -> io::Result<Server> {
        let tls_port = tls::tls_port(&config);
        let tls_config = if tls::wanted(&config) {
            let built = tls::build(&config).map_err(|e| {
                tracing::warn!("{e}");
                io::Error::other(tls::CONFIGURE_FAILED)
            })?;
            Some(built)
        } else {
            None
        };
        let (listeners, port) = if config.port == 0 && tls_port != 0 {
            (Vec::new(), 0)
        } else {
            let (std_listeners, port) = listener::bind_all(&config.bind, config.port)
                .map_err(failed(config.port, "TCP"))?;
            (listener::to_tokio(std_listeners)?, port)
        };
        let (tls_listeners, tls_port) = if tls_port != 0 {
            let (std_listeners, port) =
                listener::bind_all(&config.bind, tls_port).map_err(failed(tls_port, "TLS"))?;
            (listener::to_tokio(std_listeners)?, port)
        } else {
            (Vec::new(), 0)
        };
        let unix = match config.param("unixsocket") {
            "" => None,
            path => Some((
                listener::bind_unix(path, config.param("unixsocketperm"))?,
                path.to_string(),
            )),
        };
        if listeners.is_empty() && tls_listeners.is_empty() && unix.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "Configured to not listen anywhere, exiting.",
            ));
        }
        let cluster_mode = config.param_bool("cluster-enabled");
        let bind = config.bind.clone();
        let shared = Arc::new(Shared::new(config, port));
        let mut bus_listeners = Vec::new();
        if cluster_mode {
            let config = shared.config.read().clone();
            let bus_port = shared
                .cluster
                .open(&config, port, tls_port)
                .map_err(io::Error::other)?;
            let (std_listeners, _) =
                listener::bind_all(&bind, bus_port).map_err(failed(bus_port, "cluster"))?;
            bus_listeners = listener::to_tokio(std_listeners)?;
            if !shared.is_master() {
                // A replica by its nodes.conf keeps keys past their deadline for its
                // master's DELs from the start, before its link to the master begins.
                shared.store.events().set_replica(true);
            }
        }
        if let Some(tls_config) = tls_config {
            shared.tls.install(tls_config);
        }
        shared.tls.set_port(tls_port);
        shared.set_arc();
        Ok(Server {
            listeners,
            bus_listeners,
            tls_listeners,
            unix,
            shared,
        })
    }

    /// The first bound address (its port is the real one when `port` was 0); the first
    /// TLS one when the server serves TLS only.
    pub fn local_addr(&self) -> SocketAddr {
        self.listeners
            .first()
            .or(self.tls_listeners.first())
            .and_then(|l| l.local_addr().ok())
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], self.shared.port())))
    }

    /// A handle that stops the server.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            shared: self.shared.clone(),
        }
    }

    /// The shared state, for tests and embedders that inspect counters.
    pub fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// Serves until shutdown; then every connection is closed and the expiry thread
    /// stopped before it returns.
    pub async fn run(self) -> io::Result<()> {
        self.run_loading(None::<std::future::Ready<Result<(), String>>>)
            .await
    }

    /// [`Server::run`], serving already while `load` fills the dataset: clients get
    /// LOADING meanwhile (the loader begins `persistence.loading`; it ends here, once a
    /// configured master is followed, so no write slips in before). "Ready to accept
    /// connections" and the expiry thread wait for the load, as in Redis. A failed load
    /// stops the server with its error; a shutdown requested meanwhile stops it too
    /// (the loader notices it and gives up).
    pub async fn run_loading(
        self,
        load: Option<impl std::future::Future<Output = Result<(), String>>>,
    ) -> io::Result<()> {
        let Server {
            listeners,
            bus_listeners,
            tls_listeners,
            unix,
            shared,
        } = self;
        let (tcp, tls) = (!listeners.is_empty(), !tls_listeners.is_empty());
        let on_unix = unix.is_some();
        let mut pending = Some((listeners, tls_listeners, unix));
        let start_serving = |pending: &mut Option<_>| {
            if let Some((listeners, tls_listeners, unix)) = pending.take() {
                if let Some((unix, path)) = unix {
                    listener::serve_unix(&shared, unix, path);
                }
                listener::serve(&shared, listeners);
                listener::serve_tls(&shared, tls_listeners);
            }
        };
        let mut stop = shared.shutdown.subscribe();
        if shared.cluster.enabled() {
            // The bus runs while the data loads, as Redis's does.
            crate::cluster::bus::start(&shared, bus_listeners);
        }
        // What the started server holds before any data (INFO's used_memory_startup).
        crate::alloc::mark_startup();
        if let Some(load) = load {
            start_serving(&mut pending);
            let loaded = tokio::select! {
                result = load => Some(result),
                _ = stop.wait_for(|s| *s) => None,
            };
            // A load that gave up because a shutdown was asked for is that shutdown,
            // whichever of the two was seen first.
            let loaded = if *stop.borrow() { None } else { loaded };
            if !matches!(loaded, Some(Ok(()))) {
                listener::stop_accepting(&shared);
                shared.clients.kill_all();
                return match loaded {
                    Some(Err(e)) => Err(io::Error::other(e)),
                    _ => {
                        tracing::warn!("redline-server is now ready to exit, bye bye...");
                        Ok(())
                    }
                };
            }
        }
        let (stop_expiry, stop_rx) = std::sync::mpsc::channel::<()>();
        let expiry_thread = {
            let store = shared.store.clone();
            let hz = shared.hz.clone();
            let background = shared.clone();
            // The cron may start tasks (a FAILOVER's link to its target).
            let runtime = tokio::runtime::Handle::current();
            std::thread::Builder::new()
                .name("redline-expiry".into())
                .spawn(move || {
                    let _runtime = runtime.enter();
                    let effort = || background.config.read().param_int("active-expire-effort");
                    let loading = || background.persistence.loading.is_active();
                    expiry::run(store, hz, stop_rx, effort, loading, |took, pace| {
                        crate::cmd::blocking::serve_background_signals(&background);
                        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
                        background.latency.add_if_needed("expire-cycle", ms);
                        if pace == expiry::Pace::Fast {
                            publish_expired(&background);
                            return;
                        }
                        if background.config.read().param_bool("activerehashing") {
                            background.store.tidy_indexes();
                            background.pubsub.tidy();
                            background.tracking.tidy();
                        }
                        background_events(&background);
                    })
                })?
        };
        // A configured replica is one before its first client's command: no write
        // slips in.
        crate::repl::follow_configured(&shared);
        shared.persistence.loading.end();
        if tcp {
            tracing::info!("Ready to accept connections tcp");
        }
        if tls {
            tracing::info!("Ready to accept connections tls");
        }
        if on_unix {
            tracing::info!("Ready to accept connections unix");
        }
        crate::supervision::notify(if shared.repl.is_replica() {
            "STATUS=Ready to accept connections in read-only mode. Waiting for MASTER <-> REPLICA sync\n"
        } else {
            "STATUS=Ready to accept connections\n"
        });
        crate::supervision::notify("READY=1\n");
        start_serving(&mut pending);
        // Already requested (e.g. SHUTDOWN raced with start) or requested later.
        let _ = stop.wait_for(|s| *s).await;
        listener::stop_accepting(&shared);
        shared.clients.kill_all();
        drop(stop_expiry);
        if shared.scripting.flags.busy() {
            // SHUTDOWN NOSAVE under a busy script, which Redis allows: the script keeps
            // its locks, so the expiry thread may never finish; the caller exits the
            // process instead of waiting (see `launcher`).
            tracing::warn!("A script is still running: exiting without waiting for it.");
        } else {
            let _ = tokio::task::spawn_blocking(move || expiry_thread.join()).await;
        }
        tracing::warn!("redline-server is now ready to exit, bye bye...");
        Ok(())
    }
}
