//! Every Redis 7.0 configuration parameter that `super::directives` does not parse by
//! hand, as data: its name, its alias, what values it takes and its default.
//!
//! The server stores these as their canonical text (what `CONFIG GET` prints) and reads
//! the ones that have an effect through [`super::Config::param`]. Adding a parameter with
//! an effect is one row here plus the code that reads it; a parameter that needs custom
//! parsing or a typed field moves to `directives.rs`.

/// What values a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `yes` or `no`.
    Bool,
    /// A signed integer within bounds.
    Int(i64, i64),
    /// A memory value (`1kb`, `5mb`...) within bounds, printed in bytes, held in a signed
    /// C type by Redis (a value past `i64::MAX` wraps negative and fails the bounds).
    Memory(i64, i64),
    /// A memory value held in an `unsigned long long` by Redis, with no bound but its
    /// type's (`maxmemory`).
    UnsignedMemory,
    /// One word of a fixed list, printed in lower case.
    Enum(&'static [&'static str]),
    /// Several words of a fixed list (`shutdown-on-sigterm save now`).
    Flags(&'static [&'static str]),
    /// A memory value, or a percentage of `maxmemory` up to 100 (`maxmemory-clients`).
    MemoryOrPercent,
    /// Free text.
    Text,
    /// A hostname a cluster node announces: under 256 characters, letters, digits,
    /// hyphens and dots (Redis's `isValidAnnouncedHostname`).
    Hostname,
    /// Percentiles between 0 and 100, separated by spaces (`latency-tracking-info-percentiles`).
    Percentiles,
    /// Three scores between -2000 and 2000 (`oom-score-adj-values`).
    OomScores,
}

/// One parameter.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Its name.
    pub name: &'static str,
    /// The older name Redis still accepts and lists (`slave-read-only`).
    pub alias: Option<&'static str>,
    /// Its values.
    pub kind: Kind,
    /// Its default, as `CONFIG GET` prints it.
    pub default: &'static str,
    /// Only settable at start.
    pub immutable: bool,
    /// Left out of `CONFIG GET` patterns, shown when named (Redis's `HIDDEN_CONFIG`:
    /// debugging knobs).
    pub hidden: bool,
}

const fn p(name: &'static str, kind: Kind, default: &'static str) -> Param {
    Param {
        name,
        alias: None,
        kind,
        default,
        immutable: false,
        hidden: false,
    }
}

/// A debugging parameter (see [`Param::hidden`]).
const fn h(name: &'static str, kind: Kind, default: &'static str) -> Param {
    Param {
        name,
        alias: None,
        kind,
        default,
        immutable: false,
        hidden: true,
    }
}

const fn a(name: &'static str, alias: &'static str, kind: Kind, default: &'static str) -> Param {
    Param {
        name,
        alias: Some(alias),
        kind,
        default,
        immutable: false,
        hidden: false,
    }
}

const fn fixed(name: &'static str, kind: Kind, default: &'static str) -> Param {
    Param {
        name,
        alias: None,
        kind,
        default,
        immutable: true,
        hidden: false,
    }
}

const B: Kind = Kind::Bool;
const T: Kind = Kind::Text;
const HOST: Kind = Kind::Hostname;
const INT_MAX: i64 = i32::MAX as i64;
const LONG_MAX: i64 = i64::MAX;
const POS: Kind = Kind::Int(0, INT_MAX);
const MEM: Kind = Kind::Memory(0, LONG_MAX);

const POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];
const SHUTDOWN: &[&str] = &["default", "save", "nosave", "now", "force"];

