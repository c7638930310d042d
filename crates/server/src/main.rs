//! The `redline-server` binary: `redline-server [/path/to/redis.conf] [--directive value]...`
//! like redis-server.

use std::process::ExitCode;

use redline_server::{log, Config, Server};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(first) = args.first() {
        match first.as_str() {
            "-v" | "--version" => {
                println!(
                    "redline-server v={} (Redis {} compatible)",
                    env!("CARGO_PKG_VERSION"),
                    redline_server::cmd::server::REDIS_VERSION
                );
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => {
                println!("Usage: redline-server [/path/to/redis.conf] [options]\n       redline-server -v or --version\n       redline-server -h or --help\n\nExamples:\n       redline-server (run the server with default config)\n       redline-server /etc/redis/6379.conf\n       redline-server --port 7777\n       redline-server /etc/myredis.conf --loglevel verbose");
                return ExitCode::SUCCESS;
            }
            _ => {}
        }
    }
    let config = match Config::from_args(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    // Like redis-server: `dir` is the working directory, where dump files and logs go.
    let dir = config.param("dir");
    if !dir.is_empty() {
        if let Err(e) = std::env::set_current_dir(dir) {
            eprintln!("Can't chdir to '{dir}': {e}");
            return ExitCode::from(1);
        }
    }
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
    tracing::warn!("oO0OoO0OoO0Oo redline-server is starting oO0OoO0OoO0Oo");
    tracing::warn!(
        "redline-server version={}, pid={}, just started",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    );
    let workers = config.effective_workers();
    let shards = config.effective_shards();
    let server = match Server::bind(config).await {
        Ok(server) => server,
        Err(e) => {
            tracing::warn!("{e}");
            return ExitCode::from(1);
        }
    };
    tracing::info!(
        "Server initialized: port {}, {workers} worker threads, {shards} shards per database",
        server.local_addr().port()
    );
    let stop = server.shutdown_handle();
    tokio::spawn(async move {
        wait_for_signal().await;
        stop.shutdown();
    });
    match server.run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::warn!("{e}");
            ExitCode::from(1)
        }
    }
}

/// SIGTERM or SIGINT, logged the way redis-server logs them.
async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = term.recv() => tracing::warn!("Received SIGTERM scheduling shutdown..."),
            _ = int.recv() => tracing::warn!("Received SIGINT scheduling shutdown..."),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
