//! `struct` for scripts: Roberto Ierusalimschy's lua-struct as Redis embeds it
//! (`struct.pack`, `struct.unpack`, `struct.size`), with its format language, its
//! x86-64 sizes and its error messages.
//!
//! Format: `>` big-endian, `<` little-endian (the default), `![n]` alignment (default 1,
//! `!` alone 8), `x` a zero byte, `b`/`B` `h`/`H` `l`/`L` `T` `i[n]`/`I[n]` integers of
//! 1, 2, 8, 8 and n (default 4) bytes, lower case signed, `f`/`d` floats, `s` a
//! zero-terminated string, `c[n]` n bytes (`c0`: the whole string when packing, the
//! previous number as length when unpacking), spaces ignored.

use mlua::{Lua, Table, Value, Variadic};

use super::args::{
    arg_error, c_cast_i64, check_number, check_string, too_many_results, MAX_RESULTS,
};

/// Largest integer size (lua-struct's MAXINTSIZE).
const MAX_INT_SIZE: usize = 32;
/// `!` without a number: the platform's largest alignment.
const MAX_ALIGN: usize = 8;

/// Builds the `struct` table.
pub fn structlib(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("pack", super::args::function(lua, pack)?)?;
    t.set("unpack", super::args::function(lua, unpack)?)?;
    t.set("size", super::args::function(lua, size)?)?;
    Ok(t)
}

#[derive(Clone, Copy, PartialEq)]
enum Endian {
    Little,
    Big,
}

/// The state a format string carries: byte order and alignment.
struct Header {
    endian: Endian,
    align: usize,
}

impl Default for Header {
    fn default() -> Self {
        Header {
            endian: Endian::Little,
            align: 1,
        }
    }
}

/// A format string being read.
struct Format<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Format<'_> {
    fn next(&mut self) -> Option<u8> {
        let c = *self.text.get(self.pos)?;
        self.pos += 1;
        Some(c)
    }

    /// lua-struct's `getnum`: digits after an option, or `default`.
    fn number(&mut self, default: usize) -> mlua::Result<usize> {
        if !self.text.get(self.pos).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: usize = 0;
        while let Some(&c) = self.text.get(self.pos).filter(|c| c.is_ascii_digit()) {
            let d = usize::from(c - b'0');
            if a > (i32::MAX as usize) / 10 || a * 10 > i32::MAX as usize - d {
                return Err(mlua::Error::runtime("integral size overflow"));
            }
            a = a * 10 + d;
            self.pos += 1;
        }
        Ok(a)
    }

    /// lua-struct's `optsize`: the size of option `opt` (reading its number if any).
    fn size(&mut self, opt: u8) -> mlua::Result<usize> {
        Ok(match opt {
            b'B' | b'b' | b'x' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.number(1)?,
            b'i' | b'I' => {
                let size = self.number(4)?;
                if size > MAX_INT_SIZE {
                    return Err(mlua::Error::runtime(format!(
                        "integral size {size} is larger than limit of {MAX_INT_SIZE}"
                    )));
                }
                size
            }
            _ => 0,
        })
    }

    /// lua-struct's `controloptions`: byte order, alignment, spaces; anything else is
    /// an invalid option.
    fn control(&mut self, opt: u8, h: &mut Header, func: &str) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => h.endian = Endian::Big,
            b'<' => h.endian = Endian::Little,
            b'!' => {
                let a = self.number(MAX_ALIGN)?;
                if !a.is_power_of_two() {
                    return Err(mlua::Error::runtime(format!(
                        "alignment {a} is not a power of 2"
                    )));
                }
                h.align = a;
            }
            other => {
                let shown = super::args::c_text(&[other]);
                return Err(arg_error(
                    1,
                    func,
                    &format!("invalid format option '{shown}'"),
                ));
            }
        }
        Ok(())
    }
}