/// The table, in `CONFIG GET *` order of no importance (the reply is unordered in Redis).
pub static PARAMS: &[Param] = &[
    // Redis's hidden debugging knobs: accepted and shown when named. The load pauses
    // after each key as `key-load-delay` says (clients are served meanwhile, so the
    // events interval has no use), and saves after each key as `rdb-key-save-delay`
    // says (SAVE blocking the server, as in Redis; BGSAVE and full syncs walking slower
    // while clients are served); the others have no effect here (a panic is never
    // turned into an exit).
    h("key-load-delay", Kind::Int(i32::MIN as i64, INT_MAX), "0"),
    h("use-exit-on-panic", B, "no"),
    h(
        "rdb-key-save-delay",
        Kind::Int(i32::MIN as i64, INT_MAX),
        "0",
    ),
    h(
        "loading-process-events-interval-bytes",
        Kind::Int(1024, INT_MAX),
        "2097152",
    ),
    h("watchdog-period", Kind::Int(0, INT_MAX), "0"),
    p(
        "acl-pubsub-default",
        Kind::Enum(&["allchannels", "resetchannels"]),
        "resetchannels",
    ),
    fixed("aclfile", T, ""),
    p("acllog-max-len", Kind::Int(0, LONG_MAX), "128"),
    p("active-defrag-cycle-max", Kind::Int(1, 99), "25"),
    p("active-defrag-cycle-min", Kind::Int(1, 99), "1"),
    p(
        "active-defrag-ignore-bytes",
        Kind::Memory(1, LONG_MAX),
        "104857600",
    ),
    p(
        "active-defrag-max-scan-fields",
        Kind::Int(1, LONG_MAX),
        "1000",
    ),
    p("active-defrag-threshold-lower", Kind::Int(0, 1000), "10"),
    p("active-defrag-threshold-upper", Kind::Int(0, 1000), "100"),
    p("active-expire-effort", Kind::Int(1, 10), "1"),
    p("activedefrag", B, "no"),
    p("activerehashing", B, "yes"),
    fixed("always-show-logo", B, "no"),
    p("aof-disable-auto-gc", B, "no"),
    p("aof-load-truncated", B, "yes"),
    p("aof-rewrite-incremental-fsync", B, "yes"),
    p("aof-timestamp-enabled", B, "no"),
    p("aof-use-rdb-preamble", B, "yes"),
    fixed("aof_rewrite_cpulist", T, ""),
    fixed("appenddirname", T, "appendonlydir"),
    fixed("appendfilename", T, "appendonly.aof"),
    p(
        "appendfsync",
        Kind::Enum(&["everysec", "always", "no"]),
        "everysec",
    ),
    p("auto-aof-rewrite-min-size", MEM, "67108864"),
    p("auto-aof-rewrite-percentage", POS, "100"),
    fixed("bgsave_cpulist", T, ""),
    p("bind-source-addr", T, ""),
    fixed("bio_cpulist", T, ""),
    a(
        "busy-reply-threshold",
        "lua-time-limit",
        Kind::Int(0, LONG_MAX),
        "5000",
    ),
    p("cluster-allow-pubsubshard-when-down", B, "yes"),
    p("cluster-allow-reads-when-down", B, "no"),
    p("cluster-allow-replica-migration", B, "yes"),
    p("cluster-announce-bus-port", Kind::Int(0, 65535), "0"),
    p("cluster-announce-hostname", HOST, ""),
    p("cluster-announce-ip", T, ""),
    p("cluster-announce-port", Kind::Int(0, 65535), "0"),
    p("cluster-announce-tls-port", Kind::Int(0, 65535), "0"),
    fixed("cluster-config-file", T, "nodes.conf"),
    fixed("cluster-enabled", B, "no"),
    p("cluster-link-sendbuf-limit", Kind::UnsignedMemory, "0"),
    p("cluster-migration-barrier", POS, "1"),
    p("cluster-node-timeout", Kind::Int(0, LONG_MAX), "15000"),
    fixed("cluster-port", Kind::Int(0, 65535), "0"),
    p(
        "cluster-preferred-endpoint-type",
        Kind::Enum(&["ip", "hostname", "unknown-endpoint"]),
        "ip",
    ),
    a(
        "cluster-replica-no-failover",
        "cluster-slave-no-failover",
        B,
        "no",
    ),
    a(
        "cluster-replica-validity-factor",
        "cluster-slave-validity-factor",
        POS,
        "10",
    ),
    p("cluster-require-full-coverage", B, "yes"),
    p("crash-log-enabled", B, "yes"),
    p("crash-memcheck-enabled", B, "yes"),
    p("dbfilename", T, "dump.rdb"),
    p("dir", T, ""),
    fixed("disable-thp", B, "yes"),
    p("dynamic-hz", B, "yes"),
    a(
        "hash-max-listpack-entries",
        "hash-max-ziplist-entries",
        Kind::Int(0, LONG_MAX),
        "512",
    ),
    a(
        "hash-max-listpack-value",
        "hash-max-ziplist-value",
        MEM,
        "64",
    ),
    p("ignore-warnings", T, ""),
    fixed("io-threads-do-reads", B, "no"),
    p("jemalloc-bg-thread", B, "yes"),
    p("latency-monitor-threshold", Kind::Int(0, LONG_MAX), "0"),
    p("latency-tracking", B, "yes"),
    p(
        "latency-tracking-info-percentiles",
        Kind::Percentiles,
        "50 99 99.9",
    ),
    p("lazyfree-lazy-eviction", B, "no"),
    p("lazyfree-lazy-expire", B, "no"),
    p("lazyfree-lazy-server-del", B, "no"),
    p("lazyfree-lazy-user-del", B, "no"),
    p("lazyfree-lazy-user-flush", B, "no"),
    p("lfu-decay-time", POS, "1"),
    p("lfu-log-factor", POS, "10"),
    p("list-compress-depth", POS, "0"),
    a(
        "list-max-listpack-size",
        "list-max-ziplist-size",
        Kind::Int(i32::MIN as i64, INT_MAX),
        "-2",
    ),
    p("masterauth", T, ""),
    p("masteruser", T, ""),
    p("maxmemory", Kind::UnsignedMemory, "0"),
    p("maxmemory-clients", Kind::MemoryOrPercent, "0"),
    p("maxmemory-eviction-tenacity", Kind::Int(0, 100), "10"),
    p("maxmemory-policy", Kind::Enum(POLICIES), "noeviction"),
    p("maxmemory-samples", Kind::Int(1, INT_MAX), "5"),
    a("min-replicas-max-lag", "min-slaves-max-lag", POS, "10"),
    a("min-replicas-to-write", "min-slaves-to-write", POS, "0"),
    p("no-appendfsync-on-rewrite", B, "no"),
    p(
        "oom-score-adj",
        Kind::Enum(&["no", "yes", "relative", "absolute"]),
        "no",
    ),
    p("oom-score-adj-values", Kind::OomScores, "0 200 800"),
    fixed("pidfile", T, ""),
    p(
        "proc-title-template",
        T,
        "{title} {listen-addr} {server-mode}",
    ),
    p(
        "propagation-error-behavior",
        Kind::Enum(&["ignore", "panic", "panic-on-replicas"]),
        "ignore",
    ),
    p("rdb-del-sync-files", B, "no"),
    p("rdb-save-incremental-fsync", B, "yes"),
    fixed("rdbchecksum", B, "yes"),
    p("rdbcompression", B, "yes"),
    p("repl-backlog-size", Kind::Memory(1, LONG_MAX), "1048576"),
    p("repl-backlog-ttl", Kind::Int(0, LONG_MAX), "3600"),
    p("repl-disable-tcp-nodelay", B, "no"),
    p(
        "repl-diskless-load",
        Kind::Enum(&["disabled", "on-empty-db", "swapdb"]),
        "disabled",
    ),
    p("repl-diskless-sync", B, "yes"),
    p("repl-diskless-sync-delay", POS, "5"),
    p("repl-diskless-sync-max-replicas", POS, "0"),
    a(
        "repl-ping-replica-period",
        "repl-ping-slave-period",
        Kind::Int(1, INT_MAX),
        "10",
    ),
    p("repl-timeout", Kind::Int(1, INT_MAX), "60"),
    a("replica-announce-ip", "slave-announce-ip", T, ""),
    a(
        "replica-announce-port",
        "slave-announce-port",
        Kind::Int(0, 65535),
        "0",
    ),
    p("replica-announced", B, "yes"),
    p("replica-ignore-disk-write-errors", B, "no"),
    a(
        "replica-ignore-maxmemory",
        "slave-ignore-maxmemory",
        B,
        "yes",
    ),
    a("replica-lazy-flush", "slave-lazy-flush", B, "no"),
    a("replica-priority", "slave-priority", POS, "100"),
    a("replica-read-only", "slave-read-only", B, "yes"),
    a(
        "replica-serve-stale-data",
        "slave-serve-stale-data",
        B,
        "yes",
    ),
    // "host port" or empty; set at start (two words), then by REPLICAOF, never by
    // CONFIG SET (see `Config::set_replicaof`).
    Param {
        immutable: true,
        ..a("replicaof", "slaveof", T, "")
    },
    p(
        "sanitize-dump-payload",
        Kind::Enum(&["no", "yes", "clients"]),
        "no",
    ),
    fixed("server_cpulist", T, ""),
    p("set-max-intset-entries", Kind::Int(0, LONG_MAX), "512"),
    fixed("set-proc-title", B, "yes"),
    p("shutdown-on-sigint", Kind::Flags(SHUTDOWN), "default"),
    p("shutdown-on-sigterm", Kind::Flags(SHUTDOWN), "default"),
    p("shutdown-timeout", POS, "10"),
    p("slowlog-log-slower-than", Kind::Int(-1, LONG_MAX), "10000"),
    p("slowlog-max-len", Kind::Int(0, LONG_MAX), "128"),
    fixed("socket-mark-id", Kind::Int(0, u32::MAX as i64), "0"),
    p("stop-writes-on-bgsave-error", B, "yes"),
    p("stream-node-max-bytes", MEM, "4096"),
    p("stream-node-max-entries", Kind::Int(0, LONG_MAX), "100"),
    fixed(
        "supervised",
        Kind::Enum(&["upstart", "systemd", "auto", "no"]),
        "no",
    ),
    fixed("syslog-enabled", B, "no"),
    fixed(
        "syslog-facility",
        Kind::Enum(&[
            "user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
        ]),
        "local0",
    ),
    fixed("syslog-ident", T, "redis"),
    fixed("tcp-backlog", POS, "511"),
    p("tcp-keepalive", POS, "300"),
    p(
        "tls-auth-clients",
        Kind::Enum(&["no", "yes", "optional"]),
        "yes",
    ),
    p("tls-ca-cert-dir", T, ""),
    p("tls-ca-cert-file", T, ""),
    p("tls-cert-file", T, ""),
    p("tls-ciphers", T, ""),
    p("tls-ciphersuites", T, ""),
    p("tls-client-cert-file", T, ""),
    p("tls-client-key-file", T, ""),
    p("tls-client-key-file-pass", T, ""),
    p("tls-cluster", B, "no"),
    p("tls-dh-params-file", T, ""),
    // Ours (Redis has none): how long an accepted TLS connection may take to finish its
    // handshake, in milliseconds, before it is closed.
    p("tls-handshake-timeout", Kind::Int(1, INT_MAX), "5000"),
    p("tls-key-file", T, ""),
    p("tls-key-file-pass", T, ""),
    p("tls-port", Kind::Int(0, 65535), "0"),
    p("tls-prefer-server-ciphers", B, "no"),
    p("tls-protocols", T, ""),
    p("tls-replication", B, "no"),
    p("tls-session-cache-size", POS, "20480"),
    p("tls-session-cache-timeout", POS, "300"),
    p("tls-session-caching", B, "yes"),
    fixed("unixsocket", T, ""),
    fixed("unixsocketperm", POS, "0"),
    a(
        "zset-max-listpack-entries",
        "zset-max-ziplist-entries",
        Kind::Int(0, LONG_MAX),
        "128",
    ),
    a(
        "zset-max-listpack-value",
        "zset-max-ziplist-value",
        MEM,
        "64",
    ),
];

