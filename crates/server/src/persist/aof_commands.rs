//! The dataset as the commands that rebuild it: an AOF base written with
//! `aof-use-rdb-preamble no`. Each key gets the commands Redis's rewrite writes for its
//! type (SET; RPUSH, SADD, ZADD, HMSET with at most 64 items each; a stream's XADDs,
//! XSETID, XGROUP CREATE, CREATECONSUMER and XCLAIMs), then PEXPIREAT for a deadline,
//! so the file reads as commands and loads into any Redis.

use crate::shared::Shared;
use crate::store::{Entry, ShardMap, Value};

/// Items per command for lists, sets, sorted sets and hashes (Redis's
/// `AOF_REWRITE_ITEMS_PER_CMD`): a large value never becomes one huge command.
const ITEMS_PER_COMMAND: usize = 64;

/// The whole dataset held, after [`header`].
pub fn image(shared: &Shared, held: &mut dyn ShardMap) -> Vec<u8> {
    let mut out = header(shared);
    for db in 0..shared.store.db_count() {
        let mut selected = false;
        for index in 0..shared.store.db(db).shard_count() {
            held.shard(db, index).for_each_live(|key, entry| {
                if !selected {
                    select(&mut out, db);
                    selected = true;
                }
                key_commands(&mut out, key.as_bytes(), entry);
            });
        }
    }
    out
}

/// The start of a base: a `#TS` line with `aof-timestamp-enabled`, then a FUNCTION LOAD
/// for each library, as Redis's rewrite writes them.
pub fn header(shared: &Shared) -> Vec<u8> {
    let mut out = Vec::new();
    if shared.config.read().param_bool("aof-timestamp-enabled") {
        out.extend_from_slice(format!("#TS:{}\r\n", super::snapshot::unix_secs()).as_bytes());
    }
    if let Ok(engine) = shared.scripting.engine() {
        for library in engine.libraries.values() {
            command(&mut out, &[b"FUNCTION", b"LOAD", &library.code]);
        }
    }
    out
}

/// `SELECT db`.
pub fn select(out: &mut Vec<u8>, db: usize) {
    command(out, &[b"SELECT", itoa::Buffer::new().format(db).as_bytes()]);
}

/// The commands that rebuild one key, its deadline last.
pub fn key_commands(out: &mut Vec<u8>, key: &[u8], entry: &Entry) {
    match &entry.value {
        Value::Int(n) => command(
            out,
            &[b"SET", key, itoa::Buffer::new().format(*n).as_bytes()],
        ),
        Value::Str(s) => command(out, &[b"SET", key, s]),
        Value::List(list) => batched(out, b"RPUSH", key, list.len(), 1, list.iter(), bulk),
        Value::Set(set) => batched(out, b"SADD", key, set.len(), 1, set.iter(), |out, m| {
            bulk(out, &m)
        }),
        Value::Hash(hash) => batched(
            out,
            b"HMSET",
            key,
            hash.len(),
            2,
            hash.iter(),
            |out, (f, v)| {
                bulk(out, f);
                bulk(out, v);
            },
        ),
        // Redis writes scores with `%.17g`, which reads back as the same double.
        Value::ZSet(zset) => batched(
            out,
            b"ZADD",
            key,
            zset.len(),
            2,
            zset.iter(),
            |out, (m, score)| {
                bulk(out, crate::cmd::float::fmt_g17(score).as_bytes());
                bulk(out, m);
            },
        ),
        Value::Stream(stream) => stream_commands(out, key, stream),
    }
    if entry.expires_at != 0 {
        command(
            out,
            &[
                b"PEXPIREAT",
                key,
                itoa::Buffer::new().format(entry.expires_at).as_bytes(),
            ],
        );
    }
}

/// `name key item...` commands of at most [`ITEMS_PER_COMMAND`] items, each item
/// `width` arguments that `write` writes.
fn batched<T>(
    out: &mut Vec<u8>,
    name: &[u8],
    key: &[u8],
    mut left: usize,
    width: usize,
    items: impl Iterator<Item = T>,
    mut write: impl FnMut(&mut Vec<u8>, T),
) {
    let mut in_command = 0;
    for item in items {
        if in_command == 0 {
            array_len(out, 2 + left.min(ITEMS_PER_COMMAND) * width);
            bulk(out, name);
            bulk(out, key);
        }
        write(out, item);
        left = left.saturating_sub(1);
        in_command += 1;
        if in_command == ITEMS_PER_COMMAND {
            in_command = 0;
        }
    }
}

/// A stream: its entries as XADDs (an empty stream as Redis's `XADD key MAXLEN 0 0-1 x
/// y`), XSETID for its last id and counters, then each group with its consumers and
/// their pending entries.
fn stream_commands(out: &mut Vec<u8>, key: &[u8], stream: &crate::store::stream::Stream) {
    if stream.is_empty() {
        command(out, &[b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]);
    }
    use crate::store::stream::StreamId;
    for (id, fields) in stream.range(StreamId::MIN, StreamId::MAX) {
        array_len(out, 3 + fields.len());
        bulk(out, b"XADD");
        bulk(out, key);
        bulk(out, id.to_string().as_bytes());
        for field in fields.iter() {
            bulk(out, field);
        }
    }
    command(
        out,
        &[
            b"XSETID",
            key,
            stream.last_id.to_string().as_bytes(),
            b"ENTRIESADDED",
            itoa::Buffer::new().format(stream.entries_added).as_bytes(),
            b"MAXDELETEDID",
            stream.max_deleted_id.to_string().as_bytes(),
        ],
    );
    for (name, group) in &stream.groups {
        command(
            out,
            &[
                b"XGROUP",
                b"CREATE",
                key,
                name,
                group.last_id.to_string().as_bytes(),
                b"ENTRIESREAD",
                itoa::Buffer::new().format(group.entries_read).as_bytes(),
            ],
        );
        for (consumer_name, consumer) in &group.consumers {
            if consumer.pel.is_empty() {
                command(
                    out,
                    &[b"XGROUP", b"CREATECONSUMER", key, name, consumer_name],
                );
                continue;
            }
            for id in &consumer.pel {
                let Some(nack) = group.pel.get(id) else {
                    continue;
                };
                command(
                    out,
                    &[
                        b"XCLAIM",
                        key,
                        name,
                        consumer_name,
                        b"0",
                        id.to_string().as_bytes(),
                        b"TIME",
                        itoa::Buffer::new().format(nack.delivery_time).as_bytes(),
                        b"RETRYCOUNT",
                        itoa::Buffer::new().format(nack.delivery_count).as_bytes(),
                        b"JUSTID",
                        b"FORCE",
                    ],
                );
            }
        }
    }
}

/// One command as a RESP array of bulk strings.
fn command(out: &mut Vec<u8>, args: &[&[u8]]) {
    array_len(out, args.len());
    for arg in args {
        bulk(out, arg);
    }
}

fn array_len(out: &mut Vec<u8>, n: usize) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn bulk(out: &mut Vec<u8>, arg: &[u8]) {
    out.push(b'$');
    out.extend_from_slice(itoa::Buffer::new().format(arg.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(arg);
    out.extend_from_slice(b"\r\n");
}
