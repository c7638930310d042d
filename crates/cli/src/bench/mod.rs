//! `redline bench`: redis-benchmark's flags, measured through the redline client.

use std::process::ExitCode;

use clap::Args;

use crate::conn::ConnArgs;

/// Flags of `redline bench`.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub(crate) struct BenchArgs {
    #[command(flatten)]
    pub(crate) conn: ConnArgs,
}

/// Runs `redline bench`.
pub(crate) fn run(args: BenchArgs) -> ExitCode {
    let _ = args.conn.names_server();
    eprintln!("redline bench: not implemented yet");
    ExitCode::from(1)
}
