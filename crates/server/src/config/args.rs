//! Splits configuration lines into arguments the way redis-server does (`sdssplitargs`):
//! whitespace separates, `"..."` takes C escapes (`\n`, `\xHH`, ...), `'...'` takes only
//! `\'`, and a closing quote must be followed by whitespace or the end of the line.

/// Splits one line into arguments; `None` when quotes are unbalanced (Redis's
/// "Unbalanced quotes in configuration line").
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            if in_double {
                let c = *line.get(i)?;
                if c == b'\\' && line.get(i + 1) == Some(&b'x') && i + 3 < line.len() {
                    if let (Some(h), Some(l)) = (hex(line[i + 2]), hex(line[i + 3])) {
                        current.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < line.len() {
                    current.push(match line[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                    i += 2;
                    continue;
                }
                if c == b'"' {
                    // A closing quote must end the argument.
                    if i + 1 < line.len() && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                }
                current.push(c);
                i += 1;
            } else if in_single {
                let c = *line.get(i)?;
                if c == b'\\' && line.get(i + 1) == Some(&b'\'') {
                    current.push(b'\'');
                    i += 2;
                    continue;
                }
                if c == b'\'' {
                    if i + 1 < line.len() && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                }
                current.push(c);
                i += 1;
            } else {
                match line.get(i) {
                    None => break,
                    Some(c) if c.is_ascii_whitespace() => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(&c) => current.push(c),
                }
                i += 1;
            }
        }
        args.push(current);
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Quotes a value as Redis's `sdscatrepr` does, for error messages that echo arguments.
pub fn repr(arg: &[u8]) -> String {
    let mut s = String::with_capacity(arg.len() + 2);
    s.push('"');
    for &c in arg {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            7 => s.push_str("\\a"),
            8 => s.push_str("\\b"),
            c if c.is_ascii_graphic() || c == b' ' => s.push(c as char),
            c => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Option<Vec<String>> {
        split_args(s.as_bytes()).map(|v| {
            v.into_iter()
                .map(|a| String::from_utf8_lossy(&a).into_owned())
                .collect()
        })
    }

    #[test]
    fn splits_like_redis() {
        assert_eq!(split("  port   0  ").unwrap(), ["port", "0"]);
        assert_eq!(split(r#"a "b c" 'd e'"#).unwrap(), ["a", "b c", "d e"]);
        assert_eq!(split(r#""\x41\n""#).unwrap(), ["A\n"]);
        assert_eq!(split(r#"'it\'s'"#).unwrap(), ["it's"]);
        assert_eq!(split(r#""""#).unwrap(), [""]);
        assert!(split(r#""abc"#).is_none());
        assert!(split(r#""abc"x"#).is_none());
        assert!(split("").unwrap().is_empty());
    }

    #[test]
    fn repr_quotes() {
        assert_eq!(repr(b"a\"b\n\x01"), r#""a\"b\n\x01""#);
    }
}
