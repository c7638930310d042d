//! Sets: SADD, SREM, SMEMBERS, SISMEMBER, SINTER...

use std::collections::HashSet;

use bytes::Bytes;

use super::commands;
use crate::cmd::{Cmd, ToArg};

commands! {
    /// `SADD key member...`: how many members were new.
    fn sadd(key: impl ToArg, members: impl IntoIterator<Item = impl ToArg>) -> u64 {
        Cmd::new("SADD").arg(key).args(members)
    }

    /// `SREM key member...`: how many members were removed.
    fn srem(key: impl ToArg, members: impl IntoIterator<Item = impl ToArg>) -> u64 {
        Cmd::new("SREM").arg(key).args(members)
    }

    /// `SMEMBERS key`.
    fn smembers(key: impl ToArg) -> HashSet<Bytes> { Cmd::new("SMEMBERS").arg(key) }

    /// `SISMEMBER key member`.
    fn sismember(key: impl ToArg, member: impl ToArg) -> bool {
        Cmd::new("SISMEMBER").arg(key).arg(member)
    }

    /// `SMISMEMBER key member...`: one bool per member, in order.
    fn smismember(key: impl ToArg, members: impl IntoIterator<Item = impl ToArg>) -> Vec<bool> {
        Cmd::new("SMISMEMBER").arg(key).args(members)
    }

    /// `SCARD key`: the number of members.
    fn scard(key: impl ToArg) -> u64 { Cmd::new("SCARD").arg(key) }

    /// `SPOP key`: a random member, removed.
    fn spop(key: impl ToArg) -> Option<Bytes> { Cmd::new("SPOP").arg(key) }

    /// `SRANDMEMBER key`: a random member, kept.
    fn srandmember(key: impl ToArg) -> Option<Bytes> { Cmd::new("SRANDMEMBER").arg(key) }

    /// `SINTER key...`.
    fn sinter(keys: impl IntoIterator<Item = impl ToArg>) -> HashSet<Bytes> { Cmd::new("SINTER").args(keys) }

    /// `SUNION key...`.
    fn sunion(keys: impl IntoIterator<Item = impl ToArg>) -> HashSet<Bytes> { Cmd::new("SUNION").args(keys) }

    /// `SDIFF key...`: members of the first set not in the others.
    fn sdiff(keys: impl IntoIterator<Item = impl ToArg>) -> HashSet<Bytes> { Cmd::new("SDIFF").args(keys) }

    /// `SINTERSTORE destination key...`: the size of the stored set.
    fn sinterstore(destination: impl ToArg, keys: impl IntoIterator<Item = impl ToArg>) -> u64 {
        Cmd::new("SINTERSTORE").arg(destination).args(keys)
    }

    /// `SMOVE source destination member`: true if moved.
    fn smove(source: impl ToArg, destination: impl ToArg, member: impl ToArg) -> bool {
        Cmd::new("SMOVE").arg(source).arg(destination).arg(member)
    }
}
