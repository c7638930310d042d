//! Loading an append-only file as Redis 7.0 does (`loadSingleAppendOnlyFile`,
//! `loadAppendOnlyFiles`): the base file (an RDB image, commands, or both: an RDB
//! preamble and a tail of commands) and every incremental file in order; the manifest
//! that lists them is [`super::aof_manifest`].
//!
//! Commands are read in Redis's own format, not as a client's requests: each one starts
//! with `*<argc>` (a line starting with `#` is an annotation and skipped; anything else
//! is a format error), each argument is `$<len>`, the bytes, and two bytes that are not
//! looked at. Running out of input inside a command is a short read: with
//! `aof-load-truncated yes` the last file loads up to its last whole command (and is
//! cut there), anywhere else it is fatal; so is a MULTI left open at the end. A command
//! this server does not know stops the load, as in Redis.
//!
//! Everything here works on bytes already read ([`load_parts`]), so the fuzz target
//! and the tests drive exactly what the server runs at start.

use bytes::{Bytes, BytesMut};

use crate::shared::Shared;

/// Why the AOF could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// No AOF at all.
    Missing,
    /// Unreadable or malformed; the text is what Redis logs.
    Bad(String),
}

/// What stopped the reading of a file's commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The input ended inside a command (Redis's `readerr` at end of file).
    Short,
    /// Not the AOF format (Redis's `fmterr`).
    Format,
}

/// Redis's reader over one file's commands.
struct Commands<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Commands<'a> {
    /// One line as `fgets` gives it: up to and including `\n`, or to the end.
    fn line(&mut self) -> Option<&'a [u8]> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let rest = &self.bytes[self.pos..];
        let len = rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(rest.len(), |i| i + 1);
        self.pos += len;
        Some(&rest[..len])
    }

    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(len)?;
        let taken = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(taken)
    }

    /// The next command, `Ok(None)` at a clean end.
    fn next(&mut self) -> Result<Option<Vec<Bytes>>, Stop> {
        let header = loop {
            match self.line() {
                None => return Ok(None),
                Some(line) if line.first() == Some(&b'#') => continue,
                Some(line) => break line,
            }
        };
        if header.first() != Some(&b'*') {
            return Err(Stop::Format);
        }
        if header.len() == 1 {
            return Err(Stop::Short);
        }
        let argc = atoi(&header[1..]);
        if argc < 1 {
            return Err(Stop::Format);
        }
        // No allocation from the claimed count: arguments are pushed as they are read.
        let mut args = Vec::new();
        for _ in 0..argc {
            let line = self.line().ok_or(Stop::Short)?;
            if line.first() != Some(&b'$') {
                return Err(Stop::Format);
            }
            let len = usize::try_from(atoi(&line[1..])).map_err(|_| Stop::Format)?;
            let arg = self.take(len).ok_or(Stop::Short)?;
            // The CRLF after the argument is skipped unread, as Redis does.
            self.take(2).ok_or(Stop::Short)?;
            args.push(Bytes::copy_from_slice(arg));
        }
        Ok(Some(args))
    }
}

/// `atoi`/`strtol` of a header line: optional blanks and sign, digits to the first
/// non-digit; saturates instead of overflowing.
fn atoi(text: &[u8]) -> i64 {
    let start = text
        .iter()
        .position(|b| !b" \t".contains(b))
        .unwrap_or(text.len());
    let text = &text[start..];
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let n = digits
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .fold(0i64, |n, d| {
            n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
        });
    if negative {
        -n
    } else {
        n
    }
}

/// Whether this server runs the command (`lookupCommand` with its subcommand, under
/// the names the config file gave).
fn known(shared: &Shared, args: &[Bytes]) -> bool {
    use redline_resp::command;
    let Some(spec) = args.first().and_then(|name| shared.renamed.lookup(name)) else {
        return false;
    };
    let spec = if spec.has_subcommands() && args.len() >= 2 {
        match command::lookup_subcommand(spec, &args[1]) {
            Some(sub) => sub,
            None => return false,
        }
    } else {
        spec
    };
    crate::cmd::handler_of(spec).is_some()
}

/// How one file's commands ended.
enum Replayed {
    /// Every command ran.
    Whole,
    /// The input ended inside a command or an open MULTI; the bytes up to the last
    /// whole command (before the MULTI) are `valid`.
    Short { valid: usize },
}

