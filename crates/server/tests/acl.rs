//! ACL users against redis-server 7.0 and redline-server side by side: the same sequences
//! of ACL SETUSER (every rule and its errors), GETUSER and LIST after them, AUTH and
//! HELLO AUTH as named users, commands, subcommands, categories, key patterns with read
//! and write permissions, channels, MULTI/EXEC, DELUSER disconnecting the user's
//! clients, WHOAMI, DRYRUN and `requirepass`; the replies must be identical.
//!
//! Redis 7.0 prints command rules in hash-table orders that are random per process, so
//! rule strings are compared with their tokens after `+@all`/`-@all` sorted, and each
//! case is chosen so that the categories Redis picks are not ambiguous.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;

use common::{show, Conn, Redline};
use redline_resp::Frame;
use redline_testkit::RedisServer;

/// How to read after a step.
#[derive(Clone, Copy)]
enum Read {
    /// One reply.
    One,
    /// One array reply, compared as a sorted list.
    Sorted,
    /// One reply, compared only as "ok" or its error text (replies that carry ids).
    Status,
    /// A reply or the connection's end.
    MaybeClosed,
    /// ACL LOG: ages dropped, client info reduced to its `cmd=`, `user=` and `db=`.
    Log,
}

use Read::*;

type Step = (usize, &'static [&'static str], Read);

/// Sorts the single-command tokens of a command-rule string (after its leading
/// `+@all`/`-@all` and the categories, which Redis emits in a fixed order).
fn normalise_rules(text: &str) -> String {
    let Some(at) = text.find("-@all").or_else(|| text.find("+@all")) else {
        return text.to_string();
    };
    let (head, tail) = text.split_at(at + 5);
    let tokens: Vec<&str> = tail.split(' ').filter(|t| !t.is_empty()).collect();
    let category = |t: &&&str| t.starts_with("+@") || t.starts_with("-@");
    let categories = tokens.iter().take_while(category).count();
    let (categories, singles) = tokens.split_at(categories);
    let mut singles = singles.to_vec();
    singles.sort_unstable();
    let tokens = categories.iter().chain(&singles);
    let mut out = head.to_string();
    for t in tokens {
        out.push(' ');
        out.push_str(t);
    }
    out
}

fn normalise(frame: Frame) -> Frame {
    let text = |b: &bytes::Bytes| normalise_rules(&String::from_utf8_lossy(b));
    match frame {
        Frame::Bulk(b) => Frame::Bulk(text(&b).into()),
        Frame::Simple(b) => Frame::Simple(text(&b).into()),
        Frame::Array(items) => Frame::Array(items.into_iter().map(normalise).collect()),
        Frame::Set(items) => Frame::Set(items.into_iter().map(normalise).collect()),
        Frame::Map(pairs) => Frame::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (normalise(k), normalise(v)))
                .collect(),
        ),
        other => other,
    }
}

/// ACL LOG entries without what differs between any two servers.
fn normalise_log(frame: Frame) -> Frame {
    let Frame::Array(entries) = frame else {
        return frame;
    };
    let entries = entries
        .into_iter()
        .map(|entry| {
            let Frame::Array(mut fields) = entry else {
                return entry;
            };
            for i in 0..fields.len().saturating_sub(1) {
                let key = show(&fields[i]);
                if key.contains("age-seconds") {
                    fields[i + 1] = Frame::Bulk("<age>".into());
                } else if key.contains("client-info") {
                    let Frame::Bulk(info) = &fields[i + 1] else {
                        continue;
                    };
                    let kept: Vec<String> = String::from_utf8_lossy(info)
                        .split(' ')
                        .filter(|f| {
                            f.starts_with("cmd=") || f.starts_with("user=") || f.starts_with("db=")
                        })
                        .map(str::to_string)
                        .collect();
                    fields[i + 1] = Frame::Bulk(kept.join(" ").into());
                }
            }
            Frame::Array(fields)
        })
        .collect();
    Frame::Array(entries)
}

fn run(addr: SocketAddr, steps: &[Step]) -> Vec<String> {
    let mut conns: Vec<Conn> = (0..3).map(|_| Conn::connect(addr)).collect();
    let mut out = Vec::new();
    for (i, (who, args, read)) in steps.iter().enumerate() {
        let conn = &mut conns[*who];
        let mut bytes = bytes::BytesMut::new();
        redline_resp::encode::command(&mut bytes, args.iter().map(|a| a.as_bytes()));
        let sent = conn.try_send_raw(&bytes).is_ok();
        let reply = if sent { conn.read() } else { None };
        let text = match (reply, read) {
            (None, MaybeClosed) => "<closed>".to_string(),
            (None, _) => panic!("step {i} {args:?}: connection closed"),
            (Some(Frame::Error(e)), Status) => String::from_utf8_lossy(&e).into_owned(),
            (Some(_), Status) => "ok".to_string(),
            (Some(Frame::Array(mut items)), Sorted) => {
                items.sort_by_key(show);
                show(&Frame::Array(items))
            }
            (Some(frame), Log) => show(&normalise_log(frame)),
            (Some(frame), _) => show(&normalise(frame)),
        };
        out.push(format!("{i} {who} {args:?} -> {text}"));
    }
    out
}

fn compare(steps: &[Step]) {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let expected = run(redis.addr(), steps);
    let got = run(redline.addr, steps);
    for (e, g) in expected.iter().zip(&got) {
        assert_eq!(g, e, "redline differs from redis");
    }
    assert_eq!(got.len(), expected.len());
}