/// The parameter called `name` (or aliased so).
pub fn find(name: &str) -> Option<&'static Param> {
    // Indexed once: the dispatcher reads parameters on every command (and every command
    // a script calls), and a scan of the table was a visible share of a short script.
    type Index =
        std::collections::HashMap<&'static str, &'static Param, foldhash::fast::FixedState>;
    static BY_NAME: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    let index = BY_NAME.get_or_init(|| {
        let mut index = Index::default();
        // In table order, name before alias: the first parameter answering to a name
        // wins, as a scan would find it.
        for p in PARAMS {
            index.entry(p.name).or_insert(p);
            if let Some(alias) = p.alias {
                index.entry(alias).or_insert(p);
            }
        }
        index
    });
    index.get(name).copied()
}

/// Validates `values` for `param` and returns the canonical text `CONFIG GET` prints.
pub fn canonical(param: &Param, values: &[Vec<u8>]) -> Result<String, String> {
    // Lists take their arguments one by one, as Redis's MULTI_ARG_CONFIGs do.
    match param.kind {
        Kind::Flags(options) => return flags(options, values),
        Kind::OomScores => return oom_scores(values),
        Kind::Percentiles => return percentile_list(values),
        _ => {}
    }
    let text = match values {
        [v] => String::from_utf8_lossy(v).into_owned(),
        _ => return Err("wrong number of arguments".into()),
    };
    match param.kind {
        Kind::Bool => match text.to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Int(min, max) => {
            let n = redline_resp::parse_i64(text.as_bytes())
                .ok_or("argument couldn't be parsed into an integer")?;
            bounded(n, min, max)
        }
        Kind::Memory(min, max) => {
            let n = super::directives::parse_memory(&text)
                .ok_or_else(|| "argument must be a memory value".to_string())?;
            bounded(n, min, max)
        }
        Kind::UnsignedMemory => super::directives::memtoull(&text)
            .map(|n| n.to_string())
            .ok_or_else(|| "argument must be a memory value".to_string()),
        Kind::Enum(options) => {
            let lower = text.to_ascii_lowercase();
            options
                .iter()
                .find(|o| **o == lower)
                .map(|o| o.to_string())
                .ok_or_else(|| one_of(options))
        }
        Kind::MemoryOrPercent => {
            // Redis's order: a memory value first (its bits in a signed `ssize_t`), then
            // `N%` with N a non-negative integer; percentages are held as negatives.
            let held = match super::directives::parse_memory(&text) {
                Some(n) => n,
                None => match text.strip_suffix('%').filter(|n| !n.is_empty()) {
                    Some(n) => redline_resp::parse_i64(n.as_bytes())
                        .filter(|n| *n >= 0)
                        .map(|n| -n)
                        .ok_or("argument must be a memory or percent value")?,
                    None => return Err("argument must be a memory or percent value".into()),
                },
            };
            match held {
                n if n < -100 => Err("percentage argument must be less or equal to 100".into()),
                n if n < 0 => Ok(format!("{}%", -n)),
                n => Ok(n.to_string()),
            }
        }
        Kind::Text => Ok(text),
        // Returned above, argument by argument.
        Kind::Flags(_) | Kind::OomScores | Kind::Percentiles => {
            Err("wrong number of arguments".into())
        }
        Kind::Hostname => {
            if text.len() >= 256 {
                return Err("Hostnames must be less than 256 characters".into());
            }
            if !text
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
            {
                return Err(
                    "Hostnames may only contain alphanumeric characters, hyphens or dots".into(),
                );
            }
            Ok(text)
        }
    }
}

