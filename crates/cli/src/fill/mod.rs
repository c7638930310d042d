//! `redline fill`: loads random keys as fast as the server accepts them.
//!
//! Every connection switches replies off (`CLIENT REPLY OFF`) and streams large batches
//! of pre-encoded MSETs (SETs with `--mset 1`; [`stream`]); `CLIENT REPLY ON` at the end
//! confirms they all ran.
//! In cluster mode each key carries a hash tag chosen for a slot of the master it is
//! sent to ([`keys`]), and masters get keys in proportion to their slots ([`plan`]), so
//! no command is ever redirected. A DBSIZE check (summed over masters) ends the run.

mod control;
mod keys;
mod plan;
mod size;
mod stream;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use redline::{Client, ClusterClient, ClusterConfig, Protocol};
use serde_json::json;

use crate::conn::ConnArgs;
use control::{dbsizes, flush, masters, Control};
use keys::{digits_for, TagTable};
use stream::Job;

/// Flags of `redline fill`.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub(crate) struct FillArgs {
    #[command(flatten)]
    pub(crate) conn: ConnArgs,
    /// Database number (standalone).
    #[arg(short = 'n', value_name = "DB")]
    pub(crate) db: Option<u32>,
    /// The target is a Redis Cluster: fill every master.
    #[arg(short = 'c', long = "cluster")]
    pub(crate) cluster: bool,
    /// How much to write, key and value bytes together (512MB, 2GB...; units are binary).
    #[arg(long = "data", value_name = "SIZE", conflicts_with = "keys")]
    pub(crate) data: Option<String>,
    /// How many keys to write.
    #[arg(long = "keys", value_name = "N")]
    pub(crate) keys: Option<u64>,
    /// Bytes per key name.
    #[arg(long = "key-size", value_name = "BYTES", default_value_t = 512)]
    pub(crate) key_size: usize,
    /// Bytes per value.
    #[arg(long = "value-size", value_name = "BYTES", default_value_t = 512)]
    pub(crate) value_size: usize,
    /// Keys per write batch.
    #[arg(long = "pipeline", value_name = "N", default_value_t = 8192)]
    pub(crate) pipeline: usize,
    /// Keys per command: 1 sends SET; more send MSET with that many keys (one slot per
    /// MSET in cluster mode). MSET costs the server less per key.
    #[arg(long = "mset", value_name = "N", default_value_t = 32)]
    pub(crate) mset: usize,
    /// Connections per master (per server when standalone).
    #[arg(long = "connections", value_name = "N", default_value_t = 4)]
    pub(crate) connections: usize,
    /// Flush first (FLUSHDB; FLUSHALL on every master in cluster mode). Alone, only flushes.
    #[arg(long = "flush")]
    pub(crate) flush: bool,
    /// Print the result as one JSON object.
    #[arg(long = "json")]
    pub(crate) json: bool,
}

/// Why a fill failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FillError {
    /// Bad connection flags.
    #[error(transparent)]
    Flags(#[from] crate::conn::ConnError),
    /// A flag value that cannot be honoured.
    #[error("{0}")]
    Invalid(String),
    /// Connecting (or the handshake) failed.
    #[error("Could not connect to Redis at {addr}: {source}")]
    Connect {
        /// `host:port`.
        addr: String,
        /// The client's error.
        source: redline::Error,
    },
    /// A control command (FLUSHDB, DBSIZE, CLUSTER SLOTS) failed.
    #[error("{what} failed: {source}")]
    Command {
        /// The command.
        what: &'static str,
        /// The client's error.
        source: redline::Error,
    },
    /// Writing or reading a fill connection failed.
    #[error("Connection to {addr} failed: {source}")]
    Io {
        /// `host:port`.
        addr: String,
        /// The socket error.
        source: std::io::Error,
    },
    /// The server closed a fill connection (query buffer limit, kill...).
    #[error("Connection to {addr} closed by the server before confirming the writes")]
    Closed {
        /// `host:port`.
        addr: String,
    },
    /// `CLIENT REPLY ON` did not answer `+OK` (an error from the writes or the server).
    #[error("{addr} answered '{reply}' at the end of the fill")]
    Refused {
        /// `host:port`.
        addr: String,
        /// What it answered.
        reply: String,
    },
    /// The final DBSIZE check found fewer keys than were written.
    #[error("DBSIZE check failed: {found} keys found, at least {expected} expected")]
    Check {
        /// Keys found.
        found: u64,
        /// Keys written.
        expected: u64,
    },
}

