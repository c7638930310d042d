//! The shape of one command-table entry: [`CommandSpec`] and its Redis 7 key specs.

use super::flags::{AclCategories, CommandFlags, KeySpecFlags};

/// One Redis command or subcommand, as `COMMAND INFO` describes it.
///
/// Entries are static data generated from a real redis-server (see `table.rs`); get them
/// with [`lookup`](super::lookup) or [`resolve`](super::resolve).
///
/// ```
/// use redline_resp::command;
///
/// let get = command::lookup(b"get").unwrap();
/// assert_eq!((get.name, get.arity), ("get", 2));
/// assert!(get.is_readonly() && !get.is_write());
/// assert_eq!((get.first_key, get.last_key, get.key_step), (1, 1, 1));
///
/// let setname = command::lookup_subcommand(command::lookup(b"CLIENT").unwrap(), b"SetName");
/// assert_eq!(setname.unwrap().name, "client|setname");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
    /// Lower-case name; a subcommand is `parent|sub` (`client|setname`), as Redis writes it.
    pub name: &'static str,
    /// Dense index of the entry in table order (each command, then its subcommands: the
    /// order of [`super::all`]), below [`super::ENTRY_COUNT`], so per-command data can live
    /// in arrays; [`CommandSpec::NO_ID`] for an entry defined outside the table.
    pub id: u16,
    /// Number of arguments including the command name (and, for a subcommand, the parent's
    /// name): `n` means exactly `n`, `-n` at least `n`.
    pub arity: i32,
    /// Command flags.
    pub flags: CommandFlags,
    /// ACL categories.
    pub acl_categories: AclCategories,
    /// Legacy key range, first key index (0: no keys).
    pub first_key: i32,
    /// Legacy key range, last key index (negative: counted from the end).
    pub last_key: i32,
    /// Legacy key range, step between keys.
    pub key_step: i32,
    /// Command tips (`nondeterministic_output`, `request_policy:all_shards`...).
    pub tips: &'static [&'static str],
    /// Redis 7 key specs, in Redis's order.
    pub key_specs: &'static [KeySpec],
    /// The key finder Redis falls back to when the key specs cannot answer alone.
    pub get_keys: Option<GetKeysProc>,
    /// Short documentation, from `COMMAND DOCS`.
    pub docs: CommandDocs,
    /// Subcommands sorted by name; empty for a plain command.
    pub subcommands: &'static [CommandSpec],
}

impl CommandSpec {
    /// The `id` of an entry that is not part of the table (one a server adds itself).
    pub const NO_ID: u16 = u16::MAX;

    /// The entry's dense index, `None` for an entry outside the table.
    #[inline]
    pub const fn index(&self) -> Option<usize> {
        if self.id == Self::NO_ID {
            None
        } else {
            Some(self.id as usize)
        }
    }

    /// True for commands that may modify the keyspace (`write` flag).
    pub const fn is_write(&self) -> bool {
        self.flags.contains(CommandFlags::WRITE)
    }

    /// True for commands that never modify the keyspace (`readonly` flag).
    pub const fn is_readonly(&self) -> bool {
        self.flags.contains(CommandFlags::READONLY)
    }

    /// True for commands that may block the connection (`blocking` flag).
    pub const fn is_blocking(&self) -> bool {
        self.flags.contains(CommandFlags::BLOCKING)
    }

    /// True for commands that may reach replicas: `write` or `may_replicate`. These are what
    /// `CLIENT PAUSE WRITE` holds back.
    pub const fn may_replicate(&self) -> bool {
        self.flags
            .intersects(CommandFlags::WRITE.union(CommandFlags::MAY_REPLICATE))
    }

    /// True for a container such as `CLIENT` or `CONFIG`, whose real entries are subcommands.
    pub const fn has_subcommands(&self) -> bool {
        !self.subcommands.is_empty()
    }

    /// True for an entry named `parent|sub`.
    pub fn is_subcommand(&self) -> bool {
        self.name.contains('|')
    }

    /// The argument count is acceptable for this command (Redis's arity rule).
    ///
    /// ```
    /// let get = redline_resp::command::lookup(b"GET").unwrap();
    /// assert!(get.arity_ok(2) && !get.arity_ok(3));
    /// let del = redline_resp::command::lookup(b"DEL").unwrap();
    /// assert!(del.arity_ok(2) && del.arity_ok(9) && !del.arity_ok(1));
    /// ```
    pub const fn arity_ok(&self, argc: usize) -> bool {
        if self.arity >= 0 {
            argc == self.arity as usize
        } else {
            argc >= self.arity.unsigned_abs() as usize
        }
    }

