//! Finding a command's entry by name, on the hot path of every request in client and server.
//!
//! Two open-addressing hash indexes are built at compile time from the generated table: one
//! for top-level names, one for subcommands keyed by (parent, name). A name of up to 31
//! bytes becomes a [`Key`] of four words loaded straight from the argument (no copy through a
//! stack buffer), lower-cased eight bytes at a time, its length in the last byte; one
//! multiplication hashes it and four word comparisons check the slot. No allocation, no
//! locking, no lazy initialisation, usually a single probe.

use super::spec::CommandSpec;
use super::table::TABLE;

/// Every top-level command, sorted by name. Its length is `COMMAND COUNT`.
pub static COMMANDS: &[CommandSpec] = TABLE;

/// A name as the indexes store it: little-endian words of the zero-padded, lower-cased
/// bytes, with the length in the top byte of the last word.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key([u64; 4]);

/// Longest name a key holds; every command name is shorter (checked at compile time).
const MAX_NAME: usize = 31;

impl Key {
    const EMPTY: Key = Key([0; 4]);

    /// The key of `name` at compile time; `None` when longer than [`MAX_NAME`].
    const fn new(name: &[u8]) -> Option<Key> {
        if name.len() > MAX_NAME {
            return None;
        }
        let mut words = [0u64; 4];
        let mut i = 0;
        while i < name.len() {
            words[i / 8] |= (name[i] as u64) << (8 * (i % 8));
            i += 1;
        }
        words[3] |= (name.len() as u64) << 56;
        Some(Key([
            lower_word(words[0]),
            lower_word(words[1]),
            lower_word(words[2]),
            lower_word(words[3]),
        ]))
    }

    /// [`Key::new`] for the hot path: each word is loaded straight from `name` into a
    /// register (a stack buffer would cost a store-forwarding stall on every lookup).
    #[inline(always)]
    fn load(name: &[u8]) -> Option<Key> {
        if name.len() > MAX_NAME {
            return None;
        }
        let len = (name.len() as u64) << 56;
        Some(Key([
            lower_word(word_at(name, 0)),
            lower_word(word_at(name, 8)),
            lower_word(word_at(name, 16)),
            lower_word(word_at(name, 24) | len),
        ]))
    }

    /// `==` in a constant.
    const fn eq_const(&self, other: &Key) -> bool {
        let (a, b) = (&self.0, &other.0);
        a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3]
    }

    /// Hash of a (parent, name) pair mapped to `bits` bits (its top bits).
    const fn slot(parent: &Key, name: &Key, bits: u32) -> usize {
        let [a, b, c, d] = name.0;
        let [e, f, g, h] = parent.0;
        let x = a
            ^ b.rotate_left(19)
            ^ c.rotate_left(38)
            ^ d
            ^ e.rotate_left(7)
            ^ f.rotate_left(29)
            ^ g.rotate_left(45)
            ^ h.rotate_left(13);
        (x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
    }
}

/// The eight bytes of `name` from `at` as a little-endian word, zero-padded past the end.
#[inline(always)]
fn word_at(name: &[u8], at: usize) -> u64 {
    let Some(tail) = name.get(at..) else { return 0 };
    let n = tail.len();
    let u64_at = |at: usize| {
        let bytes = tail.get(at..at + 8).and_then(|b| b.try_into().ok());
        u64::from_le_bytes(bytes.unwrap_or_default())
    };
    let u32_at = |at: usize| {
        let bytes = tail.get(at..at + 4).and_then(|b| b.try_into().ok());
        u64::from(u32::from_le_bytes(bytes.unwrap_or_default()))
    };
    let byte_at = |at: usize| tail.get(at).map_or(0, |&b| u64::from(b));
    match n {
        0 => 0,
        8.. => u64_at(0),
        // Two overlapping loads; the shared bytes are equal, so OR joins them.
        4..=7 => u32_at(0) | (u32_at(n - 4) << (8 * (n - 4))),
        _ => byte_at(0) | (byte_at(n / 2) << (8 * (n / 2))) | (byte_at(n - 1) << (8 * (n - 1))),
    }
}

/// ASCII lower case of eight bytes at once; bytes outside `A..=Z` are unchanged.
const fn lower_word(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let low7 = w & !HIGH;
    // High bit of each byte: set when the byte's low 7 bits are >= 'A', resp. > 'Z'.
    let at_least_a = low7.wrapping_add(ONES * (0x80 - b'A' as u64));
    let above_z = low7.wrapping_add(ONES * (0x80 - b'Z' as u64 - 1));
    let upper = at_least_a & !above_z & !w & HIGH;
    w | (upper >> 2)
}

