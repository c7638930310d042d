//! INFO: Redis 7.0's sections and fields, in Redis's order. `INFO` and `INFO default`
//! give the default sections, `all` adds commandstats and latencystats, `everything`
//! adds module sections too (none here); several section names may be given at once.
//! Figures are real where the server has them (clients, memory from the process,
//! keyspace, commands and errors, CPU from /proc); the rest are Redis's values for a
//! server without that feature (a master without replicas, no persistence running).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use redline_resp::encode;

use super::connection::REDIS_VERSION;
use super::reply::CmdResult;
use super::{Ctx, Handler};
use crate::instant::Metric;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[("info", info)];

/// Sections in output order, and whether the default set includes them.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
];

fn info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let wanted: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let everything = wanted.iter().any(|w| w == "all" || w == "everything");
    let default = wanted.is_empty() || wanted.iter().any(|w| w == "default");
    let want = |section: &str, in_default: bool| {
        everything || (default && in_default) || wanted.iter().any(|w| w == section)
    };
    // This connection's own counts are part of the figures.
    ctx.shared.cmdstats.absorb(&mut ctx.client.cmdstats);
    let mut text = String::new();
    for (section, in_default) in SECTIONS {
        if want(section, *in_default) {
            write_section(ctx, section, &mut text);
        }
    }
    // Redis ends the last section without the blank line.
    let body = text.strip_suffix("\r\n").unwrap_or(&text);
    encode::write_verbatim(ctx.out, ctx.client.protocol, b"txt", body.as_bytes());
    Ok(())
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "K", "M", "G", "T"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes}B")
    } else {
        format!("{value:.2}{}", UNITS[unit])
    }
}

/// The process's resident set size (Linux `/proc/self/statm`), 0 where unavailable.
pub fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// Keys in database `db`.
pub fn db_keys(ctx: &Ctx<'_>, db: usize) -> u64 {
    sum_shards(ctx, db, |s| s.len() as u64)
}

fn sum_shards(ctx: &Ctx<'_>, db: usize, f: impl Fn(&crate::store::Shard) -> u64) -> u64 {
    (0..ctx.shared.store.db(db).shard_count())
        .map(|i| f(&ctx.lock_in(db, i)))
        .sum()
}

/// User and system CPU seconds of the process and of its children (`/proc/self/stat`,
/// in clock ticks of 1/100 s).
fn cpu_seconds() -> [f64; 4] {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return [0.0; 4];
    };
    // Fields after the command name (which may hold spaces) start at "state".
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 100.0
    };
    // utime, stime, cutime, cstime are fields 14-17 of the line, 12-15 after "state".
    [tick(11), tick(12), tick(13), tick(14)]
}

