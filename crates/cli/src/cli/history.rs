//! Where the REPL keeps its history and what it leaves out of it.

use std::path::PathBuf;

/// `~/.redline_history` (redis-cli keeps `~/.rediscli_history`); `REDLINE_HISTFILE`
/// overrides it, as `REDISCLI_HISTFILE` does for redis-cli, and `/dev/null` disables it.
pub(crate) fn path() -> Option<PathBuf> {
    if let Some(file) = std::env::var_os("REDLINE_HISTFILE") {
        return Some(PathBuf::from(file));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".redline_history"))
}

/// Lines that carry secrets are kept out of the history file (as redis-cli 7.2 does):
/// `AUTH`, `HELLO ... AUTH`, `ACL SETUSER`, `CONFIG SET masterauth/requirepass`, `MIGRATE ... AUTH`.
pub(crate) fn is_sensitive(argv: &[bytes::Bytes]) -> bool {
    let word = |i: usize| argv.get(i).map(|a| a.to_ascii_lowercase());
    let has_auth = || {
        argv.iter()
            .any(|a| a.eq_ignore_ascii_case(b"AUTH") || a.eq_ignore_ascii_case(b"AUTH2"))
    };
    match word(0).as_deref() {
        Some(b"auth") => true,
        Some(b"hello") | Some(b"migrate") => has_auth(),
        Some(b"acl") => word(1).as_deref() == Some(b"setuser"),
        Some(b"config") => {
            word(1).as_deref() == Some(b"set")
                && argv.iter().skip(2).any(|a| {
                    a.eq_ignore_ascii_case(b"masterauth") || a.eq_ignore_ascii_case(b"requirepass")
                })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn argv(line: &str) -> Vec<Bytes> {
        line.split(' ')
            .map(|a| Bytes::copy_from_slice(a.as_bytes()))
            .collect()
    }

    #[test]
    fn secrets_stay_out() {
        assert!(is_sensitive(&argv("auth secret")));
        assert!(is_sensitive(&argv("HELLO 3 AUTH default pw")));
        assert!(is_sensitive(&argv("acl SETUSER bob on >pw")));
        assert!(is_sensitive(&argv("config set requirepass x")));
        assert!(!is_sensitive(&argv("config set maxmemory 1")));
        assert!(!is_sensitive(&argv("get auth")));
    }
}
