//! MEMORY USAGE.

use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::reply::{CmdResult, SYNTAX};
use super::{Ctx, Handler};
use crate::store::Value;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[("memory|usage", memory_usage)];

/// Bytes a value takes, estimated from its layout (entry, inline or heap bytes, and the
/// per-element overhead of its collection).
fn value_size(value: &Value) -> usize {
    const ENTRY: usize = 56;
    let heap = |len: usize| {
        if len > crate::store::INLINE_CAPACITY {
            len + 16
        } else {
            0
        }
    };
    ENTRY
        + match value {
            Value::Int(_) => 0,
            Value::Str(s) => heap(s.len()),
            Value::List(l) => 32 + l.iter().map(|e| 24 + heap(e.len())).sum::<usize>(),
            Value::Hash(h) => {
                64 + h
                    .iter()
                    .map(|(f, v)| 64 + heap(f.len()) + heap(v.len()))
                    .sum::<usize>()
            }
            Value::Set(s) => 64 + s.iter().map(|m| 40 + heap(m.len())).sum::<usize>(),
            Value::ZSet(z) => {
                96 + z
                    .iter()
                    .map(|(m, _)| 112 + 2 * heap(m.len()))
                    .sum::<usize>()
            }
            Value::Stream(s) => s.heap_size(),
        }
}

fn memory_usage(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut j = 3;
    while j < args.len() {
        if is(&args[j], "samples") && j + 1 < args.len() {
            let n = int(&args[j + 1])?;
            if n < 0 {
                return Err(SYNTAX);
            }
            j += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    let key = &args[2];
    let proto = ctx.proto();
    let mut shard = ctx.lock(key);
    match shard.get(key) {
        Some(e) => {
            let size = value_size(&e.value) + key.len();
            encode::write_integer(ctx.out, size as i64);
        }
        None => encode::write_null_bulk(ctx.out, proto),
    }
    Ok(())
}
