//! One ACL user and the rules of `ACL SETUSER` that change it, applied one at a time
//! with Redis 7.0's semantics and error kinds (`ACLSetUser` / `ACLSetSelector`).
//!
//! Command permissions are a bitmap over the table's command ids ([`CommandBits`]) plus
//! Redis's extra "future commands" bit (set only by `+@all`), the `allcommands` flag
//! (cleared by any removal) and the allowed first arguments of otherwise denied
//! commands (`+select|0`). The textual rules `ACL LIST` prints are derived from the
//! bitmap (see `describe.rs`), as Redis 7.0 does.

use std::collections::HashMap;

use redline_resp::command::{self, AclCategories, CommandSpec};
use sha2::{Digest, Sha256};

use super::ids::{self, CommandBits};

/// A key pattern and what it allows (`~p` both, `%R~p` read, `%W~p` write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    /// The glob.
    pub pattern: Vec<u8>,
    /// Reads allowed.
    pub read: bool,
    /// Writes allowed.
    pub write: bool,
}

/// `sanitize-payload` / `skip-sanitize-payload`: neither until one is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sanitize {
    /// Neither flag.
    Unset,
    /// `sanitize-payload`.
    Sanitize,
    /// `skip-sanitize-payload`.
    Skip,
}

/// What a user may do.
#[derive(Debug, Clone)]
pub struct User {
    /// `on` / `off`.
    pub enabled: bool,
    /// Any password is accepted.
    pub nopass: bool,
    /// Payload sanitizing flag.
    pub sanitize: Sanitize,
    /// SHA-256 of each password, in the order added.
    pub passwords: Vec<[u8; 32]>,
    /// `allkeys` (`~*`).
    pub allkeys: bool,
    /// Key patterns, in the order added.
    pub patterns: Vec<KeyPattern>,
    /// `allchannels` (`&*`).
    pub allchannels: bool,
    /// Channel patterns, in the order added.
    pub channels: Vec<Vec<u8>>,
    /// `allcommands`: set by `+@all`, cleared by any command removed.
    pub allcommands: bool,
    /// Redis's reserved "future commands" bit: set by `+@all`, cleared by `-@all`.
    pub future: bool,
    /// Allowed command ids.
    pub commands: CommandBits,
    /// First arguments allowed for a denied command (`+select|0`), by command id.
    pub firstargs: HashMap<usize, Vec<Vec<u8>>>,
}

/// Why a rule was refused; [`RuleError::text`] is Redis's wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    /// Unknown command or category.
    UnknownName,
    /// Not a rule.
    Syntax,
    /// A key pattern after `allkeys`.
    KeysAfterAll,
    /// A channel after `allchannels`.
    ChannelsAfterAll,
    /// `<pass` / `!hash` of a password the user does not have.
    NoSuchPassword,
    /// `#hash` / `!hash` that is not 64 lowercase hex digits.
    BadHash,
    /// `+config|get|x`.
    SubcommandFirstArg,
}

impl RuleError {
    /// The reason Redis gives after `Error in ACL SETUSER modifier '...': `.
    pub fn text(self) -> &'static str {
        match self {
            RuleError::UnknownName => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeysAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelsAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// SHA-256 of a password.
pub fn hash_password(password: &[u8]) -> [u8; 32] {
    Sha256::digest(password).into()
}

/// Lowercase hex of a hash, as Redis shows it.
pub fn hex(hash: &[u8; 32]) -> String {
    hash.iter().fold(String::with_capacity(64), |mut s, b| {
        s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
        s
    })
}

/// Parses a hash given as 64 lowercase hex digits (Redis accepts nothing else).
fn parse_hash(text: &[u8]) -> Result<[u8; 32], RuleError> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if text.len() != 64 {
        return Err(RuleError::BadHash);
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        let (Some(hi), Some(lo)) = (digit(pair[0]), digit(pair[1])) else {
            return Err(RuleError::BadHash);
        };
        *byte = hi << 4 | lo;
    }
    Ok(out)
}

/// A command or `parent|sub` name, ignoring case (Redis's `ACLLookupCommand`).
fn lookup_name(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut parts = name.split(|&b| b == b'|');
    let top = command::lookup(parts.next()?)?;
    match (parts.next(), parts.next()) {
        (None, _) => Some(top),
        (Some(sub), None) => command::lookup_subcommand(top, sub),
        _ => None,
    }
}

/// A category by name, ignoring case.
pub fn category(name: &[u8]) -> Option<AclCategories> {
    let name = std::str::from_utf8(name).ok()?;
    AclCategories::from_name(&name.to_ascii_lowercase())
}

impl Default for User {
    fn default() -> Self {
        User::new()
    }
}

impl User {
    /// A user as `ACL SETUSER` creates it: `off`, no password, no keys, no channels, no
    /// commands.
    pub fn new() -> User {
        User {
            enabled: false,
            nopass: false,
            sanitize: Sanitize::Unset,
            passwords: Vec::new(),
            allkeys: false,
            patterns: Vec::new(),
            allchannels: false,
            channels: Vec::new(),
            allcommands: false,
            future: false,
            commands: CommandBits::none(),
            firstargs: HashMap::new(),
        }
    }

