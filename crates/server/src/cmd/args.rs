//! Reading arguments the way Redis does: strict integers (`string2ll`: no `+`, no
//! leading zeros, no spaces), floats like `strtod`, case-insensitive option names.

use bytes::Bytes;

use super::float::parse_f64;
use super::reply::{CmdError, DB_INDEX, MUST_BE_POSITIVE, NOT_FLOAT, NOT_INTEGER};
use crate::store::by_position::ByPosition;
use crate::store::canonical_int;

/// A strict 64-bit integer, else "value is not an integer or out of range".
#[inline]
pub fn int(arg: &[u8]) -> Result<i64, CmdError> {
    canonical_int(arg).ok_or(NOT_INTEGER)
}

/// A timeout in milliseconds as Redis reads it (`getTimeoutFromObjectOrReply` with
/// `UNIT_MILLISECONDS`): a whole number, not negative. WAIT, CLIENT PAUSE and XREAD's
/// BLOCK take theirs this way.
pub fn timeout_ms(arg: &[u8]) -> Result<i64, CmdError> {
    let ms = canonical_int(arg).ok_or(CmdError::Static(
        "ERR timeout is not an integer or out of range",
    ))?;
    if ms < 0 {
        return Err(TIMEOUT_NEGATIVE);
    }
    Ok(ms)
}

/// Redis's error for a negative timeout, in milliseconds or seconds.
pub const TIMEOUT_NEGATIVE: CmdError = CmdError::Static("ERR timeout is negative");

/// A SCAN cursor as Redis reads it (`strtoul`, whole): no leading space, an optional
/// sign (a negative cursor wraps around, as unsigned arithmetic does), decimal digits,
/// nothing after; the empty text is cursor 0; past 2^64 - 1 it is refused.
pub fn scan_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    const INVALID: CmdError = CmdError::Static("ERR invalid cursor");
    if matches!(
        arg.first(),
        Some(b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
    ) {
        return Err(INVALID);
    }
    let (negative, digits) = match arg.first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        _ => (false, arg),
    };
    if digits.is_empty() {
        // strtoul reads nothing and stops at the start: whole only if that is the end.
        return if arg.is_empty() { Ok(0) } else { Err(INVALID) };
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return Err(INVALID);
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or(INVALID)?;
    }
    Ok(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// A C `int` as Redis's `getIntFromObjectOrReply` reads it: a strict integer, then its
/// own range error.
pub fn c_int(arg: &[u8]) -> Result<i32, CmdError> {
    i32::try_from(int(arg)?).map_err(|_| {
        CmdError::Static("ERR value is out of range, value must between -2147483648 and 2147483647")
    })
}

/// A database index as Redis reads one with `getIntFromObjectOrReply` then `selectDb`
/// (SELECT, MOVE, COPY ... DB): a C int, below `databases`.
pub fn db_index(arg: &[u8], databases: usize) -> Result<usize, CmdError> {
    usize::try_from(c_int(arg)?)
        .ok()
        .filter(|&n| n < databases)
        .ok_or(DB_INDEX)
}

/// The optional count of LPOP / RPOP, SPOP and ZPOPMIN / ZPOPMAX: a strict integer of
/// 0 or more, else "value is out of range, must be positive".
pub fn pop_count(arg: Option<&Bytes>) -> Result<Option<usize>, CmdError> {
    arg.map(|arg| {
        canonical_int(arg)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or(MUST_BE_POSITIVE)
    })
    .transpose()
}

/// A float, else "value is not a valid float".
pub fn float(arg: &[u8]) -> Result<f64, CmdError> {
    parse_f64(arg).ok_or(NOT_FLOAT)
}

/// Whether `arg` spells `word`, ignoring ASCII case.
#[inline]
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// The argument as (lossy) text, for error messages.
pub fn text(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

/// The count of HRANDFIELD / SRANDMEMBER / ZRANDMEMBER, read first as Redis does: the
/// most negative integer is refused.
pub fn random_count(arg: &[u8]) -> Result<i64, CmdError> {
    let n = int(arg)?;
    if n == i64::MIN {
        return Err(CmdError::Static(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    Ok(n)
}

/// The positions of `collection` SRANDMEMBER, HRANDFIELD and ZRANDMEMBER with a count
/// read: a count of 0 or more picks distinct elements (at most all of them), a
/// negative one draws `|count|` times (at most 2^24), repeats allowed.
pub fn random_picks(count: i64, collection: &impl ByPosition) -> Vec<usize> {
    if count >= 0 {
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        // A few of many: drawn until that many are distinct, as Redis does below a third
        // of the size (a shuffle of every position would cost the collection's size).
        if count.saturating_mul(3) <= collection.elements() {
            let mut picked = std::collections::HashSet::with_capacity(count);
            let mut picks = Vec::with_capacity(count);
            while picks.len() < count {
                let Some(i) = collection.random_index() else {
                    break;
                };
                if picked.insert(i) {
                    picks.push(i);
                }
            }
            return picks;
        }
        let mut all: Vec<usize> = (0..collection.positions())
            .filter(|&i| collection.holds(i))
            .collect();
        fastrand::shuffle(&mut all);
        all.truncate(count);
        all
    } else {
        (0..count.unsigned_abs().min(1 << 24))
            .filter_map(|_| collection.random_index())
            .collect()
    }
}

/// With values (pairs) the count's doubled length must not overflow; checked after the
/// option's syntax, as Redis orders the checks.
pub fn random_pairs_count(n: i64) -> Result<i64, CmdError> {
    if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&n) {
        return Err(CmdError::Static("ERR value is out of range"));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::collections::HashSet;

    /// Every even position of `positions` holds an element; counts the positions
    /// looked at one by one.
    struct Evens {
        positions: usize,
        looked_at: Cell<usize>,
    }

    impl ByPosition for Evens {
        fn positions(&self) -> usize {
            self.positions
        }
        fn holds(&self, i: usize) -> bool {
            self.looked_at.set(self.looked_at.get() + 1);
            i % 2 == 0
        }
        fn random_index(&self) -> Option<usize> {
            (self.positions > 1).then(|| fastrand::usize(..self.positions / 2) * 2)
        }
        fn elements(&self) -> usize {
            self.positions.div_ceil(2)
        }
    }

    fn evens(positions: usize) -> Evens {
        Evens {
            positions,
            looked_at: Cell::new(0),
        }
    }

    fn distinct_elements(picks: &[usize]) -> bool {
        picks.iter().all(|i| i % 2 == 0)
            && picks.iter().collect::<HashSet<_>>().len() == picks.len()
    }

    #[test]
    fn a_few_distinct_picks_of_many_do_not_walk_the_collection() {
        let many = evens(2_000_000);
        let picks = random_picks(5, &many);
        assert_eq!(picks.len(), 5);
        assert!(distinct_elements(&picks));
        assert_eq!(many.looked_at.get(), 0);
        // From a third of the size on, the picks come from every position.
        let few = evens(20);
        let picks = random_picks(5, &few);
        assert!(distinct_elements(&picks) && picks.len() == 5);
        assert_eq!(few.looked_at.get(), 20);
        let all = random_picks(100, &evens(30));
        assert!(distinct_elements(&all) && all.len() == 15);
        assert_eq!(random_picks(-40, &evens(30)).len(), 40);
    }
}
