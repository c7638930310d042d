//! Server configuration: a `redis.conf`-style file plus `--directive value` arguments,
//! parsed and validated the way redis-server does it, with the same error texts, and the
//! same directives readable and writable at run time through `CONFIG GET/SET`.
//!
//! ```
//! use redline_server::Config;
//!
//! let config = Config::from_args(["--port", "0", "--hz", "20"]).unwrap();
//! assert_eq!(config.port, 0);
//! assert_eq!(config.hz, 20);
//! assert_eq!(config.bind, ["*", "-::*"]); // Redis 7's default
//! ```

mod args;
mod directives;
mod hot;
mod include;
pub mod params;
mod renamed;
mod rewrite;

use std::fmt;
use std::path::Path;

pub use args::{repr, split_args};
pub use directives::{parse_memory, SetError, DIRECTIVES};
pub use hot::HotParams;
pub use renamed::RenamedCommands;
pub use rewrite::{rewrite, rewrite_all};

/// How much redis-server logs; `notice` is the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Everything.
    Debug,
    /// Much information, useful while developing.
    Verbose,
    /// Moderately verbose, for production.
    Notice,
    /// Only important messages.
    Warning,
}

impl LogLevel {
    /// The directive's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Verbose => "verbose",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
        }
    }
}

/// One class of `client-output-buffer-limit`: hard limit, soft limit, soft seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputBufferLimit {
    /// Bytes after which the client is closed at once (0 = none).
    pub hard: u64,
    /// Bytes which, held for `soft_seconds`, close the client (0 = none).
    pub soft: u64,
    /// How long the soft limit may be exceeded.
    pub soft_seconds: u64,
}

impl OutputBufferLimit {
    /// Whether `len` buffered bytes break the hard limit, or the soft one for longer than
    /// it allows; `soft_since` is when the buffer went over the soft limit, kept by the
    /// caller between checks.
    pub fn exceeded(&self, len: u64, soft_since: &mut Option<std::time::Instant>) -> bool {
        if self.hard > 0 && len > self.hard {
            return true;
        }
        if self.soft == 0 || len <= self.soft {
            *soft_since = None;
            return false;
        }
        let since = *soft_since.get_or_insert_with(std::time::Instant::now);
        since.elapsed().as_secs() > self.soft_seconds
    }
}

