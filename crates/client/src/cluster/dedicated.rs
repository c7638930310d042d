//! Commands that need a connection of their own on a cluster: blocking pops and WATCH
//! transactions lease a [`DedicatedConnection`] from the master that owns their keys'
//! slot. All keys of one such command must share a slot (use hash tags), as Redis
//! Cluster itself requires.

use std::time::Duration;

use bytes::Bytes;
use redline_resp::command::{self, CommandSpec};
use redline_resp::slot::key_slot;
use redline_resp::Frame;

use crate::cmd::{Cmd, ToArg};
use crate::dedicated::DedicatedConnection;
use crate::error::{Error, ServerErrorKind};

use super::client::{cross_slot, ClusterClient};
use super::exec::{unserved, Retry};
use super::redirect::{classify, Redirect};
use crate::args::Args;

impl ClusterClient {
    /// Leases a dedicated connection to the master serving `key`'s slot: for `WATCH` /
    /// `MULTI` / `EXEC` on keys of that slot, or anything else that must not share the
    /// multiplexed connection.
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// let mut conn = cluster.dedicated_for("account:{7}").await?;
    /// conn.watch(["account:{7}"]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn dedicated_for(&self, key: impl ToArg) -> Result<DedicatedConnection, Error> {
        let slot = key_slot(&arg_bytes(&key));
        self.dedicated_for_slot(slot).await
    }

    async fn dedicated_for_slot(&self, slot: u16) -> Result<DedicatedConnection, Error> {
        let node = self
            .shared()
            .table
            .load()
            .master(slot)
            .cloned()
            .ok_or_else(|| unserved(slot))?;
        node.dedicated().lease().await
    }

    /// A blocking command (`BLPOP`, `WAIT`, `XREAD BLOCK`..., typed or raw) on a dedicated
    /// connection to its slot's master, following `MOVED`/`ASK` (a leased connection is
    /// reused only when clean): `block` is how long it may block (`None`: forever, or
    /// unknown), the command timeout is added as a margin.
    pub(crate) async fn blocking_frame(
        &self,
        cmd: Cmd,
        block: Option<Duration>,
    ) -> Result<Frame, Error> {
        let mut slot = single_slot(cmd.spec(), &cmd.to_bytes())?;
        let margin = self
            .shared()
            .cfg
            .node
            .command_timeout
            .unwrap_or(Duration::from_secs(5));
        let limit = block.map(|b| b + margin);
        let mut retry = Retry::new(self.shared());
        loop {
            let mut conn = self.dedicated_for_slot(slot).await?;
            let err = match conn.query_within::<Frame>(cmd.clone(), limit).await {
                Err(err @ Error::Server { .. }) => err,
                other => return other,
            };
            let Error::Server { kind, message } = &err else {
                return Err(err);
            };
            let line = Frame::Error(Bytes::from(format!("{} {message}", kind.as_str())));
            match classify(&line) {
                Some(Redirect::Moved {
                    slot: moved,
                    host,
                    port,
                }) if !host.is_empty() && retry.redirect() => {
                    let node = self.shared().registry.get(&host, port)?;
                    self.shared().patch(moved, &node);
                    self.shared().request_refresh();
                    slot = moved;
                }
                // During a migration or a failover: wait for it to settle.
                Some(
                    Redirect::Ask { .. }
                    | Redirect::TryAgain
                    | Redirect::ClusterDown
                    | Redirect::Loading,
                ) if retry.pause().await => {}
                _ => return Err(err),
            }
        }
    }
}

/// The one slot of a command's keys; CROSSSLOT if they differ, any slot without keys.
/// `spec` is the entry [`Cmd::new`] found for the name: used as is unless the command
/// has subcommands (none of the blocking ones has), so the name is not looked up again.
fn single_slot(spec: Option<&'static CommandSpec>, bytes: &[u8]) -> Result<u16, Error> {
    let args: Vec<&[u8]> = Args::new(bytes).ok_or(Error::EmptyCommand)?.collect();
    let positions = match spec {
        Some(spec) if !spec.has_subcommands() => {
            let mut positions = Vec::new();
            command::keys_into(spec, &args, &mut positions).map(|()| positions)
        }
        _ => command::keys(&args),
    };
    let positions = positions.map_err(|e| Error::Server {
        kind: ServerErrorKind::Err,
        message: e.to_string().into(),
    })?;
    let mut slot = None;
    for &i in &positions {
        let Some(key) = args.get(i) else { continue };
        let s = key_slot(key);
        if slot.is_some_and(|prev| prev != s) {
            return Err(cross_slot());
        }
        slot = Some(s);
    }
    // Keyless (WAIT): any master.
    Ok(slot.unwrap_or_else(|| fastrand::u16(0..16384)))
}

/// One argument's bytes as written.
pub(crate) fn arg_bytes(arg: &impl ToArg) -> Bytes {
    let mut buf = bytes::BytesMut::new();
    arg.write_arg(&mut buf);
    let start = buf.iter().position(|&b| b == b'\n').map_or(0, |p| p + 1);
    let end = buf.len().saturating_sub(2).max(start);
    buf.freeze().slice(start..end)
}
