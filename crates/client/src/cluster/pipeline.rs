//! Pipelines on a cluster: commands queued in order, routed one by one, grouped per node
//! (one write per node, nodes in parallel), replies returned in the queued order.
//! Redirects are followed per command; multi-key commands across slots are split as on
//! [`ClusterClient`].

use bytes::Bytes;
use redline_resp::Frame;

use crate::cmd::{Cmd, ToArg};
use crate::commands::Script;
use crate::error::Error;
use crate::reply::FromReply;

use super::batch;
use super::client::{cross_slot, error_as_reply, prepare_routed, ClusterClient};
use super::config::ReadFrom;
use super::exec::SlotCommand;
use super::metrics::bump;
use super::route::{Route, Target};
use super::scripting;
use super::split;
use super::transaction;

/// Commands collected to be sent together on a cluster.
///
/// Unlike a standalone [`Pipeline`](crate::Pipeline), the commands of a cluster pipeline
/// may go to several nodes, so they are not one unit: each runs independently, in order
/// per node. Typed methods are the same as on [`ClusterClient`] but queue (blocking ones
/// excepted, as on [`Pipeline`](crate::Pipeline)).
///
/// ```no_run
/// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
/// let (_, _, a, b): ((), (), Option<String>, Option<String>) = cluster
///     .pipeline()
///     .set("a", "1")
///     .set("b", "2")
///     .get("a")
///     .get("b")
///     .query()
///     .await?;
/// assert_eq!((a.as_deref(), b.as_deref()), (Some("1"), Some("2")));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ClusterPipeline {
    client: ClusterClient,
    commands: Vec<(Bytes, Route)>,
    invalid: Option<Error>,
    atomic: bool,
    /// The distinct scripts queued with `run_script`, loaded before sending.
    scripts: Vec<Script>,
}

impl ClusterPipeline {
    pub(crate) fn new(client: ClusterClient) -> ClusterPipeline {
        ClusterPipeline {
            client,
            commands: Vec::new(),
            invalid: None,
            atomic: false,
            scripts: Vec::new(),
        }
    }

    /// Remembers a script queued by `run_script`, once per digest.
    pub(super) fn note_script(&mut self, script: &Script) {
        if !self.scripts.iter().any(|s| s.sha() == script.sha()) {
            self.scripts.push(script.clone());
        }
    }

    /// Makes the pipeline a transaction: `MULTI`, the commands, `EXEC`, sent as one unit
    /// to the master of the slot every key shares (hash tags), with the replies EXEC
    /// returns. Keys in several slots fail with `CROSSSLOT` before anything is sent.
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// let (balance, _): (i64, i64) = cluster
    ///     .pipeline()
    ///     .atomic()
    ///     .decr_by("account:{7}:a", 10)
    ///     .incr_by("account:{7}:b", 10)
    ///     .query()
    ///     .await?;
    /// # let _ = balance;
    /// # Ok(()) }
    /// ```
    pub fn atomic(&mut self) -> &mut Self {
        self.atomic = true;
        self
    }

    /// Queues any command.
    pub fn add(&mut self, cmd: Cmd) -> &mut Self {
        match prepare_routed(cmd) {
            Ok((bytes, route)) => self.commands.push((bytes.freeze(), route)),
            Err(err) => {
                self.invalid.get_or_insert(err);
            }
        }
        self
    }

    /// Queues a command given as a list of arguments.
    pub fn cmd<I>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator,
        I::Item: ToArg,
    {
        match Cmd::from_args(args) {
            Some(cmd) => self.add(cmd),
            None => {
                self.invalid.get_or_insert(Error::EmptyCommand);
                self
            }
        }
    }

    /// Number of queued commands.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// Sends the queued commands and converts the replies, as one array, to `T` (a tuple
    /// or a `Vec`). The first error reply becomes `Err`. The pipeline is empty afterwards.
    pub async fn query<T: FromReply>(&mut self) -> Result<T, Error> {
        let frames = self.query_frames().await?;
        T::from_reply(Frame::Array(frames))
    }

