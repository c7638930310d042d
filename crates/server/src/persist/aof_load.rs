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
//! Files are read as they are loaded, never whole in memory (read whole, every file of
//! the AOF sat in memory beside the dataset it was building: a restart of 569 MB of
//! data with a 483 MB base peaked at 1,115 MB, redis-server's at 611 MB). The fuzz
//! target and the tests hand [`load_parts`] bytes already read instead, through the same
//! reader.

use std::io::Read;
use std::path::Path;

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
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stop {
    /// The input ended inside a command (Redis's `readerr` at end of file).
    Short,
    /// Not the AOF format (Redis's `fmterr`).
    Format,
    /// The file could not be read.
    Io(String),
}

/// Bytes read from a file at a time (more when one argument is longer).
const READ_AT_ONCE: usize = 256 << 10;

/// Redis's reader over one file's commands, reading the file as it goes: it holds the
/// command being read, not the file.
struct Commands<R> {
    source: R,
    /// Bytes the source has not given yet: a length claimed past them is a short read
    /// at once, with nothing read or reserved for it.
    unread: u64,
    window: Vec<u8>,
    /// The read position in `window`.
    pos: usize,
    /// The file offset of `window[0]`.
    base: u64,
}

impl<R: Read> Commands<R> {
    /// Reads `source`, `len` bytes long, which starts at offset `start` of its file.
    fn new(source: R, len: u64, start: u64) -> Commands<R> {
        Commands {
            source,
            unread: len,
            window: Vec::new(),
            pos: 0,
            base: start,
        }
    }

    /// The file offset of the next byte.
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Reads at least `more` bytes (fewer at the end of the source) after what the
    /// window holds, dropping what was read first; false at the end.
    fn read_more(&mut self, more: usize) -> Result<bool, Stop> {
        if self.unread == 0 {
            return Ok(false);
        }
        self.window.drain(..self.pos);
        self.base += self.pos as u64;
        self.pos = 0;
        let want = more.max(READ_AT_ONCE).min(self.unread as usize);
        let had = self.window.len();
        // Room a large argument needed goes once it is read.
        if self.window.capacity() > 2 * (had + want) {
            self.window.shrink_to(had + want);
        }
        self.window.reserve(want);
        (&mut self.source)
            .take(want as u64)
            .read_to_end(&mut self.window)
            .map_err(|e| Stop::Io(e.to_string()))?;
        let got = self.window.len() - had;
        // A file that ended early ends here.
        self.unread = if got < want {
            0
        } else {
            self.unread - got as u64
        };
        Ok(got > 0)
    }

    /// One line as `fgets` gives it: up to and including `\n`, or to the end.
    fn line(&mut self) -> Result<Option<&[u8]>, Stop> {
        let mut searched = 0;
        let len = loop {
            let rest = &self.window[self.pos..];
            if let Some(i) = rest[searched..].iter().position(|&b| b == b'\n') {
                break searched + i + 1;
            }
            searched = rest.len();
            if !self.read_more(1)? {
                break searched;
            }
        };
        if len == 0 {
            return Ok(None);
        }
        let line = &self.window[self.pos..self.pos + len];
        self.pos += len;
        Ok(Some(line))
    }

    fn take(&mut self, len: usize) -> Result<Option<&[u8]>, Stop> {
        let have = self.window.len() - self.pos;
        if have < len {
            let missing = len - have;
            if missing as u64 > self.unread || !self.read_more(missing)? {
                return Ok(None);
            }
            if self.window.len() - self.pos < len {
                return Ok(None);
            }
        }
        let taken = &self.window[self.pos..self.pos + len];
        self.pos += len;
        Ok(Some(taken))
    }