/// One indexed name: its key and where its entry is.
#[derive(Clone, Copy)]
struct Entry {
    key: Key,
    /// Index in [`COMMANDS`] of the command, or of the parent for a subcommand.
    top: u16,
    /// Index in the parent's subcommands; unused for a top-level command.
    sub: u16,
}

/// An open-addressing index of `N` names in `SLOTS` slots (a power of two, at least twice
/// `N` so probe chains stay short).
struct Index<const SLOTS: usize, const N: usize> {
    /// Slot -> 1 + entry; 0 marks an empty slot.
    slots: [u16; SLOTS],
    entries: [Entry; N],
}

impl<const SLOTS: usize, const N: usize> Index<SLOTS, N> {
    const BITS: u32 = SLOTS.trailing_zeros();

    /// Indexes the top-level names (`subcommands == false`) or the subcommand names.
    const fn build(subcommands: bool) -> Self {
        assert!(SLOTS.is_power_of_two() && N * 2 <= SLOTS && N < u16::MAX as usize);
        let empty = Entry {
            key: Key::EMPTY,
            top: 0,
            sub: 0,
        };
        let mut index = Index {
            slots: [0; SLOTS],
            entries: [empty; N],
        };
        let mut n = 0;
        let mut top = 0;
        while top < TABLE.len() {
            let spec = &TABLE[top];
            let parent = key_of(spec.name.as_bytes());
            if !subcommands {
                index.insert(n, &Key::EMPTY, parent, top, 0);
                n += 1;
            } else {
                let mut sub = 0;
                while sub < spec.subcommands.len() {
                    let full = spec.subcommands[sub].name.as_bytes();
                    let (_, name) = full.split_at(spec.name.len() + 1);
                    index.insert(n, &parent, key_of(name), top, sub);
                    n += 1;
                    sub += 1;
                }
            }
            top += 1;
        }
        assert!(n == N, "index size does not match the table");
        index
    }

    const fn insert(&mut self, entry: usize, parent: &Key, key: Key, top: usize, sub: usize) {
        let mut slot = Key::slot(parent, &key, Self::BITS);
        while self.slots[slot] != 0 {
            slot = (slot + 1) & (SLOTS - 1);
        }
        self.slots[slot] = entry as u16 + 1;
        self.entries[entry] = Entry {
            key,
            top: top as u16,
            sub: sub as u16,
        };
    }

    /// The first entry [`Index::probe`] gives; `const`, so names are also found at
    /// compile time ([`position_const`]).
    const fn find(&self, parent: &Key, key: &Key) -> Option<&Entry> {
        let mut slot = Key::slot(parent, key, Self::BITS);
        // Ends: the index is at most half full, so an empty slot is always reached.
        loop {
            let entry = self.slots[slot] as usize;
            if entry == 0 {
                return None;
            }
            if self.entries[entry - 1].key.eq_const(key) {
                return Some(&self.entries[entry - 1]);
            }
            slot = (slot + 1) & (SLOTS - 1);
        }
    }

    /// The entries whose name is `key` under `parent`, in probe order (several for a
    /// subcommand name shared by many parents only if their hashes collide).
    #[inline(always)]
    fn probe<'a>(&'a self, parent: &Key, key: &'a Key) -> impl Iterator<Item = &'a Entry> + 'a {
        let mut slot = Key::slot(parent, key, Self::BITS);
        // Ends: the index is at most half full, so an empty slot is always reached.
        std::iter::from_fn(move || loop {
            let entry = usize::from(*self.slots.get(slot)?).checked_sub(1)?;
            slot = (slot + 1) & (SLOTS - 1);
            let entry = self.entries.get(entry)?;
            if entry.key == *key {
                return Some(entry);
            }
        })
    }
}

const fn key_of(name: &[u8]) -> Key {
    match Key::new(name) {
        Some(key) => key,
        None => panic!("command name longer than MAX_NAME"),
    }
}

const fn count_subcommands() -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < TABLE.len() {
        n += TABLE[i].subcommands.len();
        i += 1;
    }
    n
}

/// Entries of the table, commands and subcommands: every [`CommandSpec::id`] is below.
pub const ENTRY_COUNT: usize = TABLE.len() + count_subcommands();

static TOP_LEVEL: Index<1024, { TABLE.len() }> = Index::build(false);
static SUBCOMMANDS: Index<512, { count_subcommands() }> = Index::build(true);

/// Finds a top-level command by name, ignoring ASCII case, without allocating.
///
/// A container such as `CLIENT` is returned as itself; use [`lookup_subcommand`] or
/// [`resolve`] for `CLIENT SETNAME`.
///
/// ```
/// use redline_resp::command;
///
/// assert_eq!(command::lookup(b"gEt").unwrap().name, "get");
/// assert!(command::lookup(b"CLIENT").unwrap().has_subcommands());
/// assert!(command::lookup(b"NOPE").is_none());
/// ```
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    lookup_key(&Key::load(name)?)
}

