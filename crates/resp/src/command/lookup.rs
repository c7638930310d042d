//! Finding a command's entry by name, on the hot path of every request in client and server.
//!
//! Top-level names go through an open-addressing hash index built at compile time from the
//! generated table: the name is lower-cased into a stack buffer and hashed (FNV-1a) in the
//! same pass, then one or two slots are probed, each with one length-and-bytes comparison.
//! No allocation, no locking, no lazy initialisation. Subcommands (at most a few dozen per
//! parent) are found by binary search over the parent's sorted list.

use super::spec::CommandSpec;
use super::table::TABLE;

/// Every top-level command, sorted by name. Its length is `COMMAND COUNT`.
pub static COMMANDS: &[CommandSpec] = TABLE;

/// Longer names cannot be commands (the longest is well under this); checked below.
const MAX_NAME: usize = 32;
/// Power of two, over four times the number of commands, so probe chains stay short.
const SLOTS: usize = 1024;
const MASK: usize = SLOTS - 1;

/// Slot -> 1 + index in [`COMMANDS`]; 0 marks an empty slot.
static INDEX: [u16; SLOTS] = build_index();

const _: () = assert!(TABLE.len() * 4 <= SLOTS && TABLE.len() < u16::MAX as usize);
const _: () = assert!(names_fit(TABLE, 0));

const fn names_fit(specs: &[CommandSpec], prefix: usize) -> bool {
    let mut i = 0;
    while i < specs.len() {
        let spec = &specs[i];
        if spec.name.len() - prefix > MAX_NAME || !names_fit(spec.subcommands, spec.name.len() + 1)
        {
            return false;
        }
        i += 1;
    }
    true
}

const FNV_OFFSET: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;

const fn slot_of(hash: u32) -> usize {
    ((hash ^ (hash >> 16)) as usize) & MASK
}

const fn build_index() -> [u16; SLOTS] {
    let mut index = [0u16; SLOTS];
    let mut i = 0;
    while i < TABLE.len() {
        let name = TABLE[i].name.as_bytes();
        let mut hash = FNV_OFFSET;
        let mut j = 0;
        while j < name.len() {
            hash = (hash ^ name[j] as u32).wrapping_mul(FNV_PRIME);
            j += 1;
        }
        let mut slot = slot_of(hash);
        while index[slot] != 0 {
            slot = (slot + 1) & MASK;
        }
        index[slot] = (i + 1) as u16;
        i += 1;
    }
    index
}

/// Finds a top-level command by name, ignoring ASCII case, without allocating.
///
/// A container such as `CLIENT` is returned as itself; use [`lookup_subcommand`] or
/// [`resolve`] for `CLIENT SETNAME`.
///
/// ```
/// use redline_resp::command;
///
/// assert_eq!(command::lookup(b"gEt").unwrap().name, "get");
/// assert_eq!(command::lookup(b"CLIENT").unwrap().subcommands.len(), 21);
/// assert!(command::lookup(b"NOPE").is_none());
/// ```
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    if name.len() > MAX_NAME {
        return None;
    }
    let mut buf = [0u8; MAX_NAME];
    let mut hash = FNV_OFFSET;
    for (dst, &byte) in buf.iter_mut().zip(name) {
        let lower = byte.to_ascii_lowercase();
        *dst = lower;
        hash = (hash ^ lower as u32).wrapping_mul(FNV_PRIME);
    }
    let lower = &buf[..name.len()];
    let mut slot = slot_of(hash);
    // Terminates: the index is at most a quarter full, so an empty slot is always reached.
    loop {
        let spec = COMMANDS.get(usize::from(INDEX[slot]).checked_sub(1)?)?;
        if spec.name.as_bytes() == lower {
            return Some(spec);
        }
        slot = (slot + 1) & MASK;
    }
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
    if parent.subcommands.is_empty() || sub.len() > MAX_NAME {
        return None;
    }
    let mut buf = [0u8; MAX_NAME];
    for (dst, &byte) in buf.iter_mut().zip(sub) {
        *dst = byte.to_ascii_lowercase();
    }
    let lower = &buf[..sub.len()];
    // Subcommand names are `parent|sub`: compare the part after the bar.
    let skip = parent.name.len() + 1;
    let found = parent.subcommands.binary_search_by(|candidate| {
        let name = candidate.name.as_bytes();
        name.get(skip..).unwrap_or(name).cmp(lower)
    });
    found.ok().and_then(|i| parent.subcommands.get(i))
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
    let spec = lookup(args.first()?.as_ref())?;
    match args.get(1) {
        Some(sub) if spec.has_subcommands() => lookup_subcommand(spec, sub.as_ref()),
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
