//! Which arguments of a command are keys, exactly as Redis 7.0's `COMMAND GETKEYS` says.
//!
//! Redis first walks the command's key specs (begin search, then find keys). When a spec is
//! `incomplete` or of unknown type, or cannot apply to the given arguments (a key count that
//! is not a strict non-negative integer or points past the end), the whole result is dropped
//! and Redis asks the command's own key finder ([`GetKeysProc`]) instead; commands whose
//! specs carry `variable_flags` go to their finder directly. Both paths are reproduced here,
//! including C's quirks where they change the answer: keywords compare as C strings (up to
//! a NUL byte), the spec path reads counts strictly and truncates them to 32 bits, the
//! finders read them with `atoi`. The test `tests/command_table.rs` checks the result
//! against a real server on a corpus of argument lists.

use super::flags::{CommandFlags, KeySpecFlags};
use super::lookup::resolve;
use super::spec::{BeginSearch, CommandSpec, FindKeys, GetKeysProc};
use crate::parse::parse_i64;

/// Why the keys of a command cannot be found.
///
/// The `Display` texts are the errors `COMMAND GETKEYS` gives in the same cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeysError {
    /// No arguments, an unknown command, or an unknown subcommand of a container.
    #[error("Invalid command specified")]
    UnknownCommand,
    /// The command takes no keys at all (only [`getkeys`] reports this).
    #[error("The command has no key arguments")]
    NoKeyArguments,
    /// The argument count does not match the command's arity.
    #[error("Invalid number of arguments specified for command")]
    WrongArity,
    /// The command takes keys, but none can be found in these arguments (a key count out of
    /// range or not a number, `STREAMS` without an even number of arguments after it...).
    #[error("Invalid arguments specified for command")]
    InvalidArguments,
}

/// The indexes in `args` of the key arguments (`args[0]` is the command name, so key
/// indexes start at 1), in Redis's order, possibly repeated.
///
/// A command without keys (`PING`) gives an empty list; see [`keys_into`] to reuse a
/// buffer, [`keys_and_flags`] for the access flags.
///
/// ```
/// use redline_resp::command::{keys, KeysError};
///
/// assert_eq!(keys(&["MSET", "a", "1", "b", "2"]), Ok(vec![1, 3]));
/// assert_eq!(keys(&["EVAL", "return 1", "2", "k1", "k2", "arg"]), Ok(vec![3, 4]));
/// assert_eq!(keys(&["ZUNIONSTORE", "dst", "2", "a", "b", "WEIGHTS", "1", "2"]), Ok(vec![1, 3, 4]));
/// assert_eq!(keys(&["XREAD", "COUNT", "2", "STREAMS", "s1", "s2", "0", "0"]), Ok(vec![4, 5]));
/// assert_eq!(keys(&["OBJECT", "ENCODING", "k"]), Ok(vec![2]));
/// assert_eq!(keys(&["PING"]), Ok(vec![]));
/// assert_eq!(keys(&["GET"]), Err(KeysError::WrongArity));
/// assert_eq!(keys(&["NOPE", "k"]), Err(KeysError::UnknownCommand));
/// assert_eq!(keys(&["ZUNION", "5", "k"]), Err(KeysError::InvalidArguments));
/// ```
pub fn keys<A: AsRef<[u8]>>(args: &[A]) -> Result<Vec<usize>, KeysError> {
    let spec = resolve(args).ok_or(KeysError::UnknownCommand)?;
    let mut out = Vec::new();
    keys_into(spec, args, &mut out)?;
    Ok(out)
}

/// `COMMAND GETKEYS` itself: [`keys`], except that a command without key arguments is an
/// error ([`KeysError::NoKeyArguments`], checked before the arity, as Redis does). A server
/// answers `COMMAND GETKEYS` with this and `-ERR <Display>` on error.
///
/// ```
/// use redline_resp::command::{getkeys, KeysError};
///
/// assert_eq!(getkeys(&["GET", "k"]), Ok(vec![1]));
/// assert_eq!(getkeys(&["PING"]), Err(KeysError::NoKeyArguments));
/// assert_eq!(
///     getkeys(&["GET"]).unwrap_err().to_string(),
///     "Invalid number of arguments specified for command"
/// );
/// ```
pub fn getkeys<A: AsRef<[u8]>>(args: &[A]) -> Result<Vec<usize>, KeysError> {
    let spec = resolve(args).ok_or(KeysError::UnknownCommand)?;
    if !spec.has_keys() {
        return Err(KeysError::NoKeyArguments);
    }
    let mut out = Vec::new();
    keys_into(spec, args, &mut out)?;
    Ok(out)
}

