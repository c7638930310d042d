//! The directive table: how each directive is parsed, validated, printed, and whether it
//! may change while the server runs. Used by the config file, the command line and
//! `CONFIG GET/SET`, so the three always agree.

use super::{Config, LogLevel, OutputBufferLimit};

/// Every directive `CONFIG GET` knows, in a stable order.
pub const DIRECTIVES: &[&str] = &[
    "port",
    "bind",
    "requirepass",
    "maxclients",
    "timeout",
    "databases",
    "proto-max-bulk-len",
    "client-query-buffer-limit",
    "client-output-buffer-limit",
    "hz",
    "loglevel",
    "logfile",
    "protected-mode",
    "io-threads",
    "shards",
    "save",
    "appendonly",
    "daemonize",
    "hll-sparse-max-bytes",
    "notify-keyspace-events",
    "tracking-table-max-keys",
    "enable-debug-command",
    "enable-protected-configs",
    "enable-module-command",
];

/// The `enable-*` directives, in `Config::enable_flags` order.
const ENABLE_DIRECTIVES: [&str; 3] = [
    "enable-debug-command",
    "enable-protected-configs",
    "enable-module-command",
];

/// Why a directive could not be set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetError {
    /// No such directive.
    Unknown,
    /// The directive takes a different number of values.
    Arity,
    /// The value is rejected; the text is redis-server's.
    Invalid(String),
    /// The directive cannot change while running.
    Immutable,
}

/// The words of a directive's values: CONFIG SET gives a list as one value separated by
/// spaces, the config file as several.
fn words(values: &[Vec<u8>]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| {
            String::from_utf8_lossy(v)
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Redis's refusal of `activedefrag yes` where its allocator cannot defragment.
const ACTIVE_DEFRAG_UNAVAILABLE: &str = "Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution";

fn invalid(message: &str) -> SetError {
    SetError::Invalid(message.to_string())
}

fn one(values: &[Vec<u8>]) -> Result<&str, SetError> {
    match values {
        [v] => std::str::from_utf8(v).map_err(|_| invalid("argument must be valid UTF-8")),
        _ => Err(SetError::Arity),
    }
}

fn int(values: &[Vec<u8>], min: i64, max: i64) -> Result<i64, SetError> {
    let n = redline_resp::parse_i64(one(values)?.as_bytes())
        .ok_or_else(|| invalid("argument couldn't be parsed into an integer"))?;
    range(n, min, max)
}

fn range(n: i64, min: i64, max: i64) -> Result<i64, SetError> {
    if n < min || n > max {
        return Err(SetError::Invalid(format!(
            "argument must be between {min} and {max} inclusive"
        )));
    }
    Ok(n)
}

/// Reads a memory value as Redis's `memtoull` does: no sign, decimal digits (none reads
/// as 0, too many saturate), then an optional unit (`b`, `k` = 1000, `kb` = 1024, `m`,
/// `mb`, `g`, `gb`, any case); the product wraps, as C's unsigned arithmetic does.
pub fn memtoull(text: &str) -> Option<u64> {
    if text.starts_with('-') {
        return None;
    }
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let mul = unit_multiplier(&unit.to_ascii_lowercase())?;
    // Redis copies the digits into a 128-byte buffer first.
    if digits.len() >= 128 {
        return None;
    }
    let n = if digits.is_empty() {
        0
    } else {
        digits.parse::<u64>().unwrap_or(u64::MAX)
    };
    Some(n.wrapping_mul(mul))
}

/// A memory value as a signed C type holds it (`long long`, `off_t`): [`memtoull`]'s
/// bits, so a value past `i64::MAX` reads as negative and fails the caller's bounds.
pub fn parse_memory(text: &str) -> Option<i64> {
    memtoull(text).map(|n| n as i64)
}

/// The multiplier of a memory unit (lower case), as Redis's `memtoull` knows them.
fn unit_multiplier(unit: &str) -> Option<u64> {
    Some(match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    })
}

fn memory(values: &[Vec<u8>], min: i64, max: i64) -> Result<i64, SetError> {
    let n = parse_memory(one(values)?).ok_or_else(|| invalid("argument must be a memory value"))?;
    range(n, min, max)
}

fn yes_no(values: &[Vec<u8>]) -> Result<bool, SetError> {
    match one(values)?.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err(invalid("argument must be 'yes' or 'no'")),
    }
}

