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

    /// The Lua source (the cluster client's NOSCRIPT fallback sends it).
    pub(crate) fn source(&self) -> &Bytes {
        &self.source
    }

    /// `EVALSHA sha numkeys key... arg...` for this script.
    pub(crate) fn evalsha_cmd(
        &self,
        keys: impl IntoIterator<Item = impl ToArg>,
        args: impl IntoIterator<Item = impl ToArg>,
    ) -> Cmd {
        Cmd::new("EVALSHA")
            .arg(&self.sha)
            .append_encoded(&script_tail(keys, args))
    }

    /// Runs the script with `EVALSHA`; on `NOSCRIPT` sends it with `EVAL` (which also
    /// caches it on the server) and returns that result.
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
            loads.extend_from_slice(
                &Cmd::new("SCRIPT")
                    .arg("LOAD")
                    .arg(&script.source)
                    .into_bytes(),
            );
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

impl Client {
    /// `EVAL script numkeys key... arg...`, converting the script's reply to `T`.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let n: i64 = client.eval("return #KEYS + #ARGV", ["a", "b"], ["x"]).await?;
    /// assert_eq!(n, 3);
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
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let sha = client.script_load("return 1").await?;
    /// assert_eq!(sha.len(), 40);
    /// # Ok(()) }
    /// ```
    pub async fn script_load(&self, script: impl ToArg) -> Result<String, Error> {
        self.query(Cmd::new("SCRIPT").arg("LOAD").arg(script)).await
    }

    /// `SCRIPT EXISTS sha...`: one bool per digest.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let sha = client.script_load("return 1").await?;
    /// assert_eq!(client.script_exists([&sha]).await?, vec![true]);
    /// # Ok(()) }
    /// ```
    pub async fn script_exists(
        &self,
        shas: impl IntoIterator<Item = impl ToArg>,
    ) -> Result<Vec<bool>, Error> {
        self.query(Cmd::new("SCRIPT").arg("EXISTS").args(shas))
            .await
    }
}
