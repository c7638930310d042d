//! Users kept outside the server: the `user` directives of the config file and the ACL
//! file (`aclfile`), which ACL LOAD reads and ACL SAVE writes, as Redis 7.0 does.
//!
//! A file is all or nothing: every line is checked, and any error leaves the users as
//! they were, with every problem reported (`path:line: ...`).

use std::collections::BTreeMap;
use std::path::Path;

use super::user::{merge_selector_args, PubsubDefault, User};
use super::{describe, Acl};

/// Users from `user <name> <rules>...` lines, each rule applied to a fresh user (off,
/// no permissions, the channels of `acl-pubsub-default`). `origin` names the source in
/// errors.
///
/// ```
/// use redline_server::acl::{file::parse, PubsubDefault};
///
/// let text = "user alice on >secret ~cache:* +get\n\nuser bob off\n";
/// let users = parse(text, "users.acl", PubsubDefault::ResetChannels).unwrap();
/// assert_eq!(users.len(), 2);
/// let bad = "user alice on +nosuchcommand\n";
/// assert!(parse(bad, "users.acl", PubsubDefault::ResetChannels).is_err());
/// ```
pub fn parse(
    text: &str,
    origin: &str,
    pubsub: PubsubDefault,
) -> Result<BTreeMap<Vec<u8>, User>, String> {
    let lines = text.split('\n').map(|l| l.trim_matches([' ', '\t', '\r']));
    let lines: Vec<Vec<&[u8]>> = lines
        .map(|l| {
            l.split(' ')
                .filter(|w| !w.is_empty())
                .map(str::as_bytes)
                .collect()
        })
        .collect();
    users_from(lines.iter().map(Vec::as_slice).enumerate(), origin, pubsub)
}

/// Users from the config file's `user` directives (each its words after `user`).
pub fn from_directives(
    directives: &[Vec<Vec<u8>>],
    pubsub: PubsubDefault,
) -> Result<BTreeMap<Vec<u8>, User>, String> {
    let lines: Vec<Vec<&[u8]>> = directives
        .iter()
        .map(|words| {
            std::iter::once(&b"user"[..])
                .chain(words.iter().map(Vec::as_slice))
                .collect()
        })
        .collect();
    users_from(
        lines.iter().map(Vec::as_slice).enumerate(),
        "the configuration",
        pubsub,
    )
}

/// Checks and builds users from lines of words (blank lines skipped), reporting every
/// bad line.
fn users_from<'a>(
    lines: impl Iterator<Item = (usize, &'a [&'a [u8]])>,
    origin: &str,
    pubsub: PubsubDefault,
) -> Result<BTreeMap<Vec<u8>, User>, String> {
    let mut users = BTreeMap::new();
    let mut errors = String::new();
    for (index, words) in lines {
        let at = format!("{origin}:{}", index + 1);
        let (keyword, name, rules) = match words {
            [] => continue,
            [keyword, name, rules @ ..] => (*keyword, *name, rules),
            [_] => {
                errors +=
                    &format!("{at} should start with user keyword followed by the username. ");
                continue;
            }
        };
        if keyword != b"user" {
            errors += &format!("{at} should start with user keyword followed by the username. ");
            continue;
        }
        if name.iter().any(|&b| b == b' ' || b == 0) {
            errors += &format!(
                "{at}: username '{}' contains invalid characters. ",
                String::from_utf8_lossy(name)
            );
            continue;
        }
        if users.contains_key(name) {
            errors += &format!(
                "WARNING: Duplicate user '{}' found on line {}. ",
                String::from_utf8_lossy(name),
                index + 1
            );
            continue;
        }
        let Ok(rules) = merge_selector_args(rules) else {
            errors += &format!("{at}: Unmatched parenthesis in selector definition.");
            continue;
        };
        let mut user = User::new(pubsub);
        let mut syntax_error = false;
        for rule in &rules {
            match user.apply(rule, pubsub) {
                Ok(()) => {}
                // A missing command is named (it is no secret); for other errors only
                // the first is reported, as it may explain the rest (Redis's wording).
                Err(e @ super::user::RuleError::UnknownName) => {
                    errors += &format!(
                        "{at}: Error in applying operation '{}': {}. ",
                        String::from_utf8_lossy(rule),
                        e.text()
                    );
                }
                Err(e) if !syntax_error => {
                    errors += &format!("{at}: {}. ", e.text());
                    syntax_error = true;
                }
                Err(_) => {}
            }
        }
        users.insert(name.to_vec(), user);
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        errors += "WARNING: ACL errors detected, no change to the previously active ACL rules was performed";
        Err(errors)
    }
}

/// At start: the users of the config file's `user` directives, or of `aclfile` (not
/// both, as Redis refuses). The error is what to log before exiting.
pub fn load_at_start(shared: &crate::shared::Shared) -> Result<(), String> {
    let (directives, path) = {
        let config = shared.config.read();
        (config.users.clone(), config.param("aclfile").to_string())
    };
    if !path.is_empty() && !directives.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    if !directives.is_empty() {
        let users = from_directives(&directives, shared.acl.pubsub_default())
            .map_err(|e| format!("Error loading the users of the configuration: {e}. Exiting."))?;
        shared.acl.insert_users(users);
    }
    if !path.is_empty() {
        load(&shared.acl, Path::new(&path))
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
    }
    Ok(())
}

/// ACL LOAD, and the start with `aclfile`: reads the file and replaces every user.
/// Returns the replaced users, whose clients must be disconnected.
pub fn load(acl: &Acl, path: &Path) -> Result<Vec<std::sync::Arc<super::UserCell>>, String> {
    let text = std::fs::read(path).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{}': {}",
            path.display(),
            crate::cstr::strerror(&e)
        )
    })?;
    let users = parse(
        &String::from_utf8_lossy(&text),
        &path.display().to_string(),
        acl.pubsub_default(),
    )?;
    Ok(acl.replace_all(users))
}

/// ACL SAVE: every user as its ACL LIST line, written to a temporary file renamed over
/// `path`, so a crash never leaves half a file.
pub fn save(acl: &Acl, path: &Path) -> std::io::Result<()> {
    let mut text = Vec::new();
    for cell in acl.all() {
        text.extend_from_slice(&describe::line(cell.name(), &cell.rules()));
        text.push(b'\n');
    }
    let temp = path.with_file_name(format!(
        "{}.tmp-{}",
        path.file_name()
            .map_or("acl".into(), |n| n.to_string_lossy()),
        std::process::id()
    ));
    crate::persist::durable::write(&temp, path, &text)
}
