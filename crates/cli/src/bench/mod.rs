//! `redline bench`: redis-benchmark's flags, measured through the redline client (so it
//! measures the library), with HDR latency percentiles, live progress on a terminal, a
//! summary table and `--json`.
//!
//! With no `-h`, `-p` or `-u` it starts an embedded redline-server on a free loopback
//! port ([`embedded`]) and benchmarks that, so it works on a fresh machine.
//!
//! `-c` counts *callers* (tasks with one request or pipeline in flight each), and
//! `--mode` says how they reach the server: `multiplexed` (the default: all callers
//! share `--mux` connections through the client's auto-pipelining, as an application
//! using redline does) or `redis-benchmark` (one connection per caller, each waiting
//! for its reply, which is what redis-benchmark's `-c` measures); `both` runs each test
//! in both modes, so the two are never compared by mistake.

mod embedded;
mod progress;
mod report;
mod runner;
mod target;
mod workload;

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clap::Args;
use redline::{Client, ClusterClient, ClusterConfig};

use crate::conn::ConnArgs;
use report::Row;
use runner::{Live, Plan};
use target::Target;
use workload::Test;

/// Flags of `redline bench` (redis-benchmark's names where they overlap).
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub(crate) struct BenchArgs {
    #[command(flatten)]
    pub(crate) conn: ConnArgs,
    /// Number of parallel callers, each with one request (or pipeline) in flight; how
    /// many connections they use is --mode's choice [default: 50].
    #[arg(short = 'c', value_name = "CALLERS", default_value_t = 50)]
    pub(crate) clients: usize,
    /// Total number of requests [default: 100000].
    #[arg(short = 'n', value_name = "REQUESTS", default_value_t = 100_000)]
    pub(crate) requests: u64,
    /// Run each test for this many seconds instead of -n requests.
    #[arg(long = "duration", value_name = "SECONDS")]
    pub(crate) duration: Option<f64>,
    /// Pipeline <numreq> requests [default: 1; with neither -P nor -t, 1 and 16].
    #[arg(short = 'P', value_name = "NUMREQ")]
    pub(crate) pipeline: Option<usize>,
    /// Data size of SET/GET value in bytes [default: 3].
    #[arg(short = 'd', value_name = "SIZE", default_value_t = 3)]
    pub(crate) data_size: usize,
    /// Use random keys for SET/GET/INCR, random values for SADD... in [0, keyspacelen).
    #[arg(short = 'r', value_name = "KEYSPACELEN")]
    pub(crate) keyspace: Option<u64>,
    /// Only run the comma separated list of tests (`-t all` for every test) [default: ping,set,get,mixed].
    #[arg(short = 't', value_name = "TESTS")]
    pub(crate) tests: Option<String>,
    /// Quiet. Just show query/sec values.
    #[arg(short = 'q')]
    pub(crate) quiet: bool,
    /// One JSON object per test on stdout, nothing else.
    #[arg(long = "json", conflicts_with = "csv")]
    pub(crate) json: bool,
    /// Output in CSV format, as redis-benchmark --csv.
    #[arg(long = "csv")]
    pub(crate) csv: bool,
    /// Multiplexed connections per node the callers share in multiplexed mode (the
    /// client's pool size).
    #[arg(long = "mux", value_name = "N", default_value_t = 1)]
    pub(crate) mux: usize,
    /// How callers reach the server: `multiplexed` (share --mux connections, as an
    /// application using redline), `redis-benchmark` (one connection per caller, as
    /// redis-benchmark -c), or `both`.
    #[arg(long = "mode", value_name = "MODE", default_value = "multiplexed")]
    pub(crate) mode: ModeArg,
    /// The target is a Redis Cluster (use the cluster client).
    #[arg(long = "cluster")]
    pub(crate) cluster: bool,
    /// SELECT the specified db number [default: 0].
    #[arg(long = "dbnum", value_name = "DB")]
    pub(crate) db: Option<u32>,
    /// A custom command to benchmark, e.g. `SET k:__rand_int__ v` (one quoted argument or many).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub(crate) command: Vec<String>,
}

/// `--mode` as given.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ModeArg {
    /// Callers share the multiplexed connections.
    Multiplexed,
    /// One connection per caller.
    RedisBenchmark,
    /// Each test in both modes.
    Both,
}