/// Zero bytes to insert before an item of `size` at offset `len` (lua-struct's
/// `gettoalign`).
fn padding(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

fn is_integer_option(opt: u8) -> bool {
    matches!(
        opt,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

/// lua-struct's `putinteger`: a negative number through a signed 64-bit integer, the
/// low `size` bytes in the requested order (bytes past the eighth are zero).
fn put_integer(out: &mut Vec<u8>, n: f64, endian: Endian, size: usize) {
    let mut value = if n < 0.0 {
        c_cast_i64(n) as u64
    } else {
        c_cast_u64(n)
    };
    let mut bytes = vec![0u8; size];
    for b in bytes.iter_mut() {
        *b = (value & 0xff) as u8;
        value = value.checked_shr(8).unwrap_or(0);
    }
    if endian == Endian::Big {
        bytes.reverse();
    }
    out.extend_from_slice(&bytes);
}

/// `(unsigned long long)` of a double as gcc on x86-64 converts it: below 2^63 (and
/// NaN) through the signed conversion, from 2^63 by subtracting 2^63 first and setting
/// the top bit back; out of range, the signed conversion's i64::MIN shows through.
fn c_cast_u64(n: f64) -> u64 {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if n >= TWO_POW_63 {
        (c_cast_i64(n - TWO_POW_63) as u64) ^ (1 << 63)
    } else {
        c_cast_i64(n) as u64
    }
}

/// lua-struct's `getinteger`.
fn get_integer(bytes: &[u8], endian: Endian, signed: bool) -> f64 {
    let mut l: u64 = 0;
    let mut push = |b: u8| l = l << 8 | u64::from(b);
    match endian {
        Endian::Big => bytes.iter().for_each(|&b| push(b)),
        Endian::Little => bytes.iter().rev().for_each(|&b| push(b)),
    }
    if !signed {
        return l as f64;
    }
    // x86 masks shift counts to 6 bits, which is what the C code gets past 8 bytes.
    let mask = u64::MAX << ((bytes.len() * 8).wrapping_sub(1) & 63);
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

fn pack(lua: &Lua, args: Variadic<Value>) -> mlua::Result<mlua::String> {
    const F: &str = "pack";
    let fmt = check_string(lua, &args, 1, F)?;
    let fmt = fmt.as_bytes();
    // lua-struct pushes a nil after the arguments before it reads them, so one missing
    // argument reads as nil ("got nil"), not as no value.
    let mut args = args.into_iter().collect::<Vec<_>>();
    args.push(Value::Nil);
    let mut format = Format { text: &fmt, pos: 0 };
    let mut h = Header::default();
    let mut arg = 2;
    let mut out: Vec<u8> = Vec::new();
    while let Some(opt) = format.next() {
        let mut size = format.size(opt)?;
        let pad = padding(out.len(), &h, opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            o if is_integer_option(o) => {
                let n = check_number(lua, &args, arg, F)?;
                arg += 1;
                put_integer(&mut out, n, h.endian, size);
            }
            b'x' => out.push(0),
            b'f' | b'd' => {
                let n = check_number(lua, &args, arg, F)?;
                arg += 1;
                let mut bytes = if opt == b'f' {
                    (n as f32).to_le_bytes().to_vec()
                } else {
                    n.to_le_bytes().to_vec()
                };
                if h.endian == Endian::Big {
                    bytes.reverse();
                }
                out.extend_from_slice(&bytes);
            }
            b'c' | b's' => {
                let s = check_string(lua, &args, arg, F)?;
                let s = s.as_bytes();
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // lua-struct checks after moving to the next argument.
                    return Err(arg_error(arg, F, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            other => format.control(other, &mut h, F)?,
        }
    }
    lua.create_string(&out)
}

fn unpack(lua: &Lua, args: Variadic<Value>) -> mlua::Result<Variadic<Value>> {
    const F: &str = "unpack";
    let fmt = check_string(lua, &args, 1, F)?;
    let fmt = fmt.as_bytes();
    let data = check_string(lua, &args, 2, F)?;
    let data = data.as_bytes();
    let start = match args.get(2) {
        None | Some(Value::Nil) => 1.0,
        Some(_) => check_number(lua, &args, 3, F)?,
    };
    // luaL_optinteger truncates; the C code then keeps it in a size_t, so a negative
    // offset passes the `> 0` check and fails as too far into the data instead.
    let start = c_cast_i64(start) as u64;
    if start == 0 {
        return Err(arg_error(3, F, "offset must be 1 or greater"));
    }
    let mut pos = (start - 1) as usize;
    let mut format = Format { text: &fmt, pos: 0 };
    let mut h = Header::default();
    let mut out: Vec<Value> = Vec::new();
    let short = || arg_error(2, F, "data string too short");
    while let Some(opt) = format.next() {
        if out.len() >= MAX_RESULTS {
            return Err(too_many_results("too many results"));
        }
        let mut size = format.size(opt)?;
        pos = pos.wrapping_add(padding(pos, &h, opt, size));
        if size > data.len() || pos > data.len() - size {
            return Err(short());
        }
        match opt {
            o if is_integer_option(o) => {
                let signed = o.is_ascii_lowercase();
                let n = get_integer(&data[pos..pos + size], h.endian, signed);
                out.push(Value::Number(n));
            }
            b'x' => {}
            b'f' | b'd' => {
                let mut bytes = data[pos..pos + size].to_vec();
                if h.endian == Endian::Big {
                    bytes.reverse();
                }
                let n = if opt == b'f' {
                    let mut a = [0u8; 4];
                    a.copy_from_slice(&bytes);
                    f64::from(f32::from_le_bytes(a))
                } else {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(&bytes);
                    f64::from_le_bytes(a)
                };
                out.push(Value::Number(n));
            }
            b'c' => {
                if size == 0 {
                    let previous = match out.last() {
                        Some(v) => lua.coerce_number(v.clone())?,
                        None => None,
                    };
                    let Some(len) = previous else {
                        return Err(mlua::Error::runtime("format 'c0' needs a previous size"));
                    };
                    out.pop();
                    // `size = lua_tonumber(...)` into a size_t: a negative size wraps to a huge one.
                    size = c_cast_u64(len) as usize;
                    if size > data.len() || pos > data.len() - size {
                        return Err(short());
                    }
                }
                out.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(end) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(mlua::Error::runtime("unfinished string in data"));
                };
                out.push(Value::String(lua.create_string(&data[pos..pos + end])?));
                size = end + 1;
            }
            other => format.control(other, &mut h, F)?,
        }
        pos += size;
    }
    // lua_pushinteger of a size_t: a wrapped-around offset reads back negative.
    out.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(Variadic::from_iter(out))
}

fn size(lua: &Lua, args: Variadic<Value>) -> mlua::Result<f64> {
    const F: &str = "size";
    let fmt = check_string(lua, &args, 1, F)?;
    let fmt = fmt.as_bytes();
    let mut format = Format { text: &fmt, pos: 0 };
    let mut h = Header::default();
    let mut pos = 0usize;
    while let Some(opt) = format.next() {
        let size = format.size(opt)?;
        pos += padding(pos, &h, opt, size);
        if opt == b's' {
            return Err(arg_error(1, F, "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(arg_error(1, F, "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            format.control(opt, &mut h, F)?;
        }
        pos += size;
    }
    Ok(pos as f64)
}
