//! LCS (Redis's `stringmatchlen`-free `lcsCommand` in `t_string.c`): the longest common
//! subsequence of two strings, its length, or the matching ranges. The dynamic
//! programming table and the walk back are Redis's own, so ties resolve the same way.

use bytes::Bytes;
use redline_resp::encode;

use super::args::is;
use super::reply::{CmdError, CmdResult, NOT_INTEGER, SYNTAX};
use super::{Ctx, Handler};
use crate::store::{canonical_int, Value};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[("lcs", lcs)];

fn lcs(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (a, b) = {
        let mut locked = ctx.lock_keys([&args[1][..], &args[2][..]]);
        let mut read = |key: &[u8]| -> Result<Vec<u8>, CmdError> {
            match locked.shard(key).get(key).map(|e| &e.value) {
                None => Ok(Vec::new()),
                Some(v @ (Value::Int(_) | Value::Str(_))) => Ok(v.to_vec().unwrap_or_default()),
                Some(_) => Err(CmdError::Static(
                    "ERR The specified keys must contain string values",
                )),
            }
        };
        let a = read(&args[1]);
        let b = read(&args[2]);
        (a?, b?)
    };
    let (mut get_len, mut get_idx, mut with_match_len) = (false, false, false);
    let mut min_match_len: i64 = 0;
    let mut j = 3;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = &args[j];
        if is(opt, "idx") {
            get_idx = true;
        } else if is(opt, "len") {
            get_len = true;
        } else if is(opt, "withmatchlen") {
            with_match_len = true;
        } else if is(opt, "minmatchlen") && more > 0 {
            min_match_len = canonical_int(&args[j + 1]).ok_or(NOT_INTEGER)?.max(0);
            j += 1;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    if get_idx && get_len {
        return Err(CmdError::Static(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    let (alen, blen) = (a.len(), b.len());
    // The table is (alen+1)*(blen+1) counters; Redis refuses what would exceed
    // proto-max-bulk-len, which also bounds our memory.
    let cells = (alen as u128 + 1) * (blen as u128 + 1);
    if cells * 4 > u128::from(ctx.shared.config.read().proto_max_bulk_len) {
        return Err(CmdError::Static(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let width = blen + 1;
    let mut table = vec![0u32; (alen + 1) * width];
    // Row by row, each from the one above, walked by iterators: no index arithmetic or
    // bounds check per cell (this loop is the command's whole cost).
    for (i, &ai) in a.iter().enumerate() {
        let (above, below) = table.split_at_mut((i + 1) * width);
        let prev = &above[i * width..];
        let row = &mut below[..width];
        let mut left = 0u32;
        let cells = row[1..]
            .iter_mut()
            .zip(prev.iter().zip(&prev[1..]))
            .zip(b.iter());
        for ((cell, (&diagonal, &up)), &bj) in cells {
            left = if ai == bj { diagonal + 1 } else { up.max(left) };
            *cell = left;
        }
    }
    let total = table[alen * width + blen];
    let proto = ctx.proto();
    let out = &mut *ctx.out;
    if get_len {
        encode::write_integer(out, i64::from(total));
        return Ok(());
    }
    let mut idx = total as usize;
    let mut result = vec![0u8; idx];
    let mut matches: Vec<[i64; 5]> = Vec::new();
    let (mut arange_start, mut arange_end, mut brange_start, mut brange_end) = (alen, 0, 0, 0);
    let (mut i, mut j) = (alen, blen);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if arange_start == alen {
                arange_start = i - 1;
                arange_end = i - 1;
                brange_start = j - 1;
                brange_end = j - 1;
            } else if arange_start == i && brange_start == j {
                arange_start -= 1;
                brange_start -= 1;
            } else {
                emit = true;
            }
            if arange_start == 0 || brange_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            let up = table[(i - 1) * width + j];
            let left = table[i * width + j - 1];
            if up > left {
                i -= 1;
            } else {
                j -= 1;
            }
            if arange_start != alen {
                emit = true;
            }
        }
        if emit {
            let match_len = (arange_end - arange_start + 1) as i64;
            if min_match_len == 0 || match_len >= min_match_len {
                matches.push([
                    arange_start as i64,
                    arange_end as i64,
                    brange_start as i64,
                    brange_end as i64,
                    match_len,
                ]);
            }
            arange_start = alen;
        }
    }
    if !get_idx {
        encode::write_bulk(out, &result);
        return Ok(());
    }
    encode::write_map_len(out, proto, 2);
    encode::write_bulk(out, b"matches");
    encode::write_array_len(out, matches.len());
    for m in &matches {
        encode::write_array_len(out, if with_match_len { 3 } else { 2 });
        encode::write_array_len(out, 2);
        encode::write_integer(out, m[0]);
        encode::write_integer(out, m[1]);
        encode::write_array_len(out, 2);
        encode::write_integer(out, m[2]);
        encode::write_integer(out, m[3]);
        if with_match_len {
            encode::write_integer(out, m[4]);
        }
    }
    encode::write_bulk(out, b"len");
    encode::write_integer(out, i64::from(total));
    Ok(())
}
