//! The extra libraries Redis gives scripts, written here in Rust: `bit` (LuaBitOp's
//! 32-bit operations) and `cjson` (JSON encode/decode with Lua CJSON's conventions:
//! empty tables encode as `{}`, integral numbers without a fraction, JSON null decodes to
//! `cjson.null`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use mlua::{LightUserData, Lua, Table, Value, Variadic};

/// Lua CJSON's settings (`cjson.encode_max_depth(n)`...), per interpreter.
#[derive(Debug)]
struct JsonSettings {
    encode_max_depth: AtomicUsize,
    decode_max_depth: AtomicUsize,
    encode_invalid_numbers: AtomicBool,
}

impl Default for JsonSettings {
    fn default() -> Self {
        JsonSettings {
            encode_max_depth: AtomicUsize::new(1000),
            decode_max_depth: AtomicUsize::new(1000),
            encode_invalid_numbers: AtomicBool::new(false),
        }
    }
}

/// Installs `bit`, `cjson`, `cmsgpack` and `struct` as globals.
pub fn install(lua: &Lua) -> mlua::Result<()> {
    let g = lua.globals();
    g.set("bit", bit(lua)?)?;
    g.set("cjson", cjson(lua)?)?;
    g.set("cmsgpack", super::msgpack::cmsgpack(lua)?)?;
    g.set("struct", super::structlib::structlib(lua)?)?;
    Ok(())
}

/// LuaBitOp's `barg`: argument `n` of `func` modulo 2^32, as a signed 32-bit integer;
/// anything Lua cannot read as a number is refused as LuaBitOp refuses it.
fn barg(lua: &Lua, args: &[Value], n: usize, func: &str) -> mlua::Result<i32> {
    let v = args.get(n - 1).cloned().unwrap_or(Value::Nil);
    let Some(x) = lua.coerce_number(v)? else {
        return Err(super::args::type_error(args, n, func, "number"));
    };
    // LuaBitOp adds 2^52+2^51 and takes the double's low 32 bits: rounding to nearest
    // even, then wrapping (and whatever those bits hold for huge numbers, NaN or inf).
    Ok((x + 6_755_399_441_055_744.0).to_bits() as u32 as i32)
}

fn bit(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let unary = |name: &'static str, op: fn(i32) -> i32| {
        lua.create_function(move |lua, a: Variadic<Value>| Ok(op(barg(lua, &a, 1, name)?)))
    };
    t.set("tobit", unary("tobit", |x| x)?)?;
    t.set("bnot", unary("bnot", |x| !x)?)?;
    t.set("bswap", unary("bswap", |x| (x as u32).swap_bytes() as i32)?)?;
    let fold = |name: &'static str, op: fn(i32, i32) -> i32| {
        lua.create_function(move |lua, a: Variadic<Value>| {
            let mut acc = barg(lua, &a, 1, name)?;
            for n in 2..=a.len() {
                acc = op(acc, barg(lua, &a, n, name)?);
            }
            Ok(acc)
        })
    };
    t.set("band", fold("band", |x, y| x & y)?)?;
    t.set("bor", fold("bor", |x, y| x | y)?)?;
    t.set("bxor", fold("bxor", |x, y| x ^ y)?)?;
    let shift = |name: &'static str, op: fn(i32, u32) -> i32| {
        lua.create_function(move |lua, a: Variadic<Value>| {
            let x = barg(lua, &a, 1, name)?;
            let n = barg(lua, &a, 2, name)? as u32 & 31;
            Ok(op(x, n))
        })
    };
    t.set("lshift", shift("lshift", |x, n| ((x as u32) << n) as i32)?)?;
    t.set("rshift", shift("rshift", |x, n| ((x as u32) >> n) as i32)?)?;
    t.set("arshift", shift("arshift", |x, n| x >> n)?)?;
    t.set(
        "rol",
        shift("rol", |x, n| (x as u32).rotate_left(n) as i32)?,
    )?;
    t.set(
        "ror",
        shift("ror", |x, n| (x as u32).rotate_right(n) as i32)?,
    )?;
    t.set(
        "tohex",
        lua.create_function(|lua, a: Variadic<Value>| {
            let x = barg(lua, &a, 1, "tohex")? as u32;
            // Absent: 8 digits; present (even nil), read as a number.
            let n = if a.len() < 2 {
                8
            } else {
                barg(lua, &a, 2, "tohex")?
            };
            // Negative: upper case. i64, so -2147483648 negates (to more than 8).
            let n = i64::from(n);
            let (upper, digits) = if n < 0 { (true, -n) } else { (false, n) };
            let digits = digits.min(8) as usize;
            let text = format!("{x:08x}");
            let text = &text[8 - digits..];
            Ok(if upper {
                text.to_uppercase()
            } else {
                text.to_string()
            })
        })?,
    )?;
    Ok(t)
}