#[test]
fn setuser_rules_list_and_getuser_match_redis() {
    const S: &[Step] = &[
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "GETUSER", "default"], One),
        (0, &["ACL", "SETUSER", "alice"], One),
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "GETUSER", "alice"], One),
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "alice",
                "on",
                ">p1",
                ">p2",
                ">p1",
                "~cached:*",
                "+get",
            ],
            One,
        ),
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "GETUSER", "alice"], One),
        (
            0,
            &[
                "ACL", "SETUSER", "alice", "<p1", "%R~r*", "%W~w*", "%RW~b*", "%rw~c", "%r~d", "~d",
            ],
            One,
        ),
        (0, &["ACL", "GETUSER", "alice"], One),
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "alice",
                "!f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a",
            ],
            One,
        ),
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "alice",
                "#f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a",
            ],
            One,
        ),
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "alice",
                "#F64551FCD6F07823CB87971CFB91446425DA18286B3AB1EF935E0CBD7A69F68A",
            ],
            One,
        ),
        (0, &["ACL", "SETUSER", "alice", "#abc"], One),
        (0, &["ACL", "SETUSER", "alice", "!abc"], One),
        (0, &["ACL", "SETUSER", "alice", "<nope"], One),
        (0, &["ACL", "GETUSER", "alice"], One),
        (0, &["ACL", "SETUSER", "alice", "nopass"], One),
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "SETUSER", "alice", ">again", "resetpass"], One),
        (0, &["ACL", "LIST"], One),
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "bob",
                "on",
                "nopass",
                "&news.*",
                "&chat",
                "&chat",
                "+@hash",
                "-hset",
                "+config|get",
                "+select|0",
                "+select|AbC",
            ],
            One,
        ),
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "GETUSER", "bob"], One),
        (
            0,
            &["ACL", "SETUSER", "bob", "-select", "+config", "-config|set"],
            One,
        ),
        (0, &["ACL", "GETUSER", "bob"], One),
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "bob",
                "+@all",
                "-@hash",
                "+hset",
                "-client|list",
            ],
            One,
        ),
        (0, &["ACL", "GETUSER", "bob"], One),
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "bob",
                "allcommands",
                "allkeys",
                "allchannels",
            ],
            One,
        ),
        (0, &["ACL", "LIST"], One),
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "bob",
                "nocommands",
                "resetkeys",
                "resetchannels",
                "skip-sanitize-payload",
            ],
            One,
        ),
        (0, &["ACL", "LIST"], One),
        (
            0,
            &["ACL", "SETUSER", "bob", "on", "~x", "&y", "+get", "reset"],
            One,
        ),
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "SETUSER", "carol", "+@dangerous"], One),
        (0, &["ACL", "SETUSER", "dave", "+@admin"], One),
        (0, &["ACL", "SETUSER", "erin", "+@all", "-@dangerous"], One),
        (
            0,
            &["ACL", "SETUSER", "frank", "+@string", "+@hash", "-@string"],
            One,
        ),
        (
            0,
            &[
                "ACL", "SETUSER", "grace", "OFF", "ON", "ALLKEYS", "%R~x", "+GET", "+@HASH",
            ],
            One,
        ),
        (0, &["ACL", "SETUSER", "grace", "allkeys", "%R~*"], One),
        (0, &["ACL", "SETUSER", "heidi", "%R~*", "~a", "%W~*"], One),
        (0, &["ACL", "SETUSER", "heidi", "~*"], One),
        (0, &["ACL", "SETUSER", "ivan", "&a", "&*", "&*"], One),
        (0, &["ACL", "SETUSER", "ivan", "&b"], One),
        (0, &["ACL", "SETUSER", "judy", ">", "%R", "%W~", "~"], One),
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "USERS"], One),
        // Errors: nothing of a failing SETUSER is applied, not even its valid rules.
        (0, &["ACL", "SETUSER", "alice", "+get", "bogus"], One),
        (0, &["ACL", "SETUSER", "alice", "+nope"], One),
        (0, &["ACL", "SETUSER", "alice", "+@nope"], One),
        (0, &["ACL", "SETUSER", "alice", "-@"], One),
        (0, &["ACL", "SETUSER", "alice", "+"], One),
        (0, &["ACL", "SETUSER", "alice", "+config|"], One),
        (0, &["ACL", "SETUSER", "alice", "+config|get|x"], One),
        (0, &["ACL", "SETUSER", "alice", "+config|nope"], One),
        (0, &["ACL", "SETUSER", "alice", "-select|0"], One),
        (0, &["ACL", "SETUSER", "alice", "+nope|x"], One),
        (0, &["ACL", "SETUSER", "alice", "%~a"], One),
        (0, &["ACL", "SETUSER", "alice", "%"], One),
        (0, &["ACL", "SETUSER", "alice", "%X~a"], One),
        (0, &["ACL", "SETUSER", "alice", "%RR~a"], One),
        (0, &["ACL", "SETUSER", "alice", "allkeys", "~a"], One),
        (0, &["ACL", "SETUSER", "alice", "allchannels", "&a"], One),
        (0, &["ACL", "SETUSER", "alice", ""], One),
        (0, &["ACL", "SETUSER", "a b", "on"], One),
        (0, &["ACL", "SETUSER", "newbie", "on", "+nope"], One),
        (0, &["ACL", "GETUSER", "newbie"], One),
        (0, &["ACL", "GETUSER", "alice"], One),
        (0, &["ACL", "SETUSER"], One),
        (0, &["ACL", "CAT"], Sorted),
        (0, &["ACL", "CAT", "hash"], Sorted),
        (0, &["ACL", "CAT", "DANGEROUS"], Sorted),
        (0, &["ACL", "CAT", "nope"], One),
        (0, &["ACL", "DELUSER", "nope", "alice", "default"], One),
        (0, &["ACL", "DELUSER", "nope", "alice", "bob"], One),
        (0, &["ACL", "USERS"], One),
        (0, &["ACL", "WHOAMI"], One),
        (0, &["HELLO", "3"], Status),
        (0, &["ACL", "GETUSER", "grace"], One),
        (0, &["ACL", "GETUSER", "nope"], One),
        (0, &["HELLO", "2"], Status),
        (0, &["ACL", "HELP"], One),
        (0, &["ACL", "HELP", "x"], One),
        (0, &["ACL", "LOAD"], One),
        (0, &["ACL", "SAVE"], One),
        (0, &["ACL", "GENPASS", "0"], One),
        (0, &["ACL", "GENPASS", "4097"], One),
        (0, &["ACL", "GENPASS", "abc"], One),
        (0, &["ACL", "GENPASS", "1", "2"], One),
    ];
    compare(S);
}

