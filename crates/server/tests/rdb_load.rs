//! Loading a dump.rdb at start, next to a real redis-server 7.0 on the same file: an old
//! encoding (a Redis 2.4 zipmap hash) loads with the same contents and encoding.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use redline_testkit::{RedisServer, RedlineServer, Reply};

/// `tests/assets/hash-zipmap.rdb` of Redis's suite: an RDB version 3 file whose key
/// `hash` is the zipmap {f1: v1, f2: v2}.
const HASH_ZIPMAP_RDB: &[u8] =
    b"REDIS0003\xfe\x00\x09\x04hash\x10\x02\x02f1\x02\x00v1\x02f2\x02\x00v2\xff\xff";

/// What a server shows of the key `hash`: its encoding and its fields.
fn show_hash(cmd: impl Fn(&[&str]) -> Reply) -> (Reply, Reply, Reply) {
    (
        cmd(&["OBJECT", "ENCODING", "hash"]),
        cmd(&["HLEN", "hash"]),
        cmd(&["HMGET", "hash", "f1", "f2"]),
    )
}

#[test]
fn a_zipmap_hash_loads_as_redis_server_loads_it() {
    for limits in [
        &[][..],
        &["--hash-max-ziplist-entries", "1"][..],
        &["--hash-max-ziplist-value", "1"][..],
    ] {
        let mut args = vec!["--save", ""];
        args.extend_from_slice(limits);
        let mut ours = RedlineServer::builder().args(args.iter().copied()).start().unwrap();
        let mut theirs = RedisServer::builder().args(args.iter().copied()).start().unwrap();
        ours.kill();
        theirs.kill();
        std::fs::write(ours.dir().join("dump.rdb"), HASH_ZIPMAP_RDB).unwrap();
        std::fs::write(theirs.dir().join("dump.rdb"), HASH_ZIPMAP_RDB).unwrap();
        ours.restart().unwrap();
        theirs.restart().unwrap();
        let (encoding, len, values) = show_hash(|a| ours.cmd(a).unwrap());
        assert_eq!(
            (encoding.clone(), len, values),
            show_hash(|a| theirs.cmd(a).unwrap()),
            "{limits:?}"
        );
        let want = if limits.is_empty() {
            "listpack"
        } else {
            "hashtable"
        };
        assert_eq!(encoding.text().as_deref(), Some(want), "{limits:?}");
    }
}
