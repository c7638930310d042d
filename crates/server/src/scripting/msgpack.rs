//! `cmsgpack` for scripts: MessagePack pack/unpack with lua-cmsgpack's conventions
//! (integral numbers as the smallest integer form, other numbers as float32 when exact
//! else float64, tables with keys 1..n as arrays, nesting past 16 levels packed as nil).

use mlua::{Lua, Table, Value, Variadic};

use super::args::{
    arg_error, check_integer, check_string, opt_integer, too_many_results, MAX_RESULTS,
};

/// lua-cmsgpack's words when an unpack would return too many values.
const TOO_MANY: &str = "too many return values at once; use unpack_one or unpack_limit instead.";

/// Tables nested deeper than this pack as nil (lua-cmsgpack's LUACMSGPACK_MAX_NESTING).
const MAX_NESTING: usize = 16;

/// Builds the `cmsgpack` table.
pub fn cmsgpack(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "pack",
        lua.create_function(|lua, args: Variadic<Value>| {
            if args.is_empty() {
                // lua-cmsgpack reports it as argument 0.
                return Err(arg_error(0, "pack", "MessagePack pack needs input."));
            }
            let mut out = Vec::new();
            for v in args.iter() {
                pack(v, &mut out, 0);
            }
            lua.create_string(out)
        })?,
    )?;
    t.set(
        "unpack",
        lua.create_function(|lua, args: Variadic<Value>| {
            let data = check_string(lua, &args, 1, "unpack")?;
            let bytes = data.as_bytes();
            let mut pos = 0;
            Ok(Variadic::from_iter(unpack_values(
                lua, &bytes, &mut pos, 0,
            )?))
        })?,
    )?;
    t.set(
        "unpack_one",
        lua.create_function(|lua, args: Variadic<Value>| {
            const F: &str = "unpack_one";
            let data = check_string(lua, &args, 1, F)?;
            let offset = opt_integer(lua, &args, 2, F, 0)?;
            unpack_limited(lua, &data.as_bytes(), 1, offset)
        })?,
    )?;
    t.set(
        "unpack_limit",
        lua.create_function(|lua, args: Variadic<Value>| {
            const F: &str = "unpack_limit";
            let data = check_string(lua, &args, 1, F)?;
            let limit = check_integer(lua, &args, 2, F)?;
            let offset = opt_integer(lua, &args, 3, F, 0)?;
            unpack_limited(lua, &data.as_bytes(), limit, offset)
        })?,
    )?;
    Ok(t)
}

/// Up to `limit` values (0: all) from `offset`; returns the next offset (-1 at the end)
/// and the values.
fn unpack_limited(
    lua: &Lua,
    bytes: &[u8],
    limit: i64,
    offset: i64,
) -> mlua::Result<Variadic<Value>> {
    let Ok(mut pos) = usize::try_from(offset) else {
        return Err(mlua::Error::runtime(
            "Offset must be greater than or equal to zero",
        ));
    };
    if pos > bytes.len() {
        return Err(mlua::Error::runtime(
            "Start offset greater than input length",
        ));
    }
    let values = unpack_values(lua, bytes, &mut pos, limit)?;
    let next = if pos >= bytes.len() { -1 } else { pos as i64 };
    let mut all = vec![Value::Integer(next)];
    all.extend(values);
    Ok(Variadic::from_iter(all))
}

/// The values from `pos` on, up to `limit` of them (0 or less: all), refused past
/// [`MAX_RESULTS`] as lua-cmsgpack refuses more than its stack holds.
fn unpack_values(lua: &Lua, bytes: &[u8], pos: &mut usize, limit: i64) -> mlua::Result<Vec<Value>> {
    let mut values = Vec::new();
    while *pos < bytes.len() && (limit <= 0 || (values.len() as i64) < limit) {
        if values.len() >= MAX_RESULTS {
            return Err(too_many_results(TOO_MANY));
        }
        values.push(unpack(lua, bytes, pos, 0)?);
    }
    Ok(values)
}