/// Where [`lookup`] would find `name` in [`COMMANDS`], computed at compile time for a
/// name known when the program is built (a scan of the table, free at run time when
/// used in a constant).
///
/// It gives the position, not the entry: a constant holding the entry would point at
/// a copy of the table in the crate that uses it, not at `COMMANDS`.
///
/// ```
/// use redline_resp::command::{self, COMMANDS};
///
/// const GET: Option<usize> = command::position_const("GET");
/// let get = GET.and_then(|i| COMMANDS.get(i)).unwrap();
/// assert!(std::ptr::eq(get, command::lookup(b"get").unwrap()));
/// assert!(command::position_const("NOPE").is_none());
/// ```
pub const fn position_const(name: &str) -> Option<usize> {
    let Some(key) = Key::new(name.as_bytes()) else {
        return None;
    };
    match TOP_LEVEL.find(&Key::EMPTY, &key) {
        Some(entry) => Some(entry.top as usize),
        None => None,
    }
}

#[inline(always)]
fn lookup_key(key: &Key) -> Option<&'static CommandSpec> {
    let entry = TOP_LEVEL.find(&Key::EMPTY, key)?;
    COMMANDS.get(usize::from(entry.top))
}

/// Finds the subcommand `sub` of `parent` (`SETNAME` of `CLIENT`), ignoring ASCII case.
///
/// `None` when `parent` has no subcommands or none with that name.
///
/// ```
/// use redline_resp::command;
///
/// let config = command::lookup(b"CONFIG").unwrap();
/// assert_eq!(command::lookup_subcommand(config, b"get").unwrap().name, "config|get");
/// assert!(command::lookup_subcommand(config, b"nope").is_none());
/// ```
pub fn lookup_subcommand(parent: &'static CommandSpec, sub: &[u8]) -> Option<&'static CommandSpec> {
    if parent.subcommands.is_empty() {
        return None;
    }
    subcommand_key(parent, &Key::load(parent.name.as_bytes())?, sub)
}

/// [`lookup_subcommand`] with the parent's key already computed.
#[inline(always)]
fn subcommand_key(
    parent: &'static CommandSpec,
    parent_key: &Key,
    sub: &[u8],
) -> Option<&'static CommandSpec> {
    let key = Key::load(sub)?;
    // Another parent's subcommand could share the slot chain; the pointer test is the fast
    // path (the parent came from this table), the name test the rule.
    let is_parent = |top: u16| {
        COMMANDS
            .get(usize::from(top))
            .is_some_and(|c| std::ptr::eq(c, parent) || c.name == parent.name)
    };
    let entry = SUBCOMMANDS
        .probe(parent_key, &key)
        .find(|entry| is_parent(entry.top))?;
    COMMANDS
        .get(usize::from(entry.top))?
        .subcommands
        .get(usize::from(entry.sub))
}

/// Finds the entry that runs `args` (`args[0]` is the command name), as Redis does: the
/// subcommand named by `args[1]` when the command has subcommands and there is a second
/// argument, else the command itself.
///
/// `None` for an empty `args`, an unknown command or an unknown subcommand.
///
/// ```
/// use redline_resp::command;
///
/// assert_eq!(command::resolve(&["object", "ENCODING", "k"]).unwrap().name, "object|encoding");
/// assert_eq!(command::resolve(&["GET", "k"]).unwrap().name, "get");
/// assert_eq!(command::resolve(&["CONFIG"]).unwrap().name, "config");
/// assert!(command::resolve(&["CONFIG", "nope"]).is_none());
/// ```
pub fn resolve<A: AsRef<[u8]>>(args: &[A]) -> Option<&'static CommandSpec> {
    // The key of args[0] is the parent's key too: it is lower-cased.
    let key = Key::load(args.first()?.as_ref())?;
    let spec = lookup_key(&key)?;
    match args.get(1) {
        Some(sub) if spec.has_subcommands() => subcommand_key(spec, &key, sub.as_ref()),
        _ => Some(spec),
    }
}