/// Everything the server reads from its configuration. Defaults are redis-server's, except
/// `bind` (loopback only) and `worker_threads`/`shards` (ours).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The configuration file the server started with (CONFIG REWRITE writes it back).
    pub config_file: Option<std::path::PathBuf>,
    /// TCP port; 0 picks a free one (see [`crate::Server::local_addr`]).
    pub port: u16,
    /// Addresses to listen on. Default `127.0.0.1`.
    pub bind: Vec<String>,
    /// Password of the default user; empty means none.
    pub requirepass: Vec<u8>,
    /// Most simultaneous clients.
    pub maxclients: u64,
    /// Close a client idle this many seconds (0 = never).
    pub timeout: u64,
    /// Number of logical databases (`SELECT 0..databases-1`).
    pub databases: usize,
    /// Largest bulk string accepted in a request.
    pub proto_max_bulk_len: u64,
    /// Largest unparsed query buffer of one client before it is closed.
    pub client_query_buffer_limit: u64,
    /// Output buffer limits for normal, replica and pub/sub clients, in that order.
    pub client_output_buffer_limit: [OutputBufferLimit; 3],
    /// Background task frequency (active expiry cycles per second), clamped to 1..=500.
    pub hz: u32,
    /// Log verbosity.
    pub loglevel: LogLevel,
    /// Log file; empty means standard output.
    pub logfile: String,
    /// Refuse non-loopback clients when no password is set.
    pub protected_mode: bool,
    /// Tokio worker threads (`io-threads`); 0 means one per core.
    pub worker_threads: usize,
    /// Keyspace shards per database, a power of two; 0 picks a default from the workers.
    pub shards: usize,
    /// RDB save points (`seconds changes` pairs), Redis's default unless set; empty for none.
    pub save: String,
    /// Whether the append-only file is written (`crate::persist::aof`).
    pub appendonly: bool,
    /// `daemonize`: fork into the background at start (`crate::supervision`).
    pub daemonize: bool,
    /// Largest sparse HyperLogLog, header included, before it turns dense.
    pub hll_sparse_max_bytes: u64,
    /// `notify-keyspace-events`, as flag bits (see `crate::notify`).
    pub notify_keyspace_events: u32,
    /// `tracking-table-max-keys` (0: no limit).
    pub tracking_table_max_keys: u64,
    /// `enable-debug-command`, `enable-protected-configs`, `enable-module-command`
    /// (`yes`, `no` or `local`): see [`Config::allows`].
    pub enable_flags: [String; 3],
    /// The table parameters ([`params::PARAMS`]) set away from their defaults, by name,
    /// as canonical text.
    pub params: std::collections::BTreeMap<&'static str, String>,
    /// `user <name> <rules>...` directives of the config file and command line, each as
    /// its words after `user`, applied at start (see [`crate::acl::file`]).
    pub users: Vec<Vec<Vec<u8>>>,
    /// A `save` line was read at start: later ones add save points (see `set_save`).
    pub save_loaded: bool,
    /// Commands the config file renamed (`rename-command`).
    pub renamed: RenamedCommands,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 6379,
            // Redis 7's: every IPv4 and (if there is one) IPv6 address; protected mode
            // keeps clients off other than the loopback until a password is set.
            bind: vec!["*".to_string(), "-::*".to_string()],
            requirepass: Vec::new(),
            maxclients: 10_000,
            timeout: 0,
            config_file: None,
            databases: 16,
            proto_max_bulk_len: 512 * 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            client_output_buffer_limit: [
                OutputBufferLimit {
                    hard: 0,
                    soft: 0,
                    soft_seconds: 0,
                },
                OutputBufferLimit {
                    hard: 256 << 20,
                    soft: 64 << 20,
                    soft_seconds: 60,
                },
                OutputBufferLimit {
                    hard: 32 << 20,
                    soft: 8 << 20,
                    soft_seconds: 60,
                },
            ],
            hz: 10,
            loglevel: LogLevel::Notice,
            logfile: String::new(),
            protected_mode: true,
            worker_threads: 0,
            shards: 0,
            save: "3600 1 300 100 60 10000".into(),
            appendonly: false,
            daemonize: false,
            hll_sparse_max_bytes: crate::store::hll::DEFAULT_SPARSE_MAX_BYTES as u64,
            notify_keyspace_events: 0,
            tracking_table_max_keys: 1_000_000,
            enable_flags: ["no".into(), "no".into(), "no".into()],
            params: std::collections::BTreeMap::new(),
            users: Vec::new(),
            renamed: RenamedCommands::default(),
            save_loaded: false,
        }
    }
}

/// A configuration that cannot be loaded. `Display` is redis-server's fatal message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A bad line: unknown directive, wrong argument count, or an invalid value.
    #[error(
        "\n*** FATAL CONFIG FILE ERROR (redline-server {version}) ***\nReading the configuration file, at line {line_no}\n>>> '{line}'\n{message}",
        version = env!("CARGO_PKG_VERSION")
    )]
    Line {
        /// 1-based line number in the combined text (file, then arguments).
        line_no: usize,
        /// The offending line as written.
        line: String,
        /// What is wrong with it.
        message: String,
    },
    /// The configuration file cannot be read.
    #[error("Fatal error, can't open config file '{path}': {reason}")]
    Open {
        /// The path given.
        path: String,
        /// The operating system's reason.
        reason: String,
    },
}

