//! Redis's glob patterns (`stringmatchlen`), for KEYS, SCAN MATCH, CONFIG GET, ACL key
//! and channel patterns and the other commands that take one.

/// Redis's glob (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a]`, `[a-z]`, `\` escapes.
///
/// As in Redis, the empty string matches only the empty pattern (not even `*`):
/// `PUBLISH ""` reaches no `PSUBSCRIBE *`. Commands where Redis lets `*` match
/// everything skip the match instead ([`match_filter`]).
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    if string.is_empty() {
        return pattern.is_empty();
    }
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    let (mut p, mut s) = (0, 0);
    // Backtracking point for the last `*`: (pattern index after it, string index).
    let mut star: Option<(usize, usize)> = None;
    while s < string.len() {
        let mut matched = false;
        let mut next_p = p;
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, s));
                    continue;
                }
                b'?' => {
                    matched = true;
                    next_p = p + 1;
                }
                b'[' => {
                    let mut i = p + 1;
                    let not = i < pattern.len() && pattern[i] == b'^';
                    if not {
                        i += 1;
                    }
                    let mut hit = false;
                    loop {
                        if i >= pattern.len() {
                            // Unterminated class: Redis treats the end as the close.
                            i = pattern.len() - 1;
                            break;
                        }
                        // An escape needs a character after it (Redis: `patternLen >= 2`).
                        if pattern[i] == b'\\' && i + 1 < pattern.len() {
                            i += 1;
                            hit |= eq(pattern[i], string[s]);
                        } else if pattern[i] == b']' {
                            break;
                        } else if i + 2 < pattern.len() && pattern[i + 1] == b'-' {
                            let (mut lo, mut hi) = (pattern[i], pattern[i + 2]);
                            if lo > hi {
                                std::mem::swap(&mut lo, &mut hi);
                            }
                            let c = string[s];
                            hit |= if nocase {
                                let c = c.to_ascii_lowercase();
                                c >= lo.to_ascii_lowercase() && c <= hi.to_ascii_lowercase()
                            } else {
                                c >= lo && c <= hi
                            };
                            i += 2;
                        } else {
                            hit |= eq(pattern[i], string[s]);
                        }
                        i += 1;
                    }
                    matched = hit != not;
                    next_p = i + 1;
                }
                b'\\' if p + 1 < pattern.len() => {
                    matched = eq(pattern[p + 1], string[s]);
                    next_p = p + 2;
                }
                c => {
                    matched = eq(c, string[s]);
                    next_p = p + 1;
                }
            }
        }
        if matched {
            p = next_p;
            s += 1;
        } else if let Some((star_p, star_s)) = star {
            p = star_p;
            s = star_s + 1;
            star = Some((star_p, star_s + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// A KEYS pattern or SCAN-family `MATCH` argument as Redis uses it: `*` means no filter
/// at all, so it also returns empty keys, fields and members, which `glob_match` would
/// not.
pub fn match_filter(pattern: &[u8]) -> Option<&[u8]> {
    (pattern != b"*").then_some(pattern)
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match(b"*", b"anything", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(glob_match(b"h*llo", b"heeeello", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-b]llo", b"hbllo", false));
        assert!(glob_match(b"a\\*b", b"a*b", false));
        assert!(!glob_match(b"a\\*b", b"axb", false));
        assert!(glob_match(b"*max*", b"maxclients", true));
        assert!(glob_match(b"HZ", b"hz", true));
        assert!(!glob_match(b"abc", b"ab", false));
        assert!(glob_match(b"ab*", b"ab", false));
        assert!(!glob_match(b"", b"a", false));
        // Cases redis-server 7.0 answers this way (tests/differential.rs checks more).
        assert!(glob_match(b"", b"", false));
        assert!(!glob_match(b"*", b"", false));
        assert!(
            glob_match(b"[\\]", b"]", false),
            "escape then an unclosed class"
        );
        assert!(!glob_match(b"[\\]", b"\\", false));
        assert_eq!(super::match_filter(b"*"), None);
        assert_eq!(super::match_filter(b"**"), Some(&b"**"[..]));
    }
}
