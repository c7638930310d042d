//! `cjson` for scripts: Lua CJSON 2.1.0 as Redis 7.0 bundles it, written here in Rust.
//!
//! What a script can see is kept: the settings and their argument checks, how a table
//! is told to be an array (sparse ones refused or turned into objects), numbers as
//! `%.14g`, and a decoder that reads what Lua CJSON reads (numbers as C's `strtod`
//! does, so `+1`, `0x10`, `inf` and `nan`; the text up to its first NUL), failing with
//! its messages and character positions. Tables are built as Lua CJSON builds them
//! (one `rawset` at a time), so `pairs` visits a decoded table in the same order.
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::sync::{Arc, Mutex, PoisonError};

use mlua::{ffi, LightUserData, Lua, Table, Value, Variadic};

use super::args::{arg_error, check_integer, check_string, stack_bytes, MAX_C_STACK};

/// Lua CJSON's settings (`cjson.encode_max_depth(n)`...), one set per `cjson` table.
#[derive(Debug, Clone, Copy)]
struct Settings {
    sparse_convert: i32,
    sparse_ratio: i32,
    sparse_safe: i32,
    encode_max_depth: i32,
    decode_max_depth: i32,
    /// 0 refuses NaN and infinities, 1 writes them (`nan`, `inf`), 2 writes `null`.
    encode_invalid_numbers: i32,
    decode_invalid_numbers: i32,
    keep_buffer: i32,
    precision: i32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            sparse_convert: 0,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: 0,
            decode_invalid_numbers: 1,
            keep_buffer: 1,
            precision: 14,
        }
    }
}

type Shared = Arc<Mutex<Settings>>;