/// [`keys`] for an already resolved `spec`, appending to `out` so a caller can reuse one
/// buffer for every command (no allocation once it has grown). On error `out` is left as
/// it was.
///
/// ```
/// use redline_resp::command;
///
/// let mut out = Vec::with_capacity(8);
/// let args = ["DEL", "a", "b"];
/// command::keys_into(command::resolve(&args).unwrap(), &args, &mut out).unwrap();
/// assert_eq!(out, [1, 2]);
/// ```
pub fn keys_into<A: AsRef<[u8]>>(
    spec: &CommandSpec,
    args: &[A],
    out: &mut Vec<usize>,
) -> Result<(), KeysError> {
    find(spec, args, &mut Positions(out))
}

/// [`getkeys`] with the access flags Redis reports for each key: `COMMAND GETKEYSANDFLAGS`.
///
/// Flags come from the matching key spec, or from the key finder when Redis uses one; some
/// finders report no flags (an empty set), as Redis does.
///
/// ```
/// use redline_resp::command::{keys_and_flags, KeySpecFlags as K};
///
/// assert_eq!(keys_and_flags(&["SET", "k", "v", "GET"]), Ok(vec![(1, K::RW | K::ACCESS | K::UPDATE)]));
/// assert_eq!(keys_and_flags(&["SET", "k", "v"]), Ok(vec![(1, K::OW | K::UPDATE)]));
/// ```
pub fn keys_and_flags<A: AsRef<[u8]>>(args: &[A]) -> Result<Vec<(usize, KeySpecFlags)>, KeysError> {
    let spec = resolve(args).ok_or(KeysError::UnknownCommand)?;
    if !spec.has_keys() {
        return Err(KeysError::NoKeyArguments);
    }
    let mut out = Vec::new();
    find(spec, args, &mut out)?;
    Ok(out)
}

/// The indexes of the shard channels of `SSUBSCRIBE`, `SUNSUBSCRIBE` and `SPUBLISH`: not
/// keys (their key specs are `not_key`), but hashed to slots like keys, so a cluster client
/// routes them the same way. Empty for every other command.
///
/// ```
/// use redline_resp::command;
///
/// assert_eq!(command::shard_channels(&["SPUBLISH", "ch", "msg"]), Ok(vec![1]));
/// assert_eq!(command::shard_channels(&["SSUBSCRIBE", "a", "b"]), Ok(vec![1, 2]));
/// assert_eq!(command::keys(&["SPUBLISH", "ch", "msg"]), Ok(vec![]));
/// ```
pub fn shard_channels<A: AsRef<[u8]>>(args: &[A]) -> Result<Vec<usize>, KeysError> {
    let spec = resolve(args).ok_or(KeysError::UnknownCommand)?;
    if !spec.arity_ok(args.len()) {
        return Err(KeysError::WrongArity);
    }
    let mut out = Vec::new();
    let argc = argc_of(args)?;
    for key_spec in spec.key_specs {
        if key_spec.flags.contains(KeySpecFlags::NOT_KEY) {
            // The only failure is "no channel at all" (`SUNSUBSCRIBE` alone): an empty list.
            let one = std::slice::from_ref(key_spec);
            let _ = apply_specs(one, args, argc, true, &mut Positions(&mut out));
        }
    }
    Ok(out)
}

/// Where found keys go: positions only, or positions with flags.
trait Sink {
    fn push(&mut self, pos: i32, flags: KeySpecFlags);
    fn len(&self) -> usize;
    fn truncate(&mut self, len: usize);
    /// Whether it keeps each key's access flags (which a key finder may work out).
    fn wants_flags(&self) -> bool {
        true
    }
}

struct Positions<'a>(&'a mut Vec<usize>);