    /// The `default` user of a fresh server: everything allowed, password from
    /// `requirepass` (none when empty).
    pub fn default_user(requirepass: &[u8]) -> User {
        let mut user = User::new();
        for rule in [&b"on"[..], b"allkeys", b"allchannels", b"+@all"] {
            let _ = user.apply(rule);
        }
        user.set_requirepass(requirepass);
        user
    }

    /// What `requirepass` does to the default user: `resetpass`, then `>password`, or
    /// `nopass` when empty.
    pub fn set_requirepass(&mut self, requirepass: &[u8]) {
        self.passwords.clear();
        self.nopass = requirepass.is_empty();
        if !requirepass.is_empty() {
            self.passwords.push(hash_password(requirepass));
        }
    }

    /// True when every command, key and channel is allowed: the dispatcher's fast path.
    pub fn unrestricted(&self) -> bool {
        self.allcommands && self.allkeys && self.allchannels
    }

    /// Whether `password` opens this user (disabled users open to nothing).
    pub fn password_ok(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let hash = hash_password(password);
        self.passwords.contains(&hash)
    }

    /// Applies one `ACL SETUSER` rule.
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize = Sanitize::Skip;
        } else if is("sanitize-payload") {
            self.sanitize = Sanitize::Sanitize;
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if is("clearselectors") {
            // Selectors are not supported, so there are none to clear.
        } else if is("reset") {
            for rule in [
                &b"resetpass"[..],
                b"resetkeys",
                b"resetchannels",
                b"off",
                b"sanitize-payload",
                b"-@all",
            ] {
                self.apply(rule)?;
            }
        } else if let Some((&first, rest)) = op.split_first() {
            match first {
                b'>' | b'#' => {
                    let hash = if first == b'>' {
                        hash_password(rest)
                    } else {
                        parse_hash(rest)?
                    };
                    if !self.passwords.contains(&hash) {
                        self.passwords.push(hash);
                    }
                    self.nopass = false;
                }
                b'<' | b'!' => {
                    let hash = if first == b'<' {
                        hash_password(rest)
                    } else {
                        parse_hash(rest)?
                    };
                    let Some(at) = self.passwords.iter().position(|p| *p == hash) else {
                        return Err(RuleError::NoSuchPassword);
                    };
                    self.passwords.remove(at);
                }
                _ => return self.apply_selector(op),
            }
        }
        // An empty rule does nothing, as in Redis.
        Ok(())
    }

