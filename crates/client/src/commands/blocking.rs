//! Blocking commands (BLPOP, BRPOP, BLMOVE, BZPOPMIN, BZPOPMAX, WAIT). They run on a
//! dedicated connection, so a command waiting for data or replicas never holds up other
//! callers' commands; the wait is bounded by the command's own timeout plus the client's
//! command timeout.

use std::time::Duration;

use bytes::Bytes;

use crate::client::Client;
use crate::cmd::{Cmd, ToArg};
use crate::error::Error;

impl Client {
    async fn blocking<T: crate::FromReply>(&self, cmd: Cmd, block: Duration) -> Result<T, Error> {
        let mut conn = self.dedicated().await?;
        conn.query_within(cmd, self.blocking_limit(block)).await
    }

    /// `BLPOP key... timeout`: the key and the element popped from the head of the first
    /// non-empty list, waiting up to `timeout` (zero waits forever); `None` on timeout.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use std::time::Duration;
    ///
    /// if let Some((queue, job)) = client.blpop(["jobs:high", "jobs:low"], Duration::from_secs(5)).await? {
    ///     println!("{queue:?}: {job:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn blpop(
        &self,
        keys: impl IntoIterator<Item = impl ToArg>,
        timeout: Duration,
    ) -> Result<Option<(Bytes, Bytes)>, Error> {
        let cmd = Cmd::new("BLPOP").args(keys).arg(timeout.as_secs_f64());
        self.blocking(cmd, timeout).await
    }

    /// `BRPOP key... timeout`: like [`blpop`](Self::blpop), popping from the tail.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use std::time::Duration;
    ///
    /// let popped = client.brpop(["jobs"], Duration::from_secs(1)).await?;
    /// # let _ = popped;
    /// # Ok(()) }
    /// ```
    pub async fn brpop(
        &self,
        keys: impl IntoIterator<Item = impl ToArg>,
        timeout: Duration,
    ) -> Result<Option<(Bytes, Bytes)>, Error> {
        let cmd = Cmd::new("BRPOP").args(keys).arg(timeout.as_secs_f64());
        self.blocking(cmd, timeout).await
    }

    /// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`: the moved element, or
    /// `None` on timeout. `from_left` pops from the head of `source`, `to_left` pushes to
    /// the head of `destination`.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use std::time::Duration;
    ///
    /// // Reliable queue: move the oldest job to "processing" atomically.
    /// let job = client.blmove("jobs", "processing", false, true, Duration::from_secs(5)).await?;
    /// # let _ = job;
    /// # Ok(()) }
    /// ```
    pub async fn blmove(
        &self,
        source: impl ToArg,
        destination: impl ToArg,
        from_left: bool,
        to_left: bool,
        timeout: Duration,
    ) -> Result<Option<Bytes>, Error> {
        let side = |left: bool| if left { "LEFT" } else { "RIGHT" };
        let cmd = Cmd::new("BLMOVE")
            .arg(source)
            .arg(destination)
            .arg(side(from_left))
            .arg(side(to_left))
            .arg(timeout.as_secs_f64());
        self.blocking(cmd, timeout).await
    }

    /// `BZPOPMIN key... timeout`: key, member and score of the lowest-scored member of the
    /// first non-empty sorted set; `None` on timeout.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use std::time::Duration;
    ///
    /// if let Some((key, member, score)) = client.bzpopmin(["tasks"], Duration::from_secs(1)).await? {
    ///     println!("{key:?} {member:?} {score}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn bzpopmin(
        &self,
        keys: impl IntoIterator<Item = impl ToArg>,
        timeout: Duration,
    ) -> Result<Option<(Bytes, Bytes, f64)>, Error> {
        let cmd = Cmd::new("BZPOPMIN").args(keys).arg(timeout.as_secs_f64());
        self.blocking(cmd, timeout).await
    }

    /// `BZPOPMAX key... timeout`: like [`bzpopmin`](Self::bzpopmin), highest score first.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use std::time::Duration;
    ///
    /// let top = client.bzpopmax(["tasks"], Duration::ZERO).await?; // waits for ever
    /// # let _ = top;
    /// # Ok(()) }
    /// ```
    pub async fn bzpopmax(
        &self,
        keys: impl IntoIterator<Item = impl ToArg>,
        timeout: Duration,
    ) -> Result<Option<(Bytes, Bytes, f64)>, Error> {
        let cmd = Cmd::new("BZPOPMAX").args(keys).arg(timeout.as_secs_f64());
        self.blocking(cmd, timeout).await
    }

    /// `WAIT numreplicas timeout`: blocks until the writes made *on the connection that
    /// runs it* reached `replicas` replicas, or `timeout` passed (zero waits forever);
    /// returns how many replicas acknowledged. WAIT runs on a dedicated connection (it
    /// would stall the shared one), so it only covers writes sent on that same
    /// connection: send them through the same [`DedicatedConnection`](crate::DedicatedConnection)
    /// and call `WAIT` there with [`query`](crate::DedicatedConnection::query). On its
    /// own, it answers how many replicas are connected and caught up.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use std::time::Duration;
    ///
    /// let replicas = client.wait(1, Duration::from_millis(100)).await?;
    /// println!("{replicas} replica(s) acknowledged");
    /// # Ok(()) }
    /// ```
    pub async fn wait(&self, replicas: u64, timeout: Duration) -> Result<u64, Error> {
        let millis = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        let cmd = Cmd::new("WAIT").arg(replicas).arg(millis);
        self.blocking(cmd, timeout).await
    }
}