impl ModeArg {
    fn modes(self) -> Vec<Mode> {
        match self {
            ModeArg::Multiplexed => vec![Mode::Multiplexed],
            ModeArg::RedisBenchmark => vec![Mode::RedisBenchmark],
            ModeArg::Both => vec![Mode::Multiplexed, Mode::RedisBenchmark],
        }
    }
}

/// How one run's callers reach the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// All callers share `--mux` auto-pipelined connections.
    Multiplexed,
    /// Each caller has its own connection and waits for each reply.
    RedisBenchmark,
}

impl Mode {
    /// The name `--mode` and `--json` use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Multiplexed => "multiplexed",
            Mode::RedisBenchmark => "redis-benchmark",
        }
    }

    /// What the connection count means, for the per-test block.
    pub(crate) fn connections_note(self) -> &'static str {
        match self {
            Mode::Multiplexed => "shared by every caller through auto-pipelining",
            Mode::RedisBenchmark => "one per caller, as redis-benchmark",
        }
    }

    /// The one line printed before a mode's first test.
    fn explanation(self, callers: usize, connections: usize) -> String {
        match self {
            Mode::Multiplexed => format!(
                "multiplexed mode: {callers} callers share {connections} connection(s); requests in flight are batched into one write, as an application using redline sees it (not comparable with redis-benchmark -c {callers})"
            ),
            Mode::RedisBenchmark => format!(
                "redis-benchmark mode: {callers} callers on {connections} connections, one each, every caller waiting for its reply: compare these figures with redis-benchmark -c {callers}"
            ),
        }
    }
}

