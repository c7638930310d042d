//! MONITOR: every command the server runs, as Redis formats it for monitors
//! (`+<secs>.<usecs> [<db> <addr>] "arg" ...`), pushed to each monitoring connection.
//!
//! A command is shown once it has run (so EXEC comes after the commands it ran);
//! EVAL, EVALSHA and FCALL show themselves before they run so the commands their script
//! calls (shown as `[<db> lua]`) follow them. Administrative commands are not shown,
//! and passwords are replaced by `(redacted)` as Redis does. With nobody monitoring, the
//! cost per command is one relaxed load.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::net::mailbox::Mailbox;

/// The monitoring connections.
#[derive(Debug, Default)]
pub struct Monitors {
    any: AtomicBool,
    list: Mutex<Vec<(u64, Arc<Mailbox>)>>,
}

impl Monitors {
    /// Whether anyone monitors.
    #[inline]
    pub fn active(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// Client `id` starts monitoring.
    pub fn add(&self, id: u64, mailbox: Arc<Mailbox>) {
        let mut list = self.list.lock();
        list.retain(|(other, _)| *other != id);
        list.push((id, mailbox));
        self.any.store(true, Ordering::Relaxed);
    }

    /// Client `id` is gone.
    pub fn remove(&self, id: u64) {
        let mut list = self.list.lock();
        list.retain(|(other, _)| *other != id);
        self.any.store(!list.is_empty(), Ordering::Relaxed);
    }

    /// Shows one command to every monitor. `origin` is `lua` or the client's address.
    pub fn feed(&self, db: usize, origin: &str, args: &[Bytes]) {
        let line = format_line(db, origin, args);
        for (_, mailbox) in self.list.lock().iter() {
            mailbox.deliver(line.as_bytes());
        }
    }
}

/// One monitor line, CRLF included.
pub fn format_line(db: usize, origin: &str, args: &[Bytes]) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut line = format!(
        "+{}.{:06} [{db} {origin}]",
        now.as_secs(),
        now.subsec_micros()
    );
    let redacted = crate::redact::positions(args);
    for (i, arg) in args.iter().enumerate() {
        line.push(' ');
        if redacted.contains(&i) {
            line.push_str("\"(redacted)\"");
        } else {
            line.push_str(&crate::config::repr(arg));
        }
    }
    line.push_str("\r\n");
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&[u8]]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::copy_from_slice(w)).collect()
    }

    #[test]
    fn lines_quote_and_redact_as_redis() {
        let line = format_line(3, "127.0.0.1:5000", &args(&[b"set", b"k\"\n", b"\x01v"]));
        assert!(
            line.ends_with(" [3 127.0.0.1:5000] \"set\" \"k\\\"\\n\" \"\\x01v\"\r\n"),
            "{line}"
        );
        let line = format_line(0, "lua", &args(&[b"hello", b"2", b"AUTH", b"u", b"p"]));
        assert!(line.ends_with("\"hello\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n"));
        let line = format_line(
            0,
            "x",
            &args(&[
                b"migrate", b"h", b"1", b"k", b"9", b"5000", b"AUTH2", b"u", b"p",
            ]),
        );
        assert!(
            line.ends_with("\"5000\" \"AUTH2\" \"(redacted)\" \"(redacted)\"\r\n"),
            "{line}"
        );
    }
}
