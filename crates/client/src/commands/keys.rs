//! Keys and time to live: DEL, EXISTS, EXPIRE, TTL, SCAN...

use bytes::Bytes;

use super::commands;
use crate::cmd::{cmd, ToArg};

/// Condition flags of `EXPIRE`/`PEXPIRE` (Redis 7).
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// use redline::ExpireCondition;
///
/// // Extend the TTL only if the new one is later than the current one.
/// let changed = client.expire_if("session:9", 600, ExpireCondition::IfLater).await?;
/// # let _ = changed;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpireCondition {
    /// `NX`: only if the key has no expiry.
    IfNone,
    /// `XX`: only if the key has an expiry.
    IfSome,
    /// `GT`: only if the new expiry is later.
    IfLater,
    /// `LT`: only if the new expiry is sooner.
    IfSooner,
}

impl ExpireCondition {
    fn word(self) -> &'static str {
        match self {
            ExpireCondition::IfNone => "NX",
            ExpireCondition::IfSome => "XX",
            ExpireCondition::IfLater => "GT",
            ExpireCondition::IfSooner => "LT",
        }
    }
}

commands! {
    /// `DEL key...`: how many keys were removed.
    fn del(keys: impl IntoIterator<Item = impl ToArg>) -> u64 { cmd!("DEL").args(keys) }

    /// `UNLINK key...`: like DEL, freeing memory in the background.
    fn unlink(keys: impl IntoIterator<Item = impl ToArg>) -> u64 { cmd!("UNLINK").args(keys) }

    /// `EXISTS key...`: how many of the keys exist (a key named twice counts twice).
    fn exists(keys: impl IntoIterator<Item = impl ToArg>) -> u64 { cmd!("EXISTS").args(keys) }

    /// `TOUCH key...`: how many keys exist; updates their access time.
    fn touch(keys: impl IntoIterator<Item = impl ToArg>) -> u64 { cmd!("TOUCH").args(keys) }

    /// `EXPIRE key seconds`: true if the time to live was set.
    fn expire(key: impl ToArg, seconds: i64) -> bool { cmd!("EXPIRE").arg(key).arg(seconds) }

    /// `EXPIRE key seconds NX|XX|GT|LT`: true if the time to live was set.
    fn expire_if(key: impl ToArg, seconds: i64, condition: ExpireCondition) -> bool {
        cmd!("EXPIRE").arg(key).arg(seconds).arg(condition.word())
    }

    /// `PEXPIRE key millis`: true if the time to live was set.
    fn pexpire(key: impl ToArg, millis: i64) -> bool { cmd!("PEXPIRE").arg(key).arg(millis) }

    /// `EXPIREAT key unix_seconds`: true if the expiry was set.
    fn expire_at(key: impl ToArg, unix_seconds: i64) -> bool {
        cmd!("EXPIREAT").arg(key).arg(unix_seconds)
    }

    /// `TTL key`: seconds to live; -1 without expiry, -2 if the key does not exist.
    fn ttl(key: impl ToArg) -> i64 { cmd!("TTL").arg(key) }

    /// `PTTL key`: milliseconds to live; -1 without expiry, -2 if the key does not exist.
    fn pttl(key: impl ToArg) -> i64 { cmd!("PTTL").arg(key) }

    /// `PERSIST key`: true if an expiry was removed.
    fn persist(key: impl ToArg) -> bool { cmd!("PERSIST").arg(key) }

    /// `RENAME key newkey`.
    fn rename(key: impl ToArg, new_key: impl ToArg) -> () { cmd!("RENAME").arg(key).arg(new_key) }

    /// `RENAMENX key newkey`: true if renamed (the new name did not exist).
    fn rename_nx(key: impl ToArg, new_key: impl ToArg) -> bool {
        cmd!("RENAMENX").arg(key).arg(new_key)
    }

    /// `TYPE key`: `string`, `list`, `set`, `zset`, `hash`, `stream`, or `none`.
    fn key_type(key: impl ToArg) -> String { cmd!("TYPE").arg(key) }

    /// `KEYS pattern`. Blocks the server on large databases: prefer [`scan`](Self::scan).
    fn keys(pattern: impl ToArg) -> Vec<Bytes> { cmd!("KEYS").arg(pattern) }

    /// `SCAN cursor MATCH pattern COUNT count`: the next cursor (0 when finished) and keys.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let mut cursor = 0;
    /// loop {
    ///     let (next, keys) = client.scan(cursor, "user:*", 100).await?;
    ///     println!("{} keys", keys.len());
    ///     if next == 0 { break; }
    ///     cursor = next;
    /// }
    /// # Ok(()) }
    /// ```
    fn scan(cursor: u64, pattern: impl ToArg, count: u64) -> (u64, Vec<Bytes>) {
        cmd!("SCAN").arg(cursor).arg("MATCH").arg(pattern).arg("COUNT").arg(count)
    }
}