#[test]
fn permissions_match_redis() {
    const S: &[Step] = &[
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "u",
                "on",
                ">pw",
                "-config",
                "+config|get",
                "%R~r*",
                "%W~w*",
                "~k*",
                "&c*",
                "+get",
                "+set",
                "+copy",
                "+lmove",
                "+rpush",
                "+publish",
                "+subscribe",
                "+psubscribe",
                "+ssubscribe",
                "+spublish",
                "+multi",
                "+exec",
                "+select|0",
                "+@hash",
                "-hdel",
            ],
            One,
        ),
        (0, &["RPUSH", "r1", "a", "b"], One),
        (0, &["SET", "k1", "v"], One),
        (1, &["GET", "k1"], One),
        (1, &["AUTH", "u", "wrong"], One),
        (1, &["AUTH", "nope", "pw"], One),
        (1, &["AUTH", "u", "pw"], One),
        (1, &["ACL", "WHOAMI"], One),
        (1, &["GET", "k1"], One),
        (1, &["GET", "w1"], One),
        (1, &["GET", "r1"], One),
        (1, &["SET", "r1", "v"], One),
        (1, &["SET", "w1", "v"], One),
        (1, &["SET", "w1", "v", "GET"], One),
        (1, &["SET", "k2", "v", "GET"], One),
        (1, &["COPY", "r1", "w1"], One),
        (1, &["COPY", "w1", "r1"], One),
        (1, &["COPY", "k1", "k3"], One),
        (1, &["LMOVE", "r1", "w2", "LEFT", "LEFT"], One),
        (1, &["LMOVE", "k9", "w2", "LEFT", "LEFT"], One),
        (1, &["LMOVE", "w2", "k9", "LEFT", "LEFT"], One),
        (1, &["RPUSH", "w3", "x"], One),
        (1, &["RPUSH", "r3", "x"], One),
        (1, &["DEL", "k1"], One),
        (1, &["HSET", "k4", "f", "v"], One),
        (1, &["HGET", "k4", "f"], One),
        (1, &["HDEL", "k4", "f"], One),
        (1, &["HGET", "x4", "f"], One),
        (1, &["CONFIG", "SET", "x", "y"], One),
        (1, &["CONFIG", "GET", "nothing-such"], One),
        (1, &["SELECT", "0"], One),
        (1, &["SELECT", "1"], One),
        (1, &["PING"], One),
        (1, &["PUBLISH", "c1", "m"], One),
        (1, &["PUBLISH", "x", "m"], One),
        (1, &["SPUBLISH", "x", "m"], One),
        (1, &["SPUBLISH", "cc", "m"], One),
        (1, &["MULTI"], One),
        (1, &["GET", "x"], One),
        (1, &["DEL", "k"], One),
        (1, &["GET", "k"], One),
        (1, &["EXEC"], One),
        (1, &["MULTI"], One),
        (1, &["GET", "k1"], One),
        (1, &["SET", "k1", "v2"], One),
        (0, &["ACL", "SETUSER", "u", "-get", "resetkeys", "~k1"], One),
        (1, &["EXEC"], One),
        (1, &["GET", "k1"], One),
        (1, &["SET", "k1", "v3"], One),
        (1, &["SET", "k2", "v3"], One),
        (1, &["NOPE"], One),
        (1, &["CONFIG", "NOPE"], One),
        (1, &["GET"], One),
        (1, &["AUTH", "default", "x"], One),
        (1, &["ACL", "WHOAMI"], One),
        (1, &["HELLO", "2", "AUTH", "u", "nope"], One),
        (1, &["HELLO", "2", "AUTH", "default", "anything"], Status),
        (1, &["ACL", "WHOAMI"], One),
        (2, &["AUTH", "u", "pw"], One),
        (2, &["SUBSCRIBE", "c1", "x"], One),
        (2, &["PSUBSCRIBE", "c1*"], One),
        (2, &["PSUBSCRIBE", "c*"], One),
        (2, &["SSUBSCRIBE", "x"], One),
        (2, &["SSUBSCRIBE", "c2"], One),
        (2, &["RESET"], One),
        (2, &["ACL", "WHOAMI"], One),
        // A disabled user cannot authenticate, even with its password.
        (0, &["ACL", "SETUSER", "u", "off"], One),
        (2, &["AUTH", "u", "pw"], One),
        (
            0,
            &["ACL", "SETUSER", "v", "on", "nopass", "+acl|whoami", "+get"],
            One,
        ),
        (2, &["AUTH", "v", "whatever"], One),
        (2, &["ACL", "WHOAMI"], One),
        (2, &["ACL", "USERS"], One),
        (2, &["GET", "k"], One),
        (2, &["AUTH", "u", "pw"], One),
        (2, &["ACL", "WHOAMI"], One),
        // DRYRUN, for any user.
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "d",
                "on",
                "nopass",
                "+get",
                "~k*",
                "&c*",
                "+publish",
                "-config",
                "+config|get",
            ],
            One,
        ),
        (0, &["ACL", "DRYRUN", "d", "get", "k1"], One),
        (0, &["ACL", "DRYRUN", "d", "GET", "x"], One),
        (0, &["ACL", "DRYRUN", "d", "set", "k1", "v"], One),
        (0, &["ACL", "DRYRUN", "d", "publish", "cx", "m"], One),
        (0, &["ACL", "DRYRUN", "d", "publish", "x", "m"], One),
        (0, &["ACL", "DRYRUN", "d", "config", "get", "x"], One),
        (0, &["ACL", "DRYRUN", "d", "config", "set", "x", "y"], One),
        (0, &["ACL", "DRYRUN", "d", "config", "nope"], One),
        (0, &["ACL", "DRYRUN", "d", "config"], One),
        (0, &["ACL", "DRYRUN", "d", "get"], One),
        (0, &["ACL", "DRYRUN", "d", "nope", "x"], One),
        (0, &["ACL", "DRYRUN", "nope", "get", "x"], One),
        (0, &["ACL", "DRYRUN", "d", "auth", "x"], One),
        (0, &["ACL", "DRYRUN", "default", "flushall"], One),
        (0, &["ACL", "DRYRUN", "d"], One),
    ];
    compare(S);
}