/// Runs `redline fill`.
pub(crate) fn run(args: FillArgs) -> ExitCode {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Could not start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(fill(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("redline fill: {e}");
            ExitCode::from(1)
        }
    }
}

async fn fill(args: FillArgs) -> Result<(), FillError> {
    let mut cfg = args.conn.config()?;
    // Fill connections speak plain RESP2 after the handshake.
    cfg.protocol = Protocol::Resp2;
    if let Some(db) = args.db {
        if args.cluster && db != 0 {
            return Err(FillError::Invalid(
                "Redis Cluster has only database 0".into(),
            ));
        }
        cfg.db = db;
    }
    cfg.command_timeout = Some(Duration::from_secs(60));
    let keys = wanted_keys(&args)?;
    if keys.is_none() && !args.flush {
        return Err(FillError::Invalid(
            "nothing to do: give --data SIZE or --keys N (or --flush alone)".into(),
        ));
    }
    let tags = args.cluster.then(TagTable::build);
    if let Some(keys) = keys {
        check_key_size(&args, keys, tags.as_ref())?;
    }

    let addr = cfg.addr();
    let control = if args.cluster {
        let mut cluster_cfg = ClusterConfig::default();
        cluster_cfg.seeds = vec![(cfg.host.clone(), cfg.port)];
        cluster_cfg.node = cfg.clone();
        Control::Cluster(
            ClusterClient::from_config(cluster_cfg)
                .await
                .map_err(|source| FillError::Connect { addr, source })?,
        )
    } else {
        Control::Single(
            Client::from_config(cfg.clone())
                .await
                .map_err(|source| FillError::Connect { addr, source })?,
            Box::new(cfg.clone()),
        )
    };

    if args.flush {
        flush(&control).await?;
        if keys.is_none() {
            if args.json {
                println!("{}", json!({ "flushed": true }));
            } else {
                println!("Flushed.");
            }
            return Ok(());
        }
    }
    let Some(keys) = keys else { return Ok(()) };

    let masters = masters(&control).await?;
    let shares = plan::shares(&masters, keys, args.connections);
    let per_key = args.key_size + args.value_size;
    // Bound each connection's buffer to ~64 MiB whatever the value size.
    let pipeline = args.pipeline.min((64 << 20) / per_key.max(1)).max(1);
    let job = Arc::new(Job {
        cfg,
        masters: masters.clone(),
        tags,
        key_size: args.key_size,
        value_size: args.value_size,
        pipeline,
        per_command: args.mset,
        written: AtomicU64::new(0),
    });

    let started = Instant::now();
    let progress = progress_bar(&args, keys, job.clone());
    let tasks: Vec<_> = shares
        .iter()
        .cloned()
        .map(|share| tokio::spawn(stream::fill(job.clone(), share)))
        .collect();
    let mut first_error = None;
    for task in tasks {
        let result = match task.await {
            Ok(result) => result,
            Err(e) => Err(FillError::Invalid(format!("fill task failed: {e}"))),
        };
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    if let Some((bar, ticker)) = progress {
        ticker.abort();
        bar.finish_and_clear();
    }
    if let Some(e) = first_error {
        return Err(e);
    }

    let per_master = dbsizes(&control, &masters).await?;
    let dbsize: u64 = per_master.iter().sum();
    let bytes = keys * per_key as u64;
    let mb_per_sec = bytes as f64 / (1u64 << 20) as f64 / seconds.max(1e-9);
    let keys_per_sec = keys as f64 / seconds.max(1e-9);
    if args.json {
        let masters_json: Vec<_> = masters
            .iter()
            .zip(&per_master)
            .map(|(m, n)| {
                json!({
                    "addr": format!("{}:{}", m.host, m.port),
                    "slots": m.slots.len(),
                    "dbsize": n,
                })
            })
            .collect();
        println!(
            "{}",
            json!({
                "keys": keys,
                "bytes": bytes,
                "key_size": args.key_size,
                "value_size": args.value_size,
                "seconds": seconds,
                "mb_per_sec": mb_per_sec,
                "keys_per_sec": keys_per_sec,
                "connections": shares.len(),
                "dbsize": dbsize,
                "masters": masters_json,
            })
        );
    } else {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "keys: {keys}  bytes: {bytes} ({:.1} MB)  seconds: {seconds:.2}  MB/s: {mb_per_sec:.1}  keys/s: {keys_per_sec:.0}",
            bytes as f64 / (1u64 << 20) as f64
        );
        let _ = writeln!(
            out,
            "DBSIZE: {dbsize} over {} master(s), {} connection(s)",
            masters.len(),
            shares.len()
        );
        if masters.len() > 1 {
            for (m, n) in masters.iter().zip(&per_master) {
                let _ = writeln!(
                    out,
                    "  {}:{}  slots {:>5}  keys {n}",
                    m.host,
                    m.port,
                    m.slots.len()
                );
            }
        }
    }
    if dbsize < keys {
        return Err(FillError::Check {
            found: dbsize,
            expected: keys,
        });
    }
    Ok(())
}

