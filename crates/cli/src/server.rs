//! `redline server`: redline-server in the foreground.

use std::process::ExitCode;

use clap::Args;

/// `redline server [/path/to/redis.conf] [--directive value]...`, as redis-server takes them.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub(crate) struct ServerArgs {
    /// redis-server style arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) args: Vec<String>,
}

/// Runs `redline server`.
pub(crate) fn run(args: ServerArgs) -> ExitCode {
    let _ = args;
    eprintln!("redline server: not implemented yet");
    ExitCode::from(1)
}
