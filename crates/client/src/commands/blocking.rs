//! Blocking commands (BLPOP, BRPOP, BLMOVE, BZPOPMIN, BZPOPMAX, WAIT; XREAD BLOCK is in
//! `streams.rs`). The clients run them on a dedicated connection (on a cluster, one to the
//! master of the keys' slot), so a command waiting for data or replicas never holds up
//! other callers' commands; the wait is bounded by the command's own timeout, as
//! `redline_resp::command::blocking` reads it from the arguments, plus the client's
//! command timeout. Pipelines do not offer them (see the `commands` module docs). On a
//! cluster, the keys of one command must share a slot (hash tags).

use std::time::Duration;

use bytes::Bytes;

use super::commands;
use crate::cmd::{cmd, ToArg};

commands! {
    clients_only;

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
    fn blpop(keys: impl IntoIterator<Item = impl ToArg>, timeout: Duration) -> Option<(Bytes, Bytes)> {
        cmd!("BLPOP").args(keys).arg(timeout.as_secs_f64())
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
    fn brpop(keys: impl IntoIterator<Item = impl ToArg>, timeout: Duration) -> Option<(Bytes, Bytes)> {
        cmd!("BRPOP").args(keys).arg(timeout.as_secs_f64())
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
    fn blmove(source: impl ToArg, destination: impl ToArg, from_left: bool, to_left: bool, timeout: Duration) -> Option<Bytes> {
        let side = |left: bool| if left { "LEFT" } else { "RIGHT" };
        cmd!("BLMOVE")
            .arg(source)
            .arg(destination)
            .arg(side(from_left))
            .arg(side(to_left))
            .arg(timeout.as_secs_f64())
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
    fn bzpopmin(keys: impl IntoIterator<Item = impl ToArg>, timeout: Duration) -> Option<(Bytes, Bytes, f64)> {
        cmd!("BZPOPMIN").args(keys).arg(timeout.as_secs_f64())
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
    fn bzpopmax(keys: impl IntoIterator<Item = impl ToArg>, timeout: Duration) -> Option<(Bytes, Bytes, f64)> {
        cmd!("BZPOPMAX").args(keys).arg(timeout.as_secs_f64())
    }

    /// `WAIT numreplicas timeout`: blocks until the writes made *on the connection that
    /// runs it* reached `replicas` replicas, or `timeout` passed (zero waits forever);
    /// returns how many replicas acknowledged. WAIT runs on a dedicated connection (it
    /// would stall the shared one), so it only covers writes sent on that same
    /// connection: send them through the same [`DedicatedConnection`](crate::DedicatedConnection)
    /// and call `WAIT` there with [`query`](crate::DedicatedConnection::query). On its
    /// own, it answers how many replicas are connected and caught up (on a cluster, those
    /// of one master).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use std::time::Duration;
    ///
    /// let replicas = client.wait(1, Duration::from_millis(100)).await?;
    /// println!("{replicas} replica(s) acknowledged");
    /// # Ok(()) }
    /// ```
    fn wait(replicas: u64, timeout: Duration) -> u64 {
        cmd!("WAIT").arg(replicas).arg(timeout_millis(timeout))
    }
}

/// A timeout as whole milliseconds for a command that takes them (WAIT, XREAD BLOCK).
/// A positive timeout under a millisecond becomes 1 ms, not 0, which Redis reads as
/// "forever".
pub(super) fn timeout_millis(timeout: Duration) -> u64 {
    let millis = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    if millis == 0 && !timeout.is_zero() {
        1
    } else {
        millis
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_millisecond_timeouts_round_up() {
        assert_eq!(timeout_millis(Duration::ZERO), 0);
        assert_eq!(timeout_millis(Duration::from_micros(500)), 1);
        assert_eq!(timeout_millis(Duration::from_millis(250)), 250);
        assert_eq!(timeout_millis(Duration::MAX), u64::MAX);
    }
}