fn read(shared: &Shared) -> Settings {
    *shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The settings of a `cjson` table, to set back to their defaults (SCRIPT FLUSH: Redis
/// starts a new interpreter, whose `cjson` has the defaults).
#[derive(Debug, Clone)]
pub struct SettingsHandle(Shared);

impl SettingsHandle {
    /// Lua CJSON's defaults again.
    pub fn reset(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Settings::default();
    }
}

/// Builds a `cjson` table with settings of its own (`cjson.new()` builds another).
pub fn cjson(lua: &Lua) -> mlua::Result<(Table, SettingsHandle)> {
    let shared: Shared = Arc::new(Mutex::new(Settings::default()));
    let handle = SettingsHandle(shared.clone());
    let t = lua.create_table()?;
    let s = shared.clone();
    t.set(
        "encode",
        super::args::function(lua, move |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err(arg_error(1, "encode", "expected 1 argument"));
            }
            let out = encode(lua, read(&s), args[0].clone())?;
            lua.create_string(&out)
        })?,
    )?;
    let s = shared.clone();
    t.set(
        "decode",
        super::args::function(lua, move |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err(arg_error(1, "decode", "expected 1 argument"));
            }
            let text = check_string(lua, &args, 1, "decode")?;
            decode(lua, read(&s), &text.as_bytes())
        })?,
    )?;
    setting(
        lua,
        &t,
        &shared,
        "encode_sparse_array",
        3,
        |lua, args, set| {
            const F: &str = "encode_sparse_array";
            Ok(vec![
                enum_option(lua, args, 1, F, &mut set.sparse_convert, None)?,
                integer_option(lua, args, 2, F, &mut set.sparse_ratio, 0, i32::MAX)?,
                integer_option(lua, args, 3, F, &mut set.sparse_safe, 0, i32::MAX)?,
            ])
        },
    )?;
    type Field = fn(&mut Settings) -> &mut i32;
    let integers: [(&'static str, Field, i32, i32); 3] = [
        ("encode_max_depth", |s| &mut s.encode_max_depth, 1, i32::MAX),
        ("decode_max_depth", |s| &mut s.decode_max_depth, 1, i32::MAX),
        ("encode_number_precision", |s| &mut s.precision, 1, 14),
    ];
    for (name, field, min, max) in integers {
        setting(lua, &t, &shared, name, 1, move |lua, args, set| {
            Ok(vec![integer_option(
                lua,
                args,
                1,
                name,
                field(set),
                min,
                max,
            )?])
        })?;
    }
    let choices: [(&'static str, Field, Option<&'static [&'static str]>); 3] = [
        ("encode_keep_buffer", |s| &mut s.keep_buffer, None),
        (
            "encode_invalid_numbers",
            |s| &mut s.encode_invalid_numbers,
            Some(&["off", "on", "null"]),
        ),
        (
            "decode_invalid_numbers",
            |s| &mut s.decode_invalid_numbers,
            None,
        ),
    ];
    for (name, field, options) in choices {
        setting(lua, &t, &shared, name, 1, move |lua, args, set| {
            Ok(vec![enum_option(lua, args, 1, name, field(set), options)?])
        })?;
    }
    t.set(
        "new",
        super::args::function(lua, |lua, ()| Ok(cjson(lua)?.0))?,
    )?;
    t.set(
        "null",
        Value::LightUserData(LightUserData(std::ptr::null_mut())),
    )?;
    t.set("_NAME", "cjson")?;
    t.set("_VERSION", "2.1.0")?;
    Ok((t, handle))
}

/// Sets `table.name` to a settings function: at most `max_args` arguments
/// (`json_arg_init`), then `f` on the table's settings.
fn setting(
    lua: &Lua,
    table: &Table,
    shared: &Shared,
    name: &'static str,
    max_args: usize,
    f: impl Fn(&Lua, &[Value], &mut Settings) -> mlua::Result<Vec<Value>> + Send + 'static,
) -> mlua::Result<()> {
    let shared = shared.clone();
    let function = super::args::function(lua, move |lua, args: Variadic<Value>| {
        if args.len() > max_args {
            return Err(arg_error(max_args + 1, name, "found too many arguments"));
        }
        let mut settings = shared.lock().unwrap_or_else(PoisonError::into_inner);
        f(lua, &args, &mut settings).map(Variadic::from_iter)
    })?;
    table.set(name, function)
}

/// `json_integer_option`: sets the value when the argument is not nil (as a C `int`,
/// range-checked, the error naming argument 1 whichever it was), returns the setting.
fn integer_option(
    lua: &Lua,
    args: &[Value],
    n: usize,
    name: &str,
    setting: &mut i32,
    min: i32,
    max: i32,
) -> mlua::Result<Value> {
    if !matches!(args.get(n - 1), None | Some(Value::Nil)) {
        // `int value = luaL_checkinteger(...)`: the low 32 bits.
        let value = check_integer(lua, args, n, name)? as i32;
        if !(min..=max).contains(&value) {
            return Err(arg_error(
                1,
                name,
                &format!("expected integer between {min} and {max}"),
            ));
        }
        *setting = value;
    }
    Ok(Value::Integer(i64::from(*setting)))
}

/// `json_enum_option`: a boolean, or one of `options` by name (`off`/`on` when there
/// are none); returns a boolean for off/on, the name otherwise.
fn enum_option(
    lua: &Lua,
    args: &[Value],
    n: usize,
    name: &str,
    setting: &mut i32,
    options: Option<&'static [&'static str]>,
) -> mlua::Result<Value> {
    let options = options.unwrap_or(&["off", "on"]);
    match args.get(n - 1) {
        None | Some(Value::Nil) => {}
        Some(Value::Boolean(b)) => *setting = i32::from(*b),
        Some(_) => {
            // luaL_checkoption: a string (numbers as Lua prints them) naming an option.
            let text = check_string(lua, args, n, name)?.as_bytes().to_vec();
            match options.iter().position(|o| o.as_bytes() == text.as_slice()) {
                Some(i) => *setting = i as i32,
                None => {
                    return Err(arg_error(
                        n,
                        name,
                        &format!("invalid option '{}'", super::args::c_text(&text)),
                    ))
                }
            }
        }
    }
    Ok(match *setting {
        0 => Value::Boolean(false),
        1 => Value::Boolean(true),
        i => Value::String(lua.create_string(options[i as usize])?),
    })
}

/// `Cannot serialise <type>: <reason>`.
fn cannot(type_name: &str, reason: &str) -> mlua::Error {
    mlua::Error::runtime(format!("Cannot serialise {type_name}: {reason}"))
}

/// Lua's name of the type of the value at `index`.
///
/// # Safety
/// `index` is a valid index of `state`'s stack.
unsafe fn type_name(state: *mut ffi::lua_State, index: c_int) -> String {
    let name = ffi::lua_typename(state, ffi::lua_type(state, index));
    std::ffi::CStr::from_ptr(name)
        .to_string_lossy()
        .into_owned()
}

/// `cjson.encode`: the value as JSON text.
///
/// It works on the interpreter's stack, as Lua CJSON does: through mlua's handles each
/// string, table and key would take (and give back) a reference slot, which cost about
/// three times Redis's time for a whole encode. Tables are walked in a loop with their
/// own iteration keys on the stack, so the depth is bounded by the settings and Lua's C
/// stack, not by this thread's.
fn encode(lua: &Lua, settings: Settings, value: Value) -> mlua::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut failure = None;
    // SAFETY: the closure runs in a protected call with the value as its one argument;
    // it only reads the stack and pushes within `lua_checkstack`'s room. Should Lua
    // raise (memory), what is held in Rust is leaked, not freed twice.
    unsafe {
        lua.exec_raw::<()>(value, |state| {
            let mut encoder = Encoder {
                settings,
                out: &mut out,
            };
            if let Err(e) = encoder.run(state) {
                failure = Some(e);
            }
            ffi::lua_settop(state, 0);
        })?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Writes the value at the top of a stack as JSON text.
struct Encoder<'a> {
    settings: Settings,
    out: &'a mut Vec<u8>,
}

/// A table being written, innermost last; the table is on the stack (an object's
/// iteration key above it).
enum Open {
    Array { next: c_int, len: c_int },
    Object { first: bool },
}

impl Encoder<'_> {
    /// Writes the value at the top of the stack (the argument), in a loop over the
    /// tables it holds.
    ///
    /// # Safety
    /// `state` has the value at the top of its stack.
    unsafe fn run(&mut self, state: *mut ffi::lua_State) -> mlua::Result<()> {
        let mut open: Vec<Open> = Vec::new();
        // Lua CJSON's C stack: the argument, then one slot per enclosing array (its
        // element) and two per enclosing object (key and value).
        let mut slots = 1usize;
        loop {
            // The value at the top: a scalar is written and popped; a table opens.
            if ffi::lua_type(state, -1) == ffi::LUA_TTABLE {
                let depth = open.len() as i64 + 1;
                if depth > i64::from(self.settings.encode_max_depth)
                    || slots + 3 > MAX_C_STACK
                    || ffi::lua_checkstack(state, 3) == 0
                {
                    return Err(mlua::Error::runtime(format!(
                        "Cannot serialise, excessive nesting ({depth})"
                    )));
                }
                match self.array_length(state)? {
                    Some(len) => {
                        self.out.push(b'[');
                        open.push(Open::Array { next: 1, len });
                        slots += 1;
                    }
                    None => {
                        self.out.push(b'{');
                        ffi::lua_pushnil(state);
                        open.push(Open::Object { first: true });
                        slots += 2;
                    }
                }
            } else {
                self.scalar(state)?;
                ffi::lua_pop(state, 1);
            }
            // Move on: the next element of the innermost table, closing those done.
            loop {
                let Some(innermost) = open.last_mut() else {
                    return Ok(());
                };
                match innermost {
                    Open::Array { next, len } => {
                        if *next > *len {
                            self.out.push(b']');
                            ffi::lua_pop(state, 1);
                            open.pop();
                            slots -= 1;
                            continue;
                        }
                        if *next > 1 {
                            self.out.push(b',');
                        }
                        ffi::lua_rawgeti(state, -1, i64::from(*next));
                        *next += 1;
                        break;
                    }
                    Open::Object { first } => {
                        // Stack: table, key.
                        if ffi::lua_next(state, -2) == 0 {
                            self.out.push(b'}');
                            ffi::lua_pop(state, 1);
                            open.pop();
                            slots -= 2;
                            continue;
                        }
                        if !*first {
                            self.out.push(b',');
                        }
                        *first = false;
                        // Stack: table, key, value.
                        match ffi::lua_type(state, -2) {
                            ffi::LUA_TNUMBER => {
                                self.out.push(b'"');
                                self.number(ffi::lua_tonumber(state, -2))?;
                                self.out.extend_from_slice(b"\":");
                            }
                            ffi::LUA_TSTRING => {
                                self.string(stack_bytes(state, -2));
                                self.out.push(b':');
                            }
                            _ => {
                                return Err(cannot(
                                    &type_name(state, -2),
                                    "table key must be a number or string",
                                ))
                            }
                        }
                        break;
                    }
                }
            }
        }
    }

    /// A value that is not a table.
    ///
    /// # Safety
    /// The value is at the top of `state`'s stack.
    unsafe fn scalar(&mut self, state: *mut ffi::lua_State) -> mlua::Result<()> {
        match ffi::lua_type(state, -1) {
            ffi::LUA_TSTRING => self.string(stack_bytes(state, -1)),
            ffi::LUA_TNUMBER => self.number(ffi::lua_tonumber(state, -1))?,
            ffi::LUA_TBOOLEAN => {
                self.out
                    .extend_from_slice(if ffi::lua_toboolean(state, -1) != 0 {
                        b"true"
                    } else {
                        b"false"
                    })
            }
            ffi::LUA_TNIL => self.out.extend_from_slice(b"null"),
            ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(state, -1).is_null() => {
                self.out.extend_from_slice(b"null")
            }
            _ => return Err(cannot(&type_name(state, -1), "type not supported")),
        }
        Ok(())
    }

    /// `lua_array_length` of the table at the top: `Some(n)` for an array of n (> 0)
    /// elements, holes included; `None` for an object, the empty table and (when
    /// converting) a sparse array.
    ///
    /// # Safety
    /// A table is at the top of `state`'s stack, with room for two more values.
    unsafe fn array_length(&self, state: *mut ffi::lua_State) -> mlua::Result<Option<c_int>> {
        let mut max: c_int = 0;
        let mut items: c_int = 0;
        ffi::lua_pushnil(state);
        while ffi::lua_next(state, -2) != 0 {
            let k = if ffi::lua_type(state, -2) == ffi::LUA_TNUMBER {
                ffi::lua_tonumber(state, -2)
            } else {
                0.0
            };
            if k == 0.0 || k.is_nan() || k.floor() != k || k < 1.0 {
                ffi::lua_pop(state, 2);
                return Ok(None);
            }
            if k > f64::from(max) {
                // `max = k` into a C int: x86-64 gives INT_MIN when it does not fit.
                max = if k < 2_147_483_648.0 {
                    k as c_int
                } else {
                    c_int::MIN
                };
            }
            items = items.wrapping_add(1);
            ffi::lua_pop(state, 1);
        }
        let s = &self.settings;
        if s.sparse_ratio > 0 && max > items.wrapping_mul(s.sparse_ratio) && max > s.sparse_safe {
            if s.sparse_convert == 0 {
                return Err(cannot("table", "excessively sparse array"));
            }
            return Ok(None);
        }
        Ok((max > 0).then_some(max))
    }

    /// `json_append_number`: `%.<precision>g`; NaN and infinities as the setting says.
    fn number(&mut self, n: f64) -> mlua::Result<()> {
        match self.settings.encode_invalid_numbers {
            0 if !n.is_finite() => return Err(cannot("number", "must not be NaN or Inf")),
            0 => {}
            1 if n.is_nan() => {
                self.out.extend_from_slice(b"nan");
                return Ok(());
            }
            1 => {}
            _ if !n.is_finite() => {
                self.out.extend_from_slice(b"null");
                return Ok(());
            }
            _ => {}
        }
        let precision = self.settings.precision.clamp(1, 14) as usize;
        self.out
            .extend_from_slice(crate::cmd::float::fmt_g(n, precision).as_bytes());
        Ok(())
    }

    /// Bytes as they are (no UTF-8 check), with `"`, `\`, `/`, the control characters
    /// and DEL escaped as Lua CJSON's table escapes them.
    fn string(&mut self, s: &[u8]) {
        let out = &mut *self.out;
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
                    out.extend_from_slice(format!("\\u{c:04x}").as_bytes());
                }
                c => out.push(c),
            }
        }
        out.push(b'"');
    }
}

