//! The AOF manifest as Redis 7.0 keeps it (`aofManifest` in `aof.c`): the base file,
//! the history files waiting to be deleted and the incremental files, each with its
//! sequence number, plus the last sequence numbers given out, which go on from where
//! the manifest on disk left them.
//!
//! The text form is one line per file, `file <name> seq <n> type <b|h|i>`, the base
//! first, then history, then incremental files; a name that needs it is quoted as
//! `sdscatrepr` quotes and read back as `sdssplitargs` splits.

use super::aof_load::LoadError;
use crate::config::{repr, split_args};

/// A file's role in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The base (`type b`).
    Base,
    /// Replaced by a rewrite, to be deleted (`type h`).
    History,
    /// An incremental file (`type i`).
    Incr,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::Base => 'b',
            Kind::History => 'h',
            Kind::Incr => 'i',
        }
    }
}

/// One file of the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    /// The file name, inside the AOF directory.
    pub name: String,
    /// Its sequence number.
    pub seq: u64,
    /// Its role.
    pub kind: Kind,
}

/// The manifest, in memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The base file, if any.
    pub base: Option<Info>,
    /// Files replaced by a rewrite, newest first.
    pub history: Vec<Info>,
    /// Incremental files, in sequence order.
    pub incr: Vec<Info>,
    /// The last base sequence number given out.
    pub base_seq: u64,
    /// The last incremental sequence number given out.
    pub incr_seq: u64,
    /// Changed since it was last written.
    pub dirty: bool,
}

/// Redis reads the manifest with `fgets` into a 1024-byte line.
const MAX_LINE: usize = 1024;

fn error(line: Option<(usize, &str)>, err: &str) -> LoadError {
    let at = line.map_or(String::new(), |(n, text)| {
        format!("Reading the manifest file, at line {n}: >>> '{text}': ")
    });
    LoadError::Bad(format!("*** FATAL AOF MANIFEST FILE ERROR *** {at}{err}"))
}

/// C's `atoll`: optional blanks and sign, then digits up to the first non-digit; a
/// negative number counts as 0 (no sequence number), as it fails the same checks.
fn atoll(text: &[u8]) -> u64 {
    let start = text
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(text.len());
    let text = &text[start..];
    if text.first() == Some(&b'-') {
        return 0;
    }
    let digits = text.strip_prefix(b"+").unwrap_or(text);
    digits
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0u64, |n, d| {
            n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
        })
}

impl Manifest {
    /// Reads a manifest with Redis's checks and messages (`aofLoadManifestFromFile`).
    pub fn parse(text: &[u8]) -> Result<Manifest, LoadError> {
        if text.is_empty() {
            return Err(error(None, "Found an empty AOF manifest"));
        }
        let mut manifest = Manifest::default();
        let mut pos = 0;
        let mut number = 0;
        while pos < text.len() {
            // One `fgets`: up to the newline, at most MAX_LINE bytes.
            let rest = &text[pos..];
            let len = rest
                .iter()
                .take(MAX_LINE)
                .position(|&b| b == b'\n')
                .map_or(rest.len().min(MAX_LINE), |i| i + 1);
            let raw = &rest[..len];
            pos += len;
            number += 1;
            if raw.first() == Some(&b'#') {
                continue;
            }
            if raw.last() != Some(&b'\n') {
                return Err(error(None, "The AOF manifest file contains too long line"));
            }
            let trimmed = trim(raw);
            let shown = String::from_utf8_lossy(trimmed);
            let at = Some((number, &*shown));
            if trimmed.is_empty() {
                return Err(error(at, "Invalid AOF manifest file format"));
            }
            let words = match split_args(trimmed) {
                Some(words) if words.len() >= 6 && words.len() % 2 == 0 => words,
                _ => return Err(error(at, "Invalid AOF manifest file format")),
            };
            let (mut name, mut seq, mut kind) = (None, 0u64, 0u8);
            for pair in words.chunks_exact(2) {
                let (key, value) = (&pair[0], &pair[1]);
                if key.eq_ignore_ascii_case(b"file") {
                    if value.contains(&b'/') || value.contains(&b'\\') {
                        return Err(error(at, "File can't be a path, just a filename"));
                    }
                    name = Some(String::from_utf8_lossy(value).into_owned());
                } else if key.eq_ignore_ascii_case(b"seq") {
                    seq = atoll(value);
                } else if key.eq_ignore_ascii_case(b"type") {
                    kind = value.first().copied().unwrap_or(0);
                }
            }
            let (Some(name), true, true) = (name, seq != 0, kind != 0) else {
                return Err(error(at, "Invalid AOF manifest file format"));
            };
            match kind {
                b'b' if manifest.base.is_some() => {
                    return Err(error(at, "Found duplicate base file information"))
                }
                b'b' => {
                    manifest.base_seq = seq;
                    manifest.base = Some(Info {
                        name,
                        seq,
                        kind: Kind::Base,
                    });
                }
                b'h' => manifest.history.push(Info {
                    name,
                    seq,
                    kind: Kind::History,
                }),
                b'i' => {
                    if seq <= manifest.incr_seq {
                        return Err(error(at, "Found a non-monotonic sequence number"));
                    }
                    manifest.incr_seq = seq;
                    manifest.incr.push(Info {
                        name,
                        seq,
                        kind: Kind::Incr,
                    });
                }
                _ => return Err(error(at, "Unknown AOF file type")),
            }
        }
        Ok(manifest)
    }