fn write_section(ctx: &mut Ctx<'_>, section: &str, text: &mut String) {
    let shared = ctx.shared;
    match section {
        "server" => {
            let uptime = shared.started.elapsed().as_secs();
            let config = shared.config.read();
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let executable = std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let config_file = config
                .config_file
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let _ = write!(
                text,
                "# Server\r\nredis_version:{REDIS_VERSION}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:{}\r\nos:{} {}\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\ngcc_version:0.0.0\r\nprocess_id:{}\r\nprocess_supervised:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nlru_clock:{}\r\nexecutable:{executable}\r\nconfig_file:{config_file}\r\nio_threads_active:0\r\nredline_version:{}\r\nredline_worker_threads:{}\r\n",
                if shared.cluster.enabled() {
                    "cluster"
                } else {
                    "standalone"
                },
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::process::id(),
                crate::supervision::supervised_name(),
                shared.run_id,
                // A TLS-only server (`port 0`) shows its TLS port, as Redis does.
                match shared.port() {
                    0 => shared.tls.port(),
                    port => port,
                },
                now.as_micros(),
                uptime / 86400,
                config.hz,
                config.hz,
                crate::store::evict::lru_clock(),
                env!("CARGO_PKG_VERSION"),
                config.effective_workers(),
            );
            if let Some(ms) = shared.graceful.remaining_ms() {
                let _ = write!(text, "shutdown_in_milliseconds:{ms}\r\n");
            }
            text.push_str("\r\n");
        }
        "clients" => {
            let (recent_input, recent_output) = shared.clients.recent_max_buffers();
            // Redis's count: a link each way to every other node it knows.
            let cluster_connections = if shared.cluster.enabled() {
                shared.cluster.state.read().nodes.len().saturating_sub(1) * 2
            } else {
                0
            };
            let _ = write!(
                text,
                "# Clients\r\nconnected_clients:{}\r\ncluster_connections:{cluster_connections}\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:{recent_input}\r\nclient_recent_max_output_buffer:{recent_output}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\nclients_in_timeout_table:{}\r\n\r\n",
                // As in Redis, replicas' links are not counted.
                shared
                    .clients
                    .len()
                    .saturating_sub(shared.repl.journal.stream().replicas().len()),
                shared.config.read().maxclients,
                shared.blocking.count()
                    + shared.pause.held_back()
                    + shared.graceful.waiting_clients(),
                shared.tracking.stats().clients,
                shared.blocking.timed_count(),
            );
        }
        "memory" => {
            // What the process holds on the heap, as the allocator counts it.
            let figures = super::memory::MemoryFigures::now();
            let (used, rss, peak) = (figures.used, figures.rss, figures.peak);
            let overhead = super::memory::Overhead::now(shared);
            let (startup, overhead_total) = (overhead.startup, overhead.total());
            let dataset = overhead.dataset(used);
            let dataset_perc = overhead.dataset_percentage(used);
            let peak_perc = figures.peak_percentage();
            let lua = overhead.scripts.vm;
            let (scripts_eval, functions_caches) =
                (overhead.scripts.scripts, overhead.scripts.functions);
            let scripts_memory = scripts_eval + functions_caches;
            let config = shared.config.read();
            let maxmemory: u64 = config.param("maxmemory").parse().unwrap_or(0);
            let policy = config.param("maxmemory-policy").to_string();
            let (libraries, functions) = shared.scripting.flags.counts();
            let scripts = shared.scripting.flags.cached_scripts();
            let lazy_pending = shared.store.lazyfree.pending();
            let lazy_freed = shared.store.lazyfree.freed();
            let ratio = figures.fragmentation();
            let eviction = &shared.store.events().eviction;
            let (replica_buffers, replicas_behind, clients_normal) = (
                overhead.replication,
                overhead.replicas_behind,
                overhead.clients,
            );
            let left_out = eviction.left_out();
            let _ = write!(
                text,
                "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:{peak_perc:.2}%\r\nused_memory_overhead:{overhead_total}\r\nused_memory_startup:{startup}\r\nused_memory_dataset:{dataset}\r\nused_memory_dataset_perc:{dataset_perc:.2}%\r\nallocator_allocated:{used}\r\nallocator_active:{rss}\r\nallocator_resident:{rss}\r\ntotal_system_memory:0\r\ntotal_system_memory_human:0B\r\nused_memory_lua:{lua}\r\nused_memory_vm_eval:{lua}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{scripts_eval}\r\nnumber_of_cached_scripts:{scripts}\r\nnumber_of_functions:{functions}\r\nnumber_of_libraries:{libraries}\r\nused_memory_vm_functions:0\r\nused_memory_vm_total:{lua}\r\nused_memory_vm_total_human:{}\r\nused_memory_functions:{functions_caches}\r\nused_memory_scripts:{scripts_memory}\r\nused_memory_scripts_human:{}\r\nmaxmemory:{maxmemory}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{policy}\r\nallocator_frag_ratio:1.00\r\nallocator_frag_bytes:0\r\nallocator_rss_ratio:1.00\r\nallocator_rss_bytes:0\r\nrss_overhead_ratio:1.00\r\nrss_overhead_bytes:0\r\nmem_fragmentation_ratio:{ratio:.2}\r\nmem_fragmentation_bytes:{}\r\nmem_not_counted_for_evict:{left_out}\r\nmem_replication_backlog:0\r\nmem_total_replication_buffers:{replica_buffers}\r\nmem_clients_slaves:{replicas_behind}\r\nmem_clients_normal:{clients_normal}\r\nmem_cluster_links:0\r\nmem_aof_buffer:0\r\nmem_allocator:libc\r\nactive_defrag_running:0\r\nlazyfree_pending_objects:{lazy_pending}\r\nlazyfreed_objects:{lazy_freed}\r\n\r\n",
                human(used),
                human(rss),
                human(peak),
                human(lua as u64),
                human(lua as u64),
                human(scripts_memory as u64),
                human(maxmemory),
                rss.saturating_sub(used),
            );
        }
        "persistence" => {
            use std::sync::atomic::Ordering::Relaxed;
            let p = &shared.persistence;
            let running = p.bgsave_running.load(Relaxed);
            // A sync's cut is an RDB being written too, as Redis's child for it.
            let writing_rdb = running || p.sync_cuts.load(Relaxed) > 0;
            // On from `appendonly yes`, before the first rewrite has the file (Redis's
            // `aof_state != AOF_OFF`, AOF_WAIT_REWRITE included).
            let aof_on = u8::from(shared.config.read().appendonly);
            let (bgsave, rewrite) = (&p.bgsave_clock, &shared.aof.rewrite_clock);
            let _ = write!(
                text,
                "# Persistence\r\nloading:{}\r\nasync_loading:{}\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\nrdb_current_bgsave_time_sec:{}\r\nrdb_saves:{}\r\nrdb_last_cow_size:0\r\nrdb_last_load_keys_expired:{}\r\nrdb_last_load_keys_loaded:{}\r\naof_enabled:{aof_on}\r\naof_rewrite_in_progress:{}\r\naof_rewrite_scheduled:{}\r\naof_last_rewrite_time_sec:{}\r\naof_current_rewrite_time_sec:{}\r\naof_last_bgrewrite_status:{}\r\naof_rewrites:{}\r\naof_rewrites_consecutive_failures:0\r\naof_last_write_status:{}\r\naof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
                u8::from(p.loading.is_active()),
                u8::from(p.loading.is_async()),
                p.dirty.load(Relaxed),
                u8::from(writing_rdb),
                p.lastsave.load(Relaxed),
                if p.last_bgsave_ok.load(Relaxed) { "ok" } else { "err" },
                bgsave.last(),
                bgsave.current(),
                p.saves.load(Relaxed),
                p.loading.keys_expired(),
                p.loading.keys_loaded(),
                u8::from(shared.aof.rewriting.load(Relaxed)),
                u8::from(shared.aof.rewrite_scheduled.load(Relaxed)),
                rewrite.last(),
                rewrite.current(),
                if shared.aof.rewrite_failed.load(Relaxed) { "err" } else { "ok" },
                shared.aof.rewrites.load(Relaxed),
                if crate::persist::aof::write_failed(shared) { "err" } else { "ok" },
            );
            if aof_on == 1 {
                let base = shared.aof.base_size.load(Relaxed);
                let _ = write!(
                    text,
                    "aof_current_size:{}\r\naof_base_size:{base}\r\naof_pending_rewrite:0\r\naof_buffer_length:{}\r\naof_pending_bio_fsync:0\r\naof_delayed_fsync:0\r\n",
                    base + crate::persist::aof::current_size(shared),
                    crate::persist::aof::buffer_length(shared),
                );
            }
            p.loading.write_progress(text);
            text.push_str("\r\n");
        }
        "stats" => {
            let dbs = shared.store.db_count();
            let expired: u64 = (0..dbs).map(|d| sum_shards(ctx, d, |s| s.expired)).sum();
            let tracked: u64 = (0..dbs)
                .map(|d| sum_shards(ctx, d, |s| s.replica_ttl_len() as u64))
                .sum();
            let tracking = shared.tracking.stats();
            let evicted = shared
                .store
                .events()
                .eviction
                .evicted
                .load(std::sync::atomic::Ordering::Relaxed);
            let evicted_clients = shared
                .clients
                .memory
                .evicted
                .load(std::sync::atomic::Ordering::Relaxed);
            let errors: u64 = shared.cmdstats.errors().iter().map(|(_, n)| n).sum();
            let migrate_sockets = shared.migrate_cache.len();
            let stats = &shared.stats;
            let instant = &stats.instant;
            let ops_sec = instant.per_second(Metric::Commands);
            let (in_kbps, out_kbps) = (
                instant.kbps(Metric::NetInput),
                instant.kbps(Metric::NetOutput),
            );
            let repl_in_kbps = instant.kbps(Metric::ReplInput);
            let repl_out_kbps = instant.kbps(Metric::ReplOutput);
            // This connection's batch so far counts too (INFO after GET in one pipeline).
            let (own_hits, own_misses) = crate::store::lookups::pending();
            let hits = stats.keyspace_hits.load(Ordering::Relaxed) + own_hits;
            let misses = stats.keyspace_misses.load(Ordering::Relaxed) + own_misses;
            let unexpected = stats.unexpected_error_replies.load(Ordering::Relaxed);
            let forks = stats.forks.load(Ordering::Relaxed);
            let fork_usec = stats.latest_fork_usec.load(Ordering::Relaxed);
            let net_in = stats.net_input_bytes.load(Ordering::Relaxed);
            let net_out = stats.net_output_bytes.load(Ordering::Relaxed);
            let reads = stats.reads_processed.load(Ordering::Relaxed);
            let writes = stats.writes_processed.load(Ordering::Relaxed);
            let repl_in = stats.net_repl_input_bytes.load(Ordering::Relaxed);
            let repl_out = stats.net_repl_output_bytes.load(Ordering::Relaxed);
            let (exceeded_total, exceeded_current) =
                shared.store.events().eviction.exceeded.millis();
            let (stale_perc, capped_cycles, expire_cycle_ms) =
                shared.store.expire_cycles.snapshot();
            let _ = write!(
                text,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{ops_sec}\r\ntotal_net_input_bytes:{net_in}\r\ntotal_net_output_bytes:{net_out}\r\ntotal_net_repl_input_bytes:{repl_in}\r\ntotal_net_repl_output_bytes:{repl_out}\r\ninstantaneous_input_kbps:{in_kbps:.2}\r\ninstantaneous_output_kbps:{out_kbps:.2}\r\ninstantaneous_input_repl_kbps:{repl_in_kbps:.2}\r\ninstantaneous_output_repl_kbps:{repl_out_kbps:.2}\r\nrejected_connections:{}\r\nsync_full:{}\r\nsync_partial_ok:{}\r\nsync_partial_err:{}\r\nexpired_keys:{expired}\r\nexpired_stale_perc:{stale_perc:.2}\r\nexpired_time_cap_reached_count:{capped_cycles}\r\nexpire_cycle_cpu_milliseconds:{expire_cycle_ms}\r\nevicted_keys:{evicted}\r\nevicted_clients:{evicted_clients}\r\ntotal_eviction_exceeded_time:{exceeded_total}\r\ncurrent_eviction_exceeded_time:{exceeded_current}\r\nkeyspace_hits:{hits}\r\nkeyspace_misses:{misses}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\nlatest_fork_usec:{fork_usec}\r\ntotal_forks:{forks}\r\nmigrate_cached_sockets:{migrate_sockets}\r\nslave_expires_tracked_keys:{tracked}\r\nactive_defrag_hits:0\r\nactive_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\ntracking_total_keys:{}\r\ntracking_total_items:{}\r\ntracking_total_prefixes:{}\r\nunexpected_error_replies:{unexpected}\r\ntotal_error_replies:{errors}\r\ndump_payload_sanitizations:0\r\ntotal_reads_processed:{reads}\r\ntotal_writes_processed:{writes}\r\nio_threaded_reads_processed:0\r\nio_threaded_writes_processed:0\r\nreply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n\r\n",
                shared.stats.connections_received.load(Ordering::Relaxed),
                shared.stats.commands_processed.load(Ordering::Relaxed)
                    + ctx.client.commands_since_flush,
                shared.stats.rejected_connections.load(Ordering::Relaxed),
                shared.repl.syncs.full.load(Ordering::Relaxed),
                shared.repl.syncs.partial_ok.load(Ordering::Relaxed),
                shared.repl.syncs.partial_err.load(Ordering::Relaxed),
                shared.pubsub.count(crate::pubsub::Kind::Channel),
                shared.pubsub.count(crate::pubsub::Kind::Pattern),
                shared.pubsub.count(crate::pubsub::Kind::Shard),
                tracking.keys,
                tracking.items,
                tracking.prefixes,
            );
        }
        "replication" => super::replication::info_section(ctx, text),
        "cpu" => {
            let [user, sys, cuser, csys] = cpu_seconds();
            let _ = write!(
                text,
                "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:{csys:.6}\r\nused_cpu_user_children:{cuser:.6}\r\nused_cpu_sys_main_thread:{sys:.6}\r\nused_cpu_user_main_thread:{user:.6}\r\n\r\n",
            );
        }
        "modules" => text.push_str("# Modules\r\n\r\n"),
        "commandstats" => {
            text.push_str("# Commandstats\r\n");
            for (name, c) in shared.cmdstats.commands() {
                // As Redis: a command not called since the last RESETSTAT is not shown.
                if c.calls == 0 && c.rejected == 0 && c.failed == 0 {
                    continue;
                }
                let per_call = if c.calls > 0 {
                    c.usec as f64 / c.calls as f64
                } else {
                    0.0
                };
                let _ = write!(
                    text,
                    "cmdstat_{name}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
                    c.calls, c.usec, c.rejected, c.failed
                );
            }
            text.push_str("\r\n");
        }
        "errorstats" => {
            text.push_str("# Errorstats\r\n");
            for (prefix, n) in shared.cmdstats.errors() {
                let _ = write!(text, "errorstat_{prefix}:count={n}\r\n");
            }
            text.push_str("\r\n");
        }
        "latencystats" => {
            text.push_str("# Latencystats\r\n");
            let percentiles = crate::config::params::percentiles(
                shared
                    .config
                    .read()
                    .param("latency-tracking-info-percentiles"),
            )
            .unwrap_or_default();
            for (name, values) in shared.cmdstats.latency_percentiles(&percentiles) {
                let _ = write!(text, "latency_percentiles_usec_{name}:");
                for (i, (p, v)) in percentiles.iter().zip(values).enumerate() {
                    let sep = if i == 0 { "" } else { "," };
                    let label = crate::config::params::percentile_label(*p);
                    let _ = write!(text, "{sep}p{label}={v:.3}");
                }
                text.push_str("\r\n");
            }
            text.push_str("\r\n");
        }
        "cluster" => {
            let enabled = u8::from(shared.cluster.enabled());
            text.push_str(&format!("# Cluster\r\ncluster_enabled:{enabled}\r\n\r\n"));
        }
        "keyspace" => {
            text.push_str("# Keyspace\r\n");
            for i in 0..shared.store.db_count() {
                let keys = sum_shards(ctx, i, |s| s.len() as u64);
                if keys > 0 {
                    let _ = write!(
                        text,
                        "db{i}:keys={keys},expires={},avg_ttl={}\r\n",
                        sum_shards(ctx, i, |s| s.ttl_len() as u64),
                        shared.store.db(i).avg_ttl(),
                    );
                }
            }
            text.push_str("\r\n");
        }
        _ => {}
    }
}
