//! Conversions between Redis replies and Lua values, both ways, with Redis 7.0's rules.
//!
//! Reply → Lua (what `redis.call` returns): integers become numbers, bulk strings
//! strings, RESP2 nulls `false`, status `{ok=...}`, errors `{err=...}`; under
//! `redis.setresp(3)` maps become `{map={...}}`, sets `{set={m=true}}`, doubles
//! `{double=n}`, big numbers `{big_number=s}`, verbatim strings
//! `{verbatim_string={format=,string=}}`, booleans booleans and null `nil`.
//!
//! Lua → reply (what a script returns): strings bulk, numbers integers (truncated),
//! booleans `:1`/null (RESP2 scripts) or booleans, tables with `err`/`ok`/`double`/
//! `big_number`/`verbatim_string`/`map`/`set` as above, other tables arrays up to their
//! first nil.

use bytes::BytesMut;
use mlua::{Table, Value};
use redline_resp::{encode, Protocol};

/// Deepest reply or table nesting converted; deeper levels become errors, not a stack
/// overflow (a script may return a table that contains itself). The bound stays well
/// inside a worker thread's native stack, and under the nesting limit of RESP parsers
/// (128 in ours), so the reply still reaches the client.
pub(super) const MAX_DEPTH: usize = 64;

/// Where a reply goes and how: the caller's protocol, and the script's (`setresp`).
pub struct ReplyTarget<'a> {
    /// The caller's output.
    pub out: &'a mut BytesMut,
    /// The caller's protocol.
    pub caller: Protocol,
    /// The protocol the script chose with `redis.setresp` (2 by default).
    pub script: Protocol,
}

/// Writes the script's return value as a reply.
pub fn lua_to_reply(target: &mut ReplyTarget<'_>, value: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        encode::write_error(target.out, b"ERR reached lua stack limit");
        return;
    }
    match value {
        Value::String(s) => encode::write_bulk(target.out, &s.as_bytes()),
        Value::Boolean(b) => {
            if target.script == Protocol::Resp2 {
                if *b {
                    encode::write_integer(target.out, 1);
                } else {
                    encode::write_null_bulk(target.out, target.caller);
                }
            } else {
                encode::write_bool(target.out, target.caller, *b);
            }
        }
        Value::Integer(n) => encode::write_integer(target.out, *n),
        Value::Number(n) => encode::write_integer(target.out, super::args::c_cast_i64(*n)),
        Value::Table(t) => table_to_reply(target, t, depth),
        _ => encode::write_null_bulk(target.out, target.caller),
    }
}

fn string_field(t: &Table, name: &str) -> Option<mlua::String> {
    match t.raw_get::<Value>(name) {
        Ok(Value::String(s)) => Some(s),
        _ => None,
    }
}

fn table_field(t: &Table, name: &str) -> Option<Table> {
    match t.raw_get::<Value>(name) {
        Ok(Value::Table(inner)) => Some(inner),
        _ => None,
    }
}

/// The bytes before the first NUL, as C reads a string.
pub(super) fn c_string(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

/// Replaces CR and LF by spaces: a status or error line must stay one line.
pub(super) fn one_line(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect()
}

fn table_to_reply(target: &mut ReplyTarget<'_>, t: &Table, depth: usize) {
    // Redis reads both as C strings (up to a NUL); an error's line breaks at its end
    // are trimmed before the others become spaces.
    if let Some(err) = string_field(t, "err") {
        let err = err.as_bytes();
        let text = c_string(&err);
        let kept = text.len()
            - text
                .iter()
                .rev()
                .take_while(|&&b| b == b'\r' || b == b'\n')
                .count();
        encode::write_error(target.out, &one_line(&text[..kept]));
        return;
    }
    if let Some(ok) = string_field(t, "ok") {
        encode::write_simple(target.out, &one_line(c_string(&ok.as_bytes())));
        return;
    }
    let double = match t.raw_get::<Value>("double") {
        Ok(Value::Number(d)) => Some(d),
        Ok(Value::Integer(d)) => Some(d as f64),
        _ => None,
    };
    if let Some(d) = double {
        let text = crate::cmd::float::fmt_g17(d);
        encode::write_double_text_reply(target.out, target.caller, text.as_bytes());
        return;
    }
    if let Some(big) = string_field(t, "big_number") {
        encode::write_big_number(target.out, target.caller, &one_line(&big.as_bytes()));
        return;
    }
    if let Some(verbatim) = table_field(t, "verbatim_string") {
        if let (Some(format), Some(text)) = (
            string_field(&verbatim, "format"),
            string_field(&verbatim, "string"),
        ) {
            let (format, text) = (format.as_bytes(), text.as_bytes());
            match <&[u8; 3]>::try_from(&format[..]) {
                Ok(format) => encode::write_verbatim(target.out, target.caller, format, &text),
                // A format that is not three letters cannot be framed: Redis sends the text.
                Err(_) => encode::write_bulk(target.out, &text),
            }
            return;
        }
    }
    // Each element is converted as soon as it is read: a Lua value held in Rust takes a
    // slot of a stack with room for about 8,000, and a script's table may be far longer.
    if let Some(map) = table_field(t, "map") {
        encode::write_map_len(
            target.out,
            target.caller,
            map.pairs::<Value, Value>().flatten().count(),
        );
        for (k, v) in map.pairs::<Value, Value>().flatten() {
            lua_to_reply(target, &k, depth + 1);
            lua_to_reply(target, &v, depth + 1);
        }
        return;
    }
    if let Some(set) = table_field(t, "set") {
        encode::write_set_len(
            target.out,
            target.caller,
            set.pairs::<Value, Value>().flatten().count(),
        );
        for (member, _) in set.pairs::<Value, Value>().flatten() {
            lua_to_reply(target, &member, depth + 1);
        }
        return;
    }
    let len = array_len(t);
    encode::write_array_len(target.out, len);
    for i in 1..=len {
        match t.raw_get::<Value>(i) {
            Ok(item) => lua_to_reply(target, &item, depth + 1),
            Err(_) => encode::write_null_bulk(target.out, target.caller),
        }
    }
}

/// How many elements a table has as an array for Redis: up to its first nil.
fn array_len(t: &Table) -> usize {
    let mut len = 0;
    while matches!(t.raw_get::<Value>(len + 1), Ok(v) if !v.is_nil()) {
        len += 1;
    }
    len
}
