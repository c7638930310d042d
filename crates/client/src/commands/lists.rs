//! Lists: LPUSH, RPUSH, LPOP, LRANGE... (blocking pops need a dedicated connection and are
//! not here).

use bytes::Bytes;

use super::commands;
use crate::cmd::{cmd, ToArg};

commands! {
    /// `LPUSH key value...`: the new length.
    fn lpush(key: impl ToArg, values: impl IntoIterator<Item = impl ToArg>) -> u64 {
        cmd!("LPUSH").arg(key).args(values)
    }

    /// `RPUSH key value...`: the new length.
    fn rpush(key: impl ToArg, values: impl IntoIterator<Item = impl ToArg>) -> u64 {
        cmd!("RPUSH").arg(key).args(values)
    }

    /// `LPUSHX key value...`: the new length, 0 (and nothing pushed) if the list does not exist.
    fn lpush_x(key: impl ToArg, values: impl IntoIterator<Item = impl ToArg>) -> u64 {
        cmd!("LPUSHX").arg(key).args(values)
    }

    /// `RPUSHX key value...`: the new length, 0 (and nothing pushed) if the list does not exist.
    fn rpush_x(key: impl ToArg, values: impl IntoIterator<Item = impl ToArg>) -> u64 {
        cmd!("RPUSHX").arg(key).args(values)
    }

    /// `LPOP key`.
    fn lpop(key: impl ToArg) -> Option<Bytes> { cmd!("LPOP").arg(key) }

    /// `RPOP key`.
    fn rpop(key: impl ToArg) -> Option<Bytes> { cmd!("RPOP").arg(key) }

    /// `LPOP key count`: up to `count` elements (empty if the list does not exist).
    fn lpop_count(key: impl ToArg, count: u64) -> Vec<Bytes> { cmd!("LPOP").arg(key).arg(count) }

    /// `RPOP key count`: up to `count` elements (empty if the list does not exist).
    fn rpop_count(key: impl ToArg, count: u64) -> Vec<Bytes> { cmd!("RPOP").arg(key).arg(count) }

    /// `LRANGE key start stop` (inclusive, negative counts from the end).
    fn lrange(key: impl ToArg, start: i64, stop: i64) -> Vec<Bytes> {
        cmd!("LRANGE").arg(key).arg(start).arg(stop)
    }

    /// `LLEN key`.
    fn llen(key: impl ToArg) -> u64 { cmd!("LLEN").arg(key) }

    /// `LINDEX key index`.
    fn lindex(key: impl ToArg, index: i64) -> Option<Bytes> { cmd!("LINDEX").arg(key).arg(index) }

    /// `LSET key index value`.
    fn lset(key: impl ToArg, index: i64, value: impl ToArg) -> () {
        cmd!("LSET").arg(key).arg(index).arg(value)
    }

    /// `LREM key count value`: how many were removed.
    fn lrem(key: impl ToArg, count: i64, value: impl ToArg) -> u64 {
        cmd!("LREM").arg(key).arg(count).arg(value)
    }

    /// `LTRIM key start stop`.
    fn ltrim(key: impl ToArg, start: i64, stop: i64) -> () {
        cmd!("LTRIM").arg(key).arg(start).arg(stop)
    }

    /// `LPOS key element`: the first index of `element`.
    fn lpos(key: impl ToArg, element: impl ToArg) -> Option<u64> {
        cmd!("LPOS").arg(key).arg(element)
    }

    /// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`: the moved element. `from_left`
    /// pops from the head of `source`, `to_left` pushes to the head of `destination`.
    fn lmove(source: impl ToArg, destination: impl ToArg, from_left: bool, to_left: bool) -> Option<Bytes> {
        let side = |left: bool| if left { "LEFT" } else { "RIGHT" };
        cmd!("LMOVE").arg(source).arg(destination).arg(side(from_left)).arg(side(to_left))
    }
}
