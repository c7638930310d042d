//! Splits an inline command line into arguments with the quoting rules of Redis's
//! `sdssplitargs` (the same rules `redis-cli` uses).
//!
//! - Blanks (space, tab, CR, LF, VT, FF) separate arguments.
//! - `"..."` understands `\n \r \t \b \a \\ \"`, `\xHH`, and `\<c>` for any other `c`.
//! - `'...'` understands only `\'`.
//! - A quote may start mid-argument (`a"b c"` is `ab c`); a closing quote must be followed
//!   by a blank or the end of the line; an unclosed quote is an error.
//! - The line ends at its first NUL byte, as it does for Redis (a C string).

use bytes::Bytes;

/// The arguments of `line`, or `None` for unbalanced quotes (redis-cli's
/// "Invalid argument(s)").
///
/// ```
/// use redline_resp::split_args;
///
/// let args = split_args(br#"SET k "a b" 'it\'s'"#).unwrap();
/// assert_eq!(args, ["SET", "k", "a b", "it's"]);
/// assert_eq!(split_args(b"GET \"unclosed"), None);
/// ```
pub fn split_args(line: &[u8]) -> Option<Vec<Bytes>> {
    let line = match memchr::memchr(0, line) {
        Some(nul) => &line[..nul],
        None => line,
    };
    let mut args = Vec::new();
    let mut pos = 0;
    loop {
        while line.get(pos).is_some_and(|&b| is_blank(b)) {
            pos += 1;
        }
        if pos >= line.len() {
            return Some(args);
        }
        let (arg, next) = split_one(line, pos)?;
        args.push(Bytes::from(arg));
        pos = next;
    }
}

/// Reads one argument starting at `pos` (not a blank); returns it and where to resume.
fn split_one(line: &[u8], mut pos: usize) -> Option<(Vec<u8>, usize)> {
    let mut arg = Vec::new();
    loop {
        match line.get(pos) {
            // Unquoted: these end the argument (VT and FF do not, unlike between arguments).
            None | Some(b' ' | b'\n' | b'\r' | b'\t') => return Some((arg, pos)),
            // A closing quote ends the argument (it is followed by a blank or the end).
            Some(b'"') => {
                let next = double_quoted(line, pos + 1, &mut arg)?;
                return Some((arg, next));
            }
            Some(b'\'') => {
                let next = single_quoted(line, pos + 1, &mut arg)?;
                return Some((arg, next));
            }
            Some(&b) => {
                arg.push(b);
                pos += 1;
            }
        }
    }
}

/// Reads a double-quoted section whose content starts at `pos`; returns the position
/// after the closing quote.
fn double_quoted(line: &[u8], mut pos: usize, arg: &mut Vec<u8>) -> Option<usize> {
    loop {
        match *line.get(pos)? {
            b'\\' => match line.get(pos + 1..) {
                Some([b'x', hi, lo, ..]) if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit() => {
                    arg.push(hex_value(*hi) << 4 | hex_value(*lo));
                    pos += 4;
                }
                Some([escaped, ..]) => {
                    arg.push(match escaped {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => *other,
                    });
                    pos += 2;
                }
                // A backslash at the very end: taken literally, then the quote is unclosed.
                _ => return None,
            },
            b'"' => return closing_quote(line, pos),
            b => {
                arg.push(b);
                pos += 1;
            }
        }
    }
}

/// Reads a single-quoted section whose content starts at `pos`; returns the position
/// after the closing quote.
fn single_quoted(line: &[u8], mut pos: usize, arg: &mut Vec<u8>) -> Option<usize> {
    loop {
        match *line.get(pos)? {
            b'\\' if line.get(pos + 1) == Some(&b'\'') => {
                arg.push(b'\'');
                pos += 2;
            }
            b'\'' => return closing_quote(line, pos),
            b => {
                arg.push(b);
                pos += 1;
            }
        }
    }
}

/// Checks that the closing quote at `pos` is followed by a blank or the end.
fn closing_quote(line: &[u8], pos: usize) -> Option<usize> {
    match line.get(pos + 1) {
        Some(&b) if !is_blank(b) => None,
        // The argument ends here; the caller's blank skipping resumes after the quote.
        _ => Some(pos + 1),
    }
}

/// C's `isspace` in the C locale.
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        b'A'..=b'F' => digit - b'A' + 10,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Option<Vec<String>> {
        split_args(line.as_bytes()).map(|args| {
            args.iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
    }

    fn ok(line: &str, expected: &[&str]) {
        assert_eq!(
            split(line),
            Some(expected.iter().map(|s| s.to_string()).collect()),
            "{line:?}"
        );
    }

    #[test]
    fn plain_words() {
        ok("PING", &["PING"]);
        ok("  SET  a   b  ", &["SET", "a", "b"]);
        ok("", &[]);
        ok(" \t ", &[]);
        ok("a\tb", &["a", "b"]);
    }

    #[test]
    fn double_quotes() {
        ok(r#"SET a "b c""#, &["SET", "a", "b c"]);
        ok(r#""a\nb\r\t\\\"""#, &["a\nb\r\t\\\""]);
        ok(r#""\x41\x7a""#, &["Az"]);
        ok(r#""\xZZ""#, &["xZZ"]);
        ok(r#""\q""#, &["q"]);
        ok(r#""""#, &[""]);
        ok(r#"a"b c""#, &["ab c"]);
        assert_eq!(
            split_args(br#""\b\a""#),
            Some(vec![Bytes::from_static(b"\x08\x07")])
        );
    }

    #[test]
    fn single_quotes() {
        ok(r"'a b'", &["a b"]);
        ok(r"'it\'s'", &["it's"]);
        ok(r"'a\nb'", &["a\\nb"]);
        ok(r"''", &[""]);
    }

    #[test]
    fn unbalanced() {
        for line in [
            r#"SET a "b"#,
            r#""abc"def"#,
            r"'abc'def",
            r"'abc",
            r#""abc\"#,
            r#""\x4"#,
        ] {
            assert_eq!(split(line), None, "{line:?}");
        }
    }

    #[test]
    fn closing_quote_followed_by_blank() {
        ok("\"a\"\tb", &["a", "b"]);
        ok("'a'\x0bb", &["a", "b"]);
    }

    #[test]
    fn vertical_tab_inside_unquoted_word() {
        ok("a\x0bb", &["a\x0bb"]);
        ok("\x0ba", &["a"]);
    }

    #[test]
    fn nul_ends_the_line() {
        assert_eq!(
            split_args(b"GET a\0b c"),
            Some(vec![Bytes::from_static(b"GET"), Bytes::from_static(b"a")])
        );
        assert_eq!(split_args(b"\"a\0\""), None);
    }
}