    /// The rules about keys, channels and commands (Redis's `ACLSetSelector`).
    fn apply_selector(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if is("allkeys") || op == b"~*" {
            self.allkeys = true;
            self.patterns.clear();
        } else if is("resetkeys") {
            self.allkeys = false;
            self.patterns.clear();
        } else if is("allchannels") || op == b"&*" {
            self.allchannels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.allchannels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.commands = CommandBits::all();
            self.allcommands = true;
            self.future = true;
            self.firstargs.clear();
        } else if is("nocommands") || is("-@all") {
            self.commands = CommandBits::none();
            self.allcommands = false;
            self.future = false;
            self.firstargs.clear();
        } else if op.first() == Some(&b'~') || op.first() == Some(&b'%') {
            self.add_key_pattern(op)?;
        } else if let Some(channel) = op.strip_prefix(b"&") {
            if self.allchannels {
                return Err(RuleError::ChannelsAfterAll);
            }
            if !self.channels.iter().any(|c| c == channel) {
                self.channels.push(channel.to_vec());
            }
        } else if let Some(rest) = op.strip_prefix(b"+").or_else(|| op.strip_prefix(b"-")) {
            let allow = op[0] == b'+';
            match rest.strip_prefix(b"@") {
                Some(name) => {
                    let flag = category(name).ok_or(RuleError::UnknownName)?;
                    self.set_category(flag, allow);
                }
                None => self.command_rule(rest, allow)?,
            }
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// `~pattern`, `%R~pattern`, `%W~pattern`, `%RW~pattern`.
    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.allkeys {
            return Err(RuleError::KeysAfterAll);
        }
        let (mut read, mut write) = (false, false);
        let mut offset = 1;
        if op[0] == b'%' {
            while let Some(&c) = op.get(offset) {
                offset += 1;
                match c.to_ascii_uppercase() {
                    b'R' if !read => read = true,
                    b'W' if !write => write = true,
                    b'~' => break,
                    _ => return Err(RuleError::Syntax),
                }
            }
            if !read && !write {
                return Err(RuleError::Syntax);
            }
        } else {
            (read, write) = (true, true);
        }
        let pattern = op.get(offset..).unwrap_or_default();
        match self.patterns.iter_mut().find(|p| p.pattern == pattern) {
            Some(existing) => {
                existing.read |= read;
                existing.write |= write;
            }
            None => self.patterns.push(KeyPattern {
                pattern: pattern.to_vec(),
                read,
                write,
            }),
        }
        Ok(())
    }

    /// `+name`, `-name`, `+parent|sub`, `-parent|sub`, `+command|firstarg`.
    fn command_rule(&mut self, name: &[u8], allow: bool) -> Result<(), RuleError> {
        let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
            let spec = lookup_name(name).ok_or(RuleError::UnknownName)?;
            self.change(spec, allow);
            return Ok(());
        };
        let (parent, sub) = (&name[..bar], &name[bar + 1..]);
        let spec = lookup_name(parent).ok_or(RuleError::UnknownName)?;
        if spec.is_subcommand() {
            return Err(RuleError::SubcommandFirstArg);
        }
        if sub.is_empty() {
            return Err(RuleError::Syntax);
        }
        if spec.has_subcommands() {
            let sub = command::lookup_subcommand(spec, sub).ok_or(RuleError::UnknownName)?;
            self.change(sub, allow);
        } else if allow {
            let id = ids::id_of(spec).ok_or(RuleError::UnknownName)?;
            let list = self.firstargs.entry(id).or_default();
            if !list.iter().any(|a| a.eq_ignore_ascii_case(sub)) {
                list.push(sub.to_vec());
            }
        } else {
            return Err(RuleError::UnknownName);
        }
        Ok(())
    }

    /// Sets one command's bit (and its subcommands'), as Redis's `ACLChangeSelectorPerm`.
    pub fn change(&mut self, spec: &'static CommandSpec, allow: bool) {
        if let Some(id) = ids::id_of(spec) {
            self.set_bit(id, allow);
            self.firstargs.remove(&id);
        }
        for sub in spec.subcommands {
            if let Some(id) = ids::id_of(sub) {
                self.set_bit(id, allow);
            }
        }
    }

    fn set_bit(&mut self, id: usize, allow: bool) {
        self.commands.set(id, allow);
        if !allow {
            self.allcommands = false;
        }
    }

    /// `+@category` / `-@category`: every command and subcommand in it.
    pub fn set_category(&mut self, flag: AclCategories, allow: bool) {
        for spec in ids::top_level() {
            if spec.acl_categories.contains(flag) {
                self.change(spec, allow);
            }
            for sub in spec.subcommands {
                if sub.acl_categories.contains(flag) {
                    self.change(sub, allow);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_and_hex() {
        assert_eq!(
            hex(&hash_password(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let h = hash_password(b"p1");
        assert_eq!(parse_hash(hex(&h).as_bytes()), Ok(h));
        assert_eq!(parse_hash(b"abc"), Err(RuleError::BadHash));
        assert_eq!(
            parse_hash(hex(&h).to_ascii_uppercase().as_bytes()),
            Err(RuleError::BadHash)
        );
    }

    #[test]
    fn rules() {
        let mut u = User::new();
        assert_eq!(u.apply(b"+nope"), Err(RuleError::UnknownName));
        assert_eq!(u.apply(b"+config|"), Err(RuleError::Syntax));
        assert_eq!(
            u.apply(b"+config|get|x"),
            Err(RuleError::SubcommandFirstArg)
        );
        assert_eq!(u.apply(b"-select|0"), Err(RuleError::UnknownName));
        assert_eq!(u.apply(b"%~a"), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"%RR~a"), Err(RuleError::Syntax));
        assert_eq!(u.apply(b""), Ok(()));
        u.apply(b"~*").unwrap();
        assert_eq!(u.apply(b"%R~*"), Err(RuleError::KeysAfterAll));
        u.apply(b"+@all").unwrap();
        u.apply(b"allchannels").unwrap();
        assert!(u.unrestricted());
        u.apply(b"-get").unwrap();
        assert!(!u.unrestricted() && u.future);
    }
}
