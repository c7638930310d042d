//! Whether a command blocks its connection, and for how long, from its arguments: the one
//! answer the client (dedicated connection and its time limit), the cluster client and the
//! tunnel (hand the connection over) share.
//!
//! The command table's `blocking` flag says a command *may* block; the arguments say
//! whether it does (`XREAD` only with `BLOCK`) and for how long (the timeout's position and
//! unit differ per command). Redis 7.0 leaves `WAIT` unflagged, and `WAITAOF` (7.2) is
//! not in the table, so they are named here.

use std::time::Duration;

use super::lookup::lookup;
use super::spec::CommandSpec;

/// How long a blocking command may hold its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// Until data arrives: a zero timeout.
    Forever,
    /// At most this long (the command's own timeout).
    For(Duration),
    /// It blocks, but its timeout is missing or not a valid number (the server will
    /// refuse it), or the command is one whose timeout position is not known here.
    Unknown,
}

impl Block {
    /// The bounded wait, `None` for [`Block::Forever`] and [`Block::Unknown`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use redline_resp::command::Block;
    ///
    /// assert_eq!(Block::For(Duration::from_secs(2)).duration(), Some(Duration::from_secs(2)));
    /// assert_eq!(Block::Forever.duration(), None);
    /// ```
    pub const fn duration(self) -> Option<Duration> {
        match self {
            Block::For(d) => Some(d),
            Block::Forever | Block::Unknown => None,
        }
    }
}

/// True when `spec` may block depending on its arguments: the `blocking` flag, or `WAIT` /
/// `WAITAOF` (unflagged in Redis 7.0). [`blocking`] says whether given arguments do.
///
/// ```
/// use redline_resp::command::{lookup, may_block};
///
/// assert!(may_block(lookup(b"BLPOP").unwrap()));
/// assert!(may_block(lookup(b"WAIT").unwrap()));
/// assert!(may_block(lookup(b"XREAD").unwrap())); // with BLOCK only, see `blocking`
/// assert!(!may_block(lookup(b"LPOP").unwrap()));
/// ```
pub fn may_block(spec: &CommandSpec) -> bool {
    spec.is_blocking() || matches!(spec.name, "wait" | "waitaof")
}

/// Whether the command `args` (its name first) blocks its connection, and for how long:
/// `None` when it does not block (not a blocking command, or `XREAD`/`XREADGROUP` without
/// `BLOCK`); a zero timeout blocks [forever](Block::Forever). Timeouts are in seconds
/// (fractions allowed) for the list and sorted-set pops, in milliseconds for `WAIT`,
/// `WAITAOF` and `XREAD ... BLOCK`.
///
/// ```
/// use std::time::Duration;
/// use redline_resp::command::{blocking, Block};
///
/// assert_eq!(blocking(&["BLPOP", "jobs", "1.5"]), Some(Block::For(Duration::from_millis(1500))));
/// assert_eq!(blocking(&["BLMPOP", "0", "1", "jobs", "LEFT"]), Some(Block::Forever));
/// assert_eq!(blocking(&["WAIT", "1", "250"]), Some(Block::For(Duration::from_millis(250))));
/// assert_eq!(blocking(&["XREAD", "BLOCK", "100", "STREAMS", "s", "$"]), Some(Block::For(Duration::from_millis(100))));
/// assert_eq!(blocking(&["XREAD", "STREAMS", "s", "0"]), None);
/// assert_eq!(blocking(&["BLPOP", "jobs", "soon"]), Some(Block::Unknown));
/// assert_eq!(blocking(&["GET", "k"]), None);
/// ```
pub fn blocking<A: AsRef<[u8]>>(args: &[A]) -> Option<Block> {
    let name = args.first()?.as_ref();
    match lookup(name) {
        Some(spec) => blocking_with(spec, args),
        // Redis 7.2's WAITAOF is newer than the table; it blocks like WAIT.
        None if name.eq_ignore_ascii_case(b"WAITAOF") => {
            Some(millis(args.last().map(AsRef::as_ref)))
        }
        None => None,
    }
}

/// [`blocking`] for a command whose entry is already known (`spec` is `args[0]`'s), so
/// the name is not looked up again.
///
/// ```
/// use redline_resp::command::{blocking_with, lookup, Block};
///
/// let spec = lookup(b"BRPOP").unwrap();
/// assert_eq!(blocking_with(spec, &["BRPOP", "q", "0"]), Some(Block::Forever));
/// ```
pub fn blocking_with<A: AsRef<[u8]>>(spec: &CommandSpec, args: &[A]) -> Option<Block> {
    if !may_block(spec) {
        return None;
    }
    let arg = |i: usize| args.get(i).map(AsRef::as_ref);
    let last = args.len().checked_sub(1);
    let block = match spec.name {
        "blpop" | "brpop" | "brpoplpush" | "blmove" | "bzpopmin" | "bzpopmax" => {
            seconds(last.and_then(arg))
        }
        // BLMPOP timeout numkeys key... LEFT|RIGHT [COUNT n]
        "blmpop" | "bzmpop" => seconds(arg(1)),
        "wait" | "waitaof" => millis(last.and_then(arg)),
        "xread" | "xreadgroup" => {
            // Options come before STREAMS; after it, a key or id named BLOCK is data.
            let mut options = args
                .iter()
                .map(AsRef::as_ref)
                .take_while(|a| !a.eq_ignore_ascii_case(b"STREAMS"));
            let at = options.position(|a| a.eq_ignore_ascii_case(b"BLOCK"))?;
            millis(arg(at + 1))
        }
        _ => Block::Unknown,
    };
    Some(block)
}

