//! redline in one page: connect, set/get/delete a key, then 16 tasks each sending a
//! pipeline of 1,000 INCRs over the same client.
//!
//! Run against a local server: `cargo run -p redline --example quickstart`
//! (or set `REDIS_URL`, e.g. `rediss://user:pass@host:6380/0`).

use std::process::ExitCode;

use redline::Client;

#[tokio::main]
async fn main() -> ExitCode {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    match run(&url).await {
        Ok(()) => {
            println!("quickstart: all checks passed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("quickstart failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Connects to `url` and runs every check; the first failure is the error.
pub async fn run(url: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let client = Client::connect(url).await?;

    // One key: set, read back, delete.
    client.set("quickstart:greeting", "hello").await?;
    let value = client.get("quickstart:greeting").await?;
    check(
        value.as_deref() == Some(&b"hello"[..]),
        "GET returned the value SET",
    )?;
    check(
        client.del(["quickstart:greeting"]).await? == 1,
        "DEL removed the key",
    )?;

    // 16 tasks share the client (and its one connection); each sends 1,000 INCRs as one
    // pipeline, which goes out in one write.
    client.del(["quickstart:counter"]).await?;
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut pipeline = client.pipeline();
            for _ in 0..1_000 {
                pipeline.incr("quickstart:counter");
            }
            pipeline.query::<Vec<i64>>().await
        }));
    }
    for task in tasks {
        let counts = task.await??;
        // A pipeline's commands run back to back: its counts are consecutive.
        check(counts.len() == 1_000, "one reply per INCR")?;
        check(
            counts.windows(2).all(|w| w[1] == w[0] + 1),
            "INCRs ran in order",
        )?;
    }
    let total: i64 = client
        .query(redline::Cmd::new("GET").arg("quickstart:counter"))
        .await?;
    check(total == 16_000, "the counter reached 16,000")?;
    client.del(["quickstart:counter"]).await?;
    Ok(())
}

fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("check failed: {what}"))
    }
}
