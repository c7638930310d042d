//! The three bit sets of the command table: command flags, key-spec flags and ACL
//! categories.
//!
//! Each set is a `Copy` integer with one associated constant per flag. Bits are numbered in
//! the order Redis lists the flags in `COMMAND INFO`, so iterating [`CommandFlags::names`]
//! (and the others) reproduces Redis's reply word for word.

use std::fmt;

/// Declares a bit set: the type, its constants, const set operations and the names table.
macro_rules! bit_set {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($repr:ty);
        $( $(#[$fmeta:meta])* $flag:ident = $bit:expr, $text:expr, $reported:expr; )*
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name($repr);

        impl $name {
            $( $(#[$fmeta])* pub const $flag: Self = Self(1 << $bit); )*

            /// The empty set.
            pub const EMPTY: Self = Self(0);

            /// Every flag with its name and whether `COMMAND INFO` reports it, in bit order.
            const TABLE: &'static [(Self, &'static str, bool)] =
                &[$( (Self::$flag, $text, $reported), )*];

            /// The union of `flags`, usable in constants.
            pub const fn of(flags: &[Self]) -> Self {
                let mut bits = 0;
                let mut i = 0;
                while i < flags.len() {
                    bits |= flags[i].0;
                    i += 1;
                }
                Self(bits)
            }

            /// The raw bits.
            pub const fn bits(self) -> $repr {
                self.0
            }

            /// The set with these raw bits; bits that name no flag are kept as they are.
            pub const fn from_bits(bits: $repr) -> Self {
                Self(bits)
            }

            /// Both sets together.
            pub const fn union(self, other: Self) -> Self {
                Self(self.0 | other.0)
            }

            /// True when every flag of `other` is in `self`.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }

            /// True when `self` and `other` share a flag.
            pub const fn intersects(self, other: Self) -> bool {
                self.0 & other.0 != 0
            }

            /// True when no flag is set.
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }

            /// The names of the flags set, as `COMMAND INFO` writes them and in its order.
            /// Flags Redis keeps out of that reply are skipped.
            pub fn names(self) -> impl Iterator<Item = &'static str> {
                Self::TABLE
                    .iter()
                    .filter(move |(flag, _, reported)| *reported && self.contains(*flag))
                    .map(|(_, text, _)| *text)
            }

            /// The flag with this name (as in `COMMAND INFO`, case-sensitive), if any.
            pub fn from_name(name: &str) -> Option<Self> {
                Self::TABLE.iter().find(|(_, text, _)| *text == name).map(|(flag, _, _)| *flag)
            }
        }

        impl std::ops::BitOr for $name {
            type Output = Self;
            fn bitor(self, other: Self) -> Self {
                self.union(other)
            }
        }

        impl std::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, other: Self) {
                *self = self.union(other);
            }
        }

        impl fmt::Debug for $name {
            /// All flags set, hidden ones included: `CommandFlags(write | denyoom)`.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}(", stringify!($name))?;
                let mut sep = "";
                for (flag, text, _) in Self::TABLE {
                    if self.contains(*flag) {
                        write!(f, "{sep}{text}")?;
                        sep = " | ";
                    }
                }
                f.write_str(")")
            }
        }
    };
}

bit_set! {
    /// What a command is and how Redis treats it (`write`, `readonly`, `fast`...).
    ///
    /// ```
    /// use redline_resp::command::{self, CommandFlags};
    ///
    /// let set = command::lookup(b"set").unwrap();
    /// assert!(set.flags.contains(CommandFlags::WRITE | CommandFlags::DENYOOM));
    /// assert_eq!(set.flags.names().collect::<Vec<_>>(), ["write", "denyoom"]);
    /// ```
    pub struct CommandFlags(u32);
    /// May modify the keyspace.
    WRITE = 0, "write", true;
    /// Never modifies the keyspace.
    READONLY = 1, "readonly", true;
    /// May grow memory: refused when `maxmemory` is reached.
    DENYOOM = 2, "denyoom", true;
    /// Implemented by a module.
    MODULE = 3, "module", true;
    /// Administrative: refused to clients without the right, logged.
    ADMIN = 4, "admin", true;
    /// Pub/sub related.
    PUBSUB = 5, "pubsub", true;
    /// Not allowed inside a script.
    NOSCRIPT = 6, "noscript", true;
    /// May block the client.
    BLOCKING = 7, "blocking", true;
    /// Allowed while the database is loading.
    LOADING = 8, "loading", true;
    /// Allowed on a replica with stale data.
    STALE = 9, "stale", true;
    /// Not shown to `MONITOR`.
    SKIP_MONITOR = 10, "skip_monitor", true;
    /// Not logged by the slow log.
    SKIP_SLOWLOG = 11, "skip_slowlog", true;
    /// Allowed on an importing slot (cluster).
    ASKING = 12, "asking", true;
    /// Constant or O(log N) time.
    FAST = 13, "fast", true;
    /// Allowed before authentication.
    NO_AUTH = 14, "no_auth", true;
    /// Declares keys, yet may be called with none (e.g. `EVAL script 0`).
    NO_MANDATORY_KEYS = 15, "no_mandatory_keys", true;
    /// Refused while replicas load a dataset asynchronously.
    NO_ASYNC_LOADING = 16, "no_async_loading", true;
    /// Not allowed inside `MULTI`.
    NO_MULTI = 17, "no_multi", true;
    /// Key positions depend on the arguments (numkeys, keywords).
    MOVABLE_KEYS = 18, "movablekeys", true;
    /// Allowed while a script or function is busy.
    ALLOW_BUSY = 19, "allow_busy", true;
    /// Not a write, but may propagate to replicas (`PUBLISH`, `EVAL`, `PFCOUNT`...): paused by
    /// `CLIENT PAUSE WRITE`. Hidden from `COMMAND INFO` by Redis.
    MAY_REPLICATE = 20, "may_replicate", false;
    /// Refused unless `enable-debug-command`/`enable-module-command` allow it. Hidden from
    /// `COMMAND INFO` by Redis.
    PROTECTED = 21, "protected", false;
}

