//! Strings: GET, SET (with options), MGET, MSET, INCR and friends.

use bytes::Bytes;

use super::commands;
use crate::cmd::{cmd, Cmd, ToArg};

/// When a `SET` should write.
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// use redline::{SetCondition, SetOptions};
///
/// let took_lock = client
///     .set_with("lock:job", "me", SetOptions::default().condition(SetCondition::IfAbsent))
///     .await?;
/// # let _ = took_lock;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetCondition {
    /// `NX`: only if the key does not exist.
    IfAbsent,
    /// `XX`: only if the key exists.
    IfPresent,
}

/// How a `SET` sets the key's time to live.
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// use redline::{Expiry, SetOptions};
///
/// client.set_with("session:9", "data", SetOptions::default().expiry(Expiry::Seconds(300))).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// `EX`: seconds from now.
    Seconds(u64),
    /// `PX`: milliseconds from now.
    Millis(u64),
    /// `EXAT`: Unix time in seconds.
    AtSeconds(u64),
    /// `PXAT`: Unix time in milliseconds.
    AtMillis(u64),
    /// `KEEPTTL`: keep the current time to live.
    Keep,
}

/// Options of [`Client::set_with`](crate::Client::set_with).
///
/// ```
/// use redline::{Expiry, SetCondition, SetOptions};
///
/// let opts = SetOptions::default()
///     .condition(SetCondition::IfAbsent)
///     .expiry(Expiry::Seconds(30));
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetOptions {
    condition: Option<SetCondition>,
    expiry: Option<Expiry>,
}

impl SetOptions {
    /// Writes only under `condition`.
    ///
    /// ```
    /// use redline::{SetCondition, SetOptions};
    ///
    /// let opts = SetOptions::default().condition(SetCondition::IfPresent);
    /// # let _ = opts;
    /// ```
    #[must_use]
    pub fn condition(mut self, condition: SetCondition) -> Self {
        self.condition = Some(condition);
        self
    }

    /// Sets the time to live.
    ///
    /// ```
    /// use redline::{Expiry, SetOptions};
    ///
    /// let opts = SetOptions::default().expiry(Expiry::Millis(1500));
    /// # let _ = opts;
    /// ```
    #[must_use]
    pub fn expiry(mut self, expiry: Expiry) -> Self {
        self.expiry = Some(expiry);
        self
    }

    fn apply(self, mut cmd: Cmd) -> Cmd {
        match self.condition {
            Some(SetCondition::IfAbsent) => cmd.push_arg("NX"),
            Some(SetCondition::IfPresent) => cmd.push_arg("XX"),
            None => {}
        }
        match self.expiry {
            Some(Expiry::Seconds(n)) => cmd = cmd.arg("EX").arg(n),
            Some(Expiry::Millis(n)) => cmd = cmd.arg("PX").arg(n),
            Some(Expiry::AtSeconds(n)) => cmd = cmd.arg("EXAT").arg(n),
            Some(Expiry::AtMillis(n)) => cmd = cmd.arg("PXAT").arg(n),
            Some(Expiry::Keep) => cmd.push_arg("KEEPTTL"),
            None => {}
        }
        cmd
    }
}

