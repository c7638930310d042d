//! Key positions of commands missing from the command table (a module's, or one renamed
//! with `rename-command`), learned once per name from a node's `COMMAND INFO` and kept.
//!
//! A command with a fixed key range (first, last, step) is then routed like any table
//! command, with no extra round trip. A command whose keys move with its arguments
//! (`movablekeys`) needs `COMMAND GETKEYS` on every call, as Redis's own cluster clients
//! do; one the server does not know either is left to a node to reject.

use redline_resp::Frame;

/// What `COMMAND INFO <name>` taught us about a command's keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LearnedKeys {
    /// Keys at `first..=last` by `step` (`last` < 0 counts from the end), like the
    /// legacy triple of `COMMAND INFO`; `first == 0` means no keys.
    Range { first: i64, last: i64, step: i64 },
    /// Key positions depend on the arguments: ask `COMMAND GETKEYS` each time.
    PerCall,
    /// The server does not know the command.
    Unknown,
}

impl LearnedKeys {
    /// Reads one `COMMAND INFO` reply (an array holding one entry, or nil).
    pub(crate) fn from_command_info(reply: &Frame) -> LearnedKeys {
        let entry = match reply {
            Frame::Array(items) | Frame::Set(items) => items.first(),
            _ => None,
        };
        let Some(Frame::Array(fields)) = entry else {
            return LearnedKeys::Unknown;
        };
        let int = |i: usize| match fields.get(i) {
            Some(Frame::Integer(n)) => Some(*n),
            _ => None,
        };
        let movable = match fields.get(2) {
            Some(Frame::Array(flags) | Frame::Set(flags)) => flags.iter().any(|f| {
                matches!(f, Frame::Simple(s) | Frame::Bulk(s) if s.eq_ignore_ascii_case(b"movablekeys"))
            }),
            _ => false,
        };
        // Subcommands (field 9) may each have their own keys: GETKEYS knows which.
        let has_subcommands = matches!(fields.get(9), Some(Frame::Array(subs) | Frame::Set(subs)) if !subs.is_empty());
        match (int(3), int(4), int(5)) {
            (Some(first), Some(last), Some(step)) if !movable && !has_subcommands => {
                LearnedKeys::Range { first, last, step }
            }
            _ => LearnedKeys::PerCall,
        }
    }

    /// The argument indexes holding keys for a `Range`, `None` for the other kinds.
    /// Indexes outside `args` are skipped (the server will answer the arity error).
    pub(crate) fn key_indexes(self, argc: usize) -> Option<Vec<usize>> {
        let LearnedKeys::Range { first, last, step } = self else {
            return None;
        };
        if first <= 0 {
            return Some(Vec::new());
        }
        let argc = i64::try_from(argc).unwrap_or(i64::MAX);
        let last = if last < 0 { argc + last } else { last };
        let step = step.max(1);
        let mut indexes = Vec::new();
        let mut i = first;
        while i <= last && i < argc {
            // In range of usize: 0 < i < argc, which came from a usize.
            indexes.push(usize::try_from(i).unwrap_or(usize::MAX));
            i += step;
        }
        Some(indexes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn info(first: i64, last: i64, step: i64, flags: &[&str]) -> Frame {
        Frame::Array(vec![Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(b"mycmd")),
            Frame::Integer(-2),
            Frame::Set(
                flags
                    .iter()
                    .map(|f| Frame::Simple(Bytes::copy_from_slice(f.as_bytes())))
                    .collect(),
            ),
            Frame::Integer(first),
            Frame::Integer(last),
            Frame::Integer(step),
            Frame::Array(vec![]),
            Frame::Array(vec![]),
            Frame::Array(vec![]),
            Frame::Array(vec![]),
        ])])
    }

    #[test]
    fn ranges_movable_and_unknown() {
        let range = LearnedKeys::from_command_info(&info(1, -1, 2, &["write"]));
        assert_eq!(
            range,
            LearnedKeys::Range {
                first: 1,
                last: -1,
                step: 2
            }
        );
        // MSET-like: keys at 1, 3, 5 of 7 arguments.
        assert_eq!(range.key_indexes(7), Some(vec![1, 3, 5]));
        let movable = LearnedKeys::from_command_info(&info(0, 0, 0, &["movablekeys"]));
        assert_eq!(movable, LearnedKeys::PerCall);
        assert_eq!(movable.key_indexes(3), None);
        let keyless = LearnedKeys::from_command_info(&info(0, 0, 0, &["readonly"]));
        assert_eq!(keyless.key_indexes(4), Some(vec![]));
        assert_eq!(
            LearnedKeys::from_command_info(&Frame::Array(vec![Frame::NullArray])),
            LearnedKeys::Unknown
        );
        // A fixed key beyond the arguments given is left to the server's arity error.
        let one = LearnedKeys::from_command_info(&info(1, 1, 1, &[]));
        assert_eq!(one.key_indexes(1), Some(vec![]));
    }
}
