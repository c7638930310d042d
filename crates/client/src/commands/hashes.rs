//! Hashes: HSET, HGET, HGETALL, HINCRBY...

use std::collections::HashMap;

use bytes::Bytes;

use super::commands;
use crate::cmd::{cmd, ToArg};

commands! {
    /// `HSET key field value`: 1 if the field is new, 0 if it was updated.
    fn hset(key: impl ToArg, field: impl ToArg, value: impl ToArg) -> u64 {
        cmd!("HSET").arg(key).arg(field).arg(value)
    }

    /// `HSET key field value [field value ...]`: how many fields were added.
    fn hset_multiple(key: impl ToArg, pairs: impl IntoIterator<Item = (impl ToArg, impl ToArg)>) -> u64 {
        let mut cmd = cmd!("HSET").arg(key);
        for (f, v) in pairs {
            cmd.push_arg(f);
            cmd.push_arg(v);
        }
        cmd
    }

    /// `HSETNX key field value`: true if the field was new and set.
    fn hset_nx(key: impl ToArg, field: impl ToArg, value: impl ToArg) -> bool {
        cmd!("HSETNX").arg(key).arg(field).arg(value)
    }

    /// `HGET key field`.
    fn hget(key: impl ToArg, field: impl ToArg) -> Option<Bytes> {
        cmd!("HGET").arg(key).arg(field)
    }

    /// `HMGET key field...`: one `Option` per field, in order.
    fn hmget(key: impl ToArg, fields: impl IntoIterator<Item = impl ToArg>) -> Vec<Option<Bytes>> {
        cmd!("HMGET").arg(key).args(fields)
    }

    /// `HGETALL key`: every field and value (empty if the key does not exist).
    fn hgetall(key: impl ToArg) -> HashMap<Bytes, Bytes> { cmd!("HGETALL").arg(key) }

    /// `HDEL key field...`: how many fields were removed.
    fn hdel(key: impl ToArg, fields: impl IntoIterator<Item = impl ToArg>) -> u64 {
        cmd!("HDEL").arg(key).args(fields)
    }

    /// `HEXISTS key field`.
    fn hexists(key: impl ToArg, field: impl ToArg) -> bool { cmd!("HEXISTS").arg(key).arg(field) }

    /// `HINCRBY key field delta`: the new value.
    fn hincr_by(key: impl ToArg, field: impl ToArg, delta: i64) -> i64 {
        cmd!("HINCRBY").arg(key).arg(field).arg(delta)
    }

    /// `HINCRBYFLOAT key field delta`: the new value.
    fn hincr_by_float(key: impl ToArg, field: impl ToArg, delta: f64) -> f64 {
        cmd!("HINCRBYFLOAT").arg(key).arg(field).arg(delta)
    }

    /// `HKEYS key`.
    fn hkeys(key: impl ToArg) -> Vec<Bytes> { cmd!("HKEYS").arg(key) }

    /// `HVALS key`.
    fn hvals(key: impl ToArg) -> Vec<Bytes> { cmd!("HVALS").arg(key) }

    /// `HLEN key`: the number of fields.
    fn hlen(key: impl ToArg) -> u64 { cmd!("HLEN").arg(key) }

    /// `HSTRLEN key field`: the length of the field's value.
    fn hstrlen(key: impl ToArg, field: impl ToArg) -> u64 { cmd!("HSTRLEN").arg(key).arg(field) }
}
