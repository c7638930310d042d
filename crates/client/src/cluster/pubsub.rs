//! Pub/sub on a cluster. Classic channels (`SUBSCRIBE`) are broadcast to every node, so
//! any node will do; shard channels (`SSUBSCRIBE`, Redis 7) live in a slot and must be
//! subscribed on the node that owns it. [`ClusterSubscriber`] keeps one standalone
//! [`Subscriber`] per owning node, routes each shard channel by its slot, merges their
//! messages, and moves subscriptions whose slot changed owner (resharding, failover):
//! about once a second while it is read it compares each channel's node with the
//! current slot table.

use std::collections::HashMap;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use redline_resp::slot::key_slot;

use crate::cmd::ToArg;
use crate::error::Error;
use crate::pubsub::{Message, Subscriber};

use super::client::ClusterClient;
use super::dedicated::arg_bytes;
use super::exec::unserved;

/// How often a reading subscriber checks that its channels' slots did not move.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Shard-channel subscriptions on a cluster, one connection per owning node.
///
/// ```no_run
/// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
/// let mut subs = cluster.shard_subscriber();
/// subs.ssubscribe(["orders:{eu}", "orders:{us}"]).await?;
/// while let Some(message) = subs.next().await {
///     println!("{:?}: {:?}", message.channel, message.payload);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ClusterSubscriber {
    client: ClusterClient,
    /// By node address.
    subscribers: HashMap<Arc<str>, Subscriber>,
    /// Each shard channel and the node it is subscribed on.
    channels: HashMap<Bytes, Arc<str>>,
    check: tokio::time::Interval,
}

impl ClusterSubscriber {
    pub(crate) fn new(client: ClusterClient) -> ClusterSubscriber {
        let mut check = tokio::time::interval(CHECK_EVERY);
        check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ClusterSubscriber {
            client,
            subscribers: HashMap::new(),
            channels: HashMap::new(),
            check,
        }
    }

    /// `SSUBSCRIBE` each channel on the master that owns its slot.
    pub async fn ssubscribe(
        &mut self,
        channels: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<(), Error> {
        for channel in channels {
            let name = arg_bytes(&channel);
            self.subscribe_on_owner(name).await?;
        }
        Ok(())
    }

    /// `SUNSUBSCRIBE` each channel on the node it was subscribed on.
    pub async fn sunsubscribe(
        &mut self,
        channels: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<(), Error> {
        for channel in channels {
            let name = arg_bytes(&channel);
            if let Some(addr) = self.channels.remove(&name) {
                if let Some(sub) = self.subscribers.get(&addr) {
                    sub.sunsubscribe([name]).await?;
                }
            }
        }
        Ok(())
    }

    /// The next message from any node; `None` when every connection has ended (no
    /// subscription was made, or the client is gone).
    pub async fn next(&mut self) -> Option<Message> {
        loop {
            let step = std::future::poll_fn(|cx| {
                if self.check.poll_tick(cx).is_ready() {
                    return Poll::Ready(None);
                }
                let mut open = false;
                for sub in self.subscribers.values_mut() {
                    match sub.poll_next_message(cx) {
                        Poll::Ready(Some(message)) => return Poll::Ready(Some(Some(message))),
                        Poll::Ready(None) => {}
                        Poll::Pending => open = true,
                    }
                }
                if open {
                    Poll::Pending
                } else {
                    Poll::Ready(Some(None))
                }
            })
            .await;
            match step {
                Some(message) => return message,
                // Time to check the slots; a failed move is retried at the next check.
                None => {
                    let _ = self.follow_moves().await;
                }
            }
        }
    }

    /// Re-subscribes channels whose slot now belongs to another master.
    pub async fn follow_moves(&mut self) -> Result<(), Error> {
        let moved: Vec<(Bytes, Arc<str>)> = {
            let table = self.client.shared().table.load();
            self.channels
                .iter()
                .filter(|(name, addr)| {
                    table
                        .master(key_slot(name))
                        .is_some_and(|owner| owner.addr != **addr)
                })
                .map(|(n, a)| (n.clone(), a.clone()))
                .collect()
        };
        for (name, old) in moved {
            if let Some(sub) = self.subscribers.get(&old) {
                // The old owner usually dropped it already (Redis does on slot loss).
                let _ = sub.sunsubscribe([name.clone()]).await;
            }
            self.subscribe_on_owner(name).await?;
        }
        Ok(())
    }

    async fn subscribe_on_owner(&mut self, name: Bytes) -> Result<(), Error> {
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
            let sub = Subscriber::connect(node.endpoint.clone(), cfg.backoff, cfg.command_timeout)
                .await?;
            self.subscribers.insert(node.addr.clone(), sub);
        }
        if let Some(sub) = self.subscribers.get(&node.addr) {
            sub.ssubscribe([name.clone()]).await?;
            self.channels.insert(name, node.addr.clone());
        }
        Ok(())
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
