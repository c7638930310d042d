//! Server-assisted client-side caching: hot reads served from memory, invalidated by the
//! server the moment another client changes the key.
//!
//! Run against a local server: `cargo run -p redline --example client_cache`
//! (or set `REDIS_URL`). Needs RESP3 (Redis 6+ or redline-server).

use std::process::ExitCode;
use std::time::Duration;

use redline::{Client, Config};

#[tokio::main]
async fn main() -> ExitCode {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    match run(&url).await {
        Ok(()) => {
            println!("client_cache: all checks passed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("client_cache failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Caches a value, changes it from another client, and shows the cache following.
pub async fn run(url: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    // At most 32 MiB cached; an entry lives at most 5 minutes (invalidations come first).
    let cfg = Config::from_url(url)?.cache(32 << 20, Duration::from_secs(300));
    let cached = Client::from_config(cfg).await?;
    let other = Client::connect(url).await?;

    other.set("example:price", "10").await?;
    let first = cached.cached_get("example:price").await?; // from the server
    let again = cached.cached_get("example:price").await?; // from memory
    check(first == again, "the second read differs from the first")?;

    // Another client changes the key; the server pushes an invalidation to `cached`.
    // Once any command of `cached` has made a round trip, the push has been applied.
    other.set("example:price", "12").await?;
    cached.ping().await?;
    let now = cached.cached_get("example:price").await?;
    check(
        now.as_deref() == Some(&b"12"[..]),
        "the cache served a changed key",
    )?;

    // Writes through the caching client are visible to its next cached read at once.
    cached.set("example:price", "15").await?;
    let mine = cached.cached_get("example:price").await?;
    check(
        mine.as_deref() == Some(&b"15"[..]),
        "a write was not read back",
    )?;

    let stats = cached.cache_stats().unwrap_or_default();
    println!(
        "hits {} misses {} invalidations {} entries {} ({} bytes)",
        stats.hits, stats.misses, stats.invalidations, stats.entries, stats.bytes
    );
    check(stats.hits >= 1, "no read was served from the cache")?;
    other.del(["example:price"]).await?;
    Ok(())
}

fn check(ok: bool, what: &str) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    if ok {
        Ok(())
    } else {
        Err(what.into())
    }
}
