//! `redline fill`: loads random keys as fast as the server accepts them.

use std::process::ExitCode;

use clap::Args;

use crate::conn::ConnArgs;

/// Flags of `redline fill`.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub(crate) struct FillArgs {
    #[command(flatten)]
    pub(crate) conn: ConnArgs,
}

/// Runs `redline fill`.
pub(crate) fn run(args: FillArgs) -> ExitCode {
    if let Err(e) = args.conn.config() {
        eprintln!("{e}");
    }
    eprintln!("redline fill: not implemented yet");
    ExitCode::from(1)
}
