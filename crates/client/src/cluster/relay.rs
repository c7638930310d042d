//! Commands that arrive already encoded and whose replies leave encoded, as in a proxy
//! (`redline tunnel`): single-slot commands are neither copied into a [`Cmd`] nor
//! decoded on the way back. Each reply is handed over as the bytes the node sent.
//!
//! [`Cmd`]: crate::Cmd

use bytes::Bytes;
use redline_resp::ProtocolError;

use crate::cmd;
use crate::error::Error;

use super::batch::{self, BatchReply};
use super::client::{error_as_reply, multiplexable, ClusterClient};
use super::config::ReadFrom;
use super::exec::{send_to_slot, SlotCommand};
use super::route::{route_with, Route, Target};

impl ClusterClient {
    /// Sends commands received as RESP (each one whole array of bulk strings, as a client
    /// sends it) and returns each one's reply as the server encoded it, in order.
    ///
    /// For proxies: commands on one slot are forwarded as they came and grouped per node
    /// (one write per node, nodes in parallel), and their replies are the node's bytes,
    /// not decoded and encoded again. Redirects, failover and cross-slot splits are
    /// handled as for every command; keyless commands (`DBSIZE`, `KEYS`...) and splits run
    /// after the commands before them, so the order of effects is kept.
    ///
    /// Error replies are replies (`Ok`), including those the client gives as Redis would
    /// (`-CROSSSLOT`); `Err` is a command that got no reply (connection lost, timeout, a
    /// command that needs a connection of its own, bytes that are not one command).
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) {
    /// use bytes::Bytes;
    ///
    /// let requests = [
    ///     Bytes::from_static(b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n"),
    ///     Bytes::from_static(b"*2\r\n$3\r\nGET\r\n$1\r\na\r\n"),
    /// ];
    /// let replies = cluster.relay(&requests).await;
    /// assert_eq!(replies[0].as_deref().ok(), Some(&b"+OK\r\n"[..]));
    /// assert_eq!(replies[1].as_deref().ok(), Some(&b"$1\r\n1\r\n"[..]));
    /// # }
    /// ```
    pub async fn relay(&self, requests: &[Bytes]) -> Vec<Result<Bytes, Error>> {
        let read_from = self.shared().cfg.read_from;
        if let [request] = requests {
            // One command (a client that does not pipeline): no batch bookkeeping.
            let reply = match route_encoded(request) {
                Ok(route) => self.relay_routed(request, route, read_from).await,
                Err(err) => Err(err),
            };
            return vec![reply];
        }
        // Every slot is filled below; the placeholder costs nothing to build.
        let mut out: Vec<Result<Bytes, Error>> =
            requests.iter().map(|_| Err(Error::Closed)).collect();
        let mut stage = Stage::with_capacity(requests.len());
        for (i, request) in requests.iter().enumerate() {
            let route = match route_encoded(request) {
                Ok(route) => route,
                Err(err) => {
                    out[i] = Err(err);
                    continue;
                }
            };
            if let Target::Slot(slot) = route.target {
                let cmd = SlotCommand {
                    slot,
                    readonly: route.readonly,
                    replica: read_from == ReadFrom::Replica,
                };
                stage.positions.push(i);
                stage.items.push((request.clone(), cmd));
                continue;
            }
            // Keyless or split: what came before goes first.
            let rest = requests.len() - i;
            std::mem::replace(&mut stage, Stage::with_capacity(rest))
                .send(self, &mut out)
                .await;
            out[i] = self.relay_routed(request, route, read_from).await;
        }
        stage.send(self, &mut out).await;
        out
    }

    /// One command on the single-command path, its reply decoded and encoded again.
    async fn relay_routed(
        &self,
        request: &Bytes,
        route: Route,
        read_from: ReadFrom,
    ) -> Result<Bytes, Error> {
        let reply = self.execute_routed(request.clone(), route, read_from).await;
        error_as_reply(reply).map(Bytes::from_frame)
    }
}

/// Single-slot commands collected to go out together.
struct Stage {
    /// Where each command's reply goes in the output.
    positions: Vec<usize>,
    items: Vec<(Bytes, SlotCommand)>,
}

impl Stage {
    fn with_capacity(commands: usize) -> Stage {
        Stage {
            positions: Vec::with_capacity(commands),
            items: Vec::with_capacity(commands),
        }
    }

    async fn send(mut self, client: &ClusterClient, out: &mut [Result<Bytes, Error>]) {
        let shared = client.shared();
        match (self.positions.as_slice(), self.items.pop()) {
            (_, None) => {}
            // Alone, the single-command path costs fewer allocations than a batch, and
            // decoding and encoding one reply is less than the batch's bookkeeping.
            (&[i], Some((bytes, cmd))) => {
                let reply = send_to_slot(shared, bytes, cmd).await;
                out[i] = reply.map(Bytes::from_frame);
            }
            (positions, Some(last)) => {
                self.items.push(last);
                let replies = batch::run::<Bytes>(shared, self.items).await;
                for (&i, reply) in positions.iter().zip(replies) {
                    out[i] = reply;
                }
            }
        }
    }
}

/// The route of an encoded command, read in place; refused when it is not one whole
/// command or may not share a connection.
fn route_encoded(request: &[u8]) -> Result<Route, Error> {
    let inspected =
        cmd::inspect(request).ok_or(Error::Protocol(ProtocolError::InvalidMultibulkLength))?;
    multiplexable(inspected.traits.restriction)?;
    Ok(route_with(inspected.spec, request))
}
