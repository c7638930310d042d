//! `rest-cache`: the cache-aside service. Configured by environment variables (see
//! `rest_cache::Config`); stops cleanly on SIGTERM or Ctrl-C.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(std::io::stderr)
        .init();
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("rest-cache: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let config = rest_cache::Config::from_env()?;
    let router = rest_cache::build(&config).await?;
    let listener = tokio::net::TcpListener::bind(("0.0.0.0", config.port)).await?;
    // Scripts wait for this line (or poll the port) before sending load.
    println!(
        "rest-cache listening on {} backend={} cluster={}",
        listener.local_addr()?,
        config.backend.name(),
        config.redis_cluster
    );
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown())
        .await?;
    Ok(())
}

async fn shutdown() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