/// Runs the commands of one file through a client that propagates nothing and gets
/// no replies, as Redis's fake AOF client.
fn replay(
    shared: &Shared,
    name: &str,
    bytes: &[u8],
    start: usize,
    commands: &mut u64,
) -> Result<Replayed, LoadError> {
    let mut reader = Commands { bytes, pos: start };
    let mut client = crate::net::client::ClientState::new(
        0,
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        true,
    );
    client.is_master = true;
    client.reply = crate::net::client::ReplyMode::Off;
    let mut output = BytesMut::new();
    let mut valid = start;
    let mut before_multi = start;
    loop {
        let args = match reader.next() {
            Ok(Some(args)) => args,
            Ok(None) if client.multi.is_some() => {
                tracing::warn!("Revert incomplete MULTI/EXEC transaction in AOF file {name}");
                return Ok(Replayed::Short {
                    valid: before_multi,
                });
            }
            Ok(None) => return Ok(Replayed::Whole),
            Err(Stop::Short) => {
                // A MULTI cut short is dropped whole.
                let valid = if client.multi.is_some() {
                    before_multi
                } else {
                    valid
                };
                return Ok(Replayed::Short { valid });
            }
            Err(Stop::Format) => {
                return Err(LoadError::Bad(format!(
                    "Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"
                )))
            }
        };
        if !known(shared, &args) {
            return Err(LoadError::Bad(format!(
                "Unknown command '{}' reading the append only file {name}",
                String::from_utf8_lossy(&args[0])
            )));
        }
        if crate::cmd::args::is(&args[0], "multi") {
            before_multi = valid;
        }
        let mut ctx = crate::cmd::Ctx::new(shared, &mut client, &mut output);
        crate::store::while_loading(|| crate::cmd::execute(&mut ctx, &args));
        output.clear();
        *commands += 1;
        valid = reader.pos;
    }
}

/// One file of the AOF, already read.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    /// Its name (for messages).
    pub name: &'a str,
    /// Its contents.
    pub bytes: &'a [u8],
}

/// What a load did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Commands run.
    pub commands: u64,
    /// The last file ended inside a command and loaded up to this many bytes (it should
    /// be cut there).
    pub truncated_at: Option<u64>,
}

/// Loads the files in order into the dataset: a file that starts with `REDIS` is an RDB
/// image (the base), any other holds commands. `truncated_ok` is `aof-load-truncated`.
pub fn load_parts(
    shared: &Shared,
    parts: &[Part<'_>],
    truncated_ok: bool,
) -> Result<Loaded, LoadError> {
    let mut loaded = Loaded::default();
    for (index, part) in parts.iter().enumerate() {
        let name = part.name;
        // An RDB image first (a base in RDB format, or a pre-7.0 AOF with an RDB
        // preamble), then commands: the tail of an old AOF.
        let mut start = 0;
        if part.bytes.starts_with(b"REDIS") {
            // Keys already expired load too, as in Redis: the AOF's commands after
            // the image may act on them.
            let options = super::snapshot::LoadOptions {
                keep_expired: true,
                ..Default::default()
            };
            match super::snapshot::load(shared, part.bytes, options, None) {
                Ok(image) => start = image.len,
                Err(e) => {
                    tracing::warn!("{e}");
                    return Err(LoadError::Bad(format!(
                        "Error reading the RDB base file {name}, AOF loading aborted"
                    )));
                }
            }
        }
        let Replayed::Short { valid } =
            replay(shared, name, part.bytes, start, &mut loaded.commands)?
        else {
            continue;
        };
        if !truncated_ok {
            return Err(LoadError::Bad(format!(
                "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
            )));
        }
        tracing::warn!("!!! Warning: short read while loading the AOF file {name}!!!");
        if index + 1 != parts.len() {
            return Err(LoadError::Bad(
                "Fatal error: the truncated file is not the last file".into(),
            ));
        }
        tracing::warn!("!!! Truncating the AOF {name} at offset {valid} !!!");
        tracing::warn!("AOF {name} loaded anyway because aof-load-truncated is enabled");
        loaded.truncated_at = Some(valid as u64);
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_in_redis_format() {
        let mut r = Commands {
            bytes: b"#TS:1\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPI",
            pos: 0,
        };
        assert_eq!(
            r.next().unwrap().unwrap(),
            vec![Bytes::from("GET"), Bytes::from("k")]
        );
        assert_eq!(r.next(), Err(Stop::Short));
        for bad in [
            &b"GET k\r\n"[..],
            b"*0\r\n",
            b"*1\r\nGET\r\n",
            b"*1\r\n$-1\r\n",
        ] {
            assert_eq!(
                Commands { bytes: bad, pos: 0 }.next(),
                Err(Stop::Format),
                "{bad:?}"
            );
        }
        // A huge claimed length is a short read, not an allocation.
        let mut huge = Commands {
            bytes: b"*2000000000\r\n$9000000000000\r\n",
            pos: 0,
        };
        assert_eq!(huge.next(), Err(Stop::Short));
    }
}
