//! Scripting: EVAL, EVALSHA, SCRIPT LOAD/EXISTS, and [`Script`], which runs by digest and
//! falls back to sending the source once when the server does not know it yet
//! (`NOSCRIPT`).
//!
//! On a [`ClusterClient`] the routing comes from Redis's command table, as for every
//! command: `EVAL`/`EVALSHA` go to their keys' slot owner (numkeys; no keys: any master),
//! `SCRIPT LOAD` to every node (`all_nodes`), `SCRIPT EXISTS` to every master with the
//! answers ANDed (each node caches scripts separately, so a new master after a failover
//! may not know one).

use std::future::Future;

use bytes::Bytes;

use super::commands;
use crate::client::Client;
use crate::cluster::ClusterClient;
use crate::cmd::{cmd, Cmd, ToArg};
use crate::error::{Error, ServerErrorKind};
use crate::reply::FromReply;

/// A Lua script known by its SHA-1 digest.
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// use redline::Script;
///
/// let incr_by = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
/// let n: i64 = incr_by.run(&client, ["counter"], [5]).await?;
/// # let _ = n;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Script {
    source: Bytes,
    sha: String,
}

impl Script {
    /// Wraps Lua source and computes its digest.
    ///
    /// ```
    /// let script = redline::Script::new("return 1");
    /// assert_eq!(script.sha(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
    /// ```
    pub fn new(source: impl Into<Bytes>) -> Script {
        let source = source.into();
        let sha = sha1_smol::Sha1::from(&source[..]).digest().to_string();
        Script { source, sha }
    }

    /// The lowercase hex SHA-1 that `EVALSHA` and `SCRIPT LOAD` use.
    ///
    /// ```
    /// let script = redline::Script::new("return 1");
    /// assert_eq!(script.sha().len(), 40);
    /// ```
    pub fn sha(&self) -> &str {
        &self.sha
    }

    /// The Lua source (sent with `EVAL` or `SCRIPT LOAD` when a server lacks it).
    pub(crate) fn source(&self) -> &Bytes {
        &self.source
    }

    /// `EVALSHA sha numkeys key... arg...` for this script.
    pub(crate) fn evalsha_cmd(
        &self,
        keys: impl IntoIterator<Item = impl ToArg>,
        args: impl IntoIterator<Item = impl ToArg>,
    ) -> Cmd {
        cmd!("EVALSHA")
            .arg(&self.sha)
            .append_encoded(&script_tail(keys, args))
    }

    /// Runs the script with `EVALSHA` on a [`Client`] or a [`ClusterClient`] (there, on
    /// the keys' slot owner); on `NOSCRIPT` sends it with `EVAL` (which also caches it on
    /// that server) and returns that result.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let incr_capped = redline::Script::new(
    ///     "local n = redis.call('INCR', KEYS[1]) if n > tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) return tonumber(ARGV[1]) end return n",
    /// );
    /// let n: i64 = incr_capped.run(&client, ["counter"], [100]).await?;
    /// # let _ = n;
    /// # Ok(()) }
    /// ```
    pub async fn run<T: FromReply>(
        &self,
        client: &impl ScriptClient,
        keys: impl IntoIterator<Item = impl ToArg>,
        args: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<T, Error> {
        // Encode keys and arguments once; both attempts reuse them.
        let tail = script_tail(keys, args);
        let by_sha = cmd!("EVALSHA").arg(&self.sha).append_encoded(&tail);
        match client.query_script::<T>(by_sha).await {
            Err(Error::Server {
                kind: ServerErrorKind::NoScript,
                ..
            }) => {
                let by_source = cmd!("EVAL").arg(&self.source).append_encoded(&tail);
                client.query_script(by_source).await
            }
            other => other,
        }
    }

    /// [`Script::run`] on a cluster (`run` takes either client; this name stays for
    /// code written before it did).
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
        self.run(cluster, keys, args).await
    }
}

/// A client a [`Script`] runs on: [`Client`] or [`ClusterClient`] (sealed: the crate
/// implements it for those two).
///
/// ```no_run
/// # async fn demo(client: redline::Client, cluster: redline::ClusterClient) -> redline::Result<()> {
/// use redline::{Script, ScriptClient};
///
/// async fn bump(on: &impl ScriptClient, script: &Script) -> redline::Result<i64> {
///     script.run(on, ["hits"], [1]).await
/// }
/// let script = Script::new("return redis.call('INCRBY', KEYS[1], ARGV[1])");
/// bump(&client, &script).await?;
/// bump(&cluster, &script).await?;
/// # Ok(()) }
/// ```
pub trait ScriptClient: sealed::Sealed {}

mod sealed {
    use super::*;