commands! {
    /// `GET key`: the value, or `None` if the key does not exist.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// if let Some(v) = client.get("user:1:name").await? {
    ///     println!("{}", String::from_utf8_lossy(&v));
    /// }
    /// # Ok(()) }
    /// ```
    fn get(key: impl ToArg) -> Option<Bytes> { cmd!("GET").arg(key) }

    /// `SET key value`.
    fn set(key: impl ToArg, value: impl ToArg) -> () { cmd!("SET").arg(key).arg(value) }

    /// `SET key value [NX|XX] [EX|PX|EXAT|PXAT|KEEPTTL]`: true if the value was written
    /// (false when the condition prevented it).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use redline::{Expiry, SetCondition, SetOptions};
    ///
    /// let opts = SetOptions::default().condition(SetCondition::IfAbsent).expiry(Expiry::Seconds(10));
    /// let got_lock = client.set_with("lock", "me", opts).await?;
    /// # let _ = got_lock;
    /// # Ok(()) }
    /// ```
    fn set_with(key: impl ToArg, value: impl ToArg, options: SetOptions) -> bool {
        options.apply(cmd!("SET").arg(key).arg(value))
    }

    /// `SET key value EX seconds`.
    fn set_ex(key: impl ToArg, value: impl ToArg, seconds: u64) -> () {
        cmd!("SET").arg(key).arg(value).arg("EX").arg(seconds)
    }

    /// `SET key value NX`: true if the key did not exist and was set.
    fn set_nx(key: impl ToArg, value: impl ToArg) -> bool {
        cmd!("SET").arg(key).arg(value).arg("NX")
    }

    /// `SET key value GET`: sets the value and returns the previous one.
    fn set_get(key: impl ToArg, value: impl ToArg) -> Option<Bytes> {
        cmd!("SET").arg(key).arg(value).arg("GET")
    }

    /// `GETDEL key`: the value, deleting the key.
    fn get_del(key: impl ToArg) -> Option<Bytes> { cmd!("GETDEL").arg(key) }

    /// `GETEX key EX seconds`: the value, setting a new time to live.
    fn get_ex(key: impl ToArg, seconds: u64) -> Option<Bytes> {
        cmd!("GETEX").arg(key).arg("EX").arg(seconds)
    }

    /// `GETRANGE key start end` (inclusive, negative counts from the end).
    fn get_range(key: impl ToArg, start: i64, end: i64) -> Bytes {
        cmd!("GETRANGE").arg(key).arg(start).arg(end)
    }

    /// `SETRANGE key offset value`: the new length.
    fn set_range(key: impl ToArg, offset: u64, value: impl ToArg) -> u64 {
        cmd!("SETRANGE").arg(key).arg(offset).arg(value)
    }

    /// `MGET key...`: one `Option` per key, in order.
    fn mget(keys: impl IntoIterator<Item = impl ToArg>) -> Vec<Option<Bytes>> {
        cmd!("MGET").args(keys)
    }

    /// `MSET key value [key value ...]`.
    fn mset(pairs: impl IntoIterator<Item = (impl ToArg, impl ToArg)>) -> () {
        let mut cmd = cmd!("MSET");
        for (k, v) in pairs {
            cmd.push_arg(k);
            cmd.push_arg(v);
        }
        cmd
    }

    /// `MSETNX key value [key value ...]`: true if all were set (none existed).
    fn mset_nx(pairs: impl IntoIterator<Item = (impl ToArg, impl ToArg)>) -> bool {
        let mut cmd = cmd!("MSETNX");
        for (k, v) in pairs {
            cmd.push_arg(k);
            cmd.push_arg(v);
        }
        cmd
    }

    /// `APPEND key value`: the new length.
    fn append(key: impl ToArg, value: impl ToArg) -> u64 { cmd!("APPEND").arg(key).arg(value) }

    /// `STRLEN key`.
    fn strlen(key: impl ToArg) -> u64 { cmd!("STRLEN").arg(key) }

    /// `INCR key`: the new value.
    fn incr(key: impl ToArg) -> i64 { cmd!("INCR").arg(key) }

    /// `INCRBY key delta`: the new value.
    fn incr_by(key: impl ToArg, delta: i64) -> i64 { cmd!("INCRBY").arg(key).arg(delta) }

    /// `DECR key`: the new value.
    fn decr(key: impl ToArg) -> i64 { cmd!("DECR").arg(key) }

    /// `DECRBY key delta`: the new value.
    fn decr_by(key: impl ToArg, delta: i64) -> i64 { cmd!("DECRBY").arg(key).arg(delta) }

    /// `INCRBYFLOAT key delta`: the new value.
    fn incr_by_float(key: impl ToArg, delta: f64) -> f64 {
        cmd!("INCRBYFLOAT").arg(key).arg(delta)
    }
}