fn yes_no_text(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// `client-output-buffer-limit`'s groups applied over `current`: a class the value does
/// not name keeps its limits, as in Redis.
fn output_limits(
    values: &[Vec<u8>],
    current: [OutputBufferLimit; 3],
) -> Result<[OutputBufferLimit; 3], SetError> {
    let words: Vec<std::borrow::Cow<'_, str>> =
        values.iter().map(|v| String::from_utf8_lossy(v)).collect();
    // No words is a multiple of four too: Redis then changes nothing.
    if words.len() % 4 != 0 {
        return Err(invalid(
            "Wrong number of arguments in buffer limit configuration.",
        ));
    }
    let mut limits = current;
    for group in words.chunks(4) {
        let class = match group[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => {
                return Err(invalid(
                    "Invalid client class specified in buffer limit configuration.",
                ))
            }
        };
        let bad = || {
            invalid("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
        };
        let hard = memtoull(&group[1]).ok_or_else(bad)?;
        let soft = memtoull(&group[2]).ok_or_else(bad)?;
        // Redis keeps the seconds in an `int`.
        let secs = crate::cstr::strtoll_whole(group[3].as_bytes())
            .map(|n| n as i32)
            .filter(|n| *n >= 0)
            .ok_or_else(bad)?;
        limits[class] = OutputBufferLimit {
            hard,
            soft,
            soft_seconds: secs as u64,
        };
    }
    Ok(limits)
}

/// Whether hand-parsed directive `name` is set at start only (`shards` may still be
/// set to what it is, see `Config::set`).
fn immutable_directive(name: &str) -> bool {
    matches!(
        name,
        "databases" | "logfile" | "io-threads" | "shards" | "daemonize"
    ) || ENABLE_DIRECTIVES.contains(&name)
}

/// Redis's `sdssplitlen(value, " ")`: the words between single spaces, empty ones
/// included; none for an empty value.
fn split_at_spaces(value: &[u8]) -> Vec<Vec<u8>> {
    if value.is_empty() {
        return Vec::new();
    }
    value.split(|&b| b == b' ').map(<[u8]>::to_vec).collect()
}

/// The parameters Redis reads as several arguments (`MULTI_ARG_CONFIG`).
const MULTI_ARG: &[&str] = &[
    "save",
    "client-output-buffer-limit",
    "oom-score-adj-values",
    "bind",
    "replicaof",
    "slaveof",
    "latency-tracking-info-percentiles",
    "shutdown-on-sigint",
    "shutdown-on-sigterm",
];

impl Config {
    /// `save <seconds> <changes> ...`, checked as Redis checks it (pairs of integers,
    /// seconds at least 1, changes at least 0; `""` alone for none). In the config file
    /// and on the command line the first `save` replaces the defaults and later ones
    /// add their points, so `save 900 1` and `save 300 10` lines keep both; CONFIG SET
    /// replaces.
    fn set_save(&mut self, values: &[Vec<u8>], startup: bool) -> Result<(), SetError> {
        // One empty argument is no save points, as none is.
        let values = match values {
            [only] if only.is_empty() => &[],
            _ => values,
        };
        // Pairs of seconds (at least 1) and changes (at least 0), each read whole by
        // C's `strtoll`; the changes are kept in an `int`, as in Redis.
        let numbers = values
            .iter()
            .map(|w| crate::cstr::strtoll_whole(w))
            .collect::<Option<Vec<i64>>>()
            .filter(|n| n.len() % 2 == 0)
            .filter(|n| n.chunks(2).all(|pair| pair[0] >= 1 && pair[1] >= 0))
            .ok_or_else(|| invalid("Invalid save parameters"))?;
        let words = numbers
            .chunks(2)
            .map(|pair| format!("{} {}", pair[0], pair[1] as i32))
            .collect::<Vec<_>>()
            .join(" ");
        if !startup || !self.save_loaded || words.is_empty() {
            self.save = words;
        } else {
            if !self.save.is_empty() {
                self.save.push(' ');
            }
            self.save.push_str(&words);
        }
        self.save_loaded |= startup;
        Ok(())
    }

    /// Whether `CONFIG SET` may set `name` (lower case) at all, before its value is
    /// looked at: [`SetError::Unknown`] or [`SetError::Immutable`] if not. Redis checks
    /// every name of a CONFIG SET this way before it reads any value.
    pub fn check_settable(name: &str) -> Result<(), SetError> {
        if DIRECTIVES.contains(&name) {
            // `shards` set to what it is passes (see `set`), so its value decides.
            return if immutable_directive(name) && name != "shards" {
                Err(SetError::Immutable)
            } else {
                Ok(())
            };
        }
        match super::params::find(name) {
            None => Err(SetError::Unknown),
            Some(param) if param.immutable => Err(SetError::Immutable),
            Some(_) => Ok(()),
        }
    }

    /// Sets one directive from its values. `startup` is false for `CONFIG SET`, which may
    /// not change the directives that need a restart.
    pub fn set(&mut self, name: &str, values: &[Vec<u8>], startup: bool) -> Result<(), SetError> {
        let name = name.to_ascii_lowercase();
        // A parameter of several arguments given as one is split as Redis splits its
        // MULTI_ARG_CONFIGs: a config file's (`--replicaof "host port"`) as a line, with
        // quotes; CONFIG SET's at every single space, empty words kept, none for "".
        let split;
        let values = match values {
            [one] if MULTI_ARG.contains(&name.as_str()) && !startup => {
                split = split_at_spaces(one);
                &split[..]
            }
            [one] if MULTI_ARG.contains(&name.as_str()) && !one.is_empty() => {
                split = super::args::split_args(one)
                    .ok_or_else(|| invalid("Unbalanced quotes in configuration line"))?;
                &split[..]
            }
            _ => values,
        };
        if name == "rename-command" {
            // Only in the config file and on the command line, as in Redis.
            if !startup {
                return Err(SetError::Unknown);
            }
            let [from, to] = values else {
                return Err(SetError::Arity);
            };
            return self.renamed.rename(from, to).map_err(invalid);
        }
        if name == "user" {
            // Only in the config file and on the command line, as in Redis.
            if !startup {
                return Err(SetError::Unknown);
            }
            if values.is_empty() {
                return Err(SetError::Arity);
            }
            self.users.push(values.to_vec());
            return Ok(());
        }
        let immutable = immutable_directive(&name);
        if !DIRECTIVES.contains(&name.as_str()) {
            let param = super::params::find(&name).ok_or(SetError::Unknown)?;
            if param.immutable && !startup {
                return Err(SetError::Immutable);
            }
            if param.name == "replicaof" {
                return self.set_replicaof_directive(values);
            }
            let list = matches!(
                param.kind,
                super::params::Kind::Percentiles
                    | super::params::Kind::OomScores
                    | super::params::Kind::Flags(_)
            );
            if !list && values.len() != 1 {
                return Err(SetError::Arity);
            }
            let text = super::params::canonical(param, values).map_err(SetError::Invalid)?;
            if param.name == "proc-title-template" && !crate::proc_title::is_valid(self, &text) {
                return Err(invalid(crate::proc_title::INVALID_TEMPLATE));
            }
            // No active defragmentation here, as in a Redis built without its own
            // jemalloc: CONFIG SET refuses it with Redis's words; a config file
            // written for a Redis that has it still starts, without it.
            if param.name == "activedefrag" && text == "yes" {
                if !startup {
                    return Err(invalid(ACTIVE_DEFRAG_UNAVAILABLE));
                }
                tracing::warn!("activedefrag yes ignored: {ACTIVE_DEFRAG_UNAVAILABLE}");
                return Ok(());
            }
            if param.name == "dbfilename" && text.contains(['/', '\\']) {
                return Err(invalid("dbfilename can't be a path, just a filename"));
            }
            // The AOF's files live in `dir`/`appenddirname`: both names are plain names,
            // as in Redis (`isValidAOFfilename`, `isValidAOFdirname`).
            for (name, what) in [("appendfilename", "filename"), ("appenddirname", "dirname")] {
                if param.name != name {
                    continue;
                }
                if text.is_empty() {
                    return Err(invalid(&format!("{name} can't be empty")));
                }
                if text.contains(['/', '\\']) {
                    return Err(invalid(&format!("{name} can't be a path, just a {what}")));
                }
            }
            self.params.insert(param.name, text);
            return Ok(());
        }
        // `shards` is redline's own: fixed at start, but setting it to what it is (as
        // tools that copy every parameter do) is a no-op rather than an error.
        let unchanged = name == "shards"
            && values.len() == 1
            && values[0] == self.effective_shards().to_string().as_bytes();
        if immutable && !startup && !unchanged {
            return Err(SetError::Immutable);
        }
        if unchanged && !startup {
            return Ok(());
        }
        match name.as_str() {
            "port" => self.port = int(values, 0, 65535)? as u16,
            "bind" => {
                if values.is_empty() {
                    return Err(SetError::Arity);
                }
                // CONFIG SET gives the addresses as one space-separated value.
                self.bind = words(values);
            }
            "requirepass" => {
                if values.len() != 1 {
                    return Err(SetError::Arity);
                }
                self.requirepass = values[0].clone();
            }
            "maxclients" => self.maxclients = int(values, 1, u32::MAX as i64)? as u64,
            "timeout" => self.timeout = int(values, 0, i32::MAX as i64)? as u64,
            "databases" => self.databases = int(values, 1, i32::MAX as i64)? as usize,
            "proto-max-bulk-len" => {
                self.proto_max_bulk_len = memory(values, 1024 * 1024, i64::MAX)? as u64
            }
            "client-query-buffer-limit" => {
                self.client_query_buffer_limit = memory(values, 1024 * 1024, i64::MAX)? as u64
            }
            "client-output-buffer-limit" => {
                self.client_output_buffer_limit =
                    output_limits(values, self.client_output_buffer_limit)?
            }
            // Redis accepts any non-negative hz and clamps it.
            "hz" => self.hz = int(values, 0, i32::MAX as i64)?.clamp(1, 500) as u32,
            "loglevel" => {
                self.loglevel = match one(values)?.to_ascii_lowercase().as_str() {
                    "debug" => LogLevel::Debug,
                    "verbose" => LogLevel::Verbose,
                    "notice" => LogLevel::Notice,
                    "warning" => LogLevel::Warning,
                    _ => return Err(invalid(
                        "argument(s) must be one of the following: debug, verbose, notice, warning",
                    )),
                }
            }
            "logfile" => self.logfile = one(values)?.to_string(),
            "protected-mode" => self.protected_mode = yes_no(values)?,
            "io-threads" => self.worker_threads = int(values, 1, 128)? as usize,
            "shards" => {
                let n = int(values, 1, 16384)?;
                if (n as u64).count_ones() != 1 {
                    return Err(invalid("argument must be a power of two"));
                }
                self.shards = n as usize;
            }
            "save" => self.set_save(values, startup)?,
            "appendonly" => self.appendonly = yes_no(values)?,
            "hll-sparse-max-bytes" => {
                self.hll_sparse_max_bytes = memory(values, 0, i64::MAX)? as u64;
            }
            "notify-keyspace-events" => {
                self.notify_keyspace_events =
                    crate::notify::parse_flags(one(values)?.as_bytes())
                        .ok_or_else(|| invalid(crate::notify::INVALID_CLASS))?;
            }
            "tracking-table-max-keys" => {
                self.tracking_table_max_keys = int(values, 0, i64::MAX)? as u64
            }
            "enable-debug-command" | "enable-protected-configs" | "enable-module-command" => {
                let value = one(values)?.to_ascii_lowercase();
                if !matches!(value.as_str(), "yes" | "no" | "local") {
                    return Err(invalid(
                        "argument(s) must be one of the following: no, yes, local",
                    ));
                }
                if let Some(i) = ENABLE_DIRECTIVES.iter().position(|d| *d == name) {
                    self.enable_flags[i] = value;
                }
            }
            "daemonize" => self.daemonize = yes_no(values)?,
            _ => return Err(SetError::Unknown),
        }
        Ok(())
    }

    /// `replicaof host port` or `replicaof no one` at start, as Redis parses it.
    fn set_replicaof_directive(&mut self, values: &[Vec<u8>]) -> Result<(), SetError> {
        let [host, port] = values else {
            return Err(SetError::Arity);
        };
        let host = String::from_utf8_lossy(host);
        let port = String::from_utf8_lossy(port);
        if host.eq_ignore_ascii_case("no") && port.eq_ignore_ascii_case("one") {
            self.set_replicaof(None);
            return Ok(());
        }
        let port = port
            .parse::<u16>()
            .map_err(|_| invalid("Invalid master port"))?;
        self.set_replicaof(Some((&host, port)));
        Ok(())
    }

    /// Records the master this server replicates (REPLICAOF), so `CONFIG GET replicaof`
    /// shows it and CONFIG REWRITE writes it, as in Redis.
    pub fn set_replicaof(&mut self, master: Option<(&str, u16)>) {
        match master {
            Some((host, port)) => {
                self.params.insert("replicaof", format!("{host} {port}"));
            }
            None => {
                self.params.remove("replicaof");
            }
        }
    }

    /// The master named by `replicaof`, if any.
    pub fn replicaof(&self) -> Option<(String, u16)> {
        let (host, port) = self.param("replicaof").rsplit_once(' ')?;
        Some((host.to_string(), port.parse().ok()?))
    }

    /// The value `CONFIG GET` shows for a directive.
    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "port" => self.port.to_string(),
            "bind" => self.bind.join(" "),
            "requirepass" => String::from_utf8_lossy(&self.requirepass).into_owned(),
            "maxclients" => self.maxclients.to_string(),
            "timeout" => self.timeout.to_string(),
            "databases" => self.databases.to_string(),
            "proto-max-bulk-len" => self.proto_max_bulk_len.to_string(),
            "client-query-buffer-limit" => self.client_query_buffer_limit.to_string(),
            "client-output-buffer-limit" => {
                let names = ["normal", "slave", "pubsub"];
                names
                    .iter()
                    .zip(self.client_output_buffer_limit.iter())
                    .map(|(n, l)| format!("{n} {} {} {}", l.hard, l.soft, l.soft_seconds))
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            "hz" => self.hz.to_string(),
            "loglevel" => self.loglevel.as_str().to_string(),
            "logfile" => self.logfile.clone(),
            "protected-mode" => yes_no_text(self.protected_mode),
            "io-threads" => self.effective_workers().to_string(),
            "shards" => self.effective_shards().to_string(),
            "save" => self.save.clone(),
            "appendonly" => yes_no_text(self.appendonly),
            "daemonize" => yes_no_text(self.daemonize),
            "hll-sparse-max-bytes" => self.hll_sparse_max_bytes.to_string(),
            "notify-keyspace-events" => crate::notify::flags_to_string(self.notify_keyspace_events),
            "tracking-table-max-keys" => self.tracking_table_max_keys.to_string(),
            "enable-debug-command" => self.enable_flags[0].clone(),
            "enable-protected-configs" => self.enable_flags[1].clone(),
            "enable-module-command" => self.enable_flags[2].clone(),
            // Redis shows the working directory it chdir()ed to.
            "dir" if self.param("dir").is_empty() => std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            other => {
                super::params::find(other)?;
                self.param(other).to_string()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("1KB"), Some(1024));
        assert_eq!(parse_memory("2gb"), Some(2 << 30));
        assert_eq!(parse_memory("abc"), None);
        assert_eq!(parse_memory("1xb"), None);
    }

    #[test]
    fn output_buffer_limits_round_trip() {
        let mut c = Config::default();
        let before = c.get("client-output-buffer-limit").unwrap();
        assert_eq!(
            before,
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        c.set(
            "client-output-buffer-limit",
            &[b"normal 1mb 2mb 60".to_vec()],
            false,
        )
        .unwrap();
        assert!(c
            .get("client-output-buffer-limit")
            .unwrap()
            .starts_with("normal 1048576 2097152 60"));
        assert_eq!(
            c.set(
                "client-output-buffer-limit",
                &[b"normal 0 0".to_vec()],
                false
            ),
            Err(invalid(
                "Wrong number of arguments in buffer limit configuration."
            ))
        );
    }

    #[test]
    fn hll_sparse_max_bytes_parses_like_redis() {
        let mut c = Config::default();
        assert_eq!(c.get("hll-sparse-max-bytes").unwrap(), "3000");
        c.set("hll-sparse-max-bytes", &[b"1kb".to_vec()], false)
            .unwrap();
        assert_eq!(c.hll_sparse_max_bytes, 1024);
        c.set("hll-sparse-max-bytes", &[b"".to_vec()], false)
            .unwrap();
        assert_eq!(c.hll_sparse_max_bytes, 0);
        for bad in ["-1", "+5", "abc", "1xb"] {
            assert_eq!(
                c.set("hll-sparse-max-bytes", &[bad.as_bytes().to_vec()], false),
                Err(invalid("argument must be a memory value"))
            );
        }
        assert!(c
            .set(
                "hll-sparse-max-bytes",
                &[b"9223372036854775808".to_vec()],
                false
            )
            .is_err());
    }

    #[test]
    fn aof_names_are_plain_names_as_in_redis() {
        let mut c = Config::default();
        for (name, value, err) in [
            (
                "appendfilename",
                "a/b",
                "appendfilename can't be a path, just a filename",
            ),
            (
                "appendfilename",
                "a\\b",
                "appendfilename can't be a path, just a filename",
            ),
            ("appendfilename", "", "appendfilename can't be empty"),
            (
                "appenddirname",
                "x/y",
                "appenddirname can't be a path, just a dirname",
            ),
            ("appenddirname", "", "appenddirname can't be empty"),
        ] {
            assert!(
                matches!(c.set(name, &[value.as_bytes().to_vec()], true), Err(SetError::Invalid(m)) if m == err),
                "{name} {value}"
            );
        }
        c.set("appendfilename", &[b" a b.aof ".to_vec()], true)
            .unwrap();
        assert_eq!(c.get("appendfilename").unwrap(), " a b.aof ");
    }

    #[test]
    fn cluster_mode_is_set_at_start_only() {
        let mut c = Config::default();
        c.set("cluster-enabled", &[b"yes".to_vec()], true).unwrap();
        assert_eq!(c.get("cluster-enabled").unwrap(), "yes");
        assert_eq!(
            c.set("cluster-enabled", &[b"no".to_vec()], false),
            Err(SetError::Immutable)
        );
    }

    #[test]
    fn active_defrag_is_refused_at_run_time_and_ignored_at_start() {
        let mut c = Config::from_text("activedefrag yes").unwrap();
        assert_eq!(c.get("activedefrag").as_deref(), Some("no"));
        assert_eq!(
            c.set("activedefrag", &[b"yes".to_vec()], false),
            Err(SetError::Invalid(ACTIVE_DEFRAG_UNAVAILABLE.into()))
        );
        assert!(c.set("activedefrag", &[b"no".to_vec()], false).is_ok());
    }

    #[test]
    fn immutable_at_run_time() {
        let mut c = Config::default();
        assert_eq!(
            c.set("databases", &[b"3".to_vec()], false),
            Err(SetError::Immutable)
        );
        assert_eq!(
            c.set("nope", &[b"3".to_vec()], false),
            Err(SetError::Unknown)
        );
    }
}
