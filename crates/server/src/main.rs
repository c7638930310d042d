//! The `redline-server` binary: `redline-server [/path/to/redis.conf] [--directive value]...`
//! like redis-server.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    redline_server::launcher::run("redline-server", &args)
}
