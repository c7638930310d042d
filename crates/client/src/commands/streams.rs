//! Streams: XADD, XRANGE, XREVRANGE, XREAD (and XREAD BLOCK on a dedicated
//! connection), XLEN, XDEL, XTRIM, and consumer groups: XGROUP CREATE/DESTROY,
//! XREADGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO.

use std::time::Duration;

use bytes::Bytes;
use redline_resp::Frame;

use super::commands;
use crate::cmd::{cmd, Cmd, EncodedArgs, ToArg};
use crate::error::Error;
use crate::reply::{check, pairs, FromReply};

/// One stream entry: its id and its field/value pairs in order.
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// for entry in client.xrange("events", "-", "+").await? {
///     println!("{} {:?}", entry.id, entry.fields);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEntry {
    /// `<millis>-<seq>`.
    pub id: String,
    /// Field/value pairs as added.
    pub fields: Vec<(Bytes, Bytes)>,
}

impl FromReply for StreamEntry {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        let (id, fields): (String, Frame) = FromReply::from_reply(frame)?;
        Ok(StreamEntry {
            id,
            // A deleted entry (XAUTOCLAIM, XPENDING races) has nil fields.
            fields: pairs(fields)?,
        })
    }
}

/// The entries XREAD returned, per stream: a RESP2 array of `[key, entries]` or a RESP3
/// map; nil (nothing new) is empty.
fn read_reply(frame: Frame) -> Result<Vec<(Bytes, Vec<StreamEntry>)>, Error> {
    match check(frame)? {
        Frame::Null | Frame::NullArray | Frame::NullBulk => Ok(Vec::new()),
        other => pairs(other),
    }
}

/// In a pipeline: `[[key, entries], ...]` (nil: empty), as
/// `Vec<(Bytes, Vec<StreamEntry>)>` converts from.
fn read_shape(frame: Frame) -> Frame {
    match frame {
        Frame::Null | Frame::NullArray | Frame::NullBulk => Frame::Array(Vec::new()),
        other => crate::reply::pairs_shape(other),
    }
}

/// `COUNT n STREAMS key... id...`.
fn read_args(
    mut cmd: Cmd,
    streams: impl IntoIterator<Item = (impl ToArg, impl ToArg)>,
    count: Option<u64>,
) -> Cmd {
    if let Some(count) = count {
        cmd = cmd.arg("COUNT").arg(count);
    }
    let (mut keys, mut ids) = (EncodedArgs::default(), EncodedArgs::default());
    for (key, id) in streams {
        keys.push(key);
        ids.push(id);
    }
    cmd.arg("STREAMS")
        .append_encoded(&keys)
        .append_encoded(&ids)
}

fn add_fields(mut cmd: Cmd, fields: impl IntoIterator<Item = (impl ToArg, impl ToArg)>) -> Cmd {
    for (f, v) in fields {
        cmd.push_arg(f);
        cmd.push_arg(v);
    }
    cmd
}