#[test]
fn deluser_disconnects_its_clients_like_redis() {
    const S: &[Step] = &[
        (
            0,
            &["ACL", "SETUSER", "gone", "on", ">pw", "+@all", "~*"],
            One,
        ),
        (1, &["AUTH", "gone", "pw"], One),
        (1, &["PING"], One),
        (0, &["ACL", "DELUSER", "gone"], One),
        (1, &["PING"], MaybeClosed),
        (
            0,
            &["ACL", "SETUSER", "self", "on", ">pw", "+@all", "~*"],
            One,
        ),
        (2, &["AUTH", "self", "pw"], One),
        (2, &["ACL", "DELUSER", "self"], One),
        (2, &["PING"], MaybeClosed),
        (0, &["ACL", "USERS"], One),
        (0, &["PING"], One),
    ];
    compare(S);
}

#[test]
fn requirepass_sets_the_default_password_like_redis() {
    const S: &[Step] = &[
        (1, &["PING"], One),
        (0, &["CONFIG", "SET", "requirepass", "foo"], One),
        // Connections already authenticated stay so.
        (1, &["PING"], One),
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "GETUSER", "default"], One),
        (0, &["ACL", "SETUSER", "default", "resetpass", ">bar"], One),
        (0, &["CONFIG", "GET", "requirepass"], One),
        (0, &["ACL", "SETUSER", "other", "on", ">bar", "+@all"], One),
        (2, &["RESET"], One),
        (2, &["PING"], One),
        (2, &["HELLO", "2"], One),
        (2, &["AUTH", "foo"], One),
        (2, &["AUTH", "bar"], One),
        (2, &["PING"], One),
        (2, &["RESET"], One),
        (2, &["AUTH", "default", "bar"], One),
        (2, &["RESET"], One),
        (2, &["HELLO", "2", "AUTH", "other", "bar"], Status),
        (2, &["ACL", "WHOAMI"], One),
        (0, &["ACL", "SETUSER", "default", "nopass"], One),
        (0, &["CONFIG", "GET", "requirepass"], One),
        (2, &["RESET"], One),
        (2, &["PING"], One),
        (2, &["AUTH", "x"], One),
        (0, &["CONFIG", "SET", "requirepass", "baz"], One),
        (0, &["ACL", "GETUSER", "default"], One),
        (0, &["CONFIG", "SET", "requirepass", ""], One),
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "SETUSER", "default", "off"], One),
        (2, &["RESET"], One),
        (2, &["PING"], One),
        (2, &["AUTH", "default", "x"], One),
        (2, &["AUTH", "other", "bar"], One),
        (2, &["ACL", "SETUSER", "default", "on"], One),
    ];
    compare(S);
}

/// A refused EXEC answers EXECABORT with the refusal, in a transaction or not (Redis's
/// `execCommandAbort`): after RESET dropped a client's MULTI and its login, EXEC says
/// NOAUTH inside EXECABORT, as a client that queued commands expects.
#[test]
fn a_refused_exec_answers_execabort_like_redis() {
    const S: &[Step] = &[
        (0, &["CONFIG", "SET", "requirepass", "foo"], One),
        (1, &["AUTH", "foo"], One),
        (1, &["MULTI"], One),
        (1, &["INCR", "counter"], One),
        (1, &["RESET"], One),
        (1, &["EXEC"], One),
        (1, &["EXEC", "extra"], One),
        (1, &["AUTH", "foo"], One),
        (1, &["EXEC", "extra"], One),
        (1, &["EXEC"], One),
        (1, &["GET", "counter"], One),
        (1, &["WATCH", "counter"], One),
        (1, &["EXEC", "extra"], One),
        (0, &["SET", "counter", "1"], One),
        (1, &["MULTI"], One),
        (1, &["GET", "counter"], One),
        (1, &["EXEC"], One),
        (0, &["CONFIG", "SET", "requirepass", ""], One),
    ];
    compare(S);
}

#[test]
fn shrinking_channels_disconnects_subscribers_like_redis() {
    const S: &[Step] = &[
        (
            0,
            &["ACL", "SETUSER", "ps", "on", "nopass", "+@all", "&a*", "&b"],
            One,
        ),
        (1, &["AUTH", "ps", "x"], One),
        (1, &["SUBSCRIBE", "a1"], One),
        (1, &["SUBSCRIBE", "b"], One),
        // Nothing lost: the subscriber stays.
        (0, &["ACL", "SETUSER", "ps", "&a1"], One),
        (1, &["PING"], One),
        (0, &["ACL", "SETUSER", "ps", "resetchannels", "&a*"], One),
        (1, &["PING"], MaybeClosed),
        (2, &["AUTH", "ps", "x"], One),
        (2, &["PSUBSCRIBE", "a*"], One),
        (0, &["ACL", "SETUSER", "ps", "resetchannels", "&a1"], One),
        (2, &["PING"], MaybeClosed),
        (0, &["PUBSUB", "NUMPAT"], One),
    ];
    compare(S);
}

