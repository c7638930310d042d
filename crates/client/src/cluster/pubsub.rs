//! Pub/sub on a cluster. Classic channels (`SUBSCRIBE`) are broadcast to every node, so
//! any node will do; shard channels (`SSUBSCRIBE`, Redis 7) live in a slot and must be
//! subscribed on the node that owns it. [`ClusterSubscriber`] keeps one standalone
//! [`Subscriber`] per owning node and routes each shard channel by its slot.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use redline_resp::slot::key_slot;

use crate::cmd::ToArg;
use crate::error::Error;
use crate::pubsub::Subscriber;

use super::client::ClusterClient;
use super::exec::unserved;

/// Shard-channel subscriptions on a cluster, one connection per owning node.
///
/// ```no_run
/// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
/// let mut subs = cluster.shard_subscriber();
/// subs.ssubscribe(["orders:{eu}", "orders:{us}"]).await?;
/// for (_node, subscriber) in subs.subscribers_mut() {
///     if let Some(message) = subscriber.next().await {
///         println!("{message:?}");
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ClusterSubscriber {
    client: ClusterClient,
    /// By node address.
    subscribers: HashMap<Arc<str>, Subscriber>,
}

impl ClusterSubscriber {
    pub(crate) fn new(client: ClusterClient) -> ClusterSubscriber {
        ClusterSubscriber {
            client,
            subscribers: HashMap::new(),
        }
    }

    /// `SSUBSCRIBE` each channel on the master that owns its slot.
    pub async fn ssubscribe(
        &mut self,
        channels: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<(), Error> {
        for channel in channels {
            let name = arg_bytes(&channel);
            let slot = key_slot(&name);
            let node = self
                .client
                .shared()
                .table
                .load()
                .master(slot)
                .cloned()
                .ok_or_else(|| unserved(slot))?;
            if !self.subscribers.contains_key(&node.addr) {
                let cfg = &self.client.shared().cfg.node;
                let sub =
                    Subscriber::connect(node.endpoint.clone(), cfg.backoff, cfg.command_timeout)
                        .await?;
                self.subscribers.insert(node.addr.clone(), sub);
            }
            if let Some(sub) = self.subscribers.get(&node.addr) {
                sub.ssubscribe([name]).await?;
            }
        }
        Ok(())
    }

    /// The per-node subscribers, to read messages from.
    pub fn subscribers_mut(&mut self) -> impl Iterator<Item = (&str, &mut Subscriber)> {
        self.subscribers.iter_mut().map(|(a, s)| (&**a, s))
    }
}

impl ClusterClient {
    /// A subscriber for classic channels (`SUBSCRIBE`/`PSUBSCRIBE`): messages are
    /// broadcast across the cluster, so one connection to any master receives them all.
    pub async fn subscriber(&self) -> Result<Subscriber, Error> {
        let node = self
            .shared()
            .table
            .load()
            .random_master()
            .cloned()
            .ok_or_else(|| unserved(0))?;
        let cfg = &self.shared().cfg.node;
        Subscriber::connect(node.endpoint.clone(), cfg.backoff, cfg.command_timeout).await
    }

    /// A subscriber for shard channels (`SSUBSCRIBE`), routed by slot.
    pub fn shard_subscriber(&self) -> ClusterSubscriber {
        ClusterSubscriber::new(self.clone())
    }
}

fn arg_bytes(arg: &impl ToArg) -> Bytes {
    let mut buf = bytes::BytesMut::new();
    arg.write_arg(&mut buf);
    // The argument as written: `$<len>\r\n<payload>\r\n`.
    let start = buf.iter().position(|&b| b == b'\n').map_or(0, |p| p + 1);
    let end = buf.len().saturating_sub(2).max(start);
    buf.freeze().slice(start..end)
}