    /// The next command, `Ok(None)` at a clean end.
    fn next(&mut self) -> Result<Option<Vec<Bytes>>, Stop> {
        let argc = loop {
            match self.line()? {
                None => return Ok(None),
                Some(line) if line.first() == Some(&b'#') => continue,
                Some(line) if line.first() != Some(&b'*') => return Err(Stop::Format),
                Some(line) if line.len() == 1 => return Err(Stop::Short),
                Some(line) => break atoi(&line[1..]),
            }
        };
        if argc < 1 {
            return Err(Stop::Format);
        }
        // No allocation from the claimed count: arguments are pushed as they are read.
        let mut args = Vec::new();
        for _ in 0..argc {
            let line = self.line()?.ok_or(Stop::Short)?;
            if line.first() != Some(&b'$') {
                return Err(Stop::Format);
            }
            let len = usize::try_from(atoi(&line[1..])).map_err(|_| Stop::Format)?;
            let arg = self.take(len)?.ok_or(Stop::Short)?;
            args.push(Bytes::copy_from_slice(arg));
            // The CRLF after the argument is skipped unread, as Redis does.
            self.take(2)?.ok_or(Stop::Short)?;
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
    Short { valid: u64 },
}

/// Runs the commands of one file through a client that propagates nothing and gets
/// no replies, as Redis's fake AOF client.
fn replay<R: Read>(
    shared: &Shared,
    name: &str,
    mut reader: Commands<R>,
    commands: &mut u64,
) -> Result<Replayed, LoadError> {
    let mut client = crate::net::client::ClientState::new(
        0,
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        true,
    );
    client.is_master = true;
    client.reply = crate::net::client::ReplyMode::Off;
    let mut output = BytesMut::new();
    let mut valid = reader.offset();
    let mut before_multi = valid;
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
            Err(Stop::Io(e)) => {
                return Err(LoadError::Bad(format!(
                    "Unrecoverable error reading the append only file {name}: {e}"
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
        valid = reader.offset();
    }
}

/// Where a file of the AOF is read from.
#[derive(Debug, Clone, Copy)]
pub enum Contents<'a> {
    /// The file itself, read as it is loaded (at start, DEBUG LOADAOF).
    File(&'a Path),
    /// Its bytes, already read (the fuzz target, tests).
    Bytes(&'a [u8]),
}

/// One file of the AOF.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    /// Its name (for messages).
    pub name: &'a str,
    /// Its contents.
    pub contents: Contents<'a>,
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
        let replayed = match part.contents {
            Contents::Bytes(bytes) => {
                let start = load_image(name, bytes.starts_with(b"REDIS"), |options| {
                    super::snapshot::load(shared, bytes, options, None)
                })?;
                let rest = bytes.get(start..).unwrap_or_default();
                let reader = Commands::new(rest, rest.len() as u64, start as u64);
                replay(shared, name, reader, &mut loaded.commands)?
            }
            Contents::File(path) => replay_file(shared, name, path, &mut loaded.commands)?,
        };
        let Replayed::Short { valid } = replayed else {
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
        loaded.truncated_at = Some(valid);
    }
    Ok(loaded)
}

/// The RDB image a file starts with, if `is_rdb` (a base in RDB format, or a pre-7.0
/// AOF with an RDB preamble, whose tail holds commands), loaded by `load`; the offset
/// its commands start at.
fn load_image(
    name: &str,
    is_rdb: bool,
    load: impl FnOnce(
        super::snapshot::LoadOptions,
    ) -> Result<super::snapshot::Loaded, super::rdb::file::LoadError>,
) -> Result<usize, LoadError> {
    if !is_rdb {
        return Ok(0);
    }
    // Keys already expired load too, as in Redis: the AOF's commands after the image
    // may act on them.
    let options = super::snapshot::LoadOptions {
        keep_expired: true,
        ..Default::default()
    };
    match load(options) {
        Ok(image) => Ok(image.len),
        Err(e) => {
            tracing::warn!("{e}");
            Err(LoadError::Bad(format!(
                "Error reading the RDB base file {name}, AOF loading aborted"
            )))
        }
    }
}

/// [`load_parts`]'s work on a file read as it is loaded: its image in chunks
/// ([`super::dump_file`]), then its commands from where the image ended.
fn replay_file(
    shared: &Shared,
    name: &str,
    path: &Path,
    commands: &mut u64,
) -> Result<Replayed, LoadError> {
    use std::io::{Seek, SeekFrom};
    let open = || {
        std::fs::File::open(path).map_err(|e| {
            LoadError::Bad(format!(
                "Fatal error: can't open the append log file {name} for reading: {e}"
            ))
        })
    };
    let unreadable = |e: std::io::Error| {
        LoadError::Bad(format!(
            "Unrecoverable error reading the append only file {name}: {e}"
        ))
    };
    let mut file = open()?;
    let len = file.metadata().map_err(unreadable)?.len();
    let mut signature = Vec::with_capacity(5);
    (&mut file)
        .take(5)
        .read_to_end(&mut signature)
        .map_err(unreadable)?;
    let start = load_image(name, signature == b"REDIS", |options| {
        let image = std::fs::File::open(path)
            .map_err(|e| super::rdb::file::LoadError::Refused(e.to_string()))?;
        super::dump_file::load_file(shared, path, image, len, options, None)
    })?;
    file.seek(SeekFrom::Start(start as u64))
        .map_err(unreadable)?;
    let reader = Commands::new(file, len.saturating_sub(start as u64), start as u64);
    replay(shared, name, reader, commands)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &[u8]) -> Commands<&[u8]> {
        Commands::new(bytes, bytes.len() as u64, 0)
    }

    #[test]
    fn commands_are_read_in_redis_format() {
        let mut r = reader(b"#TS:1\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPI");
        assert_eq!(
            r.next().unwrap().unwrap(),
            vec![Bytes::from("GET"), Bytes::from("k")]
        );
        assert_eq!(r.offset(), 27);
        assert_eq!(r.next(), Err(Stop::Short));
        for bad in [
            &b"GET k\r\n"[..],
            b"*0\r\n",
            b"*1\r\nGET\r\n",
            b"*1\r\n$-1\r\n",
        ] {
            assert_eq!(reader(bad).next(), Err(Stop::Format), "{bad:?}");
        }
        // A huge claimed length is a short read, not an allocation.
        let mut huge = reader(b"*2000000000\r\n$9000000000000\r\n");
        assert_eq!(huge.next(), Err(Stop::Short));
    }

    /// Commands and arguments that cross the reader's window are read whole, and the
    /// offsets it gives are the file's.
    #[test]
    fn commands_across_reads_are_read_whole() {
        let big = vec![b'x'; READ_AT_ONCE * 2 + 7];
        let mut file = Vec::new();
        let mut ends = Vec::new();
        for i in 0..2000 {
            let value: &[u8] = if i % 500 == 7 { &big } else { b"v" };
            file.extend_from_slice(
                format!("*3\r\n$3\r\nSET\r\n$5\r\nk{i:04}\r\n${}\r\n", value.len()).as_bytes(),
            );
            file.extend_from_slice(value);
            file.extend_from_slice(b"\r\n");
            ends.push(file.len() as u64);
        }
        // Started after the first command, as after an RDB preamble: the offsets are
        // the file's.
        let rest = &file[ends[0] as usize..];
        let mut r = Commands::new(rest, rest.len() as u64, ends[0]);
        for (i, end) in ends.iter().enumerate().skip(1) {
            let args = r.next().unwrap().unwrap();
            assert_eq!(args[1], format!("k{i:04}").as_bytes());
            assert_eq!(args[2].len(), if i % 500 == 7 { big.len() } else { 1 });
            assert_eq!(r.offset(), *end);
        }
        assert_eq!(r.next(), Ok(None));
    }
}