/// Runs `redline bench`.
pub(crate) fn run(args: BenchArgs) -> ExitCode {
    // The embedded server gets its own runtime, started before ours.
    let embedded = if args.conn.names_server() || args.cluster {
        None
    } else {
        match embedded::Embedded::start() {
            Ok(server) => Some(server),
            Err(e) => {
                eprintln!("Could not start the embedded redline-server: {e}");
                return ExitCode::from(1);
            }
        }
    };
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
    let result = runtime.block_on(bench(args, embedded.as_ref().map(|e| e.addr())));
    drop(runtime);
    drop(embedded);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

/// Why the benchmark could not run at all (errors during it are counted, not fatal).
#[derive(Debug, thiserror::Error)]
enum BenchError {
    #[error(transparent)]
    Flags(#[from] crate::conn::ConnError),
    #[error("Unknown test '{0}' (known: {known}, all)", known = workload::ALL.join(","))]
    UnknownTest(String),
    #[error("Invalid custom command: unbalanced quotes")]
    BadCommand,
    #[error("Invalid option: {0}")]
    Invalid(&'static str),
    #[error("Could not connect to Redis at {addr}: {source}")]
    Connect {
        addr: String,
        source: redline::Error,
    },
}

async fn bench(args: BenchArgs, embedded: Option<SocketAddr>) -> Result<(), BenchError> {
    if args.clients == 0 {
        return Err(BenchError::Invalid("-c must be at least 1"));
    }
    if args.mux == 0 {
        return Err(BenchError::Invalid("--mux must be at least 1"));
    }
    if args.pipeline == Some(0) {
        return Err(BenchError::Invalid("-P must be at least 1"));
    }
    if matches!(args.duration, Some(d) if !(d > 0.0 && d.is_finite())) {
        return Err(BenchError::Invalid(
            "--duration must be a positive number of seconds",
        ));
    }
    let tests = select_tests(&args)?;
    let pipelines: Vec<usize> = match args.pipeline {
        Some(p) => vec![p],
        None if args.tests.is_none() && args.command.is_empty() => vec![1, 16],
        None => vec![1],
    };

    let mut cfg = args.conn.config()?;
    if let Some(addr) = embedded {
        cfg.host = addr.ip().to_string();
        cfg.port = addr.port();
        if !args.json && !args.csv {
            eprintln!("Benchmarking an embedded redline-server on {addr}");
        }
    } else if args.cluster && !args.conn.names_server() {
        return Err(BenchError::Invalid(
            "--cluster needs -h/-p or -u naming a cluster node",
        ));
    }
    if let Some(db) = args.db {
        cfg.db = db;
    }
    cfg.command_timeout = Some(Duration::from_secs(2));
    cfg.queue_bound = cfg
        .queue_bound
        .max(args.clients * pipelines.iter().copied().max().unwrap_or(1) * 2);

    if args.csv {
        println!("{}", report::CSV_HEADER);
    }
    let data = Bytes::from(vec![b'x'; args.data_size]);
    let mut rows = Vec::new();
    for mode in args.mode.modes() {
        let targets = connect(&args, &cfg, mode).await?;
        let connections = match mode {
            Mode::Multiplexed => args.mux,
            Mode::RedisBenchmark => args.clients,
        };
        if !args.json && !args.csv {
            eprintln!("{}", mode.explanation(args.clients, connections));
        }
        for &pipeline in &pipelines {
            for test in &tests {
                let plan = Plan {
                    clients: args.clients,
                    requests: args.requests,
                    duration: args.duration.map(Duration::from_secs_f64),
                    pipeline,
                    data: data.clone(),
                    keyspace: args.keyspace,
                };
                let live = Arc::new(Live::default());
                let progress = progress::start(!args.json && !args.csv, test, &plan, live.clone());
                let outcome = runner::run(test, &targets, &plan, live).await;
                progress.finish();
                let row = Row {
                    test: test.clone(),
                    clients: args.clients,
                    mode,
                    connections,
                    pipeline,
                    data_size: args.data_size,
                    outcome,
                };
                emit(&args, &row);
                rows.push(row);
            }
        }
    }
    if !args.json && !args.quiet && !args.csv {
        println!("{}", report::table(&rows));
    }
    Ok(())
}

/// The targets the callers use in `mode`: one client with `--mux` multiplexed
/// connections, or one single-connection client per caller.
async fn connect(
    args: &BenchArgs,
    cfg: &redline::Config,
    mode: Mode,
) -> Result<Vec<Target>, BenchError> {
    let (count, pool_size) = match mode {
        Mode::Multiplexed => (1, args.mux),
        Mode::RedisBenchmark => (args.clients, 1),
    };
    let mut targets = Vec::with_capacity(count);
    for _ in 0..count {
        let mut cfg = cfg.clone();
        cfg.pool_size = pool_size;
        let addr = cfg.addr();
        let target = if args.cluster {
            let mut cluster = ClusterConfig::default();
            cluster.seeds = vec![(cfg.host.clone(), cfg.port)];
            cluster.node = cfg;
            Target::Cluster(
                ClusterClient::from_config(cluster)
                    .await
                    .map_err(|source| BenchError::Connect { addr, source })?,
            )
        } else {
            Target::Single(
                Client::from_config(cfg)
                    .await
                    .map_err(|source| BenchError::Connect { addr, source })?,
            )
        };
        targets.push(target);
    }
    Ok(targets)
}

fn select_tests(args: &BenchArgs) -> Result<Vec<Test>, BenchError> {
    if !args.command.is_empty() {
        let argv: Vec<Bytes> = if args.command.len() == 1 {
            redline_resp::split_args(args.command[0].as_bytes()).ok_or(BenchError::BadCommand)?
        } else {
            args.command
                .iter()
                .map(|a| Bytes::copy_from_slice(a.as_bytes()))
                .collect()
        };
        if argv.is_empty() {
            return Err(BenchError::BadCommand);
        }
        return Ok(vec![Test::custom(argv)]);
    }
    let ids: Vec<&str> = match &args.tests {
        Some(list) if list.trim().eq_ignore_ascii_case("all") => workload::ALL.to_vec(),
        Some(list) => list.split(',').filter(|t| !t.trim().is_empty()).collect(),
        None => workload::STANDARD.to_vec(),
    };
    ids.into_iter()
        .map(|id| Test::named(id).ok_or_else(|| BenchError::UnknownTest(id.to_owned())))
        .collect()
}

/// Prints one finished test as the flags ask.
fn emit(args: &BenchArgs, row: &Row) {
    let mut stdout = std::io::stdout().lock();
    let text = if args.json {
        format!("{}\n", row.json())
    } else if args.csv {
        format!("{}\n", row.csv_line())
    } else if args.quiet {
        format!("{}\n{}", row.quiet_line(), row.problems())
    } else {
        format!("{}\n", row.block())
    };
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}