commands! {
    /// `XADD key id field value...`: the entry's id (`"*"` lets the server choose it).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let id = client.xadd("events", "*", [("type", "login"), ("user", "42")]).await?;
    /// # let _ = id;
    /// # Ok(()) }
    /// ```
    fn xadd(key: impl ToArg, id: impl ToArg, fields: impl IntoIterator<Item = (impl ToArg, impl ToArg)>) -> String {
        add_fields(cmd!("XADD").arg(key).arg(id), fields)
    }

    /// `XADD key MAXLEN ~ max_len id field value...`: adds, trimming the stream to about
    /// `max_len` entries.
    fn xadd_capped(key: impl ToArg, max_len: u64, id: impl ToArg, fields: impl IntoIterator<Item = (impl ToArg, impl ToArg)>) -> String {
        add_fields(cmd!("XADD").arg(key).arg("MAXLEN").arg("~").arg(max_len).arg(id), fields)
    }

    /// `XRANGE key start end` (`"-"` and `"+"` for the ends).
    fn xrange(key: impl ToArg, start: impl ToArg, end: impl ToArg) -> Vec<StreamEntry> {
        cmd!("XRANGE").arg(key).arg(start).arg(end)
    }

    /// `XRANGE key start end COUNT count`.
    fn xrange_count(key: impl ToArg, start: impl ToArg, end: impl ToArg, count: u64) -> Vec<StreamEntry> {
        cmd!("XRANGE").arg(key).arg(start).arg(end).arg("COUNT").arg(count)
    }

    /// `XREVRANGE key end start`: newest first.
    fn xrevrange(key: impl ToArg, end: impl ToArg, start: impl ToArg) -> Vec<StreamEntry> {
        cmd!("XREVRANGE").arg(key).arg(end).arg(start)
    }

    /// `XLEN key`.
    fn xlen(key: impl ToArg) -> u64 { cmd!("XLEN").arg(key) }

    /// `XDEL key id...`: how many entries were deleted.
    fn xdel(key: impl ToArg, ids: impl IntoIterator<Item = impl ToArg>) -> u64 {
        cmd!("XDEL").arg(key).args(ids)
    }

    /// `XTRIM key MAXLEN max_len`: how many entries were removed.
    fn xtrim(key: impl ToArg, max_len: u64) -> u64 {
        cmd!("XTRIM").arg(key).arg("MAXLEN").arg(max_len)
    }

    /// `XREAD [COUNT count] STREAMS key... id...` without blocking: entries after each
    /// id, per stream (streams with nothing new are left out).
    fn xread(streams: impl IntoIterator<Item = (impl ToArg, impl ToArg)>, count: Option<u64>) -> Vec<(Bytes, Vec<StreamEntry>)> as read_reply {
        read_args(cmd!("XREAD"), streams, count).with_shape(read_shape)
    }

    /// `XREADGROUP GROUP group consumer [COUNT count] STREAMS key... id...` without
    /// blocking: `">"` for new entries, or an id for the consumer's pending history.
    fn xreadgroup(group: impl ToArg, consumer: impl ToArg, streams: impl IntoIterator<Item = (impl ToArg, impl ToArg)>, count: Option<u64>) -> Vec<(Bytes, Vec<StreamEntry>)> as read_reply {
        read_args(cmd!("XREADGROUP").arg("GROUP").arg(group).arg(consumer), streams, count).with_shape(read_shape)
    }

    /// `XGROUP CREATE key group id [MKSTREAM]` (`"$"`: only entries added from now on).
    fn xgroup_create(key: impl ToArg, group: impl ToArg, id: impl ToArg, mkstream: bool) -> () {
        let cmd = cmd!("XGROUP").arg("CREATE").arg(key).arg(group).arg(id);
        if mkstream { cmd.arg("MKSTREAM") } else { cmd }
    }

    /// `XGROUP DESTROY key group`: whether the group existed.
    fn xgroup_destroy(key: impl ToArg, group: impl ToArg) -> bool {
        cmd!("XGROUP").arg("DESTROY").arg(key).arg(group)
    }

    /// `XACK key group id...`: how many pending entries were acknowledged.
    fn xack(key: impl ToArg, group: impl ToArg, ids: impl IntoIterator<Item = impl ToArg>) -> u64 {
        cmd!("XACK").arg(key).arg(group).args(ids)
    }

    /// `XPENDING key group`: `[count, smallest id, largest id, [[consumer, count]...]]`.
    fn xpending(key: impl ToArg, group: impl ToArg) -> Frame {
        cmd!("XPENDING").arg(key).arg(group)
    }

    /// `XCLAIM key group consumer min_idle_ms id... JUSTID`: the ids now owned by
    /// `consumer`.
    fn xclaim_ids(key: impl ToArg, group: impl ToArg, consumer: impl ToArg, min_idle_ms: u64, ids: impl IntoIterator<Item = impl ToArg>) -> Vec<String> {
        cmd!("XCLAIM").arg(key).arg(group).arg(consumer).arg(min_idle_ms).args(ids).arg("JUSTID")
    }

    /// `XAUTOCLAIM key group consumer min_idle_ms start COUNT count`:
    /// `[next start, [entries], [deleted ids]]`.
    fn xautoclaim(key: impl ToArg, group: impl ToArg, consumer: impl ToArg, min_idle_ms: u64, start: impl ToArg, count: u64) -> Frame {
        cmd!("XAUTOCLAIM").arg(key).arg(group).arg(consumer).arg(min_idle_ms).arg(start).arg("COUNT").arg(count)
    }

    /// `XINFO STREAM key`.
    fn xinfo_stream(key: impl ToArg) -> Frame { cmd!("XINFO").arg("STREAM").arg(key) }

    /// `XINFO GROUPS key`.
    fn xinfo_groups(key: impl ToArg) -> Frame { cmd!("XINFO").arg("GROUPS").arg(key) }

    /// `XINFO CONSUMERS key group`.
    fn xinfo_consumers(key: impl ToArg, group: impl ToArg) -> Frame {
        cmd!("XINFO").arg("CONSUMERS").arg(key).arg(group)
    }
}

commands! {
    clients_only;

    /// `XREAD [COUNT count] BLOCK millis STREAMS key... id...` on a dedicated connection:
    /// waits up to `block` (zero waits forever) for entries after each id (`"$"`: only
    /// new ones). Empty on timeout. (Blocking: the clients only, see `blocking.rs`.)
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// use std::time::Duration;
    ///
    /// // Only entries added from now on, waiting up to 2 s.
    /// let new = client.xread_block([("events", "$")], Some(10), Duration::from_secs(2)).await?;
    /// # let _ = new;
    /// # Ok(()) }
    /// ```
    fn xread_block(streams: impl IntoIterator<Item = (impl ToArg, impl ToArg)>, count: Option<u64>, block: Duration) -> Vec<(Bytes, Vec<StreamEntry>)> as read_reply {
        let millis = super::blocking::timeout_millis(block);
        let cmd = match count {
            Some(count) => cmd!("XREAD").arg("COUNT").arg(count),
            None => cmd!("XREAD"),
        };
        read_args(cmd.arg("BLOCK").arg(millis), streams, None)
    }
}