fn pack_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        let u = n as u64;
        if u < 128 {
            out.push(u as u8);
        } else if u <= 0xff {
            out.extend_from_slice(&[0xcc, u as u8]);
        } else if u <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(u as u16).to_be_bytes());
        } else if u <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(u as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&u.to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= i64::from(i32::MIN) {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn pack_number(n: f64, out: &mut Vec<u8>) {
    if n.fract() == 0.0 && n >= i64::MIN as f64 && n < i64::MAX as f64 {
        pack_int(n as i64, out);
    } else if f64::from(n as f32) == n || n.is_nan() {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn pack_len(len: usize, fix: u8, fix_max: usize, big16: u8, big32: u8, out: &mut Vec<u8>) {
    if len < fix_max {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(big16);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(big32);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn pack(v: &Value, out: &mut Vec<u8>, depth: usize) {
    match v {
        Value::Nil => out.push(0xc0),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(n) => pack_int(*n, out),
        Value::Number(n) => pack_number(*n, out),
        Value::String(s) => {
            let bytes = s.as_bytes();
            let len = bytes.len();
            if len < 32 {
                out.push(0xa0 | len as u8);
            } else if len <= 0xff {
                out.extend_from_slice(&[0xd9, len as u8]);
            } else if len <= 0xffff {
                out.push(0xda);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            } else {
                out.push(0xdb);
                out.extend_from_slice(&(len as u32).to_be_bytes());
            }
            out.extend_from_slice(&bytes);
        }
        Value::Table(t) if depth < MAX_NESTING => {
            // Counted and packed as a stream: holding every pair at once would exhaust
            // the interpreter's reference slots on large tables.
            let count = t.pairs::<Value, Value>().flatten().count();
            let len = t.raw_len();
            let is_array = count == len;
            if is_array {
                pack_len(len, 0x90, 16, 0xdc, 0xdd, out);
                for i in 1..=len {
                    let item: Value = t.raw_get(i).unwrap_or(Value::Nil);
                    pack(&item, out, depth + 1);
                }
            } else {
                pack_len(count, 0x80, 16, 0xde, 0xdf, out);
                for (k, item) in t.pairs::<Value, Value>().flatten() {
                    pack(&k, out, depth + 1);
                    pack(&item, out, depth + 1);
                }
            }
        }
        _ => out.push(0xc0),
    }
}

fn missing() -> mlua::Error {
    mlua::Error::runtime("Missing bytes in input.")
}

fn take<'a>(bytes: &'a [u8], pos: &mut usize, n: usize) -> mlua::Result<&'a [u8]> {
    let end = pos.checked_add(n).ok_or_else(missing)?;
    let slice = bytes.get(*pos..end).ok_or_else(missing)?;
    *pos = end;
    Ok(slice)
}

fn be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |acc, b| (acc << 8) | u64::from(*b))
}

fn unpack(lua: &Lua, bytes: &[u8], pos: &mut usize, depth: usize) -> mlua::Result<Value> {
    if depth > 1000 {
        return Err(mlua::Error::runtime("Bad data format in input."));
    }
    let tag = take(bytes, pos, 1)?[0];
    let number = |n: f64| Ok(Value::Number(n));
    match tag {
        0x00..=0x7f => number(f64::from(tag)),
        0xe0..=0xff => number(f64::from(tag as i8)),
        0xc0 => Ok(Value::Nil),
        0xc2 => Ok(Value::Boolean(false)),
        0xc3 => Ok(Value::Boolean(true)),
        0xcc..=0xcf => {
            let n = 1usize << (tag - 0xcc);
            number(be(take(bytes, pos, n)?) as f64)
        }
        0xd0 => number(f64::from(take(bytes, pos, 1)?[0] as i8)),
        0xd1 => number(f64::from(be(take(bytes, pos, 2)?) as u16 as i16)),
        0xd2 => number(f64::from(be(take(bytes, pos, 4)?) as u32 as i32)),
        0xd3 => number(be(take(bytes, pos, 8)?) as i64 as f64),
        0xca => number(f64::from(f32::from_bits(be(take(bytes, pos, 4)?) as u32))),
        0xcb => number(f64::from_bits(be(take(bytes, pos, 8)?))),
        0xa0..=0xbf | 0xd9 | 0xda | 0xdb | 0xc4 | 0xc5 | 0xc6 => {
            let len = match tag {
                0xa0..=0xbf => usize::from(tag & 0x1f),
                0xd9 | 0xc4 => be(take(bytes, pos, 1)?) as usize,
                0xda | 0xc5 => be(take(bytes, pos, 2)?) as usize,
                _ => be(take(bytes, pos, 4)?) as usize,
            };
            Ok(Value::String(lua.create_string(take(bytes, pos, len)?)?))
        }
        0x90..=0x9f | 0xdc | 0xdd => {
            let len = match tag {
                0x90..=0x9f => usize::from(tag & 0x0f),
                0xdc => be(take(bytes, pos, 2)?) as usize,
                _ => be(take(bytes, pos, 4)?) as usize,
            };
            let t = lua.create_table()?;
            for i in 1..=len {
                t.raw_set(i, unpack(lua, bytes, pos, depth + 1)?)?;
            }
            Ok(Value::Table(t))
        }
        0x80..=0x8f | 0xde | 0xdf => {
            let len = match tag {
                0x80..=0x8f => usize::from(tag & 0x0f),
                0xde => be(take(bytes, pos, 2)?) as usize,
                _ => be(take(bytes, pos, 4)?) as usize,
            };
            let t = lua.create_table()?;
            for _ in 0..len {
                let k = unpack(lua, bytes, pos, depth + 1)?;
                let v = unpack(lua, bytes, pos, depth + 1)?;
                if k != Value::Nil {
                    t.raw_set(k, v)?;
                }
            }
            Ok(Value::Table(t))
        }
        _ => Err(mlua::Error::runtime("Bad data format in input.")),
    }
}
