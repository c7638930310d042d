//! MEMORY USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE and HELP.

use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::float::fmt_g17;
use super::reply::{CmdResult, SYNTAX};
use super::{Ctx, Handler};
use crate::store::Value;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("memory|usage", memory_usage),
    ("memory|stats", memory_stats),
    ("memory|doctor", memory_doctor),
    ("memory|malloc-stats", memory_malloc_stats),
    ("memory|purge", memory_purge),
    ("memory|help", memory_help),
];

/// What the memory figures of INFO memory and MEMORY STATS/DOCTOR are made of.
pub struct MemoryFigures {
    /// Heap bytes the allocator counts.
    pub used: u64,
    /// The process's resident set.
    pub rss: u64,
}

impl MemoryFigures {
    /// Measures now.
    pub fn now() -> MemoryFigures {
        MemoryFigures {
            used: crate::alloc::used(),
            rss: super::info::resident_bytes(),
        }
    }

    /// Resident bytes per heap byte.
    pub fn fragmentation(&self) -> f64 {
        if self.used > 0 {
            self.rss as f64 / self.used as f64
        } else {
            0.0
        }
    }
}

/// MEMORY STATS: Redis's fields, from what this server measures (the heap as the
/// allocator counts it, the resident set, the keys); the overheads it does not track
/// separately are 0, as in INFO memory.
fn memory_stats(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = MemoryFigures::now();
    let databases: Vec<(usize, u64)> = (0..ctx.shared.store.db_count())
        .map(|db| (db, super::info::db_keys(ctx, db)))
        .filter(|(_, keys)| *keys > 0)
        .collect();
    let keys: u64 = databases.iter().map(|(_, n)| n).sum();
    let proto = ctx.proto();
    let out = &mut *ctx.out;
    enum Field {
        Int(u64),
        Float(f64),
    }
    let per_key = m.used.checked_div(keys).unwrap_or(0);
    let head = [
        ("peak.allocated", Field::Int(m.used)),
        ("total.allocated", Field::Int(m.used)),
        ("startup.allocated", Field::Int(0)),
        ("replication.backlog", Field::Int(0)),
        ("clients.slaves", Field::Int(0)),
        ("clients.normal", Field::Int(0)),
        ("cluster.links", Field::Int(0)),
        ("aof.buffer", Field::Int(0)),
        ("lua.caches", Field::Int(0)),
        ("functions.caches", Field::Int(0)),
    ];
    let tail = [
        ("overhead.total", Field::Int(0)),
        ("keys.count", Field::Int(keys)),
        ("keys.bytes-per-key", Field::Int(per_key)),
        ("dataset.bytes", Field::Int(m.used)),
        ("dataset.percentage", Field::Float(100.0)),
        ("peak.percentage", Field::Float(100.0)),
        ("allocator.allocated", Field::Int(m.used)),
        ("allocator.active", Field::Int(m.rss)),
        ("allocator.resident", Field::Int(m.rss)),
        ("allocator-fragmentation.ratio", Field::Float(1.0)),
        ("allocator-fragmentation.bytes", Field::Int(0)),
        ("allocator-rss.ratio", Field::Float(1.0)),
        ("allocator-rss.bytes", Field::Int(0)),
        ("rss-overhead.ratio", Field::Float(1.0)),
        ("rss-overhead.bytes", Field::Int(0)),
        ("fragmentation", Field::Float(m.fragmentation())),
        (
            "fragmentation.bytes",
            Field::Int(m.rss.saturating_sub(m.used)),
        ),
    ];
    let field = |out: &mut bytes::BytesMut, name: &str, value: &Field| {
        encode::write_bulk(out, name.as_bytes());
        match value {
            Field::Int(n) => encode::write_integer(out, i64::try_from(*n).unwrap_or(i64::MAX)),
            Field::Float(f) => encode::write_double_text_reply(out, proto, fmt_g17(*f).as_bytes()),
        }
    };
    encode::write_map_len(out, proto, head.len() + databases.len() + tail.len());
    for (name, value) in &head {
        field(out, name, value);
    }
    for (db, _) in &databases {
        encode::write_bulk(out, format!("db.{db}").as_bytes());
        encode::write_map_len(out, proto, 2);
        field(out, "overhead.hashtable.main", &Field::Int(0));
        field(out, "overhead.hashtable.expires", &Field::Int(0));
    }
    for (name, value) in &tail {
        field(out, name, value);
    }
    Ok(())
}

/// Below this much heap the doctor has nothing to go on (as Redis's).
const DOCTOR_MIN_BYTES: u64 = 5 * 1024 * 1024;

/// MEMORY DOCTOR: a short report on what the figures suggest.
fn memory_doctor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = MemoryFigures::now();
    let text = if m.used < DOCTOR_MIN_BYTES {
        "This instance holds too little data (under 5 MB) for a meaningful memory report. \
         Fill it with some data and ask again."
            .to_string()
    } else if m.fragmentation() > 1.4 {
        format!(
            "High fragmentation: the process holds {:.2} times the memory its data uses \
             ({} resident bytes for {} allocated). This is common after many keys were \
             deleted; memory is reused as new data arrives, or returned after a restart.",
            m.fragmentation(),
            m.rss,
            m.used
        )
    } else {
        "No memory issue found: resident memory is in line with the data held.".to_string()
    };
    encode::write_verbatim(ctx.out, ctx.client.protocol, b"txt", text.as_bytes());
    Ok(())
}

/// MEMORY MALLOC-STATS: the system allocator keeps no report to give (Redis built with
/// libc answers the same).
fn memory_malloc_stats(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    encode::write_bulk(ctx.out, b"Stats not supported for the current allocator");
    Ok(())
}

/// MEMORY PURGE: nothing to ask of the system allocator.
fn memory_purge(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    super::reply::ok(ctx.out);
    Ok(())
}

fn memory_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    const LINES: &[&str] = &[
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
        "HELP",
        "    Prints this help.",
    ];
    super::reply::help(ctx.out, LINES);
    Ok(())
}

/// Bytes a value takes, estimated from its layout (entry, inline or heap bytes, and the
/// per-element overhead of its collection).
fn value_size(value: &Value) -> usize {
    const ENTRY: usize = 56;
    let heap = |len: usize| {
        if len > crate::store::INLINE_CAPACITY {
            len + 16
        } else {
            0
        }
    };
    ENTRY
        + match value {
            Value::Int(_) => 0,
            Value::Str(s) => heap(s.len()),
            Value::List(l) => 48 + l.allocated(),
            Value::Hash(h) => 96 + h.heap_size(),
            Value::Set(s) => 64 + s.heap_size(),
            Value::ZSet(z) => 96 + z.heap_size(),
            Value::Stream(s) => s.heap_size(),
        }
}

fn memory_usage(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut j = 3;
    while j < args.len() {
        if is(&args[j], "samples") && j + 1 < args.len() {
            let n = int(&args[j + 1])?;
            if n < 0 {
                return Err(SYNTAX);
            }
            j += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    let key = &args[2];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    match shard.get(key) {
        Some(e) => {
            let size = value_size(&e.value) + key.len();
            encode::write_integer(ctx.out, size as i64);
        }
        None => encode::write_null_bulk(ctx.out, proto),
    }
    Ok(())
}