    /// True when the command's one key is always its first argument (GET, SET, LPUSH and
    /// most others), so a caller can take it without walking the key specs. Without the
    /// `movablekeys` flag the legacy range gives every key, as Redis defines it (a key
    /// finder such as SET's then only tells the keys' access flags).
    ///
    /// ```
    /// use redline_resp::command;
    ///
    /// assert!(command::lookup(b"SET").unwrap().has_sole_first_key());
    /// assert!(!command::lookup(b"MSET").unwrap().has_sole_first_key());
    /// assert!(!command::lookup(b"SORT").unwrap().has_sole_first_key());
    /// // A shard channel is hashed like a key, but is not one.
    /// assert!(!command::lookup(b"SPUBLISH").unwrap().has_sole_first_key());
    /// ```
    pub const fn has_sole_first_key(&self) -> bool {
        self.first_key == 1
            && self.last_key == 1
            && self.key_specs.len() == 1
            && !self.key_specs[0].flags.contains(KeySpecFlags::NOT_KEY)
            && !self.flags.contains(CommandFlags::MOVABLE_KEYS)
    }

    /// True when Redis considers that the command has key arguments at all: a key finder or
    /// a key spec that is not `not_key`. `COMMAND GETKEYS` answers "The command has no key
    /// arguments" for the others.
    pub fn has_keys(&self) -> bool {
        self.get_keys.is_some()
            || self
                .key_specs
                .iter()
                .any(|spec| !spec.flags.contains(KeySpecFlags::NOT_KEY))
    }
}

/// Where a command's keys are, in Redis 7's key-spec model: where to start
/// ([`BeginSearch`]) and how to take keys from there ([`FindKeys`]).
///
/// ```
/// use redline_resp::command::{self, BeginSearch, FindKeys};
///
/// // XREAD ... STREAMS key1 key2 id1 id2: keys start after STREAMS, half of the rest.
/// let spec = &command::lookup(b"XREAD").unwrap().key_specs[0];
/// assert_eq!(spec.begin_search, BeginSearch::Keyword { keyword: "STREAMS", start_from: 1 });
/// assert_eq!(spec.find_keys, FindKeys::Range { last_key: -1, key_step: 1, limit: 2 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    /// Redis's note on the spec (often empty).
    pub notes: &'static str,
    /// How the keys are accessed.
    pub flags: KeySpecFlags,
    /// Where the search for keys begins.
    pub begin_search: BeginSearch,
    /// How keys are taken from the starting point.
    pub find_keys: FindKeys,
}

/// First step of a key spec: the index the key search starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeginSearch {
    /// Keys start at this argument index.
    Index(i32),
    /// Keys start right after `keyword` (compared case-insensitively). The search begins at
    /// `start_from` and moves right; a negative `start_from` counts from the end and the
    /// search moves left.
    Keyword {
        /// The keyword, in Redis's (upper) case.
        keyword: &'static str,
        /// First index to look at; negative: counted from the end, searching backwards.
        start_from: i32,
    },
    /// Redis cannot say: the command's key finder ([`GetKeysProc`]) decides.
    Unknown,
}

/// Second step of a key spec: which arguments from the starting point are keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindKeys {
    /// Keys from the start up to `last_key` (relative to the start; negative: counted from
    /// the end of the arguments), every `key_step`. With a negative `last_key` and a
    /// non-zero `limit`, only the first 1/`limit` of the remaining arguments are keys.
    Range {
        /// Last key, relative to the start; negative: from the end of the arguments.
        last_key: i32,
        /// Distance between keys.
        key_step: i32,
        /// With `last_key == -1`: divide the remaining arguments by this (0: take all).
        limit: i32,
    },
    /// The argument at `keynum_index` (relative to the start) is a key count; keys begin at
    /// `first_key` (relative to the start), every `key_step`.
    Keynum {
        /// Index of the key count, relative to the start.
        keynum_index: i32,
        /// Index of the first key, relative to the start.
        first_key: i32,
        /// Distance between keys.
        key_step: i32,
    },
    /// Redis cannot say: the command's key finder decides.
    Unknown,
}

