//! The command table against a real redis-server 7.0: every entry against `COMMAND INFO`,
//! `COMMAND COUNT`, `COMMAND LIST` and `COMMAND DOCS`, and the key finder against
//! `COMMAND GETKEYS`/`GETKEYSANDFLAGS` on a generated corpus of argument lists.
//!
//! The test talks RESP through this crate's own encoder and parser.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;

use bytes::BytesMut;
use redline_resp::command::{
    self, BeginSearch, CommandSpec, FindKeys, GetKeysProc, KeySpec, KeySpecFlags,
};
use redline_resp::{encode, parse, Frame};
use redline_testkit::RedisServer;

/// A plain blocking RESP2 connection.
struct Conn {
    stream: TcpStream,
    buf: BytesMut,
}

impl Conn {
    fn open(server: &RedisServer) -> Self {
        let stream = TcpStream::connect(server.addr()).unwrap();
        Conn {
            stream,
            buf: BytesMut::with_capacity(1 << 16),
        }
    }

    fn read(&mut self) -> Frame {
        loop {
            if let Some(frame) = parse(&mut self.buf).unwrap() {
                return frame;
            }
            let mut chunk = [0u8; 1 << 16];
            let n = self.stream.read(&mut chunk).unwrap();
            assert!(n > 0, "server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends every command in one write, then reads the replies in order.
    fn pipeline<A: AsRef<[u8]>>(&mut self, commands: &[Vec<A>]) -> Vec<Frame> {
        let mut out = BytesMut::new();
        for args in commands {
            encode::command(&mut out, args.iter());
        }
        self.stream.write_all(&out).unwrap();
        commands.iter().map(|_| self.read()).collect()
    }

    fn call(&mut self, args: &[&str]) -> Frame {
        self.pipeline(&[args.to_vec()]).pop().unwrap()
    }
}

/// A reply reduced to what the comparison needs: status and bulk strings are both text.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum V {
    Int(i64),
    Str(String),
    List(Vec<V>),
    Error(String),
}

fn v(frame: &Frame) -> V {
    match frame {
        Frame::Integer(n) => V::Int(*n),
        Frame::Simple(s) | Frame::Bulk(s) => V::Str(String::from_utf8_lossy(s).into_owned()),
        Frame::Error(e) => V::Error(String::from_utf8_lossy(e).into_owned()),
        Frame::Array(items) => V::List(items.iter().map(v).collect()),
        other => panic!("unexpected frame {other:?}"),
    }
}

fn s(text: &str) -> V {
    V::Str(text.to_owned())
}

fn strs<'a>(items: impl Iterator<Item = &'a str>) -> V {
    V::List(items.map(s).collect())
}

/// The `COMMAND INFO` entry Redis would send for `spec`, subcommands sorted by name.
fn expected_info(spec: &CommandSpec) -> V {
    V::List(vec![
        s(spec.name),
        V::Int(spec.arity.into()),
        strs(spec.flags.names()),
        V::Int(spec.first_key.into()),
        V::Int(spec.last_key.into()),
        V::Int(spec.key_step.into()),
        V::List(
            spec.acl_categories
                .names()
                .map(|c| s(&format!("@{c}")))
                .collect(),
        ),
        strs(spec.tips.iter().copied()),
        V::List(spec.key_specs.iter().map(expected_key_spec).collect()),
        V::List(spec.subcommands.iter().map(expected_info).collect()),
    ])
}

fn expected_key_spec(spec: &KeySpec) -> V {
    let mut out = Vec::new();
    if !spec.notes.is_empty() {
        out.extend([s("notes"), s(spec.notes)]);
    }
    out.extend([s("flags"), strs(spec.flags.names())]);
    let (kind, args) = match spec.begin_search {
        BeginSearch::Index(i) => ("index", vec![s("index"), V::Int(i.into())]),
        BeginSearch::Keyword {
            keyword,
            start_from,
        } => (
            "keyword",
            vec![
                s("keyword"),
                s(keyword),
                s("startfrom"),
                V::Int(start_from.into()),
            ],
        ),
        BeginSearch::Unknown => ("unknown", vec![]),
    };
    out.extend([
        s("begin_search"),
        V::List(vec![s("type"), s(kind), s("spec"), V::List(args)]),
    ]);
    let (kind, args) = match spec.find_keys {
        FindKeys::Range {
            last_key,
            key_step,
            limit,
        } => (
            "range",
            vec![
                s("lastkey"),
                V::Int(last_key.into()),
                s("keystep"),
                V::Int(key_step.into()),
                s("limit"),
                V::Int(limit.into()),
            ],
        ),
        FindKeys::Keynum {
            keynum_index,
            first_key,
            key_step,
        } => (
            "keynum",
            vec![
                s("keynumidx"),
                V::Int(keynum_index.into()),
                s("firstkey"),
                V::Int(first_key.into()),
                s("keystep"),
                V::Int(key_step.into()),
            ],
        ),
        FindKeys::Unknown => ("unknown", vec![]),
    };
    out.extend([
        s("find_keys"),
        V::List(vec![s("type"), s(kind), s("spec"), V::List(args)]),
    ]);
    V::List(out)
}

/// Redis lists subcommands in hash order: sort them by name, recursively.
fn sort_subcommands(info: &mut V) {
    if let V::List(fields) = info {
        if let Some(V::List(subs)) = fields.get_mut(9) {
            subs.iter_mut().for_each(sort_subcommands);
            subs.sort_by_key(|sub| match sub {
                V::List(f) => format!("{:?}", f[0]),
                _ => String::new(),
            });
        }
    }
}

#[test]
fn table_matches_command_info_count_list_and_docs() {
    let server = RedisServer::start().unwrap();
    let mut conn = Conn::open(&server);

    assert_eq!(
        v(&conn.call(&["COMMAND", "COUNT"])),
        V::Int(command::count() as i64)
    );
    assert_eq!(command::count(), command::COMMANDS.len());

    let V::List(live) = v(&conn.call(&["COMMAND", "INFO"])) else {
        panic!("COMMAND INFO")
    };
    let mut live_by_name = BTreeMap::new();
    for mut entry in live {
        sort_subcommands(&mut entry);
        let V::List(fields) = &entry else { panic!() };
        let V::Str(name) = &fields[0] else { panic!() };
        live_by_name.insert(name.clone(), entry.clone());
    }
    assert_eq!(
        live_by_name.keys().map(String::as_str).collect::<Vec<_>>(),
        command::COMMANDS.iter().map(|c| c.name).collect::<Vec<_>>()
    );
    let mut mismatches = Vec::new();
    for spec in command::COMMANDS {
        let expected = expected_info(spec);
        if live_by_name[spec.name] != expected {
            mismatches.push(format!(
                "{}:\n  live  {:?}\n  table {:?}",
                spec.name, live_by_name[spec.name], expected
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));

    let V::List(list) = v(&conn.call(&["COMMAND", "LIST"])) else {
        panic!("COMMAND LIST")
    };
    let live_names: BTreeSet<V> = list.into_iter().collect();
    let table_names: BTreeSet<V> = command::all().map(|c| s(c.name)).collect();
    assert_eq!(live_names.len(), table_names.len());
    assert!(live_names.iter().all(|n| table_names.contains(n)));

    // Docs: summary, since, group and complexity of every command and subcommand.
    let V::List(docs) = v(&conn.call(&["COMMAND", "DOCS"])) else {
        panic!("COMMAND DOCS")
    };
    let mut checked = 0;
    let mut stack: Vec<V> = docs;
    while !stack.is_empty() {
        let pairs: Vec<V> = std::mem::take(&mut stack);
        for pair in pairs.chunks(2) {
            let (V::Str(name), V::List(fields)) = (&pair[0], &pair[1]) else {
                panic!()
            };
            let spec = command::resolve(&name.split('|').collect::<Vec<_>>()).unwrap();
            let field = |key: &str| {
                fields
                    .chunks(2)
                    .find(|kv| kv[0] == s(key))
                    .map(|kv| kv[1].clone())
                    .unwrap_or(s(""))
            };
            assert_eq!(field("summary"), s(spec.docs.summary), "{name}");
            assert_eq!(field("since"), s(spec.docs.since), "{name}");
            assert_eq!(field("group"), s(spec.docs.group), "{name}");
            assert_eq!(field("complexity"), s(spec.docs.complexity), "{name}");
            if let V::List(subs) = field("subcommands") {
                stack.extend(subs);
            }
            checked += 1;
        }
    }
    assert_eq!(checked, command::all().count());
}

/// Tokens that steer key finders: keywords of key specs and of Redis's own finders, in
/// several cases.
const KEYWORDS: &[&str] = &[
    "STREAMS",
    "streams",
    "STORE",
    "store",
    "StoreDist",
    "STOREDIST",
    "KEYS",
    "keys",
    "COPY",
    "REPLACE",
    "AUTH",
    "AUTH2",
    "LIMIT",
    "GET",
    "get",
    "BY",
    "BLOCK",
    "COUNT",
    "GROUP",
    "NOACK",
    "SET",
    "INCRBY",
    "OVERFLOW",
    "STREAMS\0x",
    "",
];

/// Key counts: valid, empty, negative, non-strict forms `atoi` still reads, garbage, and
/// counts the spec truncates to 32 bits. (Counts that make Redis reserve gigabytes before
/// its range check, such as 9999999999, are covered by the unit tests only.)
const COUNTS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "5",
    "-1",
    "02",
    "+1",
    " 2",
    "2 ",
    "x",
    "1x",
    "4294967297",
    "4294967298",
    "100",
];

/// The index of a spec's key count, if it has one.
fn keynum_position(spec: &CommandSpec) -> Option<usize> {
    let from_spec = spec
        .key_specs
        .iter()
        .find_map(|ks| match (ks.begin_search, ks.find_keys) {
            (BeginSearch::Index(i), FindKeys::Keynum { keynum_index, .. }) => {
                usize::try_from(i + keynum_index).ok()
            }
            _ => None,
        });
    let from_proc = match spec.get_keys {
        Some(GetKeysProc::Numkeys { numkeys, .. }) => Some(usize::from(numkeys)),
        _ => None,
    };
    from_spec.or(from_proc)
}

/// Argument lists for every command with keys, plus some without keys and unknown ones.
fn corpus() -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for spec in command::all() {
        let name: Vec<String> = spec.name.split('|').map(str::to_uppercase).collect();
        if !spec.has_keys() {
            // Keyless commands: GETKEYS refuses them whatever the arguments.
            let mut args = name.clone();
            args.extend((args.len()..spec.arity.unsigned_abs() as usize).map(|i| format!("a{i}")));
            out.push(args);
            continue;
        }
        let min = spec.arity.unsigned_abs() as usize;
        let lengths: Vec<usize> = if spec.arity >= 0 {
            vec![min.saturating_sub(1).max(name.len()), min, min + 1]
        } else {
            (min.saturating_sub(1).max(name.len())..=min + 6).collect()
        };
        let filled = |len: usize| -> Vec<String> {
            let mut args = name.clone();
            args.extend((args.len()..len).map(|i| format!("k{i}")));
            args
        };
        for &len in &lengths {
            out.push(filled(len));
        }
        if let Some(at) = keynum_position(spec) {
            for &len in &lengths {
                for count in COUNTS {
                    let mut args = filled(len);
                    if let Some(slot) = args.get_mut(at) {
                        *slot = (*count).to_owned();
                        out.push(args);
                    }
                }
            }
        }
        let keyword_driven = spec
            .get_keys
            .is_some_and(|p| !matches!(p, GetKeysProc::Numkeys { .. }))
            || spec
                .key_specs
                .iter()
                .any(|ks| matches!(ks.begin_search, BeginSearch::Keyword { .. }));
        if keyword_driven {
            for len in [min, min + 2, min + 3, min + 5] {
                for keyword in KEYWORDS {
                    for at in name.len()..len {
                        let mut args = filled(len);
                        args[at] = (*keyword).to_owned();
                        out.push(args.clone());
                        // A second keyword further right: options before STREAMS, two STOREs...
                        for second in ["STREAMS", "STORE", "KEYS", "COUNT", "LIMIT"] {
                            if at + 2 < len {
                                let mut twice = args.clone();
                                twice[at + 2] = second.to_owned();
                                out.push(twice);
                            }
                        }
                    }
                }
            }
        }
        if spec.get_keys == Some(GetKeysProc::Migrate) {
            // MIGRATE takes KEYS only with an empty key argument.
            for len in 7..=11 {
                for at in 6..len {
                    let mut args = filled(len);
                    args[3] = String::new();
                    args[at] = "KEYS".to_owned();
                    out.push(args.clone());
                    if at > 6 {
                        args[6] = "AUTH2".to_owned();
                        out.push(args);
                    }
                }
            }
        }
    }
    out.push(vec!["NOPE".into(), "k".into()]);
    out.push(vec!["OBJECT".into(), "NOPE".into(), "k".into()]);
    out.push(vec!["OBJECT".into(), "".into()]);
    // `COMMAND GETKEYS` itself needs a command and one argument (its arity is -4).
    out.retain(|args| args.len() >= 2);
    out.sort();
    out.dedup();
    out
}

/// What `COMMAND GETKEYS` would answer according to the table: key names or the error.
fn expected_getkeys(args: &[String]) -> V {
    match command::getkeys(args) {
        Ok(positions) => V::List(positions.iter().map(|&p| s(&args[p])).collect()),
        Err(e) => V::Error(format!("ERR {e}")),
    }
}

fn expected_getkeys_and_flags(args: &[String]) -> V {
    match command::keys_and_flags(args) {
        Ok(keys) => V::List(
            keys.iter()
                .map(|&(p, flags)| V::List(vec![s(&args[p]), strs(flags.names())]))
                .collect(),
        ),
        Err(e) => V::Error(format!("ERR {e}")),
    }
}

#[test]
fn keys_match_command_getkeys() {
    let server = RedisServer::start().unwrap();
    let mut conn = Conn::open(&server);
    let corpus = corpus();
    let with_keys = corpus
        .iter()
        .filter(|args| command::resolve(args).is_some_and(CommandSpec::has_keys))
        .count();
    let covered: BTreeSet<&str> = corpus
        .iter()
        .filter_map(|args| command::resolve(args))
        .filter(|spec| spec.has_keys())
        .map(|spec| spec.name)
        .collect();
    let all_with_keys = command::all().filter(|spec| spec.has_keys()).count();
    assert_eq!(
        covered.len(),
        all_with_keys,
        "every command with keys is in the corpus"
    );

    let mut mismatches = Vec::new();
    let mut stats = BTreeMap::<&str, usize>::new();
    for chunk in corpus.chunks(500) {
        let getkeys: Vec<Vec<&str>> = chunk
            .iter()
            .map(|args| {
                ["COMMAND", "GETKEYS"]
                    .into_iter()
                    .chain(args.iter().map(String::as_str))
                    .collect()
            })
            .collect();
        let with_flags: Vec<Vec<&str>> = chunk
            .iter()
            .map(|args| {
                ["COMMAND", "GETKEYSANDFLAGS"]
                    .into_iter()
                    .chain(args.iter().map(String::as_str))
                    .collect()
            })
            .collect();
        let replies = conn.pipeline(&getkeys);
        let flag_replies = conn.pipeline(&with_flags);
        for ((args, reply), flag_reply) in chunk.iter().zip(&replies).zip(&flag_replies) {
            let (live, expected) = (v(reply), expected_getkeys(args));
            *stats
                .entry(if matches!(live, V::Error(_)) {
                    "errors"
                } else {
                    "key lists"
                })
                .or_default() += 1;
            if live != expected {
                mismatches.push(format!(
                    "GETKEYS {args:?}: live {live:?}, ours {expected:?}"
                ));
            }
            let (live, expected) = (v(flag_reply), expected_getkeys_and_flags(args));
            if live != expected {
                mismatches.push(format!(
                    "GETKEYSANDFLAGS {args:?}: live {live:?}, ours {expected:?}"
                ));
            }
        }
    }
    eprintln!(
        "corpus: {} argument lists ({} for commands with keys, {} commands covered), {:?}",
        corpus.len(),
        with_keys,
        covered.len(),
        stats
    );
    assert!(corpus.len() >= 1000, "corpus too small: {}", corpus.len());
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn hidden_flags_reach_the_table() {
    // COMMAND INFO hides may_replicate and protected; the generator probes them.
    let publish = command::lookup(b"PUBLISH").unwrap();
    assert!(publish.flags.contains(command::CommandFlags::MAY_REPLICATE));
    assert!(publish.may_replicate() && !publish.is_write());
    let debug = command::lookup(b"DEBUG").unwrap();
    assert!(debug.flags.contains(command::CommandFlags::PROTECTED));
    let del = command::lookup(b"DEL").unwrap();
    assert_eq!(
        del.key_specs[0].flags,
        KeySpecFlags::RM | KeySpecFlags::DELETE
    );
}