impl Sink for Positions<'_> {
    fn push(&mut self, pos: i32, _: KeySpecFlags) {
        // Positions are checked to lie in 1..argc before they are pushed.
        self.0.push(pos.unsigned_abs() as usize);
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }
    fn wants_flags(&self) -> bool {
        false
    }
}

impl Sink for Vec<(usize, KeySpecFlags)> {
    fn push(&mut self, pos: i32, flags: KeySpecFlags) {
        Vec::push(self, (pos.unsigned_abs() as usize, flags));
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn truncate(&mut self, len: usize) {
        Vec::truncate(self, len);
    }
}

/// Redis counts arguments in a C `int`; no real command comes near the limit.
fn argc_of<A>(args: &[A]) -> Result<i32, KeysError> {
    i32::try_from(args.len()).map_err(|_| KeysError::InvalidArguments)
}

/// The positions of the keys a cluster node checks the slots of before it runs the
/// command, appended to `out`: Redis's `getKeysFromCommand`, which `getNodeByQuery`
/// (cluster routing, a script's commands, EXEC's queue) and client-side tracking use.
/// It differs from [`keys_into`] (`COMMAND GETKEYS`, which prefers key specs): a
/// command with a key finder uses it alone (an unbalanced XREAD has no keys, a GEORADIUS
/// only its last STORE target), and the others their legacy first/last/step range. The
/// arity is not checked (a node checks it first); nothing is found for a malformed call.
///
/// ```
/// use redline_resp::command;
///
/// let mut out = Vec::new();
/// let args = ["XREAD", "STREAMS", "a", "b", "0"];
/// command::routing_keys_into(command::resolve(&args).unwrap(), &args, &mut out);
/// assert!(out.is_empty());
/// let args = ["MSET", "a", "1", "b", "2"];
/// command::routing_keys_into(command::resolve(&args).unwrap(), &args, &mut out);
/// assert_eq!(out, [1, 3]);
/// ```
pub fn routing_keys_into<A: AsRef<[u8]>>(spec: &CommandSpec, args: &[A], out: &mut Vec<usize>) {
    let Ok(argc) = argc_of(args) else {
        return;
    };
    if let Some(proc) = spec.get_keys {
        run_proc(proc, args, argc, &mut Positions(out));
        return;
    }
    if spec.first_key <= 0 || spec.key_step <= 0 {
        return;
    }
    let first = spec.first_key;
    let last = if spec.last_key < 0 {
        argc + spec.last_key
    } else {
        spec.last_key
    };
    // Redis skips positions past the arguments (a variadic command's short call).
    let mut pos = first;
    while pos <= last && pos < argc {
        out.push(pos.unsigned_abs() as usize);
        pos += spec.key_step;
    }
}

/// `COMMAND GETKEYS` minus the lookup: arity, then specs or finder, then the empty check.
fn find<A: AsRef<[u8]>, S: Sink>(
    spec: &CommandSpec,
    args: &[A],
    out: &mut S,
) -> Result<(), KeysError> {
    if !spec.arity_ok(args.len()) {
        return Err(KeysError::WrongArity);
    }
    // Most commands' one key is their first argument: no key spec to walk for its place.
    if !out.wants_flags() && spec.has_sole_first_key() {
        out.push(1, KeySpecFlags::EMPTY);
        return Ok(());
    }
    if !spec.has_keys() {
        return Ok(());
    }
    let argc = argc_of(args)?;
    let start = out.len();
    let has_key_spec = spec
        .key_specs
        .iter()
        .any(|s| !s.flags.contains(KeySpecFlags::NOT_KEY));
    let variable_flags = spec
        .key_specs
        .iter()
        .any(|s| s.flags.contains(KeySpecFlags::VARIABLE_FLAGS));
    let mut done = false;
    if has_key_spec && !variable_flags {
        done = apply_specs(spec.key_specs, args, argc, false, out).is_ok();
    }
    if !done {
        if let Some(proc) = spec.get_keys {
            run_proc(proc, args, argc, out);
        }
    }
    if out.len() == start && !spec.flags.contains(CommandFlags::NO_MANDATORY_KEYS) {
        return Err(KeysError::InvalidArguments);
    }
    Ok(())
}

/// Redis's `getKeysUsingKeySpecs`: every spec in order; any invalid spec drops all keys
/// found so far (`Err`). All index arithmetic is C `int` arithmetic, wrapping included.
fn apply_specs<A: AsRef<[u8]>, S: Sink>(
    specs: &[super::spec::KeySpec],
    args: &[A],
    argc: i32,
    include_not_keys: bool,
    out: &mut S,
) -> Result<(), ()> {
    let start = out.len();
    let result = (|| {
        for spec in specs {
            if spec.flags.contains(KeySpecFlags::NOT_KEY) && !include_not_keys {
                continue;
            }
            let first = match spec.begin_search {
                BeginSearch::Index(pos) => pos,
                BeginSearch::Keyword {
                    keyword,
                    start_from,
                } => {
                    match find_keyword(args, argc, keyword, start_from) {
                        Some(i) => i + 1,
                        // A missing keyword is not an error: that spec just has no keys.
                        None => continue,
                    }
                }
                BeginSearch::Unknown => return Err(()),
            };
            let (first, last, step) = match spec.find_keys {
                FindKeys::Range {
                    last_key,
                    key_step,
                    limit,
                } => {
                    let last = if last_key >= 0 {
                        first.wrapping_add(last_key)
                    } else if limit == 0 {
                        argc.wrapping_add(last_key)
                    } else {
                        let share = argc.wrapping_sub(first).checked_div(limit).ok_or(())?;
                        first.wrapping_add(share.wrapping_add(last_key))
                    };
                    (first, last, key_step)
                }
                FindKeys::Keynum {
                    keynum_index,
                    first_key,
                    key_step,
                } => {
                    let at = first.checked_add(keynum_index).ok_or(())?;
                    let count_arg = usize::try_from(at).ok().and_then(|i| args.get(i));
                    let count = count_arg.and_then(|a| parse_i64(a.as_ref())).ok_or(())?;
                    if count < 0 {
                        return Err(());
                    }
                    let first = first.wrapping_add(first_key);
                    // Redis casts the count to int: 4294967297 keys is 1 key.
                    let last = first.wrapping_add(count as i32).wrapping_sub(1);
                    (first, last, key_step)
                }
                FindKeys::Unknown => return Err(()),
            };
            if last >= argc || last < first || first >= argc || first < 1 {
                return Err(());
            }
            let mut i = first;
            while i <= last {
                out.push(i, spec.flags);
                // A zero or negative step never occurs in Redis's table; stop rather than spin.
                i = match i.checked_add(step) {
                    Some(next) if step > 0 => next,
                    _ => break,
                };
            }
            if spec.flags.contains(KeySpecFlags::INCOMPLETE) {
                return Err(());
            }
        }
        Ok(())
    })();
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// The index of `keyword` per a keyword begin-search: from `start_from` rightwards to the
/// next-to-last argument, or (negative) from `argc + start_from` leftwards down to index 2.
fn find_keyword<A: AsRef<[u8]>>(
    args: &[A],
    argc: i32,
    keyword: &str,
    start_from: i32,
) -> Option<i32> {
    let (start, end) = if start_from > 0 {
        (start_from, argc - 1)
    } else {
        (argc.wrapping_add(start_from), 1)
    };
    let mut i = start;
    while i != end {
        if i >= argc || i < 1 {
            return None;
        }
        if c_eq_ignore_case(args.get(i.unsigned_abs() as usize)?.as_ref(), keyword) {
            return Some(i);
        }
        i = if start <= end { i + 1 } else { i - 1 };
    }
    None
}

/// The key finders, each as Redis 7.0 wrote it.
fn run_proc<A: AsRef<[u8]>, S: Sink>(proc: GetKeysProc, args: &[A], argc: i32, out: &mut S) {
    let arg = |i: i32| {
        usize::try_from(i)
            .ok()
            .and_then(|i| args.get(i))
            .map(|a| a.as_ref())
    };
    let is = |i: i32, word: &str| arg(i).is_some_and(|a| c_eq_ignore_case(a, word));
    let none = KeySpecFlags::EMPTY;
    match proc {
        GetKeysProc::Numkeys {
            store,
            numkeys,
            first,
            step,
        } => {
            let (store, first, step) = (i32::from(store), i32::from(first), i32::from(step));
            let Some(count_arg) = arg(i32::from(numkeys)) else {
                return;
            };
            let num = c_atoi(count_arg);
            // Redis's sanity check: no keys if the command will fail with a syntax error.
            if num < 1 || num > (argc - first) / step.max(1) {
                return;
            }
            for i in 0..num {
                out.push(first + i * step, none);
            }
            if store != 0 {
                out.push(store, none);
            }
        }
        GetKeysProc::Sort => {
            out.push(1, KeySpecFlags::RO | KeySpecFlags::ACCESS);
            let mut store = None;
            let mut i = 2;
            while i < argc {
                if is(i, "limit") {
                    i += 2;
                } else if is(i, "store") && i + 1 < argc {
                    // The last STORE wins, as in SORT itself.
                    store = Some(i + 1);
                } else if is(i, "get") || is(i, "by") {
                    i += 1;
                }
                i += 1;
            }
            if let Some(pos) = store {
                out.push(pos, KeySpecFlags::OW | KeySpecFlags::UPDATE);
            }
        }
        GetKeysProc::SortRo => out.push(1, KeySpecFlags::RO | KeySpecFlags::ACCESS),
        GetKeysProc::Migrate => {
            let (mut first, mut num) = (3, 1);
            if argc > 6 {
                let mut i = 6;
                while i < argc {
                    if is(i, "keys") {
                        if arg(3).is_some_and(|k| !k.is_empty()) {
                            // KEYS with a key in position 3 is a syntax error for MIGRATE.
                            num = 0;
                        } else {
                            first = i + 1;
                            num = argc - first;
                        }
                        break;
                    }
                    if is(i, "auth") {
                        i += 1;
                    } else if is(i, "auth2") {
                        i += 2;
                    }
                    i += 1;
                }
            }
            let flags = KeySpecFlags::RW | KeySpecFlags::ACCESS | KeySpecFlags::DELETE;
            for pos in first..first + num {
                out.push(pos, flags);
            }
        }
        GetKeysProc::Georadius => {
            let mut stored = None;
            let mut i = 5;
            while i < argc {
                if (is(i, "store") || is(i, "storedist")) && i + 1 < argc {
                    stored = Some(i + 1);
                    i += 1;
                }
                i += 1;
            }
            out.push(1, none);
            if let Some(pos) = stored {
                out.push(pos, none);
            }
        }
        GetKeysProc::Xread => {
            let mut streams = None;
            let mut i = 1;
            while i < argc {
                if is(i, "block") || is(i, "count") {
                    i += 1;
                } else if is(i, "group") {
                    i += 2;
                } else if is(i, "noack") {
                } else if is(i, "streams") {
                    streams = Some(i);
                    break;
                } else {
                    break;
                }
                i += 1;
            }
            let Some(streams) = streams else { return };
            let num = argc - streams - 1;
            if num == 0 || num % 2 != 0 {
                return;
            }
            for pos in streams + 1..streams + 1 + num / 2 {
                out.push(pos, none);
            }
        }
        GetKeysProc::Set => {
            let get = (3..argc).any(|i| is(i, "get"));
            out.push(
                1,
                if get {
                    KeySpecFlags::RW | KeySpecFlags::ACCESS | KeySpecFlags::UPDATE
                } else {
                    KeySpecFlags::OW | KeySpecFlags::UPDATE
                },
            );
        }
        GetKeysProc::Bitfield => {
            let mut readonly = true;
            let mut i = 2;
            while i < argc {
                let remaining = argc - i - 1;
                if is(i, "get") && remaining >= 2 {
                    i += 2;
                } else if (is(i, "set") || is(i, "incrby")) && remaining >= 3 {
                    readonly = false;
                    break;
                } else if is(i, "overflow") && remaining >= 1 {
                    i += 1;
                } else {
                    // A syntax error: safer to assume a write, as Redis does.
                    readonly = false;
                    break;
                }
                i += 1;
            }
            out.push(
                1,
                if readonly {
                    KeySpecFlags::RO | KeySpecFlags::ACCESS
                } else {
                    KeySpecFlags::RW | KeySpecFlags::ACCESS | KeySpecFlags::UPDATE
                },
            );
        }
    }
}

/// `strcasecmp(arg, word) == 0` on a C string: `arg` ends at its first NUL byte.
fn c_eq_ignore_case(arg: &[u8], word: &str) -> bool {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    arg[..end].eq_ignore_ascii_case(word.as_bytes())
}

/// C's `atoi` as glibc implements it, `(int) strtol(s, NULL, 10)`: leading white space, a
/// sign, digits up to the first other byte; out of `long` range saturates, then the cast to
/// `int` keeps the low 32 bits. "3abc" is 3, "abc" is 0.
fn c_atoi(arg: &[u8]) -> i32 {
    let mut rest = arg;
    while let Some((b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r', tail)) = rest.split_first() {
        rest = tail;
    }
    let negative = match rest.split_first() {
        Some((b'-', tail)) => {
            rest = tail;
            true
        }
        Some((b'+', tail)) => {
            rest = tail;
            false
        }
        _ => false,
    };
    let mut value: i64 = 0;
    for &d in rest.iter().take_while(|b| b.is_ascii_digit()) {
        let d = i64::from(d - b'0');
        value = value.saturating_mul(10);
        value = if negative {
            value.saturating_sub(d)
        } else {
            value.saturating_add(d)
        };
    }
    value as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(args: &[&str]) -> Result<Vec<usize>, KeysError> {
        keys(args)
    }

    #[test]
    fn a_sole_first_key_is_what_the_key_specs_find() {
        let mut checked = 0;
        for spec in crate::command::all().filter(|s| s.has_sole_first_key()) {
            // Every argument count the arity allows, up to a few past its minimum.
            let least = spec.arity.unsigned_abs() as usize;
            let most = if spec.arity < 0 { least + 4 } else { least };
            for len in least.max(2)..=most {
                let mut args = vec!["x"; len];
                args[0] = spec.name;
                // The key specs' walk (asked for flags, it takes no shortcut).
                let mut walked: Vec<(usize, KeySpecFlags)> = Vec::new();
                if find(spec, &args, &mut walked).is_ok() {
                    let found: Vec<usize> = walked.iter().map(|(i, _)| *i).collect();
                    assert_eq!(found, [1], "{} with {len} arguments", spec.name);
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "only {checked} checked");
    }

    #[test]
    fn index_and_range() {
        assert_eq!(k(&["GET", "a"]), Ok(vec![1]));
        assert_eq!(k(&["get", "a", "b"]), Err(KeysError::WrongArity));
        assert_eq!(k(&["DEL", "a", "b", "c"]), Ok(vec![1, 2, 3]));
        assert_eq!(k(&["MSET", "a", "1", "b", "2"]), Ok(vec![1, 3]));
        // MSET with a missing value: Redis's step loop still stops at the last index.
        assert_eq!(k(&["MSET", "a", "1", "b"]), Ok(vec![1, 3]));
        assert_eq!(k(&["BLPOP", "a", "b", "0"]), Ok(vec![1, 2]));
        assert_eq!(k(&["RENAME", "a", "b"]), Ok(vec![1, 2]));
        assert_eq!(k(&["LMOVE", "a", "b", "LEFT", "RIGHT"]), Ok(vec![1, 2]));
        assert_eq!(k(&["MEMORY", "USAGE", "k"]), Ok(vec![2]));
        assert_eq!(k(&["xinfo", "STREAM", "s", "FULL"]), Ok(vec![2]));
        assert_eq!(k(&["PING"]), Ok(vec![]));
        assert_eq!(k(&["CLIENT", "SETNAME", "x"]), Ok(vec![]));
        assert_eq!(k(&["NOPE"]), Err(KeysError::UnknownCommand));
        assert_eq!(k(&["OBJECT", "NOPE", "k"]), Err(KeysError::UnknownCommand));
        assert_eq!(k(&[]), Err(KeysError::UnknownCommand));
    }

    #[test]
    fn keynum_specs() {
        assert_eq!(k(&["EVAL", "s", "0"]), Ok(vec![]));
        assert_eq!(k(&["EVAL", "s", "0", "a"]), Ok(vec![]));
        assert_eq!(k(&["EVAL", "s", "2", "a", "b", "c"]), Ok(vec![3, 4]));
        assert_eq!(k(&["FCALL", "f", "1", "a"]), Ok(vec![3]));
        assert_eq!(k(&["ZUNIONSTORE", "d", "2", "a", "b"]), Ok(vec![1, 3, 4]));
        assert_eq!(k(&["ZUNION", "2", "a", "b", "WITHSCORES"]), Ok(vec![2, 3]));
        assert_eq!(k(&["SINTERCARD", "1", "a", "LIMIT", "5"]), Ok(vec![2]));
        assert_eq!(k(&["LMPOP", "2", "a", "b", "LEFT"]), Ok(vec![2, 3]));
        assert_eq!(k(&["BLMPOP", "0", "2", "a", "b", "LEFT"]), Ok(vec![3, 4]));
        assert_eq!(k(&["BZMPOP", "0", "1", "a", "MIN"]), Ok(vec![3]));
        // Too many keys for the arguments: invalid, for the spec and for the finder.
        assert_eq!(
            k(&["ZUNIONSTORE", "d", "3", "a", "b"]),
            Err(KeysError::InvalidArguments)
        );
        assert_eq!(k(&["ZUNION", "0", "a"]), Err(KeysError::InvalidArguments));
    }

    #[test]
    fn keynum_fallbacks_read_like_atoi() {
        // Not a strict integer: the spec fails, the finder's atoi reads it, and the store key
        // comes last, as the finder orders it.
        assert_eq!(k(&["ZUNIONSTORE", "d", "02", "a", "b"]), Ok(vec![3, 4, 1]));
        assert_eq!(k(&["ZUNIONSTORE", "d", "+2", "a", "b"]), Ok(vec![3, 4, 1]));
        assert_eq!(k(&["EVAL", "s", " 1x", "a"]), Ok(vec![3]));
        assert_eq!(k(&["EVAL", "s", "x", "a"]), Ok(vec![]));
        assert_eq!(k(&["ZUNION", "x", "a"]), Err(KeysError::InvalidArguments));
    }

    #[test]
    fn hostile_counts_never_panic() {
        for count in [
            "-1",
            "-0",
            "9999999999",
            "2147483647",
            "2147483648",
            "4294967295",
            "4294967296",
            "-2147483648",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "99999999999999999999999",
            "",
            "\0",
            "1\0",
        ] {
            for cmd in ["EVAL", "ZUNIONSTORE", "ZUNION", "BLMPOP", "SINTERCARD"] {
                let args = [cmd, "x", count, "a", "b"];
                let _ = k(&args);
                let _ = keys_and_flags(&args);
            }
        }
        // The spec truncates the count to 32 bits, as Redis's `(int)` cast does.
        assert_eq!(k(&["EVAL", "s", "4294967297", "a"]), Ok(vec![3]));
        assert_eq!(k(&["EVAL", "s", "9999999999", "a"]), Ok(vec![]));
        assert_eq!(
            k(&["ZUNIONSTORE", "d", "-1", "a"]),
            Err(KeysError::InvalidArguments)
        );
    }

    #[test]
    fn keyword_specs() {
        assert_eq!(k(&["XREAD", "STREAMS", "a", "b", "0", "0"]), Ok(vec![2, 3]));
        assert_eq!(
            k(&["xread", "count", "1", "streams", "a", "0"]),
            Ok(vec![4])
        );
        // The spec path takes the first STREAMS it sees, even as an option's value.
        assert_eq!(
            k(&["XREAD", "COUNT", "STREAMS", "STREAMS", "a", "0"]),
            Ok(vec![3])
        );
        // An odd count after STREAMS: the spec takes floor(n/2) keys...
        assert_eq!(k(&["XREAD", "STREAMS", "a", "b", "0"]), Ok(vec![2]));
        // ...unless that is none; the finder then refuses odd counts.
        assert_eq!(k(&["XREAD", "STREAMS", "a", "0", "x"]), Ok(vec![2]));
        assert_eq!(
            k(&["XREAD", "COUNT", "1", "a"]),
            Err(KeysError::InvalidArguments)
        );
        assert_eq!(
            k(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">"]),
            Ok(vec![5])
        );
        assert_eq!(
            k(&["GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d"]),
            Ok(vec![1, 7])
        );
        assert_eq!(
            k(&["GEORADIUSBYMEMBER", "g", "m", "1", "km", "STOREDIST", "d"]),
            Ok(vec![1, 6])
        );
        // A keyword compares as a C string: it ends at NUL.
        assert_eq!(k(&["XREAD", "STREAMS\0junk", "a", "0"]), Ok(vec![2]));
    }

    #[test]
    fn finders() {
        assert_eq!(k(&["SORT", "a"]), Ok(vec![1]));
        assert_eq!(k(&["SORT", "a", "STORE", "d"]), Ok(vec![1, 3]));
        assert_eq!(
            k(&["SORT", "a", "STORE", "d", "store", "e"]),
            Ok(vec![1, 5])
        );
        assert_eq!(
            k(&["SORT", "a", "BY", "store", "LIMIT", "0", "1"]),
            Ok(vec![1])
        );
        assert_eq!(k(&["SORT", "a", "STORE"]), Ok(vec![1]));
        assert_eq!(k(&["SORT_RO", "a", "STORE", "d"]), Ok(vec![1]));
        assert_eq!(k(&["MIGRATE", "h", "1", "k", "0", "10"]), Ok(vec![3]));
        assert_eq!(
            k(&["MIGRATE", "h", "1", "", "0", "10", "KEYS", "a", "b"]),
            Ok(vec![7, 8])
        );
        assert_eq!(
            k(&["MIGRATE", "h", "1", "", "0", "10", "COPY", "AUTH2", "u", "keys", "KEYS", "a"]),
            Ok(vec![11])
        );
        assert_eq!(
            k(&["MIGRATE", "h", "1", "k", "0", "10", "KEYS", "a"]),
            Err(KeysError::InvalidArguments)
        );
        assert_eq!(k(&["SET", "a", "b", "GET"]), Ok(vec![1]));
        assert_eq!(k(&["BITFIELD", "a", "GET", "u8", "0"]), Ok(vec![1]));
    }

    #[test]
    fn flags() {
        type F = KeySpecFlags;
        assert_eq!(
            keys_and_flags(&["GET", "a"]),
            Ok(vec![(1, F::RO | F::ACCESS)])
        );
        assert_eq!(
            keys_and_flags(&["BITFIELD", "a", "GET", "u8", "0"]),
            Ok(vec![(1, F::RO | F::ACCESS)])
        );
        assert_eq!(
            keys_and_flags(&["BITFIELD", "a", "SET", "u8", "0", "1"]),
            Ok(vec![(1, F::RW | F::ACCESS | F::UPDATE)])
        );
        assert_eq!(
            keys_and_flags(&["SORT", "a", "STORE", "d"]),
            Ok(vec![(1, F::RO | F::ACCESS), (3, F::OW | F::UPDATE)])
        );
        assert_eq!(
            keys_and_flags(&["ZUNIONSTORE", "d", "1", "a"]),
            Ok(vec![(1, F::OW | F::UPDATE), (3, F::RO | F::ACCESS)])
        );
    }

    #[test]
    fn keys_into_keeps_buffer_on_error() {
        let mut out = vec![7];
        let args = ["ZUNION", "5", "a"];
        let spec = resolve(&args).unwrap();
        assert_eq!(
            keys_into(spec, &args, &mut out),
            Err(KeysError::InvalidArguments)
        );
        assert_eq!(out, [7]);
        keys_into(spec, &["ZUNION", "1", "a"], &mut out).unwrap();
        assert_eq!(out, [7, 2]);
    }

    #[test]
    fn shard_channels_of_sharded_pubsub() {
        assert_eq!(shard_channels(&["SSUBSCRIBE", "a"]), Ok(vec![1]));
        assert_eq!(shard_channels(&["SUNSUBSCRIBE"]), Ok(vec![]));
        assert_eq!(shard_channels(&["GET", "a"]), Ok(vec![]));
        assert_eq!(
            shard_channels(&["SPUBLISH", "a"]),
            Err(KeysError::WrongArity)
        );
    }

    #[test]
    fn atoi_reads_as_glibc_does() {
        assert_eq!(c_atoi(b"  +42xyz"), 42);
        assert_eq!(c_atoi(b"-7"), -7);
        assert_eq!(c_atoi(b"abc"), 0);
        assert_eq!(c_atoi(b"9999999999"), 1_410_065_407);
        assert_eq!(c_atoi(b"99999999999999999999"), -1);
        assert_eq!(c_atoi(b"-99999999999999999999"), 0);
    }
}
