//! One selector: the keys, channels and commands a user (or one of its extra
//! `(...)` selectors) allows, and the `ACL SETUSER` rules that change them, with Redis
//! 7.0's semantics (`ACLSetSelector`).
//!
//! Command permissions are a bitmap over the table's command ids ([`CommandBits`]) plus
//! Redis's extra "future commands" bit (set only by `+@all`), the `allcommands` flag
//! (cleared by any removal) and the allowed first arguments of otherwise denied
//! commands (`+select|0`).

use std::collections::HashMap;

use redline_resp::command::{self, AclCategories, CommandSpec};

use super::ids::{self, CommandBits};
use super::user::RuleError;

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

/// What a selector allows.
#[derive(Debug, Clone)]
pub struct Selector {
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

impl Default for Selector {
    fn default() -> Self {
        Selector::new()
    }
}

/// Redis refuses key and channel patterns with white space or NUL in them.
fn has_spaces(pattern: &[u8]) -> bool {
    pattern
        .iter()
        .any(|&b| b == 0 || b == b' ' || (b'\t'..=b'\r').contains(&b))
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

impl Selector {
    /// Nothing allowed: no keys, no channels, no commands.
    pub fn new() -> Selector {
        Selector {
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

    /// Nothing allowed but the channels `acl-pubsub-default` gives: a new user's root
    /// selector, or a new `(...)` one.
    pub fn with_pubsub_default(pubsub: super::user::PubsubDefault) -> Selector {
        Selector {
            allchannels: pubsub == super::user::PubsubDefault::AllChannels,
            ..Selector::new()
        }
    }

    /// True when every command, key and channel is allowed.
    pub fn unrestricted(&self) -> bool {
        self.allcommands && self.allkeys && self.allchannels
    }

    /// The rules about keys, channels and commands (Redis's `ACLSetSelector`).
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
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
            if has_spaces(channel) {
                return Err(RuleError::Syntax);
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
        if has_spaces(pattern) {
            return Err(RuleError::Syntax);
        }
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
