//! One ACL user and the rules of `ACL SETUSER` that change it, applied one at a time
//! with Redis 7.0's semantics and error kinds (`ACLSetUser`): on/off, passwords (kept as
//! SHA-256), payload flags, `(...)` selectors; every other rule goes to the root
//! [`Selector`] (keys, channels, commands). The textual rules `ACL LIST` prints are
//! derived from the selectors (see `describe.rs`), as Redis 7.0 does.

use sha2::{Digest, Sha256};

use super::selector::Selector;

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

/// What a new user, `reset` and a new `(...)` selector get for channels: the
/// `acl-pubsub-default` setting of the moment (Redis ORs it into every selector it
/// creates).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PubsubDefault {
    /// `resetchannels`: no channel until one is granted (Redis 7's default).
    #[default]
    ResetChannels,
    /// `allchannels`: every channel, as in Redis 6.
    AllChannels,
}

impl PubsubDefault {
    /// The setting from its `acl-pubsub-default` spelling (anything else resets).
    pub fn from_config(value: &str) -> PubsubDefault {
        if value.eq_ignore_ascii_case("allchannels") {
            PubsubDefault::AllChannels
        } else {
            PubsubDefault::ResetChannels
        }
    }

    fn all(self) -> bool {
        self == PubsubDefault::AllChannels
    }
}

/// A user: whether it may log in, with which passwords, and what it may do (its root
/// selector, or any of its extra selectors).
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
    /// The permissions `ACL SETUSER` rules outside parentheses change.
    pub root: Selector,
    /// Extra `(...)` selectors: a command is allowed when the root or any of them allows it.
    pub selectors: Vec<Selector>,
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

/// Joins the arguments of `ACL SETUSER` that form one selector (`(+get`, `~x)` becomes
/// `(+get ~x)`), as Redis's `ACLMergeSelectorArguments`. On an unclosed parenthesis, the
/// index of the argument that opened it.
pub fn merge_selector_args<A: AsRef<[u8]>>(args: &[A]) -> Result<Vec<Vec<u8>>, usize> {
    let mut merged = Vec::with_capacity(args.len());
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, arg) in args.iter().enumerate() {
        let arg = arg.as_ref();
        match open.as_mut() {
            Some((_, group)) => {
                group.push(b' ');
                group.extend_from_slice(arg);
                if arg.ends_with(b")") {
                    merged.extend(open.take().map(|(_, g)| g));
                }
            }
            None if arg.starts_with(b"(") && !arg.ends_with(b")") => {
                open = Some((i, arg.to_vec()));
            }
            None => merged.push(arg.to_vec()),
        }
    }
    match open {
        Some((i, _)) => Err(i),
        None => Ok(merged),
    }
}

/// SHA-256 of a password.
pub fn hash_password(password: &[u8]) -> [u8; 32] {
    Sha256::digest(password).into()
}

/// Lowercase hex of bytes (a password hash, as Redis shows it).
pub fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
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

impl Default for User {
    fn default() -> Self {
        User::new(PubsubDefault::ResetChannels)
    }
}

impl User {
    /// A user as `ACL SETUSER` creates it: `off`, no password, no keys, no commands, and
    /// the channels `pubsub` gives.
    pub fn new(pubsub: PubsubDefault) -> User {
        User {
            enabled: false,
            nopass: false,
            sanitize: Sanitize::Unset,
            passwords: Vec::new(),
            root: Selector::with_pubsub_default(pubsub),
            selectors: Vec::new(),
        }
    }

    /// The `default` user of a fresh server: everything allowed, password from
    /// `requirepass` (none when empty).
    pub fn default_user(requirepass: &[u8]) -> User {
        let mut user = User::new(PubsubDefault::AllChannels);
        for rule in [&b"on"[..], b"allkeys", b"+@all"] {
            let _ = user.apply(rule, PubsubDefault::AllChannels);
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
        self.root.unrestricted()
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

    /// Applies one `ACL SETUSER` rule; `pubsub` is what `reset` and a new selector give
    /// for channels.
    pub fn apply(&mut self, op: &[u8], pubsub: PubsubDefault) -> Result<(), RuleError> {
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
            self.selectors.clear();
        } else if is("reset") {
            for rule in [
                &b"resetpass"[..],
                b"resetkeys",
                b"resetchannels",
                b"off",
                b"sanitize-payload",
                b"clearselectors",
                b"-@all",
            ] {
                self.apply(rule, pubsub)?;
            }
            if pubsub.all() {
                self.root.apply(b"allchannels")?;
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
                b'(' if op.ends_with(b")") && op.len() >= 2 => {
                    // Rules of a new selector, split as Redis's `sdssplitargs` would
                    // (without its quoting).
                    let mut selector = Selector::with_pubsub_default(pubsub);
                    for rule in op[1..op.len() - 1]
                        .split(|b| b.is_ascii_whitespace())
                        .filter(|r| !r.is_empty())
                    {
                        selector.apply(rule)?;
                    }
                    self.selectors.push(selector);
                }
                _ => return self.root.apply(op),
            }
        }
        // An empty rule does nothing, as in Redis.
        Ok(())
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
    fn selector_arguments_merge() {
        assert_eq!(
            merge_selector_args(&["on", "(+get", "~x)", "(+set)"]),
            Ok(vec![
                b"on".to_vec(),
                b"(+get ~x)".to_vec(),
                b"(+set)".to_vec()
            ])
        );
        assert_eq!(merge_selector_args(&["x", "(+get", "~x"]), Err(1));
        assert_eq!(merge_selector_args(&["("]), Err(0));
    }

    #[test]
    fn rules() {
        let mut u = User::new(PubsubDefault::ResetChannels);
        assert_eq!(
            u.apply(b"+nope", PubsubDefault::ResetChannels),
            Err(RuleError::UnknownName)
        );
        assert_eq!(
            u.apply(b"+config|", PubsubDefault::ResetChannels),
            Err(RuleError::Syntax)
        );
        assert_eq!(
            u.apply(b"+config|get|x", PubsubDefault::ResetChannels),
            Err(RuleError::SubcommandFirstArg)
        );
        assert_eq!(
            u.apply(b"-select|0", PubsubDefault::ResetChannels),
            Err(RuleError::UnknownName)
        );
        assert_eq!(
            u.apply(b"%~a", PubsubDefault::ResetChannels),
            Err(RuleError::Syntax)
        );
        assert_eq!(
            u.apply(b"%RR~a", PubsubDefault::ResetChannels),
            Err(RuleError::Syntax)
        );
        assert_eq!(u.apply(b"", PubsubDefault::ResetChannels), Ok(()));
        u.apply(b"~*", PubsubDefault::ResetChannels).unwrap();
        assert_eq!(
            u.apply(b"%R~*", PubsubDefault::ResetChannels),
            Err(RuleError::KeysAfterAll)
        );
        u.apply(b"+@all", PubsubDefault::ResetChannels).unwrap();
        u.apply(b"allchannels", PubsubDefault::ResetChannels)
            .unwrap();
        assert!(u.unrestricted());
        u.apply(b"-get", PubsubDefault::ResetChannels).unwrap();
        assert!(!u.unrestricted() && u.root.future);
    }
}