impl Config {
    /// Parses redis-server style arguments (without the program name): an optional
    /// configuration file first, then `--directive value...` pairs, which win over it.
    pub fn from_args<I, S>(args: I) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut args: Vec<String> = args.into_iter().map(|a| a.as_ref().to_string()).collect();
        // As redis-server: a `-` first or last reads more configuration from standard
        // input, after the file and before the options (last one set wins).
        let last = args.len().saturating_sub(1);
        let from_stdin = [0, last]
            .into_iter()
            .find(|&j| args.get(j).is_some_and(|a| a == "-"));
        if let Some(j) = from_stdin {
            args.remove(j);
        }
        let mut text = String::new();
        let mut rest = &args[..];
        let mut file = None;
        if let Some(first) = args.first().filter(|_| from_stdin != Some(0)) {
            if !first.starts_with('-') {
                text =
                    std::fs::read_to_string(Path::new(first)).map_err(|e| ConfigError::Open {
                        path: first.clone(),
                        reason: e.to_string(),
                    })?;
                rest = &args[1..];
                file = Some(std::path::PathBuf::from(first));
            }
        }
        if from_stdin.is_some() {
            let mut input = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut input).map_err(|e| {
                ConfigError::Open {
                    path: "-".into(),
                    reason: e.to_string(),
                }
            })?;
            text.push('\n');
            text.push_str(&input);
        }
        let options = options_text(rest);
        text.push('\n');
        text.push_str(&options);
        let mut config = Config::from_text(&text)?;
        // Absolute, as redis-server keeps it: the server moves to `dir` at start, and
        // CONFIG REWRITE must still find the file.
        config.config_file = file.map(|f| std::path::absolute(&f).unwrap_or(f));
        Ok(config)
    }

    /// Parses the text of a configuration file.
    pub fn from_text(text: &str) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        config.apply_text(text, 0)?;
        Ok(config)
    }

    /// Applies the lines of `text`, read `depth` includes deep.
    fn apply_text(&mut self, text: &str, depth: usize) -> Result<(), ConfigError> {
        for (index, raw) in text.split('\n').enumerate() {
            let line = raw.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\r');
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |message: String| ConfigError::Line {
                line_no: index + 1,
                line: line.to_string(),
                message,
            };
            let Some(words) = split_args(line.as_bytes()) else {
                return Err(fail("Unbalanced quotes in configuration line".into()));
            };
            let Some((name, values)) = words.split_first() else {
                continue;
            };
            let name = String::from_utf8_lossy(name).to_ascii_lowercase();
            if let ("include", [path]) = (name.as_str(), values) {
                if depth >= include::MAX_DEPTH {
                    return Err(fail(format!(
                        "includes nested more than {} deep",
                        include::MAX_DEPTH
                    )));
                }
                let included = include::read(&String::from_utf8_lossy(path))?;
                self.apply_text(&included, depth + 1)?;
                continue;
            }
            self.set(&name, values, true).map_err(|e| {
                fail(match e {
                    SetError::Unknown => "Bad directive or wrong number of arguments".into(),
                    SetError::Arity => "wrong number of arguments".into(),
                    SetError::Invalid(m) => m,
                    SetError::Immutable => "can't set immutable config".into(),
                })
            })?;
        }
        Ok(())
    }

    /// Makes `dir` the working directory, as Redis does with it, and keeps it as the
    /// absolute path it now is: CONFIG GET and CONFIG REWRITE show getcwd() in Redis.
    pub fn enter_dir(&mut self) -> std::io::Result<()> {
        let dir = self.param("dir").to_string();
        std::env::set_current_dir(&dir)?;
        let cwd = std::env::current_dir()?.display().to_string();
        if let Some(param) = params::find("dir") {
            self.params.insert(param.name, cwd);
        }
        Ok(())
    }

    /// Whether a protected action is allowed for a client (Redis's
    /// `allowProtectedAction`): `yes`, or `local` for a local client (see
    /// [`crate::net::peer::Peer::is_local`]).
    pub fn allows(&self, action: ProtectedAction, local: bool) -> bool {
        match self.enable_flags[action as usize].as_str() {
            "yes" => true,
            "local" => local,
            _ => false,
        }
    }

    /// The current text of table parameter `name` (its default when never set); empty for
    /// an unknown name.
    pub fn param(&self, name: &str) -> &str {
        match params::find(name) {
            Some(p) => self.params.get(p.name).map_or(p.default, String::as_str),
            None => "",
        }
    }

    /// Table parameter `name` as an integer (0 when it is not one; `i64::MAX` for an
    /// unsigned value past it, such as a `maxmemory` of 2^64-1).
    pub fn param_int(&self, name: &str) -> i64 {
        let text = self.param(name);
        text.parse()
            .unwrap_or_else(|_| text.parse::<u64>().map_or(0, |_| i64::MAX))
    }

    /// Table parameter `name` as a yes/no switch.
    pub fn param_bool(&self, name: &str) -> bool {
        self.param(name) == "yes"
    }

    /// Every name `CONFIG GET` knows: the hand-parsed directives, then the table's names
    /// and aliases.
    pub fn all_names() -> impl Iterator<Item = &'static str> {
        DIRECTIVES.iter().copied().chain(
            params::PARAMS
                .iter()
                .flat_map(|p| std::iter::once(p.name).chain(p.alias)),
        )
    }

    /// Whether `name` is left out of `CONFIG GET` patterns (see `params::Param::hidden`).
    pub fn is_hidden(name: &str) -> bool {
        params::find(name).is_some_and(|p| p.hidden)
    }

    /// The canonical name of a parameter or its alias (`slaveof` → `replicaof`).
    pub fn canonical_name(name: &str) -> &str {
        params::find(name).map_or(name, |p| p.name)
    }

    /// The worker thread count in effect: the configured one, or one per core.
    pub fn effective_workers(&self) -> usize {
        if self.worker_threads > 0 {
            self.worker_threads
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    }

    /// The shard count per database in effect: the configured one, or eight per worker
    /// rounded up to a power of two, so two connections rarely want the same lock.
    pub fn effective_shards(&self) -> usize {
        if self.shards > 0 {
            self.shards
        } else {
            (self.effective_workers() * 8).next_power_of_two().min(1024)
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The command line's options as config-file lines, as redis-server builds them: each
/// `--name` starts a line and the values after it follow quoted. An option given alone
/// (`--name`, no value in the same argument) takes the next argument as its value even
/// when it starts with `--` (`--proc-title-template --save`); but `--save` followed by
/// another option, or last, means `save ""`.
fn options_text(args: &[String]) -> String {
    let mut options = String::new();
    // Whether the last option has a value yet, so a `--word` now starts a new option.
    let mut has_value = true;
    for (j, arg) in args.iter().enumerate() {
        let next_is_option = args.get(j + 1).is_some_and(|a| a.starts_with("--"));
        match arg.strip_prefix("--") {
            Some(name) if has_value => {
                if !options.is_empty() {
                    options.push('\n');
                }
                options.push_str(name);
                options.push(' ');
                has_value = split_args(arg.as_bytes()).is_some_and(|words| words.len() > 1);
                if !has_value
                    && arg.eq_ignore_ascii_case("--save")
                    && (next_is_option || j + 1 == args.len())
                {
                    options.push_str("\"\"");
                    has_value = true;
                }
            }
            _ => {
                options.push_str(&repr(arg.as_bytes()));
                options.push(' ');
                has_value = true;
            }
        }
    }
    options
}

/// What the `enable-*` directives guard, in [`Config::enable_flags`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtectedAction {
    /// The DEBUG command (`enable-debug-command`).
    Debug = 0,
    /// CONFIG SET of `dir` and `dbfilename` (`enable-protected-configs`): together they
    /// let a client write a file anywhere the server may.
    Configs = 1,
    /// The MODULE command (`enable-module-command`).
    Module = 2,
}

/// The parameters CONFIG SET changes only where `enable-protected-configs` allows.
pub const PROTECTED_PARAMS: &[&str] = &["dir", "dbfilename"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_args() {
        let c = Config::from_args(["--port", "7000", "--bind", "127.0.0.1", "::1"]).unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.bind, ["127.0.0.1", "::1"]);
        assert_eq!(c.databases, 16);
        let c =
            Config::from_args(["--proto-max-bulk-len", "2mb", "--protected-mode", "no"]).unwrap();
        assert_eq!(c.proto_max_bulk_len, 2 * 1024 * 1024);
        assert!(!c.protected_mode);
    }

    #[test]
    fn command_line_values_as_redis_reads_them() {
        let get = |args: &[&str], name: &str| {
            Config::from_args(args)
                .unwrap()
                .get(name)
                .unwrap_or_default()
        };
        // `--save` alone before another option, or last, is `save ""`.
        assert_eq!(get(&["--save", "--loglevel", "verbose"], "save"), "");
        assert_eq!(get(&["--loglevel", "verbose", "--save"], "save"), "");
        assert_eq!(
            get(&["--save", "--loglevel", "verbose"], "loglevel"),
            "verbose"
        );
        // An option given alone takes the next argument, `--` or not.
        let args = [
            "--proc-title-template",
            "--save",
            "--save",
            "",
            "--loglevel",
            "verbose",
        ];
        assert_eq!(get(&args, "proc-title-template"), "--save");
        assert_eq!(get(&args, "save"), "");
        assert_eq!(get(&["--port 7001"], "port"), "7001");
        let flags = ["--shutdown-on-sigint", "nosave", "force", "now"];
        assert_eq!(get(&flags, "shutdown-on-sigint"), "nosave now force");
        let flags = ["--shutdown-on-sigterm", "nosave force"];
        assert_eq!(get(&flags, "shutdown-on-sigterm"), "nosave force");
        assert_eq!(
            get(
                &["--shutdown-on-sigterm", "default now"],
                "shutdown-on-sigterm"
            ),
            "now"
        );
        assert!(Config::from_args(["--shutdown-on-sigterm", "save nosave"]).is_err());
        let e = Config::from_args(["--shutdown-on-sigint"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("argument(s) must be one of the following"),
            "{e}"
        );
        let e = Config::from_args(["--port", "--loglevel", "verbose"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'port \"--loglevel\" \"verbose\"'\nwrong number of arguments"),
            "{e}"
        );
    }

    #[test]
    fn fatal_errors_match_redis() {
        let e = Config::from_args(["--port", "70000"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "at line 2\n>>> 'port \"70000\"'\nargument must be between 0 and 65535 inclusive"
            ),
            "{e}"
        );
        let e = Config::from_text("foo bar").unwrap_err().to_string();
        assert!(e.contains("at line 1\n>>> 'foo bar'\nBad directive or wrong number of arguments"));
        let e = Config::from_args(["--port"]).unwrap_err().to_string();
        assert!(e.ends_with(">>> 'port'\nwrong number of arguments"), "{e}");
        let e = Config::from_args(["--hz", "abc"]).unwrap_err().to_string();
        assert!(e.ends_with("argument couldn't be parsed into an integer"));
        let e = Config::from_text("hz 5 # c").unwrap_err().to_string();
        assert!(e.ends_with("wrong number of arguments"));
    }

    #[test]
    fn file_comments_and_blank_lines() {
        let c =
            Config::from_text("# comment\n\n  port   0  \nhz 1000\nloglevel warning\n").unwrap();
        assert_eq!(c.port, 0);
        assert_eq!(c.hz, 500);
        assert_eq!(c.loglevel, LogLevel::Warning);
    }
}