/// A timeout in seconds, fractions allowed (`BLPOP`...).
fn seconds(arg: Option<&[u8]>) -> Block {
    match number::<f64>(arg) {
        Some(0.0) => Block::Forever,
        Some(secs) if secs.is_finite() && secs > 0.0 => {
            Duration::try_from_secs_f64(secs).map_or(Block::Unknown, Block::For)
        }
        _ => Block::Unknown,
    }
}

/// A timeout in whole milliseconds (`WAIT`, `XREAD BLOCK`).
fn millis(arg: Option<&[u8]>) -> Block {
    match number::<u64>(arg) {
        Some(0) => Block::Forever,
        Some(ms) => Block::For(Duration::from_millis(ms)),
        None => Block::Unknown,
    }
}

/// The argument as a decimal number, if it is one.
fn number<T: std::str::FromStr>(arg: Option<&[u8]>) -> Option<T> {
    std::str::from_utf8(arg?).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Option<Block> {
        Some(Block::For(Duration::from_millis(n)))
    }

    #[test]
    fn flagged_pops_take_seconds_last() {
        assert_eq!(blocking(&["blpop", "a", "b", "2"]), ms(2000));
        assert_eq!(blocking(&["BRPOP", "a", "0.25"]), ms(250));
        assert_eq!(blocking(&["BRPOPLPUSH", "a", "b", "1"]), ms(1000));
        assert_eq!(
            blocking(&["BLMOVE", "a", "b", "LEFT", "RIGHT", "3"]),
            ms(3000)
        );
        assert_eq!(blocking(&["BZPOPMIN", "z", "0"]), Some(Block::Forever));
        assert_eq!(blocking(&["BZPOPMAX", "z", "0.0"]), Some(Block::Forever));
    }

    #[test]
    fn mpop_timeout_is_first() {
        assert_eq!(
            blocking(&["BLMPOP", "2", "1", "k", "LEFT", "COUNT", "5"]),
            ms(2000)
        );
        assert_eq!(
            blocking(&["BZMPOP", "0", "1", "k", "MIN"]),
            Some(Block::Forever)
        );
    }

    #[test]
    fn wait_is_unflagged_and_in_milliseconds() {
        assert_eq!(blocking(&["WAIT", "1", "250"]), ms(250));
        assert_eq!(blocking(&["wait", "1", "0"]), Some(Block::Forever));
        assert_eq!(blocking(&["WAITAOF", "1", "0", "40"]), ms(40));
    }

    #[test]
    fn stream_reads_block_only_with_block() {
        assert_eq!(
            blocking(&["XREAD", "COUNT", "1", "block", "100", "STREAMS", "s", "$"]),
            ms(100)
        );
        assert_eq!(
            blocking(&[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "BLOCK",
                "0",
                "STREAMS",
                "s",
                ">"
            ]),
            Some(Block::Forever)
        );
        assert_eq!(blocking(&["XREAD", "STREAMS", "s", "0"]), None);
        // A stream named BLOCK is a key, not the option.
        assert_eq!(blocking(&["XREAD", "STREAMS", "BLOCK", "0"]), None);
    }

    #[test]
    fn bad_timeouts_are_unknown() {
        let unknown = Some(Block::Unknown);
        assert_eq!(blocking(&["BLPOP", "k", "-1"]), unknown);
        assert_eq!(blocking(&["BLPOP", "k", "nan"]), unknown);
        assert_eq!(blocking(&["BLPOP", "k", "inf"]), unknown);
        assert_eq!(blocking(&["BLPOP", "k", "1e300"]), unknown);
        assert_eq!(blocking(&[b"BLPOP".as_slice(), b"k", b"\xff"]), unknown);
        assert_eq!(blocking(&["WAIT", "1", "1.5"]), unknown);
        assert_eq!(blocking(&["XREAD", "BLOCK"]), unknown);
        assert_eq!(blocking(&["BLMPOP"]), unknown);
    }

    #[test]
    fn others_do_not_block() {
        assert_eq!(blocking(&["GET", "k"]), None);
        assert_eq!(blocking(&["LPOP", "k"]), None);
        assert_eq!(blocking(&["NOSUCHCOMMAND", "0"]), None);
        assert_eq!(blocking::<&str>(&[]), None);
    }
}
