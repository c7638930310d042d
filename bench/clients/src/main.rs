//! `bench-clients`: the same workload through redline, redis-rs and fred.
//!
//! One run (`--client redline --op get --callers 16`) prints one JSON line. Several
//! clients, ops or caller counts (comma lists), or `--compare`, run each combination in a
//! child process, alternating clients (A B C A B C ...) for `--rounds` rounds, then print
//! one summary line per client with medians and the ratio to the first client.
//! See `bench/clients/README.md`.

mod backends;
mod compare;
mod harness;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use harness::{Op, RunConfig};

/// Command-line flags.
#[derive(Parser, Debug, Clone)]
#[command(
    version,
    about = "Side-by-side Redis client benchmark (redline, redis-rs, fred)"
)]
pub struct Args {
    /// Client(s) to run (comma list for a comparison; the first is the ratio baseline).
    #[arg(long, value_delimiter = ',', default_value = "redline")]
    client: Vec<String>,
    /// Server URL (a seed node with --cluster).
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    url: String,
    /// Talk to a Redis Cluster (uses each client's cluster variant).
    #[arg(long)]
    cluster: bool,
    /// Operation(s): get, set, mixed (80% GET / 20% SET).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "get")]
    op: Vec<Op>,
    /// Concurrent caller tasks (comma list allowed).
    #[arg(long, value_delimiter = ',', default_value = "16")]
    callers: Vec<usize>,
    /// Measured seconds per run.
    #[arg(long, default_value_t = 5.0)]
    duration_secs: f64,
    /// Seconds run before measuring.
    #[arg(long, default_value_t = 1.0)]
    warmup_secs: f64,
    /// Bytes per value.
    #[arg(long, default_value_t = 64)]
    value_size: usize,
    /// Distinct keys (preloaded before each run).
    #[arg(long, default_value_t = 10_000)]
    keys: usize,
    /// Tokio worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Compare mode even for a single combination.
    #[arg(long)]
    compare: bool,
    /// Rounds in compare mode.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// List the registered clients and exit.
    #[arg(long)]
    list: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.list {
        for e in backends::BACKENDS {
            let mode = if e.cluster { "cluster" } else { "standalone" };
            println!("{:<18} {:<10} {}", e.name, mode, e.about);
        }
        return ExitCode::SUCCESS;
    }
    for name in &args.client {
        if backends::find(name, args.cluster).is_none() {
            eprintln!(
                "unknown client {name:?} for {} mode (see --list)",
                if args.cluster {
                    "cluster"
                } else {
                    "standalone"
                }
            );
            return ExitCode::from(2);
        }
    }
    let several = args.client.len() * args.op.len() * args.callers.len() > 1;
    let result = if args.compare || several {
        compare::run(&args)
    } else {
        single(&args)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-clients: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One client, one op, one caller count: prints one JSON line.
fn single(args: &Args) -> Result<(), harness::BoxError> {
    let (Some(client), Some(&op), Some(&callers)) =
        (args.client.first(), args.op.first(), args.callers.first())
    else {
        return Err("nothing to run".into());
    };
    let entry = backends::find(client, args.cluster).ok_or("unknown client")?;
    let cfg = RunConfig {
        client: client.clone(),
        url: args.url.clone(),
        cluster: args.cluster,
        op,
        callers: callers.max(1),
        duration: Duration::from_secs_f64(args.duration_secs.max(0.1)),
        warmup: Duration::from_secs_f64(args.warmup_secs.max(0.0)),
        value_size: args.value_size,
        keys: args.keys,
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = args.threads {
        rt.worker_threads(n.max(1));
    }
    let report = rt.build()?.block_on((entry.run)(cfg.clone()))?;
    println!("{}", report.to_json(&cfg));
    Ok(())
}
