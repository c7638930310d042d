//! `redline cli`: redis-cli's one-shot mode, REPL and pipe mode.

use std::process::ExitCode;

use clap::Args;

use crate::conn::ConnArgs;

/// Flags of `redline cli`.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub(crate) struct CliArgs {
    #[command(flatten)]
    pub(crate) conn: ConnArgs,
    /// Database number.
    #[arg(short = 'n', value_name = "DB")]
    pub(crate) db: Option<u32>,
    /// The command to run once; without it, a REPL (terminal) or one command per line (pipe).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) command: Vec<String>,
}

/// Runs `redline cli`.
pub(crate) fn run(args: CliArgs) -> ExitCode {
    if let Err(e) = args.conn.config() {
        eprintln!("{e}");
    }
    eprintln!("redline cli: not implemented yet");
    ExitCode::from(1)
}
