//! Sorted sets: ZADD, ZSCORE, ZRANGE (with scores), ZRANK, ZPOPMIN...
//!
//! Scores are `f64`. Ranges by score take their bounds as arguments so Redis's syntax
//! (`"-inf"`, `"(1.5"`) is available as well as plain numbers.

use bytes::Bytes;
use redline_resp::Frame;

use super::commands;
use crate::cmd::{cmd, ToArg};
use crate::error::Error;

/// Options of [`Client::zadd_with`](crate::Client::zadd_with).
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// use redline::ZAddOptions;
///
/// // Update existing members only when the score grows; count changed members.
/// let opts = ZAddOptions { only_new: Some(false), greater: true, changed: true, ..Default::default() };
/// let changed = client.zadd_with("board", opts, [(42.0, "ann")]).await?;
/// # let _ = changed;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ZAddOptions {
    /// `NX` (only add) when `Some(true)`, `XX` (only update) when `Some(false)`.
    pub only_new: Option<bool>,
    /// `GT`: update only when the new score is greater.
    pub greater: bool,
    /// `LT`: update only when the new score is less.
    pub less: bool,
    /// `CH`: count changed members, not only added ones.
    pub changed: bool,
}

/// Member/score pairs: a RESP2 flat array or RESP3 pairs.
fn with_scores(frame: Frame) -> Result<Vec<(Bytes, f64)>, Error> {
    crate::reply::pairs(frame)
}

/// In a pipeline: `[[member, score], ...]` whatever the protocol, as `Vec<(Bytes, f64)>`
/// converts from.
fn scores_shape(frame: Frame) -> Frame {
    crate::reply::pairs_shape(frame)
}

commands! {
    /// `ZADD key score member`: 1 if the member is new.
    fn zadd(key: impl ToArg, score: f64, member: impl ToArg) -> u64 {
        cmd!("ZADD").arg(key).arg(score).arg(member)
    }

    /// `ZADD key score member [score member ...]`: how many members were new.
    fn zadd_multiple(key: impl ToArg, items: impl IntoIterator<Item = (f64, impl ToArg)>) -> u64 {
        let mut cmd = cmd!("ZADD").arg(key);
        for (score, member) in items {
            cmd.push_arg(score);
            cmd.push_arg(member);
        }
        cmd
    }

    /// `ZADD key [NX|XX] [GT|LT] [CH] score member...`: added (or, with `changed`, changed) count.
    fn zadd_with(key: impl ToArg, options: ZAddOptions, items: impl IntoIterator<Item = (f64, impl ToArg)>) -> u64 {
        let mut cmd = cmd!("ZADD").arg(key);
        match options.only_new {
            Some(true) => cmd.push_arg("NX"),
            Some(false) => cmd.push_arg("XX"),
            None => {}
        }
        if options.greater {
            cmd.push_arg("GT");
        }
        if options.less {
            cmd.push_arg("LT");
        }
        if options.changed {
            cmd.push_arg("CH");
        }
        for (score, member) in items {
            cmd.push_arg(score);
            cmd.push_arg(member);
        }
        cmd
    }

    /// `ZINCRBY key delta member`: the new score.
    fn zincr_by(key: impl ToArg, delta: f64, member: impl ToArg) -> f64 {
        cmd!("ZINCRBY").arg(key).arg(delta).arg(member)
    }

    /// `ZSCORE key member`.
    fn zscore(key: impl ToArg, member: impl ToArg) -> Option<f64> {
        cmd!("ZSCORE").arg(key).arg(member)
    }

    /// `ZMSCORE key member...`: one `Option` per member.
    fn zmscore(key: impl ToArg, members: impl IntoIterator<Item = impl ToArg>) -> Vec<Option<f64>> {
        cmd!("ZMSCORE").arg(key).args(members)
    }

    /// `ZREM key member...`: how many were removed.
    fn zrem(key: impl ToArg, members: impl IntoIterator<Item = impl ToArg>) -> u64 {
        cmd!("ZREM").arg(key).args(members)
    }

    /// `ZCARD key`.
    fn zcard(key: impl ToArg) -> u64 { cmd!("ZCARD").arg(key) }

    /// `ZCOUNT key min max`: members with a score in range (`"-inf"`, `"(5"` accepted).
    fn zcount(key: impl ToArg, min: impl ToArg, max: impl ToArg) -> u64 {
        cmd!("ZCOUNT").arg(key).arg(min).arg(max)
    }

    /// `ZRANGE key start stop`: members by rank, lowest score first.
    fn zrange(key: impl ToArg, start: i64, stop: i64) -> Vec<Bytes> {
        cmd!("ZRANGE").arg(key).arg(start).arg(stop)
    }

    /// `ZRANGE key start stop WITHSCORES`: members and scores by rank.
    fn zrange_withscores(key: impl ToArg, start: i64, stop: i64) -> Vec<(Bytes, f64)> as with_scores {
        cmd!("ZRANGE").arg(key).arg(start).arg(stop).arg("WITHSCORES").with_shape(scores_shape)
    }

    /// `ZRANGE key start stop REV`: members by rank, highest score first.
    fn zrevrange(key: impl ToArg, start: i64, stop: i64) -> Vec<Bytes> {
        cmd!("ZRANGE").arg(key).arg(start).arg(stop).arg("REV")
    }

    /// `ZRANGE key min max BYSCORE`: members with a score in range.
    fn zrange_by_score(key: impl ToArg, min: impl ToArg, max: impl ToArg) -> Vec<Bytes> {
        cmd!("ZRANGE").arg(key).arg(min).arg(max).arg("BYSCORE")
    }

    /// `ZRANK key member`: 0-based rank, lowest score first.
    fn zrank(key: impl ToArg, member: impl ToArg) -> Option<u64> { cmd!("ZRANK").arg(key).arg(member) }

    /// `ZREVRANK key member`: 0-based rank, highest score first.
    fn zrevrank(key: impl ToArg, member: impl ToArg) -> Option<u64> {
        cmd!("ZREVRANK").arg(key).arg(member)
    }

    /// `ZPOPMIN key count`: the lowest-scored members with their scores, removed.
    fn zpopmin(key: impl ToArg, count: u64) -> Vec<(Bytes, f64)> as with_scores {
        cmd!("ZPOPMIN").arg(key).arg(count).with_shape(scores_shape)
    }

    /// `ZPOPMAX key count`: the highest-scored members with their scores, removed.
    fn zpopmax(key: impl ToArg, count: u64) -> Vec<(Bytes, f64)> as with_scores {
        cmd!("ZPOPMAX").arg(key).arg(count).with_shape(scores_shape)
    }
}
