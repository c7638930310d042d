//! `cmsgpack` for scripts: MessagePack pack/unpack with lua-cmsgpack's conventions
//! (integral numbers as the smallest integer form, other numbers as float32 when exact
//! else float64, tables with keys 1..n as arrays, nesting past 16 levels packed as nil).
#![allow(unsafe_code)]

use std::ffi::c_int;

use mlua::{ffi, Lua, Table, Value, Variadic};

use super::args::{
    arg_error, check_integer, check_string, opt_integer, stack_bytes, too_many_results,
    MAX_C_STACK, MAX_RESULTS,
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
        super::args::function(lua, |lua, args: Variadic<Value>| {
            if args.is_empty() {
                // lua-cmsgpack reports it as argument 0.
                return Err(arg_error(0, "pack", "MessagePack pack needs input."));
            }
            let mut out = Vec::new();
            // SAFETY: the closure runs in a protected call with the arguments on its
            // stack; it pushes within `lua_checkstack`'s room (a table's metamethods
            // may run, as lua_gettable runs them). Should Lua raise, what is held in
            // Rust is leaked, not freed twice.
            unsafe {
                lua.exec_raw::<()>(args, |state| {
                    for i in 1..=ffi::lua_gettop(state) {
                        ffi::lua_pushvalue(state, i);
                        pack_top(state, &mut out, 0);
                    }
                    ffi::lua_settop(state, 0);
                })?;
            }
            lua.create_string(out)
        })?,
    )?;
    t.set(
        "unpack",
        super::args::function(lua, |lua, args: Variadic<Value>| {
            let data = check_string(lua, &args, 1, "unpack")?;
            unpack_full(lua, &data.as_bytes(), 0, 0)
        })?,
    )?;
    // Both read their numbers before the string, as lua-cmsgpack does.
    t.set(
        "unpack_one",
        super::args::function(lua, |lua, args: Variadic<Value>| {
            const F: &str = "unpack_one";
            let offset = opt_integer(lua, &args, 2, F, 0)?;
            let data = check_string(lua, &args, 1, F)?;
            unpack_full(lua, &data.as_bytes(), 1, offset)
        })?,
    )?;
    t.set(
        "unpack_limit",
        super::args::function(lua, |lua, args: Variadic<Value>| {
            const F: &str = "unpack_limit";
            let limit = check_integer(lua, &args, 2, F)?;
            let offset = opt_integer(lua, &args, 3, F, 0)?;
            let data = check_string(lua, &args, 1, F)?;
            unpack_full(lua, &data.as_bytes(), limit, offset)
        })?,
    )?;
    Ok(t)
}