/// Several words of `options`, each matched without case, as Redis's bit-flag enums.
fn flags(options: &[&str], words: &[Vec<u8>]) -> Result<String, String> {
    let words: Vec<String> = words
        .iter()
        .map(|w| String::from_utf8_lossy(w).to_ascii_lowercase())
        .collect();
    if words.is_empty() || words.iter().any(|w| !options.contains(&w.as_str())) {
        return Err(one_of(options));
    }
    // The shutdown flags are the only flag lists; Redis refuses this pair.
    if words.iter().any(|w| w == "save") && words.iter().any(|w| w == "nosave") {
        return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
    }
    // In table order, each once, the first (`default`) only alone: Redis keeps a bit
    // set and prints it back that way.
    let set: Vec<&str> = options[1..]
        .iter()
        .copied()
        .filter(|o| words.iter().any(|w| w == o))
        .collect();
    Ok(if set.is_empty() {
        options[0].to_string()
    } else {
        set.join(" ")
    })
}

/// `oom-score-adj-values`: three integers as C's `strtoll` reads them whole.
fn oom_scores(words: &[Vec<u8>]) -> Result<String, String> {
    if words.len() != 3 {
        return Err("wrong number of arguments".into());
    }
    let scores = words
        .iter()
        .map(|w| crate::cstr::strtoll_whole(w).filter(|n| (-2000..=2000).contains(n)))
        .collect::<Option<Vec<_>>>()
        .ok_or("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")?;
    Ok(scores
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" "))
}