#[test]
fn client_kill_user_matches_redis() {
    const S: &[Step] = &[
        (0, &["ACL", "SETUSER", "k", "on", "nopass", "+@all"], One),
        (1, &["AUTH", "k", "x"], One),
        (2, &["AUTH", "k", "x"], One),
        (0, &["CLIENT", "KILL", "USER", "nope"], One),
        (0, &["CLIENT", "KILL", "USER", "k"], One),
        (1, &["PING"], MaybeClosed),
        (2, &["PING"], MaybeClosed),
        (0, &["CLIENT", "KILL", "USER", "k"], One),
    ];
    compare(S);
}

#[test]
fn selectors_match_redis() {
    const S: &[Step] = &[
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "sel",
                "on",
                "nopass",
                "+get",
                "~k*",
                "(+set",
                "%W~w*",
                "&c)",
                "(+get ~x)",
            ],
            One,
        ),
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "GETUSER", "sel"], One),
        (0, &["HELLO", "3"], Status),
        (0, &["ACL", "GETUSER", "sel"], One),
        (0, &["HELLO", "2"], Status),
        (0, &["ACL", "DRYRUN", "sel", "get", "k1"], One),
        (0, &["ACL", "DRYRUN", "sel", "get", "x"], One),
        (0, &["ACL", "DRYRUN", "sel", "get", "y"], One),
        (0, &["ACL", "DRYRUN", "sel", "set", "w1", "v"], One),
        (0, &["ACL", "DRYRUN", "sel", "set", "x", "v"], One),
        (0, &["ACL", "DRYRUN", "sel", "set", "w1", "v", "GET"], One),
        (0, &["ACL", "DRYRUN", "sel", "del", "x"], One),
        (1, &["AUTH", "sel", "x"], One),
        (1, &["SET", "w1", "v"], One),
        (1, &["SET", "k1", "v"], One),
        (1, &["GET", "x"], One),
        (1, &["GET", "w1"], One),
        (1, &["DEL", "x"], One),
        (0, &["ACL", "SETUSER", "sel", "( )", "()"], One),
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "SETUSER", "sel", "(+get", "~x"], One),
        (0, &["ACL", "SETUSER", "sel", "x", "(+get ~x", "+set"], One),
        (0, &["ACL", "SETUSER", "sel", "(+nope)"], One),
        (0, &["ACL", "SETUSER", "sel", "(on)"], One),
        (0, &["ACL", "SETUSER", "sel", "(", ")"], One),
        (0, &["ACL", "SETUSER", "sel", "(~a b)"], One),
        (0, &["ACL", "SETUSER", "sel", "~a b"], One),
        (0, &["ACL", "SETUSER", "sel", "&a b"], One),
        (0, &["ACL", "SETUSER", "sel", "%R~a\tb"], One),
        (0, &["ACL", "LIST"], One),
        (0, &["ACL", "SETUSER", "sel", "clearselectors"], One),
        (0, &["ACL", "LIST"], One),
        (1, &["GET", "x"], One),
        (0, &["ACL", "SETUSER", "sel", "(+get ~x)", "reset"], One),
        (0, &["ACL", "LIST"], One),
    ];
    compare(S);
}