fn cjson(lua: &Lua) -> mlua::Result<Table> {
    let settings = Arc::new(JsonSettings::default());
    let t = lua.create_table()?;
    t.set(
        "null",
        Value::LightUserData(LightUserData(std::ptr::null_mut())),
    )?;
    let s = settings.clone();
    t.set(
        "encode",
        lua.create_function(move |lua, v: Value| {
            let mut out = Vec::new();
            let limits = EncodeLimits {
                max_depth: s.encode_max_depth.load(Ordering::Relaxed),
                invalid_numbers: s.encode_invalid_numbers.load(Ordering::Relaxed),
            };
            encode_json(&v, &mut out, 1, &limits).map_err(mlua::Error::runtime)?;
            lua.create_string(&out)
        })?,
    )?;
    let s = settings.clone();
    t.set(
        "decode",
        lua.create_function(move |lua, text: mlua::String| {
            let parsed: serde_json::Value =
                serde_json::from_slice(&text.as_bytes()).map_err(|e| {
                    mlua::Error::runtime(format!("Expected value but found invalid token: {e}"))
                })?;
            let max = s.decode_max_depth.load(Ordering::Relaxed);
            if json_depth(&parsed) > max {
                return Err(mlua::Error::runtime(format!(
                    "Found too many nested data structures ({})",
                    max + 1
                )));
            }
            decode_json(lua, &parsed, 0)
        })?,
    )?;
    for (name, encode) in [("encode_max_depth", true), ("decode_max_depth", false)] {
        let s = settings.clone();
        t.set(
            name,
            lua.create_function(move |_, n: Option<i64>| {
                let cell = if encode {
                    &s.encode_max_depth
                } else {
                    &s.decode_max_depth
                };
                if let Some(n) = n {
                    if n < 1 {
                        return Err(mlua::Error::runtime(
                            "bad argument #1 (expected integer between 1 and 2147483647)",
                        ));
                    }
                    cell.store(n as usize, Ordering::Relaxed);
                }
                Ok(cell.load(Ordering::Relaxed))
            })?,
        )?;
    }
    let s = settings;
    t.set(
        "encode_invalid_numbers",
        lua.create_function(move |_, on: Option<Value>| {
            if let Some(v) = on {
                let on = match &v {
                    Value::Boolean(b) => *b,
                    Value::String(text) => &*text.as_bytes() != b"off",
                    _ => true,
                };
                s.encode_invalid_numbers.store(on, Ordering::Relaxed);
            }
            Ok(s.encode_invalid_numbers.load(Ordering::Relaxed))
        })?,
    )?;
    // Settings of Lua CJSON that change nothing here (buffer reuse, sparse arrays,
    // precision): accepted, returning their arguments as CJSON does.
    for name in [
        "encode_keep_buffer",
        "encode_sparse_array",
        "encode_number_precision",
        "decode_invalid_numbers",
    ] {
        t.set(
            name,
            lua.create_function(|_, args: Variadic<Value>| Ok(args))?,
        )?;
    }
    Ok(t)
}