/// A key finder of Redis's own (`getkeys_proc`), used when a command's key specs are
/// incomplete, fail on the given arguments, or have variable flags. Each variant mirrors the
/// Redis 7.0 function of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetKeysProc {
    /// Redis's generic numkeys finder: the count is at `numkeys`, keys start at `first`
    /// every `step`, and a destination key (if `store` is non-zero) at `store` comes last.
    Numkeys {
        /// Index of the destination key, 0 for none.
        store: u8,
        /// Index of the key count.
        numkeys: u8,
        /// Index of the first key.
        first: u8,
        /// Distance between keys.
        step: u8,
    },
    /// `SORT key ... [STORE dest]`: the key, then the last `STORE` target.
    Sort,
    /// `SORT_RO key ...`: the key.
    SortRo,
    /// `MIGRATE host port key|"" ... [KEYS k1 k2 ...]`.
    Migrate,
    /// `GEORADIUS[BYMEMBER] key ... [STORE|STOREDIST dest]`.
    Georadius,
    /// `XREAD[GROUP] ... STREAMS k1 k2 id1 id2`.
    Xread,
    /// `SET key value ... [GET]`: the key; `GET` changes its flags.
    Set,
    /// `BITFIELD key ...`: the key; read-only when only `GET` operations are given.
    Bitfield,
}

/// The documentation of a command, as `COMMAND DOCS` gives it. An empty string or list
/// is a field Redis leaves out.
///
/// ```
/// use redline_resp::command;
///
/// let set = command::lookup(b"set").unwrap();
/// assert_eq!(set.docs.since, "1.0.0");
/// assert_eq!(set.docs.history[0].0, "2.6.12");
/// assert_eq!(set.docs.arguments[0].name, "key");
/// assert_eq!(set.docs.arguments[0].key_spec_index, Some(0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandDocs {
    /// One-line summary.
    pub summary: &'static str,
    /// Redis version that introduced it.
    pub since: &'static str,
    /// Command group (`string`, `list`, `server`...).
    pub group: &'static str,
    /// Time complexity, as Redis documents it.
    pub complexity: &'static str,
    /// `deprecated` and `syscmd`, the ones that apply.
    pub doc_flags: &'static [&'static str],
    /// The version that deprecated it.
    pub deprecated_since: &'static str,
    /// What replaces it, when deprecated.
    pub replaced_by: &'static str,
    /// Its changes, oldest first: (version, what changed).
    pub history: &'static [(&'static str, &'static str)],
    /// Its arguments, in order.
    pub arguments: &'static [DocArg],
}

/// One documented argument of a command (`COMMAND DOCS`'s `arguments`); a `oneof` or
/// `block` holds its own. An empty string or list is a field Redis leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocArg {
    /// Its name.
    pub name: &'static str,
    /// `string`, `integer`, `double`, `key`, `pattern`, `unix-time`, `pure-token`,
    /// `oneof` or `block`.
    pub kind: &'static str,
    /// For a key, the index of its key spec.
    pub key_spec_index: Option<u8>,
    /// The literal word that introduces it (`EX`, `LIMIT`; MIGRATE's `""` stands for no
    /// key, so an empty token is still one).
    pub token: Option<&'static str>,
    /// What it does.
    pub summary: &'static str,
    /// The version that added it.
    pub since: &'static str,
    /// The version that deprecated it.
    pub deprecated_since: &'static str,
    /// `optional`, `multiple`, `multiple_token`: the ones that apply.
    pub flags: &'static [&'static str],
    /// The arguments of a `oneof` or `block`.
    pub arguments: &'static [DocArg],
}

impl DocArg {
    /// An argument with only its name and kind; the methods below add the rest, so the
    /// generated table states only what Redis documents.
    pub const fn new(name: &'static str, kind: &'static str) -> DocArg {
        DocArg {
            name,
            kind,
            key_spec_index: None,
            token: None,
            summary: "",
            since: "",
            deprecated_since: "",
            flags: &[],
            arguments: &[],
        }
    }

    /// With the index of its key spec.
    pub const fn key_spec(mut self, index: u8) -> DocArg {
        self.key_spec_index = Some(index);
        self
    }

    /// With the word that introduces it.
    pub const fn token(mut self, token: &'static str) -> DocArg {
        self.token = Some(token);
        self
    }

    /// With what it does.
    pub const fn summary(mut self, summary: &'static str) -> DocArg {
        self.summary = summary;
        self
    }

    /// With the version that added it.
    pub const fn since(mut self, since: &'static str) -> DocArg {
        self.since = since;
        self
    }

    /// With the version that deprecated it.
    pub const fn deprecated_since(mut self, version: &'static str) -> DocArg {
        self.deprecated_since = version;
        self
    }

    /// With its flags.
    pub const fn flags(mut self, flags: &'static [&'static str]) -> DocArg {
        self.flags = flags;
        self
    }

    /// With the arguments of a `oneof` or `block`.
    pub const fn arguments(mut self, arguments: &'static [DocArg]) -> DocArg {
        self.arguments = arguments;
        self
    }
}