    /// Sends the queued commands and returns every reply, error replies included as
    /// frames. A connection error that could not be retried safely is `Err`.
    pub async fn query_frames(&mut self) -> Result<Vec<Frame>, Error> {
        let commands = std::mem::take(&mut self.commands);
        let atomic = std::mem::take(&mut self.atomic);
        let scripts = std::mem::take(&mut self.scripts);
        if let Some(err) = self.invalid.take() {
            return Err(err);
        }
        if !scripts.is_empty() {
            Box::pin(scripting::load_missing(&self.client, &scripts)).await?;
        }
        if atomic {
            return self.transaction(commands).await;
        }
        let client = &self.client;
        let shared = client.shared();
        let read_from = shared.cfg.read_from;
        let replica = read_from == ReadFrom::Replica;
        let mut out: Vec<Option<Frame>> = commands.iter().map(|_| None).collect();
        // Single-slot commands and the parts of split ones go out together, grouped per
        // node (each node's FIFO keeps their order). A keyless command (fan-out) is a
        // barrier: what was queued before it completes first, so order is kept.
        let mut stage = Stage::with_capacity(commands.len());
        for (i, (bytes, r)) in commands.into_iter().enumerate() {
            match r.target {
                Target::Slot(slot) => {
                    stage.units.push((i, Unit::One(stage.items.len())));
                    let sc = SlotCommand {
                        slot,
                        readonly: r.readonly,
                        replica,
                    };
                    stage.items.push((bytes, sc));
                }
                Target::Split(kind) => {
                    bump(&shared.metrics.splits);
                    let (items, plan) = split::plan(&bytes, kind, r.readonly, read_from)?;
                    stage.units.push((i, Unit::Split(stage.items.len(), plan)));
                    stage.items.extend(items);
                }
                _ => {
                    std::mem::take(&mut stage).flush(client, &mut out).await?;
                    let reply = client.execute_routed(bytes, r, read_from).await;
                    out[i] = Some(error_as_reply(reply)?);
                }
            }
        }
        stage.flush(client, &mut out).await?;
        Ok(out.into_iter().map(|f| f.unwrap_or(Frame::Null)).collect())
    }

    async fn transaction(&self, commands: Vec<(Bytes, Route)>) -> Result<Vec<Frame>, Error> {
        if commands.is_empty() {
            return Ok(Vec::new());
        }
        let mut slot = None;
        for (_, r) in &commands {
            match r.target {
                Target::Slot(s) if slot.is_none_or(|prev| prev == s) => slot = Some(s),
                Target::Keyless(_) | Target::Unknown => {}
                _ => return Err(cross_slot()),
            }
        }
        let slot = slot.unwrap_or_else(|| fastrand::u16(0..16384));
        let bytes: Vec<Bytes> = commands.into_iter().map(|(b, _)| b).collect();
        transaction::run(self.client.shared(), slot, &bytes).await
    }
}

/// What a pipeline stage sends, and where each queued command's reply comes from.
#[derive(Default)]
struct Stage {
    items: Vec<(Bytes, SlotCommand)>,
    /// (position in the pipeline, how its reply is made)
    units: Vec<(usize, Unit)>,
}

enum Unit {
    /// The reply of item `n`.
    One(usize),
    /// Items `n..n + plan.len()` merged.
    Split(usize, split::Plan),
}

impl Stage {
    fn with_capacity(commands: usize) -> Stage {
        Stage {
            items: Vec::with_capacity(commands),
            units: Vec::with_capacity(commands),
        }
    }

    async fn flush(self, client: &ClusterClient, out: &mut [Option<Frame>]) -> Result<(), Error> {
        if self.items.is_empty() {
            return Ok(());
        }
        let mut replies: Vec<Option<Result<Frame, Error>>> =
            batch::run(client.shared(), self.items)
                .await
                .into_iter()
                .map(Some)
                .collect();
        for (i, unit) in self.units {
            let reply = match unit {
                Unit::One(n) => replies.get_mut(n).and_then(Option::take),
                Unit::Split(n, plan) => {
                    let parts: Vec<Result<Frame, Error>> = replies
                        .iter_mut()
                        .skip(n)
                        .take(plan.len())
                        .filter_map(Option::take)
                        .collect();
                    Some(plan.merge(parts))
                }
            };
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(reply.unwrap_or(Err(Error::Closed))?);
            }
        }
        Ok(())
    }
}
