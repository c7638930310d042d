//! The tokio runtime a server runs on.
//!
//! Two settings matter beyond the worker count. Tokio's LIFO slot is turned off: with it,
//! the last connection woken in a reactor turn runs first, so of two commands sent one
//! after the other on two connections (a blocking XREADGROUP, then a DEL of its stream)
//! the second could run first. Redis runs them in the order they arrived; without the
//! slot, connections woken together run in the order the kernel reported them. Turning
//! it off is a tokio unstable API: builds without `--cfg tokio_unstable` (set in
//! `.cargo/config.toml`) still work and only lose that ordering.
//!
//! And the task-poll hooks (also unstable) let a task that changes data write the change to
//! the replicas itself ([`crate::repl::direct`]); without them every change wakes the
//! replica links' tasks.

use std::io;

/// A multi-thread runtime of `workers` threads, with I/O and timers, for a server.
///
/// ```no_run
/// # fn demo() -> std::io::Result<()> {
/// use redline_server::{runtime, Config, Server};
///
/// let config = Config { port: 0, ..Config::default() };
/// let rt = runtime::build(config.effective_workers(), "redline-server")?;
/// rt.block_on(async move {
///     let server = Server::bind(config).await?;
///     server.run().await
/// })?;
/// # Ok(()) }
/// ```
pub fn build(workers: usize, thread_name: &str) -> io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .worker_threads(workers.max(1))
        .thread_name(thread_name)
        .enable_all();
    #[cfg(tokio_unstable)]
    builder
        .disable_lifo_slot()
        .on_before_task_poll(|_| crate::repl::direct::task_started())
        .on_after_task_poll(|_| crate::repl::direct::task_ended());
    builder.build()
}
