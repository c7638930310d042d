//! Scripting on a cluster: `EVAL`/`EVALSHA` route by their keys (numkeys, from the
//! command table), `SCRIPT LOAD` reaches every node (Redis's `all_nodes` policy), and
//! [`Script::run_on_cluster`] falls back from `EVALSHA` to `EVAL` on `NOSCRIPT` (each
//! node caches scripts separately, so a new master after a failover may not know it).
//! Pipelines with scripts load them first ([`ClusterPipeline::run_script`]). `FCALL` and
//! `FCALL_RO` route by their keys like `EVAL`; the `FUNCTION` subcommands are the
//! typed commands of `commands/functions.rs`, routed by the command table's tips.

use crate::cmd::{Cmd, ToArg};
use crate::commands::{fcall_cmd, script_tail, Script};
use crate::error::{Error, ServerErrorKind};
use crate::reply::FromReply;

use super::client::ClusterClient;
use super::pipeline::ClusterPipeline;

impl ClusterClient {
    /// `EVAL script numkeys key... arg...` on the keys' slot owner (keys must share a
    /// slot; no keys: any master).
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// let n: i64 = cluster.eval("return redis.call('INCR', KEYS[1])", ["hits"], [0u8; 0]).await?;
    /// # let _ = n;
    /// # Ok(()) }
    /// ```
    pub async fn eval<T: FromReply>(
        &self,
        script: impl ToArg,
        keys: impl IntoIterator<Item = impl ToArg>,
        args: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<T, Error> {
        let tail = script_tail(keys, args);
        self.query(Cmd::new("EVAL").arg(script).append_encoded(&tail))
            .await
    }

    /// `EVALSHA sha numkeys key... arg...` on the keys' slot owner.
    pub async fn evalsha<T: FromReply>(
        &self,
        sha: impl ToArg,
        keys: impl IntoIterator<Item = impl ToArg>,
        args: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<T, Error> {
        let tail = script_tail(keys, args);
        self.query(Cmd::new("EVALSHA").arg(sha).append_encoded(&tail))
            .await
    }

    /// `SCRIPT LOAD script` on every node; the digest.
    pub async fn script_load(&self, script: impl ToArg) -> Result<String, Error> {
        self.query(Cmd::new("SCRIPT").arg("LOAD").arg(script)).await
    }

    /// `SCRIPT EXISTS sha...` on every master: one bool per digest, true when every
    /// master knows it.
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// let sha = cluster.script_load("return 1").await?;
    /// assert_eq!(cluster.script_exists([&sha]).await?, vec![true]);
    /// # Ok(()) }
    /// ```
    pub async fn script_exists(
        &self,
        shas: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<Vec<bool>, Error> {
        self.query(Cmd::new("SCRIPT").arg("EXISTS").args(shas))
            .await
    }

    /// `FCALL function numkeys key... arg...` on the keys' slot owner (keys must share a
    /// slot; no keys: any master). The library must be loaded on that master:
    /// [`function_load`](Self::function_load) loads it on every master.
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// cluster
    ///     .function_load_replace(
    ///         "#!lua name=counters\n\
    ///          redis.register_function('bump', function(keys, args) \
    ///              return redis.call('INCRBY', keys[1], args[1]) end)",
    ///     )
    ///     .await?;
    /// let n: i64 = cluster.fcall("bump", ["hits"], [5]).await?;
    /// # let _ = n;
    /// # Ok(()) }
    /// ```
    pub async fn fcall<T: FromReply>(
        &self,
        function: impl ToArg,
        keys: impl IntoIterator<Item = impl ToArg>,
        args: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<T, Error> {
        self.query(fcall_cmd("FCALL", function, keys, args)).await
    }

    /// `FCALL_RO function numkeys key... arg...` on the keys' slot owner (a replica
    /// with [`ReadFrom::Replica`](crate::ReadFrom::Replica)).
    pub async fn fcall_ro<T: FromReply>(
        &self,
        function: impl ToArg,
        keys: impl IntoIterator<Item = impl ToArg>,
        args: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<T, Error> {
        self.query(fcall_cmd("FCALL_RO", function, keys, args))
            .await
    }
}

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

impl Script {
    /// [`Script::run`] on a cluster: `EVALSHA` on the keys' slot owner, `EVAL` there if
    /// that node does not know the script yet.
    ///
    /// ```no_run
    /// # async fn demo(cluster: redline::ClusterClient) -> redline::Result<()> {
    /// use redline::Script;
    ///
    /// let incr_by = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
    /// let n: i64 = incr_by.run_on_cluster(&cluster, ["counter"], [5]).await?;
    /// # let _ = n;
    /// # Ok(()) }
    /// ```
    pub async fn run_on_cluster<T: FromReply>(
        &self,
        cluster: &ClusterClient,
        keys: impl IntoIterator<Item = impl ToArg>,
        args: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<T, Error> {
        let tail = script_tail(keys, args);
        let by_sha = Cmd::new("EVALSHA").arg(self.sha()).append_encoded(&tail);
        match cluster.query::<T>(by_sha).await {
            Err(Error::Server {
                kind: ServerErrorKind::NoScript,
                ..
            }) => {
                let by_source = Cmd::new("EVAL").arg(self.source()).append_encoded(&tail);
                cluster.query(by_source).await
            }
            other => other,
        }
    }
}