#[test]
fn genpass_gives_hex_of_the_asked_size() {
    let server = Redline::start();
    let mut c = Conn::connect(server.addr);
    for (args, len) in [
        (&["ACL", "GENPASS"][..], 64),
        (&["ACL", "GENPASS", "5"], 2),
        (&["ACL", "GENPASS", "4096"], 1024),
    ] {
        let Frame::Bulk(pass) = c.cmd(args) else {
            panic!("{args:?}")
        };
        assert_eq!(pass.len(), len);
        assert!(pass
            .iter()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }
}

#[test]
fn acl_log_matches_redis() {
    const S: &[Step] = &[
        (
            0,
            &[
                "ACL", "SETUSER", "nw", "on", ">pw", "+multi", "+exec", "+auth", "+hello",
            ],
            One,
        ),
        (
            0,
            &[
                "ACL", "SETUSER", "kk", "on", "nopass", "+get", "~a", "&c", "+publish",
            ],
            One,
        ),
        (1, &["AUTH", "nw", "wrong"], One),
        (1, &["auth", "nope", "x"], One),
        (1, &["HELLO", "2", "AUTH", "nope", "x"], One),
        (1, &["AUTH", "nw", "pw"], One),
        (1, &["GET", "a"], One),
        (1, &["get", "b"], One),
        (1, &["MULTI"], One),
        (1, &["GET", "c"], One),
        (1, &["DISCARD"], One),
        (1, &["RESET"], One),
        (1, &["AUTH", "kk", "x"], One),
        (1, &["GET", "b"], One),
        (1, &["GET", "b"], One),
        (1, &["PUBLISH", "x", "m"], One),
        (1, &["CONFIG", "GET", "x"], One),
        (0, &["ACL", "LOG"], Log),
        (0, &["ACL", "LOG", "2"], Log),
        (0, &["ACL", "LOG", "0"], Log),
        (0, &["ACL", "LOG", "-1"], Log),
        (0, &["ACL", "LOG", "x"], One),
        (0, &["ACL", "LOG", "1", "2"], One),
        (0, &["ACL", "LOG", "RESET"], One),
        (0, &["ACL", "LOG"], Log),
    ];
    compare(S);
}

/// A script's command the caller may not run is refused as Redis's `scriptVerifyACL`
/// refuses it: "The user executing the script can't ...", before the script's own
/// rules (a read-only script's write), and logged in ACL LOG with context `lua`.
#[test]
fn scripts_run_with_the_callers_rules_like_redis() {
    const S: &[Step] = &[
        (
            0,
            &[
                "ACL", "SETUSER", "lim", "on", "nopass", "+eval", "+eval_ro", "+get", "+publish",
                "~k*", "&ch*",
            ],
            One,
        ),
        (1, &["AUTH", "lim", "x"], One),
        (1, &["EVAL", "return redis.call('set', 'k', 'v')", "0"], One),
        (1, &["EVAL", "return redis.call('get', 'other')", "0"], One),
        (
            1,
            &["EVAL", "return redis.pcall('publish', 'zz', 'x')", "0"],
            One,
        ),
        (
            1,
            &["EVAL", "return redis.pcall('publish', 'ch1', 'x')", "0"],
            One,
        ),
        (
            1,
            &["EVAL_RO", "return redis.call('set', 'k', 'v')", "0"],
            One,
        ),
        (1, &["EVAL", "return redis.call('get', 'k1')", "0"], One),
        (0, &["ACL", "LOG"], Log),
    ];
    compare(S);
}

#[test]
fn exec_rechecks_keys_and_channels_like_redis() {
    const S: &[Step] = &[
        (
            0,
            &[
                "ACL", "SETUSER", "ex", "on", "nopass", "+@all", "~k*", "&c*",
            ],
            One,
        ),
        (1, &["AUTH", "ex", "x"], One),
        (1, &["MULTI"], One),
        (1, &["GET", "k1"], One),
        (1, &["PUBLISH", "c1", "m"], One),
        (1, &["PING"], One),
        (
            0,
            &[
                "ACL",
                "SETUSER",
                "ex",
                "resetkeys",
                "~x",
                "resetchannels",
                "&x",
            ],
            One,
        ),
        (1, &["EXEC"], One),
        (0, &["ACL", "LOG"], Log),
    ];
    compare(S);
}

#[test]
fn sort_by_and_get_need_every_key_like_redis() {
    const S: &[Step] = &[
        (0, &["RPUSH", "k1", "1", "2"], One),
        (
            0,
            &["ACL", "SETUSER", "so", "on", "nopass", "+@all", "~k*"],
            One,
        ),
        (
            0,
            &["ACL", "SETUSER", "so2", "on", "nopass", "+@all", "%R~*"],
            One,
        ),
        (1, &["AUTH", "so", "x"], One),
        (1, &["SORT", "k1", "BY", "w_*"], One),
        (1, &["SORT", "k1", "GET", "w_*"], One),
        (1, &["SORT", "k1", "BY", "nosort"], One),
        (1, &["SORT", "k1", "GET", "#"], One),
        (1, &["SORT_RO", "k1", "BY", "w_*"], One),
        (2, &["AUTH", "so2", "x"], One),
        (2, &["SORT", "k1", "BY", "w_*", "GET", "#"], One),
        (2, &["SORT", "k1", "BY", "w_*", "STORE", "k2"], One),
    ];
    compare(S);
}

/// The users an ACL file holds (`aclfile`): loaded at start, written by ACL SAVE as
/// the ACL LIST lines, reloaded by ACL LOAD all or nothing (a bad file changes nothing
/// and every problem is reported), clients of replaced users disconnected; and the
/// config file's `user` directives. Each step's replies and the saved file are
/// compared with redis-server's.
#[test]
fn acl_file_and_user_directives_match_redis() {
    use redline_testkit::RedlineServer;
    let base = std::env::temp_dir().join(format!("redline-aclfile-{}", std::process::id()));
    // Starts a server with `--aclfile` and gives its port, and the server to keep.
    type Start<'a> = &'a dyn Fn(&str) -> (u16, Box<dyn std::any::Any>);
    let steps = |kind: &str, start: Start<'_>| {
        let dir = base.join(kind);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("users.acl");
        std::fs::write(
            &file,
            "user alice on >a ~rw* +get\n\nuser bob on (+set %W~w*) (+get %R~r*)\n",
        )
        .unwrap();
        let (port, _server) = start(file.to_str().unwrap());
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut c = Conn::connect(addr);
        let mut seen = vec![show(&c.cmd(&["ACL", "LIST"]))];
        let mut alice = Conn::connect(addr);
        seen.push(show(&alice.cmd(&["AUTH", "alice", "a"])));
        seen.push(show(
            &c.cmd(&["ACL", "SETUSER", "carol", "on", ">c", "~*", "+get"]),
        ));
        seen.push(show(&c.cmd(&["ACL", "SAVE"])));
        seen.push(std::fs::read_to_string(&file).unwrap());
        std::fs::write(&file, "user x on\nfoo bar\nuser x off\nuser y +nosuch ~a\n").unwrap();
        seen.push(show(&c.cmd(&["ACL", "LOAD"])));
        seen.push(show(&c.cmd(&["ACL", "USERS"])));
        std::fs::write(&file, "user alice on >a2 ~* +@all\n").unwrap();
        seen.push(show(&c.cmd(&["ACL", "LOAD"])));
        seen.push(show(&c.cmd(&["ACL", "LIST"])));
        seen.push(format!(
            "alice's old connection closed: {}",
            alice.is_closed()
        ));
        std::fs::remove_file(&file).unwrap();
        seen.push(show(&c.cmd(&["ACL", "LOAD"])));
        let path = file.to_string_lossy();
        seen.iter()
            .map(|s| s.replace(&*path, "FILE"))
            .collect::<Vec<_>>()
    };
    let theirs = steps("redis", &|file| {
        let s = RedisServer::builder()
            .args(["--aclfile", file])
            .start()
            .unwrap();
        (s.port(), Box::new(s))
    });
    let ours = steps("redline", &|file| {
        let s = RedlineServer::builder()
            .args(["--aclfile", file])
            .start()
            .unwrap();
        (s.port(), Box::new(s))
    });
    let _ = std::fs::remove_dir_all(&base);
    assert_eq!(ours, theirs);

    // Users in the config: `user` directives, on the command line here.
    let args = [
        "--user",
        "dave",
        "on",
        ">d",
        "~d*",
        "+get",
        "--requirepass",
        "p",
    ];
    let list = |port: u16| {
        let mut c = Conn::connect(SocketAddr::from(([127, 0, 0, 1], port)));
        c.cmd(&["AUTH", "p"]);
        show(&c.cmd(&["ACL", "LIST"]))
    };
    let redis = RedisServer::builder().args(args).start().unwrap();
    let redline = RedlineServer::builder().args(args).start().unwrap();
    assert_eq!(list(redline.port()), list(redis.port()));
}