/// lua-cmsgpack's `mp_unpack_full`: up to `limit` values from byte `offset`. With
/// neither (both 0) every value, and nothing else; otherwise the offset to go on from
/// (-1 at the end) first, then the values.
fn unpack_full(lua: &Lua, bytes: &[u8], limit: i64, offset: i64) -> mlua::Result<Variadic<Value>> {
    if offset < 0 || limit < 0 {
        // Its message prints the input's length where it means the limit.
        return Err(mlua::Error::runtime(format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            offset as i32,
            bytes.len() as i32
        )));
    }
    let Some(rest) = usize::try_from(offset).ok().and_then(|o| bytes.get(o..)) else {
        return Err(mlua::Error::runtime(format!(
            "Start offset {} greater than input length {}.",
            offset as i32,
            bytes.len() as i32
        )));
    };
    let all = limit == 0 && offset == 0;
    let limit = if all { i64::from(i32::MAX) } else { limit };
    let mut failure = None;
    let mut consumed = 0;
    // SAFETY: the closure runs in a protected call; it pushes within `lua_checkstack`'s
    // room and leaves the values (or nothing, on an error of ours). Should Lua raise
    // (memory, a nil map key), what is held in Rust is leaked, not freed twice.
    let values: Variadic<Value> = unsafe {
        lua.exec_raw((), |state| {
            let mut cursor = Cursor {
                bytes: rest,
                pos: 0,
            };
            let mut count: i64 = 0;
            while cursor.pos < rest.len() && count < limit {
                if count as usize >= MAX_RESULTS {
                    failure = Some(too_many_results(TOO_MANY));
                    break;
                }
                // lua-cmsgpack's C stack: the payload, then the values so far.
                match cursor.push_value(state, 1 + count as usize) {
                    Ok(()) => count += 1,
                    Err(Fault::Lua(e)) => failure = Some(e),
                    Err(Fault::Eof) => {
                        failure = Some(mlua::Error::runtime("Missing bytes in input."))
                    }
                    Err(Fault::BadFormat) => {
                        failure = Some(mlua::Error::runtime("Bad data format in input."))
                    }
                }
                if failure.is_some() {
                    break;
                }
            }
            consumed = cursor.pos;
            if failure.is_some() {
                ffi::lua_settop(state, 0);
            }
        })?
    };
    if let Some(e) = failure {
        return Err(e);
    }
    let mut values: Vec<Value> = values.into_iter().collect();
    if !all {
        let next = if consumed == rest.len() {
            -1
        } else {
            (bytes.len() - rest.len() + consumed) as i64
        };
        values.insert(0, Value::Integer(next));
    }
    Ok(Variadic::from_iter(values))
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
    } else if f64::from(n as f32) == n {
        // Compared as C compares them: NaN is never equal, so it goes as a double.
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

/// `mp_encode_lua_type`: packs the value at the top of the stack and pops it. A table
/// `depth` levels in that is [`MAX_NESTING`] deep packs as nil (lua-cmsgpack's guard
/// against tables that hold themselves), which bounds the recursion.
///
/// # Safety
/// A value is at the top of `state`'s stack.
unsafe fn pack_top(state: *mut ffi::lua_State, out: &mut Vec<u8>, depth: usize) {
    match ffi::lua_type(state, -1) {
        ffi::LUA_TSTRING => {
            let bytes = stack_bytes(state, -1);
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
            out.extend_from_slice(bytes);
        }
        ffi::LUA_TBOOLEAN => out.push(if ffi::lua_toboolean(state, -1) != 0 {
            0xc3
        } else {
            0xc2
        }),
        ffi::LUA_TNUMBER => pack_number(ffi::lua_tonumber(state, -1), out),
        ffi::LUA_TTABLE if depth < MAX_NESTING && ffi::lua_checkstack(state, 3) != 0 => {
            let (count, is_array) = array_shape(state);
            if is_array {
                let len = ffi::lua_objlen(state, -1);
                pack_len(len, 0x90, 16, 0xdc, 0xdd, out);
                for i in 1..=len {
                    ffi::lua_pushnumber(state, i as f64);
                    ffi::lua_gettable(state, -2);
                    pack_top(state, out, depth + 1);
                }
            } else {
                pack_len(count, 0x80, 16, 0xde, 0xdf, out);
                ffi::lua_pushnil(state);
                while ffi::lua_next(state, -2) != 0 {
                    // Stack: table, key, value: pack a copy of the key, then the value.
                    ffi::lua_pushvalue(state, -2);
                    pack_top(state, out, depth + 1);
                    pack_top(state, out, depth + 1);
                }
            }
        }
        _ => out.push(0xc0),
    }
    ffi::lua_pop(state, 1);
}

/// How many pairs the table at the top has, and lua-cmsgpack's `table_is_an_array`:
/// every key a positive number that is a C `int`, the largest equal to the count (so
/// 1..n).
///
/// # Safety
/// A table is at the top of `state`'s stack, with room for two more values.
unsafe fn array_shape(state: *mut ffi::lua_State) -> (usize, bool) {
    let mut count = 0usize;
    let mut max: i64 = 0;
    let mut array = true;
    ffi::lua_pushnil(state);
    while ffi::lua_next(state, -2) != 0 {
        ffi::lua_pop(state, 1);
        count += 1;
        if ffi::lua_type(state, -1) != ffi::LUA_TNUMBER {
            array = false;
            continue;
        }
        let n = ffi::lua_tonumber(state, -1);
        if n <= 0.0 || n.is_nan() || n > f64::from(i32::MAX) || n.fract() != 0.0 {
            array = false;
        } else {
            max = max.max(n as i64);
        }
    }
    (count, array && max == count as i64)
}

/// Why a value could not be read: lua-cmsgpack's two cursor errors, reported once its
/// top-level loop sees them, and an error Lua raised (a nil or NaN map key).
enum Fault {
    Eof,
    BadFormat,
    Lua(mlua::Error),
}

/// An error Lua raises inside a C function: no place before its text.
fn unplaced(text: &str) -> Fault {
    Fault::Lua(mlua::Error::runtime(format!("\u{3}{text}")))
}

/// An array or map being filled, innermost last (its table on the stack, a map's
/// key above it once read).
enum Open {
    Array { next: u64, len: u64 },
    Map { left: u64, key: bool },
}

/// A reading position in a payload.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    /// The next `n` bytes, consumed.
    fn take(&mut self, n: usize) -> Result<&[u8], Fault> {
        let end = self.pos.checked_add(n).ok_or(Fault::Eof)?;
        let slice = self.bytes.get(self.pos..end).ok_or(Fault::Eof)?;
        self.pos = end;
        Ok(slice)
    }

    /// A big-endian unsigned number of `n` bytes.
    fn be(&mut self, n: usize) -> Result<u64, Fault> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0, |acc, b| (acc << 8) | u64::from(*b)))
    }

    /// `mp_decode_to_lua_type`: pushes one value, nested ones within it read in a loop
    /// rather than by recursion (a payload chooses how deep it nests). `slots` is how
    /// much of Lua's C stack lua-cmsgpack would be using before it: its limits (about
    /// 8,000 slots; an array holds its table and the index being filled, a map its
    /// table and the key) give its errors at the same depths.
    ///
    /// # Safety
    /// `state` is the stack of a C function (or protected call) being run.
    unsafe fn push_value(&mut self, state: *mut ffi::lua_State, slots: usize) -> Result<(), Fault> {
        let mut open: Vec<Open> = Vec::new();
        let mut slots = slots;
        loop {
            if self.pos >= self.bytes.len() {
                return Err(Fault::Eof);
            }
            if slots + 1 > MAX_C_STACK || ffi::lua_checkstack(state, 2) == 0 {
                return Err(Fault::Lua(mlua::Error::runtime(format!(
                    "stack overflow ({TOO_MANY})"
                ))));
            }
            match self.push_item(state)? {
                None => {}
                Some((array, len)) => {
                    ffi::lua_createtable(state, 0, 0);
                    if array && slots + 2 > MAX_C_STACK {
                        return Err(Fault::Lua(mlua::Error::runtime(
                            "stack overflow (in function mp_decode_to_lua_array)",
                        )));
                    }
                    if len > 0 {
                        // The table, and an array's index (a map's key comes later).
                        if array {
                            open.push(Open::Array { next: 1, len });
                            slots += 2;
                        } else {
                            open.push(Open::Map {
                                left: len,
                                key: false,
                            });
                            slots += 1;
                        }
                        continue;
                    }
                }
            }
            // Store the value in its container, and each container it completes in
            // the one around it.
            loop {
                let complete = match open.last_mut() {
                    None => return Ok(()),
                    Some(Open::Array { next, len }) => {
                        ffi::lua_rawseti(state, -2, *next as i64);
                        *next += 1;
                        *next > *len
                    }
                    Some(Open::Map { left, key }) => {
                        if !*key {
                            *key = true;
                            slots += 1;
                            false
                        } else {
                            // lua_settable's own errors: raised inside the C function,
                            // so without the script's position (the \u{3} says so).
                            match ffi::lua_type(state, -2) {
                                ffi::LUA_TNIL => return Err(unplaced("table index is nil")),
                                ffi::LUA_TNUMBER if ffi::lua_tonumber(state, -2).is_nan() => {
                                    return Err(unplaced("table index is NaN"))
                                }
                                _ => ffi::lua_rawset(state, -3),
                            }
                            *key = false;
                            slots -= 1;
                            *left -= 1;
                            *left == 0
                        }
                    }
                };
                if !complete {
                    break;
                }
                slots -= match open.pop() {
                    Some(Open::Array { .. }) => 2,
                    _ => 1,
                };
            }
        }
    }

    /// Pushes one item, or for the header of an array or map returns whether it is an
    /// array and its length (its elements follow). The types lua-cmsgpack 0.4 knows
    /// (no bin, no ext); numbers are Lua numbers, and a uint 64 passes through a
    /// signed integer first.
    ///
    /// # Safety
    /// `state` has room for one more value.
    unsafe fn push_item(
        &mut self,
        state: *mut ffi::lua_State,
    ) -> Result<Option<(bool, u64)>, Fault> {
        let tag = self.take(1)?[0];
        let n = match tag {
            0x00..=0x7f => f64::from(tag),
            0xe0..=0xff => f64::from(tag as i8),
            0xc0 => {
                ffi::lua_pushnil(state);
                return Ok(None);
            }
            0xc2 | 0xc3 => {
                ffi::lua_pushboolean(state, c_int::from(tag == 0xc3));
                return Ok(None);
            }
            0xcc => self.be(1)? as f64,
            0xcd => self.be(2)? as f64,
            0xce => self.be(4)? as f64,
            0xcf => self.be(8)? as i64 as f64,
            0xd0 => f64::from(self.be(1)? as u8 as i8),
            0xd1 => f64::from(self.be(2)? as u16 as i16),
            0xd2 => f64::from(self.be(4)? as u32 as i32),
            0xd3 => self.be(8)? as i64 as f64,
            0xca => f64::from(f32::from_bits(self.be(4)? as u32)),
            0xcb => f64::from_bits(self.be(8)?),
            0xa0..=0xbf | 0xd9 | 0xda | 0xdb => {
                let len = match tag {
                    0xd9 => self.be(1)?,
                    0xda => self.be(2)?,
                    0xdb => self.be(4)?,
                    _ => u64::from(tag & 0x1f),
                };
                let text = self.take(usize::try_from(len).map_err(|_| Fault::Eof)?)?;
                ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
                return Ok(None);
            }
            0x90..=0x9f | 0xdc | 0xdd | 0x80..=0x8f | 0xde | 0xdf => {
                let array = matches!(tag, 0x90..=0x9f | 0xdc | 0xdd);
                let len = match tag {
                    0xdc | 0xde => self.be(2)?,
                    0xdd | 0xdf => self.be(4)?,
                    _ => u64::from(tag & 0x0f),
                };
                return Ok(Some((array, len)));
            }
            _ => return Err(Fault::BadFormat),
        };
        ffi::lua_pushnumber(state, n);
        Ok(None)
    }
}