    /// How [`Script::run`](super::Script::run) sends its commands; private, so only the
    /// crate's clients implement [`ScriptClient`](super::ScriptClient).
    pub trait Sealed {
        fn query_script<'a, T: FromReply + 'a>(
            &'a self,
            cmd: Cmd,
        ) -> impl Future<Output = Result<T, Error>> + Send + 'a;
    }

    impl Sealed for Client {
        fn query_script<'a, T: FromReply + 'a>(
            &'a self,
            cmd: Cmd,
        ) -> impl Future<Output = Result<T, Error>> + Send + 'a {
            self.query(cmd)
        }
    }

    impl Sealed for ClusterClient {
        fn query_script<'a, T: FromReply + 'a>(
            &'a self,
            cmd: Cmd,
        ) -> impl Future<Output = Result<T, Error>> + Send + 'a {
            self.query(cmd)
        }
    }
}

impl ScriptClient for Client {}
impl ScriptClient for ClusterClient {}

/// Makes sure the server knows every script of a pipeline: `SCRIPT EXISTS` for all of
/// them, then `SCRIPT LOAD` (pipelined) for those it lacks.
pub(crate) async fn load_missing(client: &Client, scripts: &[Script]) -> Result<(), Error> {
    let known = client
        .script_exists(scripts.iter().map(Script::sha))
        .await?;
    let mut loads = bytes::BytesMut::new();
    let mut count = 0;
    for (script, known) in scripts.iter().zip(known) {
        if !known {
            loads.extend_from_slice(&cmd!("SCRIPT").arg("LOAD").arg(&script.source).into_bytes());
            count += 1;
        }
    }
    if count > 0 {
        // Sent as one unit, straight to the connection (not through `Pipeline`, which
        // calls this).
        let replies = client
            .pool()
            .pick()
            .send_many(loads.freeze(), count)
            .await?;
        for reply in replies {
            crate::reply::check(reply)?;
        }
    }
    Ok(())
}

/// `numkeys key... arg...` of EVAL/EVALSHA, encoded.
pub(crate) fn script_tail(
    keys: impl IntoIterator<Item = impl ToArg>,
    args: impl IntoIterator<Item = impl ToArg>,
) -> crate::cmd::EncodedArgs {
    let mut keys_part = crate::cmd::EncodedArgs::default();
    for key in keys {
        keys_part.push(key);
    }
    let mut tail = crate::cmd::EncodedArgs::default();
    tail.push(keys_part.len());
    tail.extend(&keys_part);
    for arg in args {
        tail.push(arg);
    }
    tail
}

commands! {
    /// `EVAL script numkeys key... arg...`, converting the script's reply to `T` (on a
    /// cluster, on the keys' slot owner: keys must share a slot).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let n: i64 = client.eval("return #KEYS + #ARGV", ["a", "b"], ["x"]).await?;
    /// assert_eq!(n, 3);
    /// # Ok(()) }
    /// ```
    fn eval<T>(script: impl ToArg, keys: impl IntoIterator<Item = impl ToArg>, args: impl IntoIterator<Item = impl ToArg>) -> T {
        cmd!("EVAL").arg(script).append_encoded(&script_tail(keys, args))
    }

    /// `EVALSHA sha numkeys key... arg...`; a `NOSCRIPT` error if the server does not
    /// know the digest (see [`Script`] for automatic fallback).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let sha = client.script_load("return ARGV[1]").await?;
    /// let echoed: String = client.evalsha(&sha, Vec::<&str>::new(), ["hi"]).await?;
    /// assert_eq!(echoed, "hi");
    /// # Ok(()) }
    /// ```
    fn evalsha<T>(sha: impl ToArg, keys: impl IntoIterator<Item = impl ToArg>, args: impl IntoIterator<Item = impl ToArg>) -> T {
        cmd!("EVALSHA").arg(sha).append_encoded(&script_tail(keys, args))
    }

    /// `SCRIPT LOAD script`: caches the script and returns its digest (on a cluster, on
    /// every node).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let sha = client.script_load("return 1").await?;
    /// assert_eq!(sha.len(), 40);
    /// # Ok(()) }
    /// ```
    fn script_load(script: impl ToArg) -> String { cmd!("SCRIPT").arg("LOAD").arg(script) }

    /// `SCRIPT EXISTS sha...`: one bool per digest (on a cluster, true when every master
    /// knows it).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let sha = client.script_load("return 1").await?;
    /// assert_eq!(client.script_exists([&sha]).await?, vec![true]);
    /// # Ok(()) }
    /// ```
    fn script_exists(shas: impl IntoIterator<Item = impl ToArg>) -> Vec<bool> {
        cmd!("SCRIPT").arg("EXISTS").args(shas)
    }
}