/// Every command then its subcommands, in table order: the names `COMMAND LIST` returns.
///
/// ```
/// let names: Vec<_> = redline_resp::command::all().map(|c| c.name).collect();
/// assert!(names.contains(&"get") && names.contains(&"client|setname"));
/// ```
pub fn all() -> impl Iterator<Item = &'static CommandSpec> {
    COMMANDS
        .iter()
        .flat_map(|spec| std::iter::once(spec).chain(spec.subcommands.iter()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_in_table_order() {
        let ids: Vec<Option<usize>> = all().map(CommandSpec::index).collect();
        let expected: Vec<Option<usize>> = (0..ENTRY_COUNT).map(Some).collect();
        assert_eq!(ids, expected);
    }

    #[test]
    fn every_name_is_found_in_any_case() {
        for spec in all() {
            let found = resolve(&spec.name.split('|').collect::<Vec<_>>());
            assert!(std::ptr::eq(found.unwrap(), spec), "{}", spec.name);
            let upper = spec.name.to_ascii_uppercase();
            let found = resolve(&upper.split('|').collect::<Vec<_>>());
            assert!(std::ptr::eq(found.unwrap(), spec), "{upper}");
        }
    }

    #[test]
    fn positions_found_in_constants_are_the_lookup_s() {
        for (i, spec) in COMMANDS.iter().enumerate() {
            assert_eq!(position_const(spec.name), Some(i), "{}", spec.name);
            let upper = spec.name.to_ascii_uppercase();
            assert_eq!(position_const(&upper), Some(i), "{upper}");
        }
        assert_eq!(position_const("config|get"), None);
        assert_eq!(position_const(&"x".repeat(MAX_NAME + 1)), None);
    }

    #[test]
    fn table_is_sorted_and_lower_case() {
        for list in std::iter::once(COMMANDS).chain(COMMANDS.iter().map(|c| c.subcommands)) {
            assert!(list.windows(2).all(|w| w[0].name < w[1].name));
            assert!(list.iter().all(|c| c.name == c.name.to_ascii_lowercase()));
        }
        for parent in COMMANDS {
            for sub in parent.subcommands {
                assert!(
                    sub.name.starts_with(&format!("{}|", parent.name)),
                    "{}",
                    sub.name
                );
                assert!(sub.subcommands.is_empty());
            }
        }
    }

    #[test]
    fn unknown_names() {
        for name in [
            &b""[..],
            b"ge",
            b"gett",
            b"get\0",
            b"\xff\xfe",
            &[b'a'; 100],
            b"client|setname",
        ] {
            assert!(lookup(name).is_none(), "{name:?}");
        }
        let client = lookup(b"client").unwrap();
        assert!(lookup_subcommand(client, b"").is_none());
        assert!(lookup_subcommand(client, &[b'x'; 100]).is_none());
        assert!(lookup_subcommand(lookup(b"get").unwrap(), b"x").is_none());
        assert!(resolve::<&[u8]>(&[]).is_none());
        assert!(resolve(&["client", "nope"]).is_none());
    }

    #[test]
    fn const_and_runtime_keys_agree() {
        let samples: Vec<Vec<u8>> = (0..=MAX_NAME)
            .map(|len| (0..len).map(|i| b"aZ_|-09\x80\xff"[i % 9]).collect())
            .chain(all().map(|spec| spec.name.to_ascii_uppercase().into_bytes()))
            .collect();
        for name in &samples {
            assert!(Key::new(name) == Key::load(name), "{name:?}");
            let lower = name.to_ascii_lowercase();
            assert!(Key::load(name) == Key::new(&lower), "{name:?}");
        }
        assert!(Key::load(&[b'x'; 32]).is_none() && Key::new(&[b'x'; 32]).is_none());
        // The length is part of the key: trailing NULs do not alias a shorter name.
        assert!(Key::load(b"get\0") != Key::load(b"get"));
    }

    #[test]
    fn lower_word_is_ascii_lowercase_for_every_byte() {
        for byte in 0..=255u8 {
            for at in 0..8 {
                let mut bytes = [b'Q', 0x80, b'z', b'@', b'[', 0xC1, b'A', b'Z'];
                bytes[at] = byte;
                let expected = bytes.map(|b| b.to_ascii_lowercase());
                assert_eq!(
                    lower_word(u64::from_le_bytes(bytes)).to_le_bytes(),
                    expected
                );
            }
        }
    }

    #[test]
    fn subcommand_containers() {
        // Redis returns the container itself when no subcommand is given.
        assert_eq!(resolve(&["client"]).unwrap().name, "client");
        assert_eq!(
            resolve(&["Client", "SetName", "x"]).unwrap().name,
            "client|setname"
        );
        assert_eq!(
            resolve(&["xinfo", "stream", "s"]).unwrap().name,
            "xinfo|stream"
        );
        assert_eq!(
            resolve(&["memory", "usage", "k"]).unwrap().name,
            "memory|usage"
        );
        // A plain command ignores its arguments.
        assert_eq!(resolve(&["get", "stream"]).unwrap().name, "get");
    }
}