/// `latency-tracking-info-percentiles`: one number per argument; a single empty
/// argument, or none, is the empty list.
fn percentile_list(words: &[Vec<u8>]) -> Result<String, String> {
    if let [only] = words {
        if only.is_empty() {
            return Ok(String::new());
        }
    }
    let labels = words
        .iter()
        .map(|w| percentile(w).map(percentile_label))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(labels.join(" "))
}

/// Reads a stored `latency-tracking-info-percentiles` value: numbers separated by
/// spaces, each as [`percentile`] reads it; empty for none.
pub fn percentiles(text: &str) -> Result<Vec<f64>, String> {
    text.split_whitespace()
        .map(|word| percentile(word.as_bytes()))
        .collect()
}

/// One percentile as Redis reads it: a number as `strtod` reads it whole, within
/// 0..=100.
fn percentile(word: &[u8]) -> Result<f64, String> {
    let p = crate::cmd::float::parse_f64(word)
        .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
    if !(0.0..=100.0).contains(&p) {
        return Err(
            "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into(),
        );
    }
    Ok(p)
}

/// A percentile as Redis prints it: C's `%f`, trailing zeros and point trimmed (`99.9`,
/// `50`).
pub fn percentile_label(p: f64) -> String {
    let text = format!("{p:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn bounded(n: i64, min: i64, max: i64) -> Result<String, String> {
    if n < min || n > max {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    Ok(n.to_string())
}

fn one_of(options: &[&str]) -> String {
    format!(
        "argument(s) must be one of the following: {}",
        options.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_read_and_print_as_redis_does() {
        assert_eq!(percentiles("50 99 99.9"), Ok(vec![50.0, 99.0, 99.9]));
        assert_eq!(percentiles(""), Ok(vec![]));
        assert!(percentiles("10.0 50.0 a").is_err());
        assert!(percentiles("10.0 50.0 101.0").is_err());
        assert!(percentiles("nan").is_err());
        let labels: Vec<_> = [0.0, 50.0, 99.9, 100.0, 12.345678]
            .into_iter()
            .map(percentile_label)
            .collect();
        assert_eq!(labels, ["0", "50", "99.9", "100", "12.345678"]);
    }

    #[test]
    fn aliases_and_canonical_values() {
        let p = find("hash-max-ziplist-value").unwrap();
        assert_eq!(p.name, "hash-max-listpack-value");
        assert_eq!(canonical(p, &[b"1kb".to_vec()]).unwrap(), "1024");
        // A count is a plain integer to Redis, not a memory value.
        let p = find("hash-max-ziplist-entries").unwrap();
        assert!(canonical(p, &[b"1kb".to_vec()]).is_err());
        assert!(canonical(p, &[b"+5".to_vec()]).is_err());
        let p = find("maxmemory").unwrap();
        assert_eq!(
            canonical(p, &[b"99999999999999999999".to_vec()]).unwrap(),
            u64::MAX.to_string()
        );
        assert!(canonical(p, &[b"-1".to_vec()]).is_err());
        let p = find("maxmemory-clients").unwrap();
        assert_eq!(canonical(p, &[b"0%".to_vec()]).unwrap(), "0");
        assert_eq!(canonical(p, &[b"10%".to_vec()]).unwrap(), "10%");
        assert!(canonical(p, &[b"101%".to_vec()]).is_err());
        let p = find("maxmemory-policy").unwrap();
        assert_eq!(
            canonical(p, &[b"ALLKEYS-LRU".to_vec()]).unwrap(),
            "allkeys-lru"
        );
        assert!(canonical(p, &[b"lru".to_vec()]).is_err());
        let p = find("maxmemory-samples").unwrap();
        assert_eq!(
            canonical(p, &[b"0".to_vec()]).unwrap_err(),
            "argument must be between 1 and 2147483647 inclusive"
        );
    }

    #[test]
    fn no_parameter_is_also_a_hand_parsed_directive() {
        for p in PARAMS {
            assert!(!super::super::DIRECTIVES.contains(&p.name), "{}", p.name);
        }
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = PARAMS
            .iter()
            .flat_map(|p| std::iter::once(p.name).chain(p.alias))
            .collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }
}
