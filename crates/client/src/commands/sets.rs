//! Sets: SADD, SREM, SMEMBERS, SISMEMBER, SINTER...

use std::collections::HashSet;

use bytes::Bytes;

use super::commands;
use crate::cmd::{cmd, ToArg};

commands! {
    /// `SADD key member...`: how many members were new.
    fn sadd(key: impl ToArg, members: impl IntoIterator<Item = impl ToArg>) -> u64 {
        cmd!("SADD").arg(key).args(members)
    }

    /// `SREM key member...`: how many members were removed.
    fn srem(key: impl ToArg, members: impl IntoIterator<Item = impl ToArg>) -> u64 {
        cmd!("SREM").arg(key).args(members)
    }

    /// `SMEMBERS key`.
    fn smembers(key: impl ToArg) -> HashSet<Bytes> { cmd!("SMEMBERS").arg(key) }

    /// `SISMEMBER key member`.
    fn sismember(key: impl ToArg, member: impl ToArg) -> bool {
        cmd!("SISMEMBER").arg(key).arg(member)
    }

    /// `SMISMEMBER key member...`: one bool per member, in order.
    fn smismember(key: impl ToArg, members: impl IntoIterator<Item = impl ToArg>) -> Vec<bool> {
        cmd!("SMISMEMBER").arg(key).args(members)
    }

    /// `SCARD key`: the number of members.
    fn scard(key: impl ToArg) -> u64 { cmd!("SCARD").arg(key) }

    /// `SPOP key`: a random member, removed.
    fn spop(key: impl ToArg) -> Option<Bytes> { cmd!("SPOP").arg(key) }

    /// `SRANDMEMBER key`: a random member, kept.
    fn srandmember(key: impl ToArg) -> Option<Bytes> { cmd!("SRANDMEMBER").arg(key) }

    /// `SINTER key...`.
    fn sinter(keys: impl IntoIterator<Item = impl ToArg>) -> HashSet<Bytes> { cmd!("SINTER").args(keys) }

    /// `SUNION key...`.
    fn sunion(keys: impl IntoIterator<Item = impl ToArg>) -> HashSet<Bytes> { cmd!("SUNION").args(keys) }

    /// `SDIFF key...`: members of the first set not in the others.
    fn sdiff(keys: impl IntoIterator<Item = impl ToArg>) -> HashSet<Bytes> { cmd!("SDIFF").args(keys) }

    /// `SINTERSTORE destination key...`: the size of the stored set.
    fn sinterstore(destination: impl ToArg, keys: impl IntoIterator<Item = impl ToArg>) -> u64 {
        cmd!("SINTERSTORE").arg(destination).args(keys)
    }

    /// `SMOVE source destination member`: true if moved.
    fn smove(source: impl ToArg, destination: impl ToArg, member: impl ToArg) -> bool {
        cmd!("SMOVE").arg(source).arg(destination).arg(member)
    }
}
