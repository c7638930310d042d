//! May this user run this command with these arguments? Redis 7.0's
//! `ACLSelectorCheckCmd`: the command bit (or an allowed first argument), then every key
//! against the key patterns with the access its key spec declares (`access` needs read;
//! `insert`, `update`, `delete` need write), then the channels of PUBLISH and the
//! SUBSCRIBE family against the channel patterns.

use bytes::Bytes;
use redline_resp::command::{self, CommandFlags, CommandSpec, KeySpecFlags};

use super::ids;
use super::selector::Selector;
use super::user::User;
use crate::glob::glob_match;

/// Why a command is refused, with the offending argument's index where there is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// The command (or subcommand) is not allowed.
    Command,
    /// The key at this index is not allowed.
    Key(usize),
    /// The channel at this index is not allowed.
    Channel(usize),
}

/// Checks `args` (already looked up as `spec`, arity checked) against `user`: allowed
/// when its root selector or any other allows it; otherwise the most telling refusal
/// (a channel over a key over the command), as Redis reports it.
pub fn check(user: &User, spec: &'static CommandSpec, args: &[Bytes]) -> Result<(), Denied> {
    let mut worst = match check_selector(&user.root, spec, args) {
        Ok(()) => return Ok(()),
        Err(denied) => denied,
    };
    for sel in &user.selectors {
        match check_selector(sel, spec, args) {
            Ok(()) => return Ok(()),
            // The gravest refusal; among equal ones the later argument (Redis's
            // `ACLCheckAllUserCommandPerm` logs the last key no selector matched).
            Err(denied) if (rank(denied), position(denied)) > (rank(worst), position(worst)) => {
                worst = denied
            }
            Err(_) => {}
        }
    }
    Err(worst)
}

/// Whether some selector of `user` allows this command and reading any key at all
/// (`allkeys`, or a `*` pattern with read access): Redis's
/// `ACLUserCheckCmdWithUnrestrictedKeyAccess`, which SORT's BY and GET need.
pub fn reads_every_key(user: &User, spec: &'static CommandSpec, args: &[Bytes]) -> bool {
    std::iter::once(&user.root)
        .chain(&user.selectors)
        .any(|sel| {
            let keys = sel.allkeys || sel.patterns.iter().any(|p| p.read && p.pattern == b"*");
            keys && check_selector(sel, spec, args).is_ok()
        })
}

/// The argument a refusal names (0 for a command).
fn position(denied: Denied) -> usize {
    match denied {
        Denied::Command => 0,
        Denied::Key(at) | Denied::Channel(at) => at,
    }
}

fn rank(denied: Denied) -> u8 {
    match denied {
        Denied::Command => 1,
        Denied::Key(_) => 2,
        Denied::Channel(_) => 3,
    }
}

fn check_selector(
    user: &Selector,
    spec: &'static CommandSpec,
    args: &[Bytes],
) -> Result<(), Denied> {
    if !user.allcommands && !spec.flags.contains(CommandFlags::NO_AUTH) {
        let Some(id) = ids::id_of(spec) else {
            // An entry newer than the 7.0 table (CLIENT SETINFO): allowed by `+@all` or by
            // its container, which is what would have set its bit.
            let parent = spec
                .name
                .split('|')
                .next()
                .and_then(|p| command::lookup(p.as_bytes()));
            let container = parent
                .and_then(ids::id_of)
                .is_some_and(|p| user.commands.get(p));
            if !(user.future || container) {
                return Err(Denied::Command);
            }
            return check_keys_and_channels(user, spec, args);
        };
        if !user.commands.get(id) {
            let first = args.get(if spec.is_subcommand() { 2 } else { 1 });
            let allowed = match (first, user.firstargs.get(&id)) {
                (Some(arg), Some(list)) => list.iter().any(|a| a.eq_ignore_ascii_case(arg)),
                _ => false,
            };
            if !allowed {
                return Err(Denied::Command);
            }
        }
    }
    check_keys_and_channels(user, spec, args)
}

fn check_keys_and_channels(
    user: &Selector,
    spec: &'static CommandSpec,
    args: &[Bytes],
) -> Result<(), Denied> {
    if !user.allkeys && spec.has_keys() {
        // Arguments whose keys cannot be found have none to check (the command itself
        // then answers the error), as in Redis.
        for (pos, flags) in command::keys_and_flags(args).unwrap_or_default() {
            let Some(key) = args.get(pos) else { continue };
            if !key_allowed(user, key, flags) {
                return Err(Denied::Key(pos));
            }
        }
    }
    if !user.allchannels {
        let (first, pattern) = match spec.name {
            "publish" | "spublish" => (1..args.len().min(2), false),
            "subscribe" | "ssubscribe" => (1..args.len(), false),
            "psubscribe" => (1..args.len(), true),
            _ => (0..0, false),
        };
        for pos in first {
            if !channel_allowed(user, &args[pos], pattern) {
                return Err(Denied::Channel(pos));
            }
        }
    }
    Ok(())
}

fn key_allowed(user: &Selector, key: &[u8], flags: KeySpecFlags) -> bool {
    let read = flags.contains(KeySpecFlags::ACCESS);
    let write =
        flags.intersects(KeySpecFlags::INSERT | KeySpecFlags::DELETE | KeySpecFlags::UPDATE);
    user.patterns
        .iter()
        .any(|p| (p.read || !read) && (p.write || !write) && glob_match(&p.pattern, key, false))
}

/// A channel matches a channel pattern; a subscription pattern (PSUBSCRIBE) must equal one
/// literally, so a pattern cannot widen what the user may hear.
pub fn channel_allowed(user: &Selector, channel: &[u8], pattern: bool) -> bool {
    user.allchannels
        || user.channels.iter().any(|allowed| {
            if pattern {
                allowed == channel
            } else {
                glob_match(allowed, channel, false)
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::user::PubsubDefault;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    fn run(user: &User, words: &[&str]) -> Result<(), Denied> {
        let a = args(words);
        let spec = command::resolve(&a).unwrap();
        check(user, spec, &a)
    }

    #[test]
    fn commands_keys_channels() {
        let mut u = User::new(PubsubDefault::ResetChannels);
        for r in [
            "+get",
            "+set",
            "+copy",
            "+select|0",
            "%R~r*",
            "%W~w*",
            "+publish",
            "&c*",
        ] {
            u.apply(r.as_bytes(), PubsubDefault::ResetChannels).unwrap();
        }
        assert_eq!(run(&u, &["del", "r1"]), Err(Denied::Command));
        assert_eq!(run(&u, &["get", "r1"]), Ok(()));
        assert_eq!(run(&u, &["get", "w1"]), Err(Denied::Key(1)));
        assert_eq!(run(&u, &["set", "w1", "v"]), Ok(()));
        assert_eq!(run(&u, &["set", "w1", "v", "GET"]), Err(Denied::Key(1)));
        assert_eq!(run(&u, &["copy", "r1", "w1"]), Ok(()));
        assert_eq!(run(&u, &["copy", "w1", "r1"]), Err(Denied::Key(1)));
        assert_eq!(run(&u, &["select", "0"]), Ok(()));
        assert_eq!(run(&u, &["select", "1"]), Err(Denied::Command));
        assert_eq!(run(&u, &["publish", "c1", "m"]), Ok(()));
        assert_eq!(run(&u, &["publish", "x", "m"]), Err(Denied::Channel(1)));
        assert_eq!(run(&u, &["auth", "x"]), Ok(()));
    }
}
