//! `redline tunnel`: a local plain-text endpoint in front of a Redis server or cluster
//! that requires TLS (or that a client cannot follow).
//!
//! ```text
//! redline tunnel -h cache.example -p 6380 --tls -a secret            # standalone
//! redline tunnel -h node1.example -p 6380 --tls --cluster            # smart (default)
//! redline tunnel -h node1.example -p 6380 --tls --cluster --mode pinned --listen 127.0.0.1:7000
//! ```
//!
//! - **Standalone** (`standalone.rs`): one upstream connection per local client; the tunnel
//!   authenticates it, then copies bytes both ways unchanged.
//! - **Pinned** (`pinned.rs`, `tracked.rs`, `rewrite.rs`): one local listener per cluster
//!   node, ports mapped as `pinned.rs` documents; node addresses are rewritten only in the
//!   replies to `CLUSTER SLOTS/SHARDS/NODES/REPLICAS` and in `-MOVED`/`-ASK`.
//! - **Smart** (`smart.rs`): one local endpoint that looks like a standalone server;
//!   commands are routed by the redline cluster client.
//!
//! Every mode: SIGINT/SIGTERM shut down cleanly (`shutdown.rs`); a failing client only
//! ends its own connection (`listener.rs`); connects and disconnects are logged at info
//! level on stderr. Listen addresses are printed on stdout once open. One worker thread
//! by default (`--threads`): a hop that shares its cores with clients and servers loses
//! more to wake-ups between threads than it gains from a second one (bench/NOTES.md,
//! "Smart mode, sixth look").

mod dedicated;
mod error;
mod listener;
mod pinned;
mod rewrite;
mod shutdown;
mod smart;
mod standalone;
mod topology;
mod tracked;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use redline::{Config, Protocol, RawConnector};

use crate::conn::ConnArgs;
use error::TunnelError;
use shutdown::Shutdown;

/// `redline tunnel`: the upstream's connection flags (as redis-cli's) plus the tunnel's own.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub(crate) struct TunnelArgs {
    #[command(flatten)]
    conn: ConnArgs,
    /// The upstream is a Redis Cluster (`-h`/`-p` name any one node).
    #[arg(short = 'c', long = "cluster")]
    cluster: bool,
    /// Local address to accept plain-text clients on. In pinned mode, the first port of
    /// the node mapping (node N of the start-up topology, sorted by address, gets PORT+N;
    /// port 0 lets the system choose each).
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:6379")]
    listen: SocketAddr,
    /// Cluster mode: `smart` (one endpoint, commands routed by the tunnel) or `pinned`
    /// (one local port per node, addresses rewritten for cluster-aware clients).
    #[arg(long, value_enum, requires = "cluster")]
    mode: Option<Mode>,
    /// Pinned mode: seconds between topology refreshes that open listeners for new nodes.
    #[arg(long, value_name = "SECONDS", default_value_t = 5)]
    refresh: u64,
    /// Smart mode: re-send any write whose connection failed after it was sent (it may
    /// then run twice). Without it, only writes that answer the same when repeated
    /// (plain SET, SETEX, PSETEX, MSET, HMSET) are re-sent after a failover.
    #[arg(long)]
    retry_writes: bool,
    /// Worker threads. One serves a few hundred thousand requests a second and spares
    /// the wake-ups between threads, which cost most where the tunnel shares cores with
    /// its clients and servers; raise it when the tunnel needs more than one core.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..))]
    threads: u16,
    /// Log level on stderr: error, warn, info, debug or trace.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    log: tracing::Level,
}

/// How a cluster is presented locally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// One local endpoint; the tunnel routes every command to the right node.
    Smart,
    /// One local listener per node; cluster-aware clients route themselves.
    Pinned,
}

/// Runs the tunnel until SIGINT or SIGTERM.
pub(crate) fn run(args: TunnelArgs) -> ExitCode {
    // Another subcommand's subscriber may already be installed; keep it then.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(args.log)
        .with_target(false)
        // Colour codes only for a person watching, not in log files.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(args.threads))
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("redline tunnel: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(tunnel(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("redline tunnel: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn tunnel(args: TunnelArgs) -> Result<(), TunnelError> {
    let mut upstream = args.conn.config()?;
    // Local clients start a connection the way they would on a direct one: RESP2 until
    // they send HELLO 3 themselves.
    if args.conn.resp3 {
        return Err(TunnelError::Usage(
            "-3 does not apply: local clients choose their protocol with HELLO",
        ));
    }
    upstream.protocol = Protocol::Resp2;
    let shutdown = Shutdown::default();
    let started = match (args.cluster, args.mode.unwrap_or(Mode::Smart)) {
        (false, _) => start_standalone(&upstream, args.listen, &shutdown).await,
        (true, Mode::Pinned) => pinned::Pinned::start(
            upstream,
            args.listen,
            Duration::from_secs(args.refresh.max(1)),
            shutdown.clone(),
        )
        .await
        .map(drop),
        (true, Mode::Smart) => {
            smart::start(upstream, args.listen, args.retry_writes, &shutdown).await
        }
    };
    if let Err(e) = started {
        shutdown.cancel();
        return Err(e);
    }
    // Signals are handled from here on: a script that sends one as soon as it reads
    // "ready" stops the tunnel cleanly.
    let stopped = shutdown.run_until_signal()?;
    // Scripts (and tests) wait for this line before they connect.
    println!("ready");
    let signal = stopped.await;
    tracing::info!(signal, "tunnel stopped");
    Ok(())
}

async fn start_standalone(
    upstream: &Config,
    listen: SocketAddr,
    shutdown: &Shutdown,
) -> Result<(), TunnelError> {
    let connector = Arc::new(RawConnector::new(upstream)?);
    // Fail at start-up, not at the first client, when the upstream is unreachable or
    // refuses the credentials.
    drop(connector.connect().await?);
    let listener = listener::bind(listen).await?;
    let local = listener.local_addr()?;
    let name: Arc<str> = Arc::from(connector.addr());
    println!("listening {local} -> {name}");
    tracing::info!(%local, upstream = %name, tls = upstream.tls.is_some(), "tunnel ready");
    listener::serve(listener, name, shutdown.clone(), move |client| {
        standalone::relay(client, connector.clone())
    });
    Ok(())
}
