//! The quickstart example is the first code a user reads, so its code runs here against a
//! real redis-server: the example's file is compiled into this test and its `run` called
//! with the server's URL (what `main` does with `REDIS_URL`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../examples/quickstart.rs"]
#[allow(dead_code)] // its `main` is the example's, not ours
mod quickstart;

use redline_testkit::RedisServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_example_passes_against_redis() {
    let server = RedisServer::start().unwrap();
    if let Err(e) = quickstart::run(&server.url()).await {
        panic!("quickstart failed: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_example_reports_an_unreachable_server() {
    // A port nothing listens on: an error to print, not a hang or a panic.
    let closed = redline_testkit::ClosedPort::new().unwrap();
    let err = quickstart::run(&format!("redis://{}", closed.addr()))
        .await
        .unwrap_err();
    assert!(!err.to_string().is_empty());
}
