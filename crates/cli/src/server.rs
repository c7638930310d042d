//! `redline server`: redline-server in the foreground, with redis-server's arguments
//! (`[/path/to/redis.conf] [--directive value]...`), parsed by the server crate itself.

use std::process::ExitCode;

use clap::Args;

/// `redline server [/path/to/redis.conf] [--directive value]...`, as redis-server takes them.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub(crate) struct ServerArgs {
    /// redis-server style arguments: an optional config file, then `--directive value` pairs.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) args: Vec<String>,
}

/// Runs the server until SIGTERM, SIGINT or SHUTDOWN, exactly as `redline-server` does.
pub(crate) fn run(args: ServerArgs) -> ExitCode {
    redline_server::launcher::run("redline server", &args.args)
}
