//! Scripting: EVAL, EVALSHA, and [`Script`], which runs by digest and falls back to
//! sending the source once when the server does not know it yet (`NOSCRIPT`).

use bytes::Bytes;

use crate::client::Client;
use crate::cmd::{Cmd, ToArg};
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
    pub fn new(source: impl Into<Bytes>) -> Script {
        let source = source.into();
        let sha = sha1_smol::Sha1::from(&source[..]).digest().to_string();
        Script { source, sha }
    }

    /// The lowercase hex SHA-1 that `EVALSHA` and `SCRIPT LOAD` use.
    pub fn sha(&self) -> &str {
        &self.sha
    }

    /// The Lua source (the cluster client's NOSCRIPT fallback sends it).
    pub(crate) fn source(&self) -> &Bytes {
        &self.source
    }

    /// Runs the script with `EVALSHA`; on `NOSCRIPT` sends it with `EVAL` (which also
    /// caches it on the server) and returns that result.
    pub async fn run<T: FromReply>(
        &self,
        client: &Client,
        keys: impl IntoIterator<Item = impl ToArg>,
        args: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<T, Error> {
        // Encode keys and arguments once; both attempts reuse them.
        let tail = script_tail(keys, args);
        let by_sha = Cmd::new("EVALSHA").arg(&self.sha).append_encoded(&tail);
        match client.query::<T>(by_sha).await {
            Err(Error::Server {
                kind: ServerErrorKind::NoScript,
                ..
            }) => {
                let by_source = Cmd::new("EVAL").arg(&self.source).append_encoded(&tail);
                client.query(by_source).await
            }
            other => other,
        }
    }
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

impl Client {
    /// `EVAL script numkeys key... arg...`, converting the script's reply to `T`.
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

    /// `EVALSHA sha numkeys key... arg...`; a `NOSCRIPT` error if the server does not
    /// know the digest (see [`Script`] for automatic fallback).
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

    /// `SCRIPT LOAD script`: caches the script and returns its digest.
    pub async fn script_load(&self, script: impl ToArg) -> Result<String, Error> {
        self.query(Cmd::new("SCRIPT").arg("LOAD").arg(script)).await
    }

    /// `SCRIPT EXISTS sha...`: one bool per digest.
    pub async fn script_exists(
        &self,
        shas: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<Vec<bool>, Error> {
        self.query(Cmd::new("SCRIPT").arg("EXISTS").args(shas))
            .await
    }
}
