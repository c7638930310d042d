//! Arguments Redis never shows: in MONITOR, SLOWLOG and anywhere else a command is
//! echoed, passwords and user definitions read `(redacted)` (Redis's
//! `redactClientCommandArgument`).

use bytes::Bytes;

use crate::cmd::args::is;

/// Configuration parameters whose values are secrets (Redis's `SENSITIVE_CONFIG`).
const SENSITIVE_CONFIGS: [&str; 3] = ["masteruser", "masterauth", "requirepass"];

/// The positions of `args` to hide: AUTH's credentials, HELLO's AUTH pair, MIGRATE's
/// AUTH password and AUTH2 user and password, everything after ACL SETUSER's
/// subcommand, and CONFIG SET values of sensitive parameters.
pub fn positions(args: &[Bytes]) -> Vec<usize> {
    let Some(name) = args.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if is(name, "auth") {
        // Only the forms AUTH accepts are redacted (more arguments are a syntax error).
        if args.len() <= 3 {
            out.extend(1..args.len());
        }
    } else if is(name, "acl") && args.len() >= 3 && is(&args[1], "setuser") {
        out.extend(2..args.len());
    } else if is(name, "config") && args.len() >= 4 && is(&args[1], "set") {
        for (i, pair) in args[2..].chunks(2).enumerate() {
            if pair.len() == 2 && SENSITIVE_CONFIGS.iter().any(|c| is(&pair[0], c)) {
                out.push(2 + i * 2 + 1);
            }
        }
    } else if is(name, "hello") || is(name, "migrate") {
        let hello = is(name, "hello");
        let mut i = 1;
        while i < args.len() {
            if is(&args[i], "auth") && hello {
                out.extend([i + 1, i + 2]);
                i += 3;
            } else if is(&args[i], "auth") {
                out.push(i + 1);
                i += 2;
            } else if is(&args[i], "auth2") {
                out.extend([i + 1, i + 2]);
                i += 3;
            } else {
                i += 1;
            }
        }
    }
    out.retain(|&i| i < args.len());
    out
}

/// `args` with the secrets replaced by `(redacted)`.
pub fn redacted(args: &[Bytes]) -> Vec<Bytes> {
    let hide = positions(args);
    args.iter()
        .enumerate()
        .map(|(i, a)| {
            if hide.contains(&i) {
                Bytes::from_static(b"(redacted)")
            } else {
                a.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Bytes> {
        words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    }

    #[test]
    fn secrets_are_hidden_as_redis_hides_them() {
        assert_eq!(positions(&args(&["auth", "u", "p"])), vec![1, 2]);
        assert!(positions(&args(&["auth", "a", "b", "c"])).is_empty());
        assert_eq!(
            positions(&args(&["acl", "setuser", "u", "+get"])),
            vec![2, 3]
        );
        assert_eq!(
            positions(&args(&[
                "config",
                "set",
                "maxmemory",
                "1",
                "masterauth",
                "x"
            ])),
            vec![5]
        );
        assert_eq!(
            positions(&args(&["hello", "3", "AUTH", "u", "p"])),
            vec![3, 4]
        );
        assert_eq!(
            positions(&args(&["migrate", "h", "1", "k", "0", "5", "AUTH", "p"])),
            vec![7]
        );
        assert_eq!(
            redacted(&args(&["auth", "p"]))[1],
            Bytes::from_static(b"(redacted)")
        );
    }
}