/// Keys to write, from `--keys` or `--data`.
fn wanted_keys(args: &FillArgs) -> Result<Option<u64>, FillError> {
    if args.key_size == 0 {
        return Err(FillError::Invalid("--key-size must be at least 1".into()));
    }
    if args.pipeline == 0 || args.connections == 0 || args.mset == 0 {
        return Err(FillError::Invalid(
            "--pipeline, --connections and --mset must be at least 1".into(),
        ));
    }
    let per_key = (args.key_size + args.value_size) as u64;
    match (&args.data, args.keys) {
        (Some(data), _) => {
            let bytes = size::parse(data).map_err(|e| FillError::Invalid(e.to_string()))?;
            let keys = bytes / per_key;
            if keys == 0 {
                return Err(FillError::Invalid(format!(
                    "--data {data} is smaller than one key and its value ({per_key} bytes)"
                )));
            }
            Ok(Some(keys))
        }
        (None, Some(0)) => Err(FillError::Invalid("--keys must be at least 1".into())),
        (None, Some(keys)) => Ok(Some(keys)),
        (None, None) => Ok(None),
    }
}

/// Keys must be long enough for their prefix (`k`, or `{tag}` in cluster mode) and a
/// unique number.
fn check_key_size(args: &FillArgs, keys: u64, tags: Option<&TagTable>) -> Result<(), FillError> {
    let digits = digits_for(keys);
    let (prefix, what) = match tags {
        Some(tags) => (
            tags.longest() + 2,
            "a hash tag like {abc} (so every key lands on the master it is sent to)",
        ),
        None => (1, "the prefix 'k'"),
    };
    let needed = prefix + digits;
    if args.key_size < needed {
        return Err(FillError::Invalid(format!(
            "--key-size {} is too short: {keys} keys need {what} plus {digits} digits each; use --key-size {needed} or more",
            args.key_size
        )));
    }
    Ok(())
}

/// A progress bar on stderr when it is a terminal (and not --json).
fn progress_bar(
    args: &FillArgs,
    keys: u64,
    job: Arc<Job>,
) -> Option<(ProgressBar, tokio::task::JoinHandle<()>)> {
    if args.json || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(keys), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:40} {pos}/{len} keys  {msg}  {elapsed_precise} (eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let ticker_bar = bar.clone();
    let per_key = (args.key_size + args.value_size) as u64;
    let ticker = tokio::spawn(async move {
        let mut interval = tokio::time::interval(Duration::from_millis(100));
        let start = Instant::now();
        loop {
            interval.tick().await;
            let written = job.written.load(Ordering::Relaxed);
            let secs = start.elapsed().as_secs_f64().max(1e-9);
            let mb = (written * per_key) as f64 / (1u64 << 20) as f64;
            ticker_bar.set_message(format!(
                "{:.0} keys/s, {:.1} MB/s",
                written as f64 / secs,
                mb / secs
            ));
            ticker_bar.set_position(written);
        }
    });
    Some((bar, ticker))
}
