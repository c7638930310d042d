//! The `redline` command: one binary, one subcommand per tool.
//!
//! This file only dispatches; each subcommand lives in its own module and the
//! connection flags shared by all of them (redis-cli's `-h -p -a -u --tls ...`) in
//! [`conn`].

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod cli;
mod conn;
mod fill;
mod server;
mod tunnel;

/// A Redis toolkit: interactive shell, bulk loader, benchmark, TLS tunnel and server.
#[derive(Parser, Debug)]
#[command(name = "redline", version, about)]
struct Redline {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Interactive shell and one-shot commands, like redis-cli.
    Cli(cli::CliArgs),
    /// Load random data as fast as the server accepts it.
    Fill(fill::FillArgs),
    /// Throughput and latency benchmark, like redis-benchmark.
    Bench(bench::BenchArgs),
    /// Run redline-server in the foreground (redis-server style arguments).
    Server(server::ServerArgs),
    /// TLS-terminating proxy for a Redis server or cluster (standalone, smart, pinned).
    Tunnel(tunnel::TunnelArgs),
}

fn main() -> ExitCode {
    let args = Redline::parse();
    match args.command {
        Command::Cli(args) => cli::run(args),
        Command::Fill(args) => fill::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Server(args) => server::run(args),
        Command::Tunnel(args) => tunnel::run(args),
    }
}