/// How deep a parsed JSON document nests (a scalar is 0, `[]` is 1).
fn json_depth(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(items) => 1 + items.iter().map(json_depth).max().unwrap_or(0),
        serde_json::Value::Object(map) => 1 + map.values().map(json_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// The encoder's settings for one call.
struct EncodeLimits {
    max_depth: usize,
    invalid_numbers: bool,
}

const MAX_JSON_DEPTH: usize = 1000;

fn encode_json(
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
    limits: &EncodeLimits,
) -> Result<(), String> {
    let nests = matches!(v, Value::Table(_));
    if nests && depth > limits.max_depth {
        return Err(format!(
            "Cannot serialise, excessive nesting ({})",
            limits.max_depth + 1
        ));
    }
    match v {
        Value::Nil | Value::LightUserData(_) => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(n) => encode_number(*n as f64, out, limits)?,
        Value::Number(n) => encode_number(*n, out, limits)?,
        Value::String(s) => encode_string(&s.as_bytes(), out),
        Value::Table(t) => match array_length(t)? {
            Some(len) => {
                out.push(b'[');
                for i in 1..=len {
                    if i > 1 {
                        out.push(b',');
                    }
                    let item: Value = t.raw_get(i).map_err(|e| e.to_string())?;
                    encode_json(&item, out, depth + 1, limits)?;
                }
                out.push(b']');
            }
            None => {
                out.push(b'{');
                let mut first = true;
                for pair in t.pairs::<Value, Value>() {
                    let (k, item) = pair.map_err(|e| e.to_string())?;
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    match &k {
                        Value::String(s) => encode_string(&s.as_bytes(), out),
                        Value::Integer(_) | Value::Number(_) => {
                            out.push(b'"');
                            encode_json(&k, out, depth + 1, limits)?;
                            out.push(b'"');
                        }
                        other => {
                            return Err(format!(
                                "Cannot serialise {}: table key must be a number or string",
                                other.type_name()
                            ))
                        }
                    }
                    out.push(b':');
                    encode_json(&item, out, depth + 1, limits)?;
                }
                out.push(b'}');
            }
        },
        other => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            ))
        }
    }
    Ok(())
}

/// Lua CJSON's numbers: `%.14g`; NaN and infinities only when allowed.
fn encode_number(n: f64, out: &mut Vec<u8>, limits: &EncodeLimits) -> Result<(), String> {
    if n.is_finite() {
        out.extend_from_slice(crate::cmd::float::fmt_g(n, 14).as_bytes());
        return Ok(());
    }
    if !limits.invalid_numbers {
        return Err("Cannot serialise number: must not be NaN or Inf".into());
    }
    let text: &[u8] = if n.is_nan() {
        b"nan"
    } else if n > 0.0 {
        b"inf"
    } else {
        b"-inf"
    };
    out.extend_from_slice(text);
    Ok(())
}

/// Lua CJSON's strings: bytes as they are (no UTF-8 check), with `"`, `\`, `/` and the
/// control characters (and DEL) escaped as its table escapes them.
fn encode_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            c if c < 0x20 || c == 0x7f => {
                out.extend_from_slice(format!("\\u{:04x}", c).as_bytes());
            }
            c => out.push(c),
        }
    }
    out.push(b'"');
}

/// Lua CJSON's `lua_array_length`: `Some(n)` when every key is an integer from 1 (holes
/// become nulls up to the largest, n > 0), `None` for an object (or an empty table);
/// an array that is mostly holes is refused.
fn array_length(t: &Table) -> Result<Option<usize>, String> {
    let mut max = 0usize;
    let mut items = 0usize;
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair.map_err(|e| e.to_string())?;
        let k = match k {
            Value::Integer(k) => k as f64,
            Value::Number(k) => k,
            _ => return Ok(None),
        };
        if k < 1.0 || k.floor() != k {
            return Ok(None);
        }
        max = max.max(k as usize);
        items += 1;
    }
    // encode_sparse_ratio 2, encode_sparse_safe 10, encode_sparse_convert off.
    if max > items * 2 && max > 10 {
        return Err("Cannot serialise table: excessively sparse array".into());
    }
    Ok((max > 0).then_some(max))
}

fn decode_json(lua: &Lua, v: &serde_json::Value, depth: usize) -> mlua::Result<Value> {
    if depth > MAX_JSON_DEPTH {
        return Err(mlua::Error::runtime(
            "Found too many nested data structures (1001)",
        ));
    }
    Ok(match v {
        serde_json::Value::Null => Value::LightUserData(LightUserData(std::ptr::null_mut())),
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Value::String(lua.create_string(s)?),
        serde_json::Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, decode_json(lua, item, depth + 1)?)?;
            }
            Value::Table(t)
        }
        serde_json::Value::Object(map) => {
            let t = lua.create_table()?;
            for (k, item) in map {
                t.raw_set(k.as_str(), decode_json(lua, item, depth + 1)?)?;
            }
            Value::Table(t)
        }
    })
}
