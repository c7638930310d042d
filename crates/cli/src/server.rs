//! `redline server`: redline-server in the foreground, with redis-server's arguments
//! (`[/path/to/redis.conf] [--directive value]...`), parsed by the server crate itself.

use std::process::ExitCode;

use clap::Args;
use redline_server::{log, Config, Server};

/// `redline server [/path/to/redis.conf] [--directive value]...`, as redis-server takes them.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub(crate) struct ServerArgs {
    /// redis-server style arguments: an optional config file, then `--directive value` pairs.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) args: Vec<String>,
}

/// Runs the server until SIGTERM, SIGINT or SHUTDOWN.
pub(crate) fn run(args: ServerArgs) -> ExitCode {
    match args.args.first().map(String::as_str) {
        Some("-v" | "--version") => {
            println!(
                "redline-server v={} (Redis {} compatible)",
                env!("CARGO_PKG_VERSION"),
                redline_server::cmd::server::REDIS_VERSION
            );
            return ExitCode::SUCCESS;
        }
        Some("-h" | "--help") => {
            println!("Usage: redline server [/path/to/redis.conf] [options]\n\nExamples:\n       redline server (run the server with default config)\n       redline server /etc/redis/6379.conf\n       redline server --port 7777\n       redline server /etc/myredis.conf --loglevel verbose");
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let config = match Config::from_args(&args.args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    if let Err(e) = log::init(&config) {
        eprintln!("Can't open the log file: {e}");
        return ExitCode::from(1);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.effective_workers())
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("Can't start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(serve(config))
}

async fn serve(config: Config) -> ExitCode {
    let server = match Server::bind(config).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("Could not start redline-server: {e}");
            return ExitCode::from(1);
        }
    };
    eprintln!(
        "redline-server {} ready to accept connections on {}",
        env!("CARGO_PKG_VERSION"),
        server.local_addr()
    );
    let stop = server.shutdown_handle();
    tokio::spawn(async move {
        wait_for_signal().await;
        stop.shutdown();
    });
    match server.run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

/// SIGTERM or SIGINT.
async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
