//! Scripting on a cluster: `EVAL`/`EVALSHA` route by their keys (numkeys, from the
//! command table), `SCRIPT LOAD` reaches every node (Redis's `all_nodes` policy), and
//! [`Script::run_on_cluster`] falls back from `EVALSHA` to `EVAL` on `NOSCRIPT` (each
//! node caches scripts separately, so a new master after a failover may not know it).

use crate::cmd::{Cmd, ToArg};
use crate::commands::{script_tail, Script};
use crate::error::{Error, ServerErrorKind};
use crate::reply::FromReply;

use super::client::ClusterClient;

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