/// A token of the decoder, with where it starts (0-based); an error token carries
/// Lua CJSON's words for it and where the problem is.
#[derive(Debug)]
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Token {
    /// How an error message names what was found instead.
    fn found(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str(_) => "T_STRING",
            Token::Number(_) => "T_NUMBER",
            Token::Boolean(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(why) => why,
        }
    }
}

/// The decoder's reading position over the text up to its first NUL (Lua CJSON reads a
/// C string: a NUL ends the text).
struct Lexer<'a> {
    text: &'a [u8],
    pos: usize,
    invalid_numbers: bool,
}

impl Lexer<'_> {
    fn at(&self, i: usize) -> u8 {
        self.text.get(i).copied().unwrap_or(0)
    }

    /// The next token and the position it starts at.
    fn next(&mut self) -> (Token, usize) {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let start = self.pos;
        let single = match self.at(start) {
            b'{' => Some(Token::ObjBegin),
            b'}' => Some(Token::ObjEnd),
            b'[' => Some(Token::ArrBegin),
            b']' => Some(Token::ArrEnd),
            b',' => Some(Token::Comma),
            b':' => Some(Token::Colon),
            0 => return (Token::End, start),
            _ => None,
        };
        if let Some(token) = single {
            self.pos += 1;
            return (token, start);
        }
        let rest = &self.text[start.min(self.text.len())..];
        let token = match self.at(start) {
            b'"' => return self.string(),
            b'-' | b'0'..=b'9' => {
                if !self.invalid_numbers && self.invalid_number() {
                    return (Token::Error("invalid number"), start);
                }
                self.number()
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => {
                if rest.starts_with(b"true") {
                    self.pos += 4;
                    Token::Boolean(true)
                } else if rest.starts_with(b"false") {
                    self.pos += 5;
                    Token::Boolean(false)
                } else if rest.starts_with(b"null") {
                    self.pos += 4;
                    Token::Null
                } else if self.invalid_numbers && self.invalid_number() {
                    self.number()
                } else {
                    Token::Error("invalid token")
                }
            }
            _ => Token::Error("invalid token"),
        };
        (token, start)
    }

    /// `json_is_invalid_number`: what strtod reads but JSON does not allow (a `+`,
    /// hex, leading zeros, `inf`, `nan`).
    fn invalid_number(&self) -> bool {
        let mut p = self.pos;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        let c = self.at(p);
        if c == b'0' {
            let next = self.at(p + 1);
            return next | 0x20 == b'x' || next.is_ascii_digit();
        }
        if c <= b'9' {
            return false;
        }
        let word = |w: &[u8]| (0..3).all(|i| self.at(p + i).eq_ignore_ascii_case(&w[i]));
        word(b"inf") || word(b"nan")
    }

    /// A number as C's `strtod` reads it from here.
    fn number(&mut self) -> Token {
        let rest = &self.text[self.pos.min(self.text.len())..];
        let read = crate::cmd::float::strtod(rest);
        if read.len == 0 {
            return Token::Error("invalid number");
        }
        self.pos += read.len;
        Token::Number(read.value)
    }

    /// A string from its opening quote; escapes decoded, other bytes as they are.
    fn string(&mut self) -> (Token, usize) {
        let start = self.pos;
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let c = self.at(self.pos);
            match c {
                b'"' => break,
                0 => return (Token::Error("unexpected end of string"), self.pos),
                b'\\' => {
                    let plain = match self.at(self.pos + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 0x08,
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => 0x0c,
                        b'r' => b'\r',
                        b'u' => match self.unicode_escape(&mut out) {
                            Some(()) => continue,
                            None => return (Token::Error("invalid unicode escape code"), self.pos),
                        },
                        _ => return (Token::Error("invalid escape code"), self.pos),
                    };
                    out.push(plain);
                    self.pos += 2;
                }
                c => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
        self.pos += 1;
        (Token::Str(out), start)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        (0..4).try_fold(0u32, |acc, i| {
            let digit = (self.at(at + i) as char).to_digit(16)?;
            Some(acc << 4 | digit)
        })
    }

    /// `\uXXXX` (a surrogate pair as two) appended as UTF-8; `None` when malformed.
    fn unicode_escape(&mut self, out: &mut Vec<u8>) -> Option<()> {
        let mut code = self.hex4(self.pos + 2)?;
        let mut len = 6;
        if code & 0xf800 == 0xd800 {
            if code & 0x400 != 0 || self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u'
            {
                return None;
            }
            let low = self.hex4(self.pos + 8)?;
            if low & 0xfc00 != 0xdc00 {
                return None;
            }
            code = (((code & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
            len = 12;
        }
        // Lua CJSON's own UTF-8 writer: surrogate code points as three bytes, as any.
        match code {
            0..=0x7f => out.push(code as u8),
            0x80..=0x7ff => out.extend([0xc0 | (code >> 6) as u8, 0x80 | (code & 0x3f) as u8]),
            0x800..=0xffff => out.extend([
                0xe0 | (code >> 12) as u8,
                0x80 | ((code >> 6) & 0x3f) as u8,
                0x80 | (code & 0x3f) as u8,
            ]),
            _ => out.extend([
                0xf0 | (code >> 18) as u8,
                0x80 | ((code >> 12) & 0x3f) as u8,
                0x80 | ((code >> 6) & 0x3f) as u8,
                0x80 | (code & 0x3f) as u8,
            ]),
        }
        self.pos += len;
        Some(())
    }
}

/// `Expected <what> but found <token> at character <n>`.
fn parse_error(what: &str, token: &Token, at: usize) -> mlua::Error {
    mlua::Error::runtime(format!(
        "Expected {what} but found {} at character {}",
        token.found(),
        at + 1
    ))
}

/// `cjson.decode`: the text's one value, built on the interpreter's stack (as Lua
/// CJSON builds it: a new table, then one raw set per element) in a loop, so the depth
/// a text asks for is bounded by the settings and Lua's C stack, not by this thread's.
fn decode(lua: &Lua, settings: Settings, text: &[u8]) -> mlua::Result<Value> {
    if text.len() >= 2 && (text[0] == 0 || text[1] == 0) {
        return Err(mlua::Error::runtime(
            "JSON parser does not support UTF-16 or UTF-32",
        ));
    }
    let end = text.iter().position(|&c| c == 0).unwrap_or(text.len());
    let mut failure = None;
    // SAFETY: the closure runs in a protected call; it pushes within
    // `lua_checkstack`'s room and leaves one value (or nothing, on an error of ours).
    // Should Lua raise (memory), what is held in Rust is leaked, not freed twice.
    let value: Value = unsafe {
        lua.exec_raw((), |state| match build(state, settings, &text[..end]) {
            Ok(()) => {}
            Err(e) => {
                failure = Some(e);
                ffi::lua_settop(state, 0);
            }
        })?
    };
    match failure {
        Some(e) => Err(e),
        None => Ok(value),
    }
}

/// Pushes the value `text` holds.
///
/// # Safety
/// `state` is the stack of a C function (or protected call) being run.
unsafe fn build(state: *mut ffi::lua_State, settings: Settings, text: &[u8]) -> mlua::Result<()> {
    let mut lexer = Lexer {
        text,
        pos: 0,
        invalid_numbers: settings.decode_invalid_numbers != 0,
    };
    // The arrays and objects being filled, innermost last, each on the stack (an
    // object's pending key above it); an array's next index.
    let mut open: Vec<Option<c_int>> = Vec::new();
    // Lua CJSON's C stack: the text, then a table per open array, a table and a key
    // per open object.
    let mut slots = 1usize;
    let (mut token, mut at) = lexer.next();
    loop {
        // `token` starts a value: push it (a table with its first element to come
        // opens instead).
        match token {
            Token::Str(s) => push_bytes(state, &s),
            Token::Number(n) => ffi::lua_pushnumber(state, n),
            Token::Boolean(b) => ffi::lua_pushboolean(state, c_int::from(b)),
            Token::Null => ffi::lua_pushlightuserdata(state, std::ptr::null_mut()),
            Token::ArrBegin | Token::ObjBegin => {
                let array = matches!(token, Token::ArrBegin);
                // Lua CJSON's `json_decode_descend`: refused past the settings or the
                // C stack.
                let depth = open.len() as i64 + 1;
                let needs = if array { 2 } else { 3 };
                if depth > i64::from(settings.decode_max_depth)
                    || slots + needs > MAX_C_STACK
                    || ffi::lua_checkstack(state, needs as c_int) == 0
                {
                    return Err(mlua::Error::runtime(format!(
                        "Found too many nested data structures ({depth}) at character {}",
                        lexer.pos
                    )));
                }
                ffi::lua_createtable(state, 0, 0);
                let (next, next_at) = lexer.next();
                let empty = if array {
                    matches!(next, Token::ArrEnd)
                } else {
                    matches!(next, Token::ObjEnd)
                };
                if !empty {
                    if array {
                        open.push(Some(1));
                        slots += 1;
                        (token, at) = (next, next_at);
                    } else {
                        object_key(state, &mut lexer, next, next_at)?;
                        open.push(None);
                        slots += 2;
                        (token, at) = lexer.next();
                    }
                    continue;
                }
            }
            other => return Err(parse_error("value", &other, at)),
        }
        // Put the value in its container; close the containers it ends.
        loop {
            let Some(innermost) = open.last_mut() else {
                let (next, next_at) = lexer.next();
                if !matches!(next, Token::End) {
                    return Err(parse_error("the end", &next, next_at));
                }
                return Ok(());
            };
            let (next, next_at) = match innermost {
                Some(index) => {
                    ffi::lua_rawseti(state, -2, i64::from(*index));
                    *index += 1;
                    let (next, next_at) = lexer.next();
                    match next {
                        Token::ArrEnd => {
                            open.pop();
                            slots -= 1;
                            continue;
                        }
                        Token::Comma => lexer.next(),
                        other => return Err(parse_error("comma or array end", &other, next_at)),
                    }
                }
                None => {
                    ffi::lua_rawset(state, -3);
                    let (next, next_at) = lexer.next();
                    match next {
                        Token::ObjEnd => {
                            open.pop();
                            slots -= 2;
                            continue;
                        }
                        Token::Comma => {
                            let (key, key_at) = lexer.next();
                            object_key(state, &mut lexer, key, key_at)?;
                            lexer.next()
                        }
                        other => return Err(parse_error("comma or object end", &other, next_at)),
                    }
                }
            };
            (token, at) = (next, next_at);
            break;
        }
    }
}

/// Pushes a string.
///
/// # Safety
/// `state` has room for one more value.
unsafe fn push_bytes(state: *mut ffi::lua_State, bytes: &[u8]) {
    ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
}

/// An object's key (pushed) and the colon after it.
///
/// # Safety
/// `state` has room for one more value.
unsafe fn object_key(
    state: *mut ffi::lua_State,
    lexer: &mut Lexer<'_>,
    token: Token,
    at: usize,
) -> mlua::Result<()> {
    let Token::Str(key) = token else {
        return Err(parse_error("object key string", &token, at));
    };
    push_bytes(state, &key);
    let (colon, colon_at) = lexer.next();
    if !matches!(colon, Token::Colon) {
        return Err(parse_error("colon", &colon, colon_at));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(text: &str) -> Result<String, String> {
        let lua = Lua::new();
        let (cjson, _) = cjson(&lua).map_err(|e| e.to_string())?;
        lua.globals()
            .set("cjson", cjson)
            .map_err(|e| e.to_string())?;
        lua.load(format!("return cjson.encode(cjson.decode({text:?}))"))
            .eval::<String>()
            .map_err(|e| e.to_string())
    }

    #[test]
    fn reads_what_strtod_reads() {
        assert_eq!(decoded("+1").as_deref(), Ok("1"));
        assert_eq!(decoded("0x10").as_deref(), Ok("16"));
        assert_eq!(decoded("[01, 1.]").as_deref(), Ok("[1,1]"));
    }

    #[test]
    fn fails_with_lua_cjson_positions() {
        let err = decoded("[1,]").unwrap_err();
        assert!(
            err.contains("Expected value but found T_ARR_END at character 4"),
            "{err}"
        );
        let err = decoded("{\"a\" 1}").unwrap_err();
        assert!(
            err.contains("Expected colon but found T_NUMBER at character 6"),
            "{err}"
        );
        let err = decoded(&"[".repeat(1001)).unwrap_err();
        assert!(
            err.contains("Found too many nested data structures (1001) at character 1001"),
            "{err}"
        );
    }
}