bit_set! {
    /// How a key spec's keys are accessed (Redis 7 key-spec flags).
    ///
    /// Exactly one of `RO`/`RW`/`OW`/`RM` says what happens to the key as a whole;
    /// `access`/`update`/`insert`/`delete` refine it.
    ///
    /// ```
    /// use redline_resp::command::{self, KeySpecFlags};
    ///
    /// let del = command::lookup(b"DEL").unwrap();
    /// assert_eq!(del.key_specs[0].flags, KeySpecFlags::RM | KeySpecFlags::DELETE);
    /// ```
    pub struct KeySpecFlags(u16);
    /// Read-only: reads the value, never changes it.
    RO = 0, "RO", true;
    /// Read-write: reads and changes the value.
    RW = 1, "RW", true;
    /// Overwrite: replaces the value without reading it.
    OW = 2, "OW", true;
    /// Remove: deletes the key.
    RM = 3, "RM", true;
    /// Returns (part of) the value to the user.
    ACCESS = 4, "access", true;
    /// Updates the value in place.
    UPDATE = 5, "update", true;
    /// Adds data, never removes or modifies existing data.
    INSERT = 6, "insert", true;
    /// Removes data from the value.
    DELETE = 7, "delete", true;
    /// The arguments are not keys but are hashed like keys (shard channels).
    NOT_KEY = 8, "not_key", true;
    /// The spec may miss keys: Redis falls back to the command's own key finder.
    INCOMPLETE = 9, "incomplete", true;
    /// The flags depend on the arguments (e.g. `SET ... GET`).
    VARIABLE_FLAGS = 10, "variable_flags", true;
}

bit_set! {
    /// The ACL categories of a command (`@read`, `@write`, `@string`...).
    ///
    /// [`AclCategories::names`] gives the names without the `@` that `COMMAND INFO` prints
    /// before each one (`ACL CAT` prints them bare).
    ///
    /// ```
    /// use redline_resp::command::{self, AclCategories};
    ///
    /// let get = command::lookup(b"GET").unwrap();
    /// assert!(get.acl_categories.contains(AclCategories::READ | AclCategories::FAST));
    /// assert_eq!(get.acl_categories.names().collect::<Vec<_>>(), ["read", "string", "fast"]);
    /// ```
    pub struct AclCategories(u32);
    /// Reads or writes keys, databases or their metadata generically.
    KEYSPACE = 0, "keyspace", true;
    /// Reads from keys.
    READ = 1, "read", true;
    /// Writes to keys.
    WRITE = 2, "write", true;
    /// Set data type.
    SET = 3, "set", true;
    /// Sorted set data type.
    SORTEDSET = 4, "sortedset", true;
    /// List data type.
    LIST = 5, "list", true;
    /// Hash data type.
    HASH = 6, "hash", true;
    /// String data type.
    STRING = 7, "string", true;
    /// Bitmap commands.
    BITMAP = 8, "bitmap", true;
    /// HyperLogLog commands.
    HYPERLOGLOG = 9, "hyperloglog", true;
    /// Geospatial commands.
    GEO = 10, "geo", true;
    /// Stream data type.
    STREAM = 11, "stream", true;
    /// Pub/sub commands.
    PUBSUB = 12, "pubsub", true;
    /// Administrative commands.
    ADMIN = 13, "admin", true;
    /// O(1) commands.
    FAST = 14, "fast", true;
    /// Every command that is not fast.
    SLOW = 15, "slow", true;
    /// May block the connection.
    BLOCKING = 16, "blocking", true;
    /// Potentially dangerous commands.
    DANGEROUS = 17, "dangerous", true;
    /// Connection and handshake commands.
    CONNECTION = 18, "connection", true;
    /// `MULTI`/`EXEC` and friends.
    TRANSACTION = 19, "transaction", true;
    /// Scripting and functions.
    SCRIPTING = 20, "scripting", true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations() {
        let f = CommandFlags::of(&[CommandFlags::WRITE, CommandFlags::FAST]);
        assert!(f.contains(CommandFlags::WRITE));
        assert!(!f.contains(CommandFlags::WRITE | CommandFlags::ADMIN));
        assert!(f.intersects(CommandFlags::WRITE | CommandFlags::ADMIN));
        assert!(CommandFlags::EMPTY.is_empty());
        assert_eq!(CommandFlags::from_bits(f.bits()), f);
        let mut g = CommandFlags::EMPTY;
        g |= CommandFlags::FAST;
        assert_eq!(g | CommandFlags::WRITE, f);
    }

    #[test]
    fn names_follow_redis_order_and_hide_hidden_flags() {
        let f = CommandFlags::FAST | CommandFlags::WRITE | CommandFlags::MAY_REPLICATE;
        assert_eq!(f.names().collect::<Vec<_>>(), ["write", "fast"]);
        assert_eq!(
            format!("{f:?}"),
            "CommandFlags(write | fast | may_replicate)"
        );
        assert_eq!(
            CommandFlags::from_name("movablekeys"),
            Some(CommandFlags::MOVABLE_KEYS)
        );
        assert_eq!(KeySpecFlags::from_name("OW"), Some(KeySpecFlags::OW));
        assert_eq!(AclCategories::from_name("nope"), None);
    }
}
