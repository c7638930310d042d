//! Scripts in cluster pipelines: [`ClusterPipeline::run_script`] queues `EVALSHA`, and
//! the scripts are loaded on every node first. The scripting commands themselves (`EVAL`,
//! `EVALSHA`, `SCRIPT LOAD/EXISTS`, `FCALL`) and [`Script::run`] are the same as on
//! [`Client`](crate::Client) (`commands/scripting.rs`), routed by the command table:
//! `EVAL` by its keys, `SCRIPT LOAD` to every node, `SCRIPT EXISTS` to every master.

use crate::cmd::ToArg;
use crate::commands::Script;
use crate::error::Error;

use super::client::ClusterClient;
use super::pipeline::ClusterPipeline;

impl ClusterPipeline {
    /// Queues `EVALSHA` for a [`Script`], routed by its keys. Before the pipeline is sent,
    /// the masters are asked which of its scripts they all know (`SCRIPT EXISTS`) and the
    /// others are loaded on every node (`SCRIPT LOAD`), so the commands run in the
    /// queued order with no `NOSCRIPT` to retry.
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// use redline::Script;
    ///
    /// let incr_by = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    /// let (a, b): (i64, i64) = cluster
    ///     .pipeline()
    ///     .run_script(&incr_by, ["a"], [1])
    ///     .run_script(&incr_by, ["b"], [2])
    ///     .query()
    ///     .await?;
    /// # let _ = (a, b);
    /// # Ok(()) }
    /// ```
    pub fn run_script(
        &mut self,
        script: &Script,
        keys: impl IntoIterator<Item = impl ToArg>,
        args: impl IntoIterator<Item = impl ToArg>,
    ) -> &mut Self {
        self.note_script(script);
        self.add(script.evalsha_cmd(keys, args))
    }
}

/// Makes sure every master knows every script of a pipeline: `SCRIPT EXISTS` on the
/// masters (ANDed), `SCRIPT LOAD` on every node for the others.
pub(super) async fn load_missing(cluster: &ClusterClient, scripts: &[Script]) -> Result<(), Error> {
    let known = cluster
        .script_exists(scripts.iter().map(Script::sha))
        .await?;
    for (script, known) in scripts.iter().zip(known) {
        if !known {
            cluster.script_load(script.source()).await?;
        }
    }
    Ok(())
}
