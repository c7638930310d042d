//! Clean shutdown: SIGINT or SIGTERM cancels one token that every accept loop and every
//! relayed connection watches; the process then waits (briefly) for tracked tasks to end,
//! so upstream connections are closed properly (TLS close_notify) rather than dropped.

use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long connections get to close once shutdown starts.
const GRACE: Duration = Duration::from_secs(2);

/// The shared shutdown signal and the set of tasks that must end before exit.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shutdown {
    token: CancellationToken,
    tasks: TaskTracker,
}

impl Shutdown {
    /// Resolves once shutdown has begun.
    pub(crate) async fn cancelled(&self) {
        self.token.cancelled().await
    }

    /// Begins shutdown (also used when start-up fails halfway).
    pub(crate) fn cancel(&self) {
        self.token.cancel()
    }

    /// Spawns a task that shutdown waits for.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn(task);
    }

    /// Waits for SIGINT or SIGTERM (or an earlier [`Shutdown::cancel`]), cancels, and gives
    /// tracked tasks [`GRACE`] to finish. Returns the signal's name. The handlers are
    /// installed when this is called, before its first await: call it before telling
    /// anyone the tunnel is ready, or a signal sent at once would kill the process.
    pub(crate) fn run_until_signal(
        &self,
    ) -> std::io::Result<impl std::future::Future<Output = &'static str> + '_> {
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        Ok(async move { self.until(&mut term, &mut int).await })
    }

    async fn until(
        &self,
        term: &mut tokio::signal::unix::Signal,
        int: &mut tokio::signal::unix::Signal,
    ) -> &'static str {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
            _ = self.token.cancelled() => "shutdown",
        };
        self.token.cancel();
        self.tasks.close();
        if tokio::time::timeout(GRACE, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("connections still open after {GRACE:?}; exiting anyway");
        }
        name
    }
}
