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
    /// The most heap bytes held at once since the start.
    pub peak: u64,
}

impl MemoryFigures {
    /// Measures now.
    pub fn now() -> MemoryFigures {
        let used = crate::alloc::used();
        MemoryFigures {
            used,
            rss: super::info::resident_bytes(),
            peak: crate::alloc::peak().max(used),
        }
    }

    /// The heap now as a percentage of the peak (Redis's `used_memory_peak_perc`).
    pub fn peak_percentage(&self) -> f64 {
        self.used as f64 * 100.0 / self.peak.max(1) as f64
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

/// The parts of the heap this server measures apart from the dataset, as Redis's
/// `getMemoryOverheadData` sums them: what the started server held, the replication
/// buffers, the normal clients' buffers and the scripting engine. What is left is the
/// dataset, key tables included (Redis counts its dicts' tables as overhead; here they
/// are the shards' own and not measured apart). The interpreter's heap counts too:
/// Redis's Lua allocates outside its counted heap, this server's inside.
pub struct Overhead {
    /// Heap held once the server had started, before any data.
    pub startup: u64,
    /// Replication buffers, all of them (Redis's backlog and replicas' buffers).
    pub replication: u64,
    /// Of those, what replicas have not read yet (Redis's `mem_clients_slaves`).
    pub replicas_behind: u64,
    /// Normal and pub/sub clients' buffers.
    pub clients: u64,
    /// The scripting engine.
    pub scripts: crate::scripting::ScriptMemory,
}

impl Overhead {
    /// Measures now.
    pub fn now(shared: &crate::shared::Shared) -> Overhead {
        let (replication, behind) = shared.repl.journal.stream().buffer_memory();
        let widen = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        Overhead {
            startup: crate::alloc::startup(),
            replication: widen(replication),
            replicas_behind: widen(behind),
            clients: widen(shared.clients.normal_memory()),
            scripts: shared.scripting.memory(),
        }
    }

    /// The sum (INFO's `used_memory_overhead`).
    pub fn total(&self) -> u64 {
        let scripts = self.scripts.vm + self.scripts.scripts + self.scripts.functions;
        self.startup + self.replication + self.clients + u64::try_from(scripts).unwrap_or(u64::MAX)
    }

    /// The heap less the overhead (INFO's `used_memory_dataset`).
    pub fn dataset(&self, used: u64) -> u64 {
        used.saturating_sub(self.total())
    }

    /// The dataset as a percentage of the heap grown since the start (Redis's
    /// `used_memory_dataset_perc`).
    pub fn dataset_percentage(&self, used: u64) -> f64 {
        let grown = used.saturating_sub(self.startup).max(1);
        self.dataset(used) as f64 * 100.0 / grown as f64
    }
}

/// MEMORY STATS: Redis's fields, from what this server measures (the heap as the
/// allocator counts it, its peak, the resident set, the keys, the overheads of
/// [`Overhead`]); what it does not measure apart (per-database table overheads, the
/// allocator's own ratios) is 0 or 1.
fn memory_stats(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = MemoryFigures::now();
    let overhead = Overhead::now(ctx.shared);
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
    let dataset = overhead.dataset(m.used);
    // Redis's figure: the heap grown since the start, per key.
    let per_key = m
        .used
        .saturating_sub(overhead.startup)
        .checked_div(keys)
        .unwrap_or(0);
    let widen = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let head = [
        ("peak.allocated", Field::Int(m.peak)),
        ("total.allocated", Field::Int(m.used)),
        ("startup.allocated", Field::Int(overhead.startup)),
        (
            "replication.backlog",
            Field::Int(
                overhead
                    .replication
                    .saturating_sub(overhead.replicas_behind),
            ),
        ),
        ("clients.slaves", Field::Int(overhead.replicas_behind)),
        ("clients.normal", Field::Int(overhead.clients)),
        ("cluster.links", Field::Int(0)),
        ("aof.buffer", Field::Int(0)),
        ("lua.caches", Field::Int(widen(overhead.scripts.scripts))),
        (
            "functions.caches",
            Field::Int(widen(overhead.scripts.functions)),
        ),
    ];
    let tail = [
        ("overhead.total", Field::Int(overhead.total())),
        ("keys.count", Field::Int(keys)),
        ("keys.bytes-per-key", Field::Int(per_key)),
        ("dataset.bytes", Field::Int(dataset)),
        (
            "dataset.percentage",
            Field::Float(overhead.dataset_percentage(m.used)),
        ),
        ("peak.percentage", Field::Float(m.peak_percentage())),
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

/// MEMORY DOCTOR: Redis's report, in its words, on the figures this server measures.
/// Redis's allocator findings cannot arise here (INFO reports the allocator's ratios as
/// 1, as the system allocator keeps none).
fn memory_doctor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let text = doctor_report(ctx.shared);
    encode::write_verbatim(ctx.out, ctx.client.protocol, b"txt", text.as_bytes());
    Ok(())
}

fn doctor_report(shared: &crate::shared::Shared) -> String {
    const MB: usize = 1024 * 1024;
    let m = MemoryFigures::now();
    if m.used < DOCTOR_MIN_BYTES {
        return "Hi Sam, this instance is empty or is using very little memory, my issues \
                detector can't be used in these conditions. Please, leave for your mission on \
                Earth and fill it with some data. The new Sam and I will be back to our \
                programming as soon as I finished rebooting.\n"
            .to_string();
    }
    let replicas = shared.repl.journal.stream().replicas().len();
    let clients = shared.clients.len().saturating_sub(replicas).max(1);
    let (_, replicas_behind) = shared.repl.journal.stream().buffer_memory();
    let mut findings = Vec::new();
    if m.peak as f64 / m.used as f64 > 1.5 {
        findings.push(DOCTOR_BIG_PEAK);
    }
    if m.fragmentation() > 1.4 && m.rss.saturating_sub(m.used) > 10 * MB as u64 {
        findings.push(DOCTOR_HIGH_RSS);
    }
    if replicas > 0 && replicas_behind > 10 * MB {
        findings.push(DOCTOR_REPLICA_BUFFERS);
    }
    if shared.clients.normal_memory() / clients > 200 * 1024 {
        findings.push(DOCTOR_CLIENT_BUFFERS);
    }
    if shared.scripting.flags.cached_scripts() > 1000 {
        findings.push(DOCTOR_MANY_SCRIPTS);
    }
    if findings.is_empty() {
        return "Hi Sam, I can't find any memory issue in your instance. I can only account \
                for what occurs on this base.\n"
            .to_string();
    }
    let mut text =
        String::from("Sam, I detected a few issues in this Redis instance memory implants:\n\n");
    for finding in findings {
        text.push_str(finding);
        text.push_str("\n\n");
    }
    text.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
    text
}

const DOCTOR_BIG_PEAK: &str = " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.";
const DOCTOR_HIGH_RSS: &str = " * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"libc\".";
const DOCTOR_REPLICA_BUFFERS: &str = " * Big replica buffers: The replica output buffers in this instance are greater than 10MB for each replica (on average). This likely means that there is some replica instance that is struggling receiving data, either because it is too slow or because of networking issues. As a result, data piles on the master output buffers. Please try to identify what replica is not receiving data correctly and why. You can use the INFO output in order to check the replicas delays and the CLIENT LIST command to check the output buffers of each replica.";
const DOCTOR_CLIENT_BUFFERS: &str = " * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.";
const DOCTOR_MANY_SCRIPTS: &str = " * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.";

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
/// per-element overhead of its collection), a large hash's, set's or sorted set's
/// elements from `samples` of them (0: all).
pub(crate) fn value_size(value: &Value, samples: usize) -> usize {
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
            Value::Hash(h) => 96 + h.heap_size(samples),
            Value::Set(s) => 64 + s.heap_size(samples),
            Value::ZSet(z) => 96 + z.heap_size(samples),
            Value::Stream(s) => s.heap_size(),
        }
}

fn memory_usage(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut samples = crate::store::sampled::DEFAULT_SAMPLES;
    let mut j = 3;
    while j < args.len() {
        if is(&args[j], "samples") && j + 1 < args.len() {
            let n = int(&args[j + 1])?;
            if n < 0 {
                return Err(SYNTAX);
            }
            samples = usize::try_from(n).unwrap_or(usize::MAX);
            j += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    let key = &args[2];
    let proto = ctx.proto();
    let shard = ctx.lock(key);
    // Redis's direct dictionary lookup: no use recorded, no hit counted, and a key past
    // its deadline not yet reclaimed is still measured.
    match shard.peek_stored(key) {
        Some(e) => {
            let size = value_size(&e.value, samples) + key.len();
            encode::write_integer(ctx.out, size as i64);
        }
        None => encode::write_null_bulk(ctx.out, proto),
    }
    Ok(())
}