/// ACL LOG keeps `acllog-max-len` entries and names the `lua` context of a refusal
/// inside a script; ACL CAT takes at most one category. Compared with redis-server.
#[test]
fn acl_log_length_and_script_context_match_redis() {
    let run = |addr: SocketAddr| {
        let mut c = Conn::connect(addr);
        let mut seen = vec![show(&c.cmd(&["ACL", "CAT", "a", "b"]))];
        c.cmd(&["ACL", "SETUSER", "u", "on", ">p", "~*", "+eval", "+get"]);
        c.cmd(&["CONFIG", "SET", "acllog-max-len", "5"]);
        let mut u = Conn::connect(addr);
        u.cmd(&["AUTH", "u", "p"]);
        for j in 0..10 {
            u.cmd(&["SET", &format!("obj:{j}"), "1"]);
        }
        let log = |c: &mut Conn| match c.cmd(&["ACL", "LOG"]) {
            Frame::Array(entries) => entries,
            other => panic!("ACL LOG: {other:?}"),
        };
        seen.push(format!("{} entries", log(&mut c).len()));
        u.cmd(&["EVAL", "return redis.call('incr', 'foo')", "0"]);
        let newest = log(&mut c).into_iter().next().unwrap();
        let Frame::Array(fields) = newest else {
            panic!("an entry is a map")
        };
        let fields: Vec<String> = fields.iter().map(show).collect();
        let at = fields.iter().position(|f| f.contains("context")).unwrap();
        seen.push(fields[at + 1].clone());
        // With selectors, the refusal logged names the last key no selector allows.
        c.cmd(&[
            "ACL",
            "SETUSER",
            "s",
            "on",
            "nopass",
            "+mget",
            "~key",
            "(+mget ~key ~otherkey)",
        ]);
        let mut s = Conn::connect(addr);
        s.cmd(&["AUTH", "s", "x"]);
        for keys in [
            &["otherkey", "someotherkey"][..],
            &["key", "otherkey", "someotherkey"],
        ] {
            c.cmd(&["ACL", "LOG", "RESET"]);
            let mut args = vec!["MGET"];
            args.extend_from_slice(keys);
            s.cmd(&args);
            let Frame::Array(entries) = c.cmd(&["ACL", "LOG", "1"]) else {
                panic!("ACL LOG is an array")
            };
            let Some(Frame::Array(fields)) = entries.first() else {
                panic!("an entry is a map")
            };
            let fields: Vec<String> = fields.iter().map(show).collect();
            let at = fields.iter().position(|f| f.contains("object")).unwrap();
            seen.push(fields[at + 1].clone());
        }
        seen
    };
    let redis = RedisServer::start().unwrap();
    let ours = Redline::start();
    assert_eq!(run(ours.addr), run(redis.addr()));
}

/// `acl-pubsub-default` decides the channels of new users, of `reset` and of new
/// selectors (never of users already there, nor of `default`), at start and after
/// CONFIG SET. Compared with redis-server.
#[test]
fn acl_pubsub_default_matches_redis() {
    compare(&[
        (
            0,
            &["CONFIG", "SET", "acl-pubsub-default", "allchannels"],
            One,
        ),
        (0, &["ACL", "SETUSER", "fresh"], One),
        (
            0,
            &["ACL", "SETUSER", "sel", "on", "nopass", "(+get ~x)"],
            One,
        ),
        (0, &["ACL", "SETUSER", "onechannel", "&test"], One),
        (
            0,
            &[
                "ACL", "SETUSER", "r", "&a", "reset", "on", "nopass", "+@all",
            ],
            One,
        ),
        (0, &["ACL", "LIST"], Sorted),
        (1, &["AUTH", "r", "x"], One),
        (1, &["PUBLISH", "anything", "m"], One),
        (
            0,
            &["CONFIG", "SET", "acl-pubsub-default", "resetchannels"],
            One,
        ),
        (0, &["ACL", "GETUSER", "fresh"], One),
        (
            0,
            &["ACL", "SETUSER", "r", "reset", "on", "nopass", "+@all"],
            One,
        ),
        (1, &["PUBLISH", "anything", "m"], One),
        (0, &["ACL", "SETUSER", "later"], One),
        (0, &["ACL", "LIST"], Sorted),
    ]);
    let args = [
        "--acl-pubsub-default",
        "allchannels",
        "--user",
        "dave",
        "on",
        "nopass",
        "+@all",
    ];
    let list = |port: u16| {
        let mut c = Conn::connect(SocketAddr::from(([127, 0, 0, 1], port)));
        show(&c.cmd(&["ACL", "LIST"]))
    };
    let redis = RedisServer::builder().args(args).start().unwrap();
    let redline = redline_testkit::RedlineServer::builder()
        .args(args)
        .start()
        .unwrap();
    assert_eq!(list(redline.port()), list(redis.port()));
}

