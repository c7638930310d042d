//! Writing through a Sentinel failover: a counter is incremented every 50 ms through a
//! `redis+sentinel://` URL; errors (expected only while Sentinel replaces the master) are
//! reported, and so is the server answering, so a failover (`SENTINEL FAILOVER mymaster`,
//! or killing the master) shows the client moving to the new master by itself.
//!
//! `SENTINEL_URL=redis+sentinel://127.0.0.1:26379/mymaster cargo run -p redline --example sentinel`
//! (`SECONDS=30` by default).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use redline::{Client, Cmd, Frame};

#[tokio::main]
async fn main() -> ExitCode {
    let url = std::env::var("SENTINEL_URL")
        .unwrap_or_else(|_| "redis+sentinel://127.0.0.1:26379/mymaster".into());
    let seconds = std::env::var("SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    match run(&url, Duration::from_secs(seconds)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sentinel example failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Increments `sentinel-example:counter` for `duration`, printing every change of
/// server (by its `run_id`) and every error.
async fn run(url: &str, duration: Duration) -> redline::Result<()> {
    let client = Client::connect(url).await?;
    let start = Instant::now();
    let mut server = String::new();
    while start.elapsed() < duration {
        match client.incr("sentinel-example:counter").await {
            Ok(n) => {
                let now = run_id(&client).await.unwrap_or_default();
                if now != server {
                    println!(
                        "{:>6.1}s counter={n} on server {now}",
                        start.elapsed().as_secs_f64()
                    );
                    server = now;
                }
            }
            Err(e) => println!("{:>6.1}s error: {e}", start.elapsed().as_secs_f64()),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// The answering server's `run_id` (INFO server).
async fn run_id(client: &Client) -> redline::Result<String> {
    let info: Frame = client.query(Cmd::new("INFO").arg("server")).await?;
    let text = match info {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        Frame::Verbatim { text, .. } => String::from_utf8_lossy(&text).into_owned(),
        _ => String::new(),
    };
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix("run_id:"))
        .unwrap_or("?")
        .trim()
        .to_string())
}
