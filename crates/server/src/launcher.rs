//! The server as a program: what `redline-server` and `redline server` both run, with
//! redis-server's arguments, start-up log lines, dump loading, signals and exit save.

use std::process::ExitCode;

use crate::{log, Config, Server};

/// Runs the server as redis-server would with these arguments (without the program
/// name): `-v`, `-h`, or an optional config file then `--directive value` pairs. Loads
/// the dump file, serves until SHUTDOWN, SIGTERM or SIGINT, and saves on the way out
/// when save points are configured. `program` names the command in the usage text.
///
/// ```no_run
/// let code = redline_server::launcher::run(
///     "redline-server",
///     &["--port".to_string(), "7777".to_string()],
/// );
/// ```
pub fn run(program: &str, args: &[String]) -> ExitCode {
    if let Some(first) = args.first() {
        match first.as_str() {
            "-v" | "--version" => {
                // Redis's own line, so scripts that read `v=` get the Redis version
                // this server answers as (INFO says the same); ours comes last.
                println!(
                    "Redis server v={} sha=00000000:0 malloc=libc bits={} build=0 redline-server={}",
                    crate::cmd::connection::REDIS_VERSION,
                    usize::BITS,
                    env!("CARGO_PKG_VERSION"),
                );
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => {
                println!("Usage: {program} [/path/to/redis.conf] [options]\n       {program} -v or --version\n       {program} -h or --help\n\nExamples:\n       {program} (run the server with default config)\n       {program} /etc/redis/6379.conf\n       {program} --port 7777\n       {program} /etc/myredis.conf --loglevel verbose");
                return ExitCode::SUCCESS;
            }
            _ => {}
        }
    }
    let mut config = match Config::from_args(args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    // Before any thread starts: the environment's strings move (see `proc_title`).
    let titles = if config.param_bool("set-proc-title") {
        crate::proc_title::init()
    } else {
        Ok(())
    };
    // Like redis-server: `dir` is the working directory, where dump files and logs go.
    if !config.param("dir").is_empty() {
        if let Err(e) = config.enter_dir() {
            let dir = config.param("dir");
            eprintln!("Can't chdir to '{dir}': {}", crate::cstr::strerror(&e));
            return ExitCode::from(1);
        }
    }
    // The log first (it starts no thread, and a log file stays open across the fork),
    // so the supervisor's lines are logged.
    if let Err(e) = log::init(&config) {
        eprintln!("Can't open the log file: {e}");
        return ExitCode::from(1);
    }
    crate::supervision::ignore_hangup();
    // As in Redis: the supervisor is found before the fork, and a supervised server
    // stays in the foreground whatever `daemonize` says.
    let supervised = crate::supervision::detect(&mut config);
    let background = config.daemonize && !supervised;
    if background {
        if let Err(e) = crate::supervision::daemonize() {
            tracing::warn!("Can't fork into the background: {e}");
            return ExitCode::from(1);
        }
    }
    if let Err(e) = titles {
        tracing::warn!("The process title is not set: {e}");
    }
    if let Err(e) = crate::crash::install(&config.logfile) {
        tracing::warn!("Crash reports are off: {e}");
    }
    let runtime = match crate::runtime::build(config.effective_workers(), "redline-server") {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("Can't start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(serve(config, background))
}

async fn serve(mut config: Config, background: bool) -> ExitCode {
    tracing::warn!("oO0OoO0OoO0Oo redline-server is starting oO0OoO0OoO0Oo");
    tracing::warn!(
        "redline-server version={}, pid={}, just started",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    );
    let workers = config.effective_workers();
    let shards = config.effective_shards();
    // As Redis does before it listens: `maxclients` fits the open-files limit.
    match crate::open_files::fit(config.maxclients) {
        crate::open_files::Fitted::Fits => {}
        crate::open_files::Fitted::Lowered(maxclients) => config.maxclients = maxclients,
        crate::open_files::Fitted::TooLow(_) => return ExitCode::from(1),
    }
    // Before the ports open (Redis writes it just after): whoever sees the port open
    // finds the pid file there. A server that cannot bind removes it again.
    crate::supervision::write_pid_file(&mut config, background);
    let pidfile = config.param("pidfile").to_string();
    let server = match Server::bind(config).await {
        Ok(server) => server,
        Err(e) => {
            crate::supervision::remove_pid_file(&pidfile);
            tracing::warn!("{e}");
            return ExitCode::from(1);
        }
    };
    let port = server.local_addr().port();
    tracing::info!(
        "Server initialized: port {port}, {workers} worker threads, {shards} shards per database"
    );
    let shared = server.shared();
    log_banner(&shared.config.read(), port);
    shared.apply_oom_score(&shared.config.read());
    shared.apply_proc_title(&shared.config.read());
    if let Err(e) = crate::acl::file::load_at_start(&shared) {
        tracing::warn!("{e}");
        return ExitCode::from(1);
    }
    // With appendonly yes the AOF is the dataset, as in Redis (loaded before serving);
    // else the dump file, loaded while clients are served with LOADING replies.
    let appendonly = shared.config.read().appendonly;
    let load = if appendonly {
        if let Err(e) = crate::persist::aof::start(&shared) {
            tracing::warn!("{e}");
            return ExitCode::from(1);
        }
        None
    } else {
        // The manifest is read either way, as Redis does: a later BGREWRITEAOF or
        // `appendonly yes` numbers its files after it.
        if let Err(crate::persist::aof::LoadError::Bad(e)) =
            crate::persist::aof::read_manifest(&shared)
        {
            tracing::warn!("{e}");
            return ExitCode::from(1);
        }
        match crate::persist::snapshot::open_at_start(&shared) {
            Err(e) => {
                tracing::warn!("{e}");
                return ExitCode::from(1);
            }
            Ok(None) => None,
            Ok(Some(dump)) => {
                // Loading from before the first client is served: reading the file
                // takes a moment, and no PING may be answered PONG meanwhile.
                shared.persistence.loading.begin(0);
                let loader = shared.clone();
                Some(async move {
                    tokio::task::spawn_blocking(move || {
                        crate::persist::snapshot::load_at_start(&loader, dump)
                    })
                    .await
                    .unwrap_or_else(|e| Err(format!("Fatal error loading the DB: {e}. Exiting.")))
                })
            }
        }
    };
    tokio::spawn({
        let shared = shared.clone();
        async move {
            // A signal schedules a shutdown as SHUTDOWN does, with the flags of its
            // `shutdown-on-sig*` parameter; the cron starts it (see
            // `persist::graceful`). As in Redis, a save that fails leaves the server
            // running (the next signal tries again), and a second SIGINT while one is
            // scheduled or under way exits at once.
            loop {
                let signal = wait_for_signal().await;
                if graceful_signal(&shared, signal) {
                    tracing::warn!("You insist... exiting now.");
                    crate::persist::snapshot::remove_temp_files(&shared);
                    std::process::exit(1);
                }
            }
        }
    });
    // A failed load leaves the server loading: nothing below saves over the file.
    let result = server.run_loading(load).await;
    if shared.scripting.flags.busy() {
        // The script still holds its locks and its worker: the runtime could not wind
        // down, so the process ends here, as redis-server exits under a busy script.
        std::process::exit(i32::from(result.is_err()));
    }
    // The process ends next: the dataset is left to the kernel, which takes a process's
    // memory back at once, instead of being freed key by key (1.7M keys took 0.5-1 s
    // more between SHUTDOWN and exit, every restart). Nothing the shutdown needs is
    // done in a destructor of the shared state: saves, the AOF's fsync and the files
    // to remove are done by now.
    std::mem::forget(shared);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::warn!("{e}");
            ExitCode::from(1)
        }
    }
}

/// The start-up banner: with `always-show-logo yes` a block naming the version, mode,
/// port and PID (tools that start servers, Redis's test harness among them, find the
/// process by its ` PID: ` line), else the one line redis-server logs instead.
fn log_banner(config: &crate::config::Config, port: u16) {
    let mode = if config.param_bool("cluster-enabled") {
        "cluster"
    } else {
        "standalone"
    };
    if config.param("always-show-logo") == "yes" {
        tracing::warn!(
            "\n    redline-server {} (Redis {} compatible) 64 bit\n    Running in {mode} mode\n    Port: {port}\n    PID: {}\n",
            env!("CARGO_PKG_VERSION"),
            crate::cmd::connection::REDIS_VERSION,
            std::process::id()
        );
    } else {
        tracing::info!("Running mode={mode}, port={port}.");
    }
}

/// The signals that shut the server down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    Term,
    Int,
}

impl Signal {
    /// The parameter that says what the signal saves.
    fn param(self) -> &'static str {
        match self {
            Signal::Term => "shutdown-on-sigterm",
            Signal::Int => "shutdown-on-sigint",
        }
    }
}

/// Logs `signal` the way redis-server does and schedules its shutdown; true when it is
/// a SIGINT that insists (a signal's shutdown was already scheduled): exit now.
fn graceful_signal(shared: &crate::shared::Shared, signal: Signal) -> bool {
    use crate::persist::graceful;
    if signal == Signal::Int && graceful::signal_scheduled(shared) {
        return true;
    }
    let loading = shared.persistence.loading.is_active();
    if loading {
        tracing::warn!("Received shutdown signal during loading, scheduling shutdown.");
    } else if signal == Signal::Term {
        tracing::warn!("Received SIGTERM scheduling shutdown...");
    } else {
        tracing::warn!("Received SIGINT scheduling shutdown...");
    }
    graceful::schedule_for_signal(shared, signal.param());
    if loading {
        // The cron does not run before the load at start ends.
        graceful::start_signalled(shared);
    }
    false
}

/// The next SIGTERM or SIGINT.
async fn wait_for_signal() -> Signal {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            let _ = tokio::signal::ctrl_c().await;
            return Signal::Int;
        };
        tokio::select! {
            _ = term.recv() => Signal::Term,
            _ = int.recv() => Signal::Int,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        Signal::Int
    }
}