    /// The text Redis writes (`getAofManifestAsString`).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for info in self.base.iter().chain(&self.history).chain(&self.incr) {
            let name = if needs_repr(&info.name) {
                repr(info.name.as_bytes())
            } else {
                info.name.clone()
            };
            out.push_str(&format!(
                "file {name} seq {} type {}\n",
                info.seq,
                info.kind.letter()
            ));
        }
        out
    }

    /// Whether it lists nothing to load.
    pub fn is_empty(&self) -> bool {
        self.base.is_none() && self.incr.is_empty()
    }

    /// The files to load: the base, then the incremental files.
    pub fn loadable(&self) -> impl Iterator<Item = &Info> {
        self.base.iter().chain(&self.incr)
    }

    /// Names a new base file (`<filename>.<seq>.base.<rdb|aof>`); the current base
    /// becomes history.
    pub fn new_base(&mut self, filename: &str, preamble: bool) -> String {
        if let Some(mut old) = self.base.take() {
            old.kind = Kind::History;
            self.history.insert(0, old);
        }
        self.base_seq += 1;
        let name = format!(
            "{filename}.{}.base.{}",
            self.base_seq,
            if preamble { "rdb" } else { "aof" }
        );
        self.base = Some(Info {
            name: name.clone(),
            seq: self.base_seq,
            kind: Kind::Base,
        });
        self.dirty = true;
        name
    }

    /// Names a new incremental file (`<filename>.<seq>.incr.aof`), appended to the list.
    pub fn new_incr(&mut self, filename: &str) -> String {
        self.incr_seq += 1;
        let name = format!("{filename}.{}.incr.aof", self.incr_seq);
        self.incr.push(Info {
            name: name.clone(),
            seq: self.incr_seq,
            kind: Kind::Incr,
        });
        self.dirty = true;
        name
    }

    /// The incremental file to write: the last one, or a new one when there is none.
    pub fn last_incr(&mut self, filename: &str) -> String {
        match self.incr.last() {
            Some(last) => last.name.clone(),
            None => self.new_incr(filename),
        }
    }

    /// After a rewrite the incremental files it covers become history; with the AOF
    /// on, the last one is being written and stays.
    pub fn retire_rewritten_incr(&mut self, writing: bool) {
        let keep = usize::from(writing && !self.incr.is_empty());
        let retired = self.incr.len() - keep;
        // Newest first, as Redis adds each at the head of the history list.
        for mut info in self.incr.drain(..retired).rev() {
            info.kind = Kind::History;
            self.history.insert(0, info);
        }
        self.dirty = true;
    }
}

/// `sdstrim(line, " \t\r\n")`.
fn trim(raw: &[u8]) -> &[u8] {
    let blank = |b: &u8| b" \t\r\n".contains(b);
    let start = raw.iter().position(|b| !blank(b)).unwrap_or(raw.len());
    let end = raw.iter().rposition(|b| !blank(b)).map_or(start, |i| i + 1);
    &raw[start..end]
}

/// `sdsneedsrepr`: a name with blanks, quotes, backslashes or unprintable bytes is
/// written quoted.
fn needs_repr(name: &str) -> bool {
    name.bytes()
        .any(|b| b == b'\\' || b == b'"' || !(b.is_ascii_graphic()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_is_read_and_checked_as_redis_does() {
        let ok = b"file a.1.base.rdb seq 1 type b\nfile a.1.incr.aof seq 1 type i\nfile a.2.incr.aof seq 2 type i\n";
        let m = Manifest::parse(ok).unwrap();
        assert_eq!(m.loadable().count(), 3);
        assert_eq!(m.base.as_ref().map(|b| b.seq), Some(1));
        assert_eq!(m.incr_seq, 2);
        assert_eq!(m.to_text().as_bytes(), ok);
        let long = format!("file a seq 1 type b {}\n", "x y ".repeat(300));
        for (text, err) in [
            (&b""[..], "Found an empty AOF manifest"),
            (b"file a seq 1 type b", "too long line"),
            (long.as_bytes(), "too long line"),
            (b"file a seq 1\n", "Invalid AOF manifest file format"),
            (b"\n", "Invalid AOF manifest file format"),
            (b"file a seq 0 type b\n", "Invalid AOF manifest file format"),
            (
                b"file \"a seq 1 type b\n",
                "Invalid AOF manifest file format",
            ),
            (b"file x/a seq 1 type b\n", "just a filename"),
            (
                b"file a seq 1 type b\nfile b seq 1 type b\n",
                "duplicate base",
            ),
            (
                b"file a seq 2 type i\nfile b seq 1 type i\n",
                "non-monotonic",
            ),
            (b"file a seq 1 type z\n", "Unknown AOF file type"),
        ] {
            match Manifest::parse(text) {
                Err(LoadError::Bad(message)) => assert!(message.contains(err), "{message}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn names_that_need_it_are_quoted_and_read_back() {
        let mut m = Manifest::default();
        m.new_base(" file seq \n\n.aof ", true);
        let text = m.to_text();
        assert_eq!(
            text,
            "file \" file seq \\n\\n.aof .1.base.rdb\" seq 1 type b\n"
        );
        assert_eq!(Manifest::parse(text.as_bytes()).unwrap().base, m.base);
    }

    #[test]
    fn rewrites_number_and_retire_files_as_redis_does() {
        let mut m =
            Manifest::parse(b"file a.2.base.rdb seq 2 type b\nfile a.2.incr.aof seq 2 type i\n")
                .unwrap();
        m.new_incr("a");
        m.new_base("a", true);
        m.retire_rewritten_incr(true);
        assert_eq!(
            m.to_text(),
            "file a.3.base.rdb seq 3 type b\nfile a.2.incr.aof seq 2 type h\nfile a.2.base.rdb seq 2 type h\nfile a.3.incr.aof seq 3 type i\n"
        );
        m.history.clear();
        m.new_base("a", true);
        m.retire_rewritten_incr(false);
        assert!(m.incr.is_empty());
        assert_eq!(m.last_incr("a"), "a.4.incr.aof");
    }
}
