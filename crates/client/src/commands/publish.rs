//! Publishing: PUBLISH and SPUBLISH. (Subscribing takes a connection of its own:
//! [`Client::subscriber`](crate::Client::subscriber),
//! [`ClusterClient::shard_subscriber`](crate::ClusterClient::shard_subscriber).)

use super::commands;
use crate::cmd::{cmd, ToArg};

commands! {
    /// `PUBLISH channel message`: how many subscribers received it (on a cluster, the
    /// message reaches subscribers on every node).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let receivers = client.publish("orders", "order:42 created").await?;
    /// # let _ = receivers;
    /// # Ok(()) }
    /// ```
    fn publish(channel: impl ToArg, message: impl ToArg) -> u64 {
        cmd!("PUBLISH").arg(channel).arg(message)
    }

    /// `SPUBLISH shardchannel message` (Redis 7): how many subscribers received it (on a
    /// cluster, sent to the channel's slot owner).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let receivers = client.spublish("orders:{eu}", "order:42 created").await?;
    /// # let _ = receivers;
    /// # Ok(()) }
    /// ```
    fn spublish(channel: impl ToArg, message: impl ToArg) -> u64 {
        cmd!("SPUBLISH").arg(channel).arg(message)
    }
}
