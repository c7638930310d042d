//! The Redis command table: name, arity, flags, ACL categories and key positions of every
//! command and subcommand of Redis 7.0, as static data generated from a real server
//! (`table.rs`, see `crates/resp/tools/gen_command_table.py`).
//!
//! One table serves both sides: the client routes by key (cluster slots) and picks
//! connections by flag (blocking, pub/sub); the server dispatches, checks arity and answers
//! `COMMAND COUNT`/`LIST`/`INFO`/`GETKEYS` from it.
//!
//! - [`lookup`], [`lookup_subcommand`], [`resolve`]: name to [`CommandSpec`], case-insensitive,
//!   no allocation; [`position_const`] at compile time.
//! - [`keys`], [`keys_into`]: the key arguments of a command, exactly as `COMMAND GETKEYS`
//!   finds them (for routing); [`getkeys`], [`keys_and_flags`]: `COMMAND GETKEYS` and
//!   `GETKEYSANDFLAGS` replies, errors included; [`shard_channels`] for sharded pub/sub.
//! - [`blocking`], [`blocking_with`], [`may_block`]: whether a command blocks its
//!   connection and for how long ([`Block`]), from its arguments.
//! - [`COMMANDS`], [`all`]: the whole table, for `COMMAND COUNT`, `COMMAND LIST` and
//!   `COMMAND INFO` without arguments; [`PerEntry`]: a value kept per entry.
//!
//! ```
//! use redline_resp::command;
//!
//! let args = ["ZUNIONSTORE", "out", "2", "a", "b"];
//! let spec = command::resolve(&args).unwrap();
//! assert!(spec.is_write());
//! assert_eq!(command::keys(&args), Ok(vec![1, 3, 4]));
//! ```

mod blocking;
mod flags;
mod keys;
mod lookup;
mod per_entry;
mod spec;
mod table;

pub use blocking::{blocking, blocking_with, may_block, Block};
pub use flags::{AclCategories, CommandFlags, KeySpecFlags};
pub use keys::{
    getkeys, keys, keys_and_flags, keys_into, routing_keys_into, shard_channels, KeysError,
};
pub use lookup::{all, lookup, lookup_subcommand, position_const, resolve, COMMANDS, ENTRY_COUNT};
pub use per_entry::PerEntry;
pub use spec::{BeginSearch, CommandDocs, CommandSpec, DocArg, FindKeys, GetKeysProc, KeySpec};
pub use table::REDIS_VERSION;

/// True when `spec` may modify the keyspace (the `write` flag): the server refuses it on a
/// read-only replica and under `maxmemory` with `denyoom`, the client never retries it
/// blindly or sends it to a replica.
///
/// ```
/// use redline_resp::command::{is_write, lookup};
///
/// assert!(is_write(lookup(b"SET").unwrap()));
/// assert!(!is_write(lookup(b"GET").unwrap()));
/// ```
pub const fn is_write(spec: &CommandSpec) -> bool {
    spec.is_write()
}

/// True when `spec` never modifies the keyspace (the `readonly` flag), so a cluster client
/// may send it to a replica.
///
/// ```
/// use redline_resp::command::{is_readonly, lookup};
///
/// assert!(is_readonly(lookup(b"GET").unwrap()));
/// assert!(!is_readonly(lookup(b"PING").unwrap()));
/// ```
pub const fn is_readonly(spec: &CommandSpec) -> bool {
    spec.is_readonly()
}

/// True when `spec` has the `blocking` flag (`BLPOP`, `XREAD`...). `WAIT` has not (Redis
/// 7.0): [`may_block`] includes it, and [`blocking`] says whether given arguments block
/// and for how long.
///
/// ```
/// use redline_resp::command::{is_blocking, lookup};
///
/// assert!(is_blocking(lookup(b"BLPOP").unwrap()));
/// assert!(!is_blocking(lookup(b"LPOP").unwrap()));
/// ```
pub const fn is_blocking(spec: &CommandSpec) -> bool {
    spec.is_blocking()
}

/// `COMMAND COUNT`: the number of top-level commands.
///
/// ```
/// assert_eq!(redline_resp::command::count(), 240);
/// ```
pub fn count() -> usize {
    COMMANDS.len()
}