/// Rules [`generated_rules_decide_as_redis`] draws from: flags, passwords, key patterns
/// with read and write permissions, channels, categories, commands, subcommands, first
/// arguments, selectors, resets, and malformed ones.
const RULES: &[&str] = &[
    "on",
    "off",
    "nopass",
    ">pw",
    "<pw",
    "resetpass",
    "~k*",
    "~x",
    "%R~r*",
    "%W~w*",
    "%RW~k1",
    "%X~k*",
    "allkeys",
    "resetkeys",
    "&c*",
    "&ch1",
    "allchannels",
    "resetchannels",
    "+@all",
    "-@all",
    "+@read",
    "-@write",
    "+@string",
    "-@string",
    "+@hash",
    "+@list",
    "-@dangerous",
    "+@pubsub",
    "+@keyspace",
    "-@keyspace",
    "+@fast",
    "-@slow",
    "+@scripting",
    "+@nosuch",
    "+get",
    "-get",
    "+set",
    "-set",
    "+del",
    "+rename",
    "+copy",
    "+sort",
    "+lmove",
    "+publish",
    "+subscribe",
    "+config",
    "-config",
    "+config|get",
    "-config|set",
    "+client|list",
    "+select|0",
    "-select|1",
    "+get|x",
    "+nosuch",
    "allcommands",
    "nocommands",
    "(+get ~x)",
    "(+set %W~w*)",
    "(+@read ~r* &c*)",
    "(+publish &ch*)",
    "clearselectors",
    "(+nosuch)",
    "reset",
];

/// Commands [`generated_rules_decide_as_redis`] asks ACL DRYRUN about: reads, writes
/// and both on the keys the patterns cover or miss, channels, subcommands, first
/// arguments, commands that name keys in options (SORT BY/GET/STORE, EVAL).
const DRYRUNS: &[&[&str]] = &[
    &["get", "k1"],
    &["get", "x"],
    &["get", "r1"],
    &["get", "w1"],
    &["set", "k1", "v"],
    &["set", "w1", "v"],
    &["set", "r1", "v"],
    &["set", "w1", "v", "GET"],
    &["del", "k1", "w1"],
    &["rename", "r1", "w1"],
    &["rename", "k1", "k2"],
    &["copy", "r1", "w1"],
    &["lmove", "r1", "w1", "LEFT", "RIGHT"],
    &["sort", "k1"],
    &["sort", "k1", "BY", "w_*"],
    &["sort", "k1", "STORE", "w1"],
    &["sort_ro", "r1"],
    &["hset", "k1", "f", "v"],
    &["lpush", "w1", "a"],
    &["publish", "c1", "m"],
    &["publish", "ch1", "m"],
    &["publish", "x", "m"],
    &["subscribe", "c1", "x"],
    &["psubscribe", "c*"],
    &["config", "get", "maxmemory"],
    &["config", "set", "maxmemory", "0"],
    &["config", "resetstat"],
    &["client", "list"],
    &["client", "kill", "id", "1"],
    &["select", "0"],
    &["select", "1"],
    &["flushall"],
    &["keys", "*"],
    &["eval", "return 1", "1", "k1"],
    &["eval", "return 1", "1", "x"],
    &["ping"],
    &["nosuchcommand"],
    &["get"],
];

/// Generated users: a few ACL SETUSER calls of rules drawn from [`RULES`] (the errors
/// of the bad ones included), then ACL DRYRUN of commands from [`DRYRUNS`] and the
/// user's ACL GETUSER: each decision, each refusal's words and the rules as Redis
/// spells them back (its categories chosen alike; see [`normalise_rules`]) must be
/// redis-server's. `DIFF_SEQUENCES=n` runs n users, `DIFF_SEED=n` user n alone.
#[test]
fn generated_rules_decide_as_redis() {
    let redis = RedisServer::start().expect("redis-server");
    let redline = Redline::start();
    let mut a = Conn::connect(redis.addr());
    let mut b = Conn::connect(redline.addr);
    let mut failures = Vec::new();
    let (seeds, _) = common::seeds_to_run(400);
    for &seed in &seeds {
        let mut rng = fastrand::Rng::with_seed(seed ^ 0xac1);
        let mut commands: Vec<Vec<String>> = vec![vec!["ACL".into(), "DELUSER".into(), "u".into()]];
        for _ in 0..1 + rng.usize(..3) {
            let mut setuser: Vec<String> = vec!["ACL".into(), "SETUSER".into(), "u".into()];
            for _ in 0..1 + rng.usize(..6) {
                setuser.push(RULES[rng.usize(..RULES.len())].into());
            }
            commands.push(setuser);
        }
        for _ in 0..12 {
            let mut dryrun: Vec<String> = vec!["ACL".into(), "DRYRUN".into(), "u".into()];
            dryrun.extend(
                DRYRUNS[rng.usize(..DRYRUNS.len())]
                    .iter()
                    .map(|s| s.to_string()),
            );
            commands.push(dryrun);
        }
        commands.push(vec!["ACL".into(), "GETUSER".into(), "u".into()]);
        for command in &commands {
            let read = |conn: &mut Conn| show(&normalise(conn.cmd(command)));
            let (want, got) = (read(&mut a), read(&mut b));
            if want != got {
                failures.push(format!(
                    "seed {seed}: {command:?}\n  redis:   {want}\n  redline: {got}\n  after {:?}",
                    &commands[..commands.iter().position(|c| c == command).unwrap_or(0)]
                ));
                break;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} users differ; first ones:\n{}",
        failures.len(),
        seeds.len(),
        failures[..failures.len().min(6)].join("\n")
    );
}
