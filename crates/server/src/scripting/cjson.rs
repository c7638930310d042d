//! `cjson` for scripts: Lua CJSON 2.1.0 as Redis 7.0 bundles it, written here in Rust.
//!
//! What a script can see is kept: the settings and their argument checks, how a table
//! is told to be an array (sparse ones refused or turned into objects), numbers as
//! `%.14g`, and a decoder that reads what Lua CJSON reads (numbers as C's `strtod`
//! does, so `+1`, `0x10`, `inf` and `nan`; the text up to its first NUL), failing with
//! its messages and character positions. Tables are built as Lua CJSON builds them
//! (one `rawset` at a time), so `pairs` visits a decoded table in the same order.

use std::sync::{Arc, Mutex, PoisonError};

use mlua::{LightUserData, Lua, Table, Value, Variadic};

use super::args::{arg_error, check_integer, check_string};

/// Lua 5.1's `LUAI_MAXCSTACK`: `lua_checkstack` refuses to grow a C function's stack
/// past this many slots, which is what bounds Lua CJSON's nesting when its depth
/// settings are raised.
const MAX_C_STACK: usize = 8000;

/// Deepest nesting either direction goes here, whatever the settings say: every level
/// holds a value or two in mlua's reference slots, of which there are about
/// [`MAX_C_STACK`], and past them mlua panics. The default depth (1000) is well inside.
const MAX_NESTING: i64 = 2000;

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
        lua.create_function(move |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err(arg_error(1, "encode", "expected 1 argument"));
            }
            let mut out = Vec::new();
            Encoder {
                settings: read(&s),
                out: &mut out,
            }
            .value(&args[0], 0, 1)?;
            lua.create_string(&out)
        })?,
    )?;
    let s = shared.clone();
    t.set(
        "decode",
        lua.create_function(move |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err(arg_error(1, "decode", "expected 1 argument"));
            }
            let text = check_string(lua, &args, 1, "decode")?;
            decode(lua, read(&s), &text.as_bytes())
        })?,
    )?;
    let s = shared.clone();
    t.set(
        "encode_sparse_array",
        setting(lua, "encode_sparse_array", 3, move |lua, args| {
            let mut set = s.lock().unwrap_or_else(PoisonError::into_inner);
            let convert = enum_option(
                lua,
                args,
                1,
                "encode_sparse_array",
                &mut set.sparse_convert,
                None,
            )?;
            let ratio = integer_option(
                lua,
                args,
                2,
                "encode_sparse_array",
                &mut set.sparse_ratio,
                0,
                i32::MAX,
            )?;
            let safe = integer_option(
                lua,
                args,
                3,
                "encode_sparse_array",
                &mut set.sparse_safe,
                0,
                i32::MAX,
            )?;
            Ok(vec![convert, ratio, safe])
        })?,
    )?;
    type Field = fn(&mut Settings) -> &mut i32;
    let integers: [(&'static str, Field, i32, i32); 3] = [
        ("encode_max_depth", |s| &mut s.encode_max_depth, 1, i32::MAX),
        ("decode_max_depth", |s| &mut s.decode_max_depth, 1, i32::MAX),
        ("encode_number_precision", |s| &mut s.precision, 1, 14),
    ];
    for (name, field, min, max) in integers {
        let s = shared.clone();
        t.set(
            name,
            setting(lua, name, 1, move |lua, args| {
                let mut set = s.lock().unwrap_or_else(PoisonError::into_inner);
                Ok(vec![integer_option(
                    lua,
                    args,
                    1,
                    name,
                    field(&mut set),
                    min,
                    max,
                )?])
            })?,
        )?;
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
        let s = shared.clone();
        t.set(
            name,
            setting(lua, name, 1, move |lua, args| {
                let mut set = s.lock().unwrap_or_else(PoisonError::into_inner);
                Ok(vec![enum_option(
                    lua,
                    args,
                    1,
                    name,
                    field(&mut set),
                    options,
                )?])
            })?,
        )?;
    }
    t.set("new", lua.create_function(|lua, ()| Ok(cjson(lua)?.0))?)?;
    t.set(
        "null",
        Value::LightUserData(LightUserData(std::ptr::null_mut())),
    )?;
    t.set("_NAME", "cjson")?;
    t.set("_VERSION", "2.1.0")?;
    Ok((t, handle))
}

/// A settings function: at most `max_args` arguments (`json_arg_init`), then `f`.
fn setting(
    lua: &Lua,
    name: &'static str,
    max_args: usize,
    f: impl Fn(&Lua, &[Value]) -> mlua::Result<Vec<Value>> + Send + 'static,
) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, args: Variadic<Value>| {
        if args.len() > max_args {
            return Err(arg_error(max_args + 1, name, "found too many arguments"));
        }
        f(lua, &args).map(Variadic::from_iter)
    })
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
        Some(v) => {
            // luaL_checkoption: a string (numbers as Lua prints them) naming an option.
            let text = match v {
                Value::String(s) => s.as_bytes().to_vec(),
                Value::Integer(i) => i.to_string().into_bytes(),
                Value::Number(x) => crate::cmd::float::fmt_g(*x, 14).into_bytes(),
                other => {
                    return Err(arg_error(
                        n,
                        name,
                        &format!("string expected, got {}", other.type_name()),
                    ))
                }
            };
            match options.iter().position(|o| o.as_bytes() == text.as_slice()) {
                Some(i) => *setting = i as i32,
                None => {
                    return Err(arg_error(
                        n,
                        name,
                        &format!("invalid option '{}'", String::from_utf8_lossy(&text)),
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

/// Writes Lua values as JSON text.
struct Encoder<'a> {
    settings: Settings,
    out: &'a mut Vec<u8>,
}

/// `Cannot serialise <type>: <reason>`.
fn cannot(type_name: &str, reason: &str) -> mlua::Error {
    mlua::Error::runtime(format!("Cannot serialise {type_name}: {reason}"))
}

impl Encoder<'_> {
    /// One value at `depth` tables deep; `slots` is how much of the C stack Lua CJSON
    /// would be using there (its argument, then one or two per enclosing table).
    fn value(&mut self, v: &Value, depth: i64, slots: usize) -> mlua::Result<()> {
        match v {
            Value::String(s) => self.string(&s.as_bytes()),
            Value::Integer(n) => self.number(*n as f64, "number")?,
            Value::Number(n) => self.number(*n, "number")?,
            Value::Boolean(b) => self
                .out
                .extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => self.out.extend_from_slice(b"null"),
            Value::Table(t) => {
                let depth = depth + 1;
                if depth > i64::from(self.settings.encode_max_depth)
                    || depth > MAX_NESTING
                    || slots + 3 > MAX_C_STACK
                {
                    return Err(mlua::Error::runtime(format!(
                        "Cannot serialise, excessive nesting ({depth})"
                    )));
                }
                match self.array_length(t)? {
                    Some(len) => self.array(t, len, depth, slots)?,
                    None => self.object(t, depth, slots)?,
                }
            }
            other => return Err(cannot(other.type_name(), "type not supported")),
        }
        Ok(())
    }

    /// `lua_array_length`: `Some(n)` for an array of n (> 0) elements, holes included;
    /// `None` for an object, the empty table and (when converting) a sparse array.
    fn array_length(&self, t: &Table) -> mlua::Result<Option<i32>> {
        let mut max: i32 = 0;
        let mut items: i32 = 0;
        for pair in t.pairs::<Value, Value>() {
            let (k, _) = pair?;
            let k = match k {
                Value::Integer(k) => k as f64,
                Value::Number(k) => k,
                _ => return Ok(None),
            };
            if k == 0.0 || k.is_nan() || k.floor() != k || k < 1.0 {
                return Ok(None);
            }
            if k > f64::from(max) {
                // `max = k` into a C int: x86-64 gives INT_MIN when it does not fit.
                max = if k < 2_147_483_648.0 {
                    k as i32
                } else {
                    i32::MIN
                };
            }
            items = items.wrapping_add(1);
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

    fn array(&mut self, t: &Table, len: i32, depth: i64, slots: usize) -> mlua::Result<()> {
        self.out.push(b'[');
        for i in 1..=len {
            if i > 1 {
                self.out.push(b',');
            }
            let item: Value = t.raw_get(i)?;
            self.value(&item, depth, slots + 1)?;
        }
        self.out.push(b']');
        Ok(())
    }

    fn object(&mut self, t: &Table, depth: i64, slots: usize) -> mlua::Result<()> {
        self.out.push(b'{');
        let mut first = true;
        for pair in t.pairs::<Value, Value>() {
            let (k, item) = pair?;
            if !first {
                self.out.push(b',');
            }
            first = false;
            match &k {
                Value::Integer(n) => self.key_number(*n as f64)?,
                Value::Number(n) => self.key_number(*n)?,
                Value::String(s) => {
                    self.string(&s.as_bytes());
                    self.out.push(b':');
                }
                other => {
                    return Err(cannot(
                        other.type_name(),
                        "table key must be a number or string",
                    ))
                }
            }
            self.value(&item, depth, slots + 2)?;
        }
        self.out.push(b'}');
        Ok(())
    }

    fn key_number(&mut self, n: f64) -> mlua::Result<()> {
        self.out.push(b'"');
        self.number(n, "number")?;
        self.out.extend_from_slice(b"\":");
        Ok(())
    }

    /// `json_append_number`: `%.<precision>g`; NaN and infinities as the setting says.
    fn number(&mut self, n: f64, type_name: &str) -> mlua::Result<()> {
        match self.settings.encode_invalid_numbers {
            0 if !n.is_finite() => return Err(cannot(type_name, "must not be NaN or Inf")),
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

/// An array or object being filled, innermost last.
enum Open {
    Array(Table, i64),
    Object(Table, mlua::String),
}

/// `cjson.decode`: the text's one value, without recursion (the depth a text asks for
/// is bounded by the settings and [`MAX_NESTING`], not by this thread's stack).
fn decode(lua: &Lua, settings: Settings, text: &[u8]) -> mlua::Result<Value> {
    if text.len() >= 2 && (text[0] == 0 || text[1] == 0) {
        return Err(mlua::Error::runtime(
            "JSON parser does not support UTF-16 or UTF-32",
        ));
    }
    let end = text.iter().position(|&c| c == 0).unwrap_or(text.len());
    let mut lexer = Lexer {
        text: &text[..end],
        pos: 0,
        invalid_numbers: settings.decode_invalid_numbers != 0,
    };
    let mut open: Vec<Open> = Vec::new();
    // Lua CJSON's C stack: the text, then a table per open array, a table and a key
    // per open object.
    let mut slots = 1usize;
    // Lua CJSON's `json_decode_descend`: one level more, refused past the settings or
    // the C stack.
    let descend = |open: &Vec<Open>, slots: usize, needs: usize, pos: usize| {
        let depth = open.len() as i64 + 1;
        if depth > i64::from(settings.decode_max_depth)
            || depth > MAX_NESTING
            || slots + needs > MAX_C_STACK
        {
            return Err(mlua::Error::runtime(format!(
                "Found too many nested data structures ({depth}) at character {pos}"
            )));
        }
        Ok(())
    };
    let (mut token, mut at) = lexer.next();
    loop {
        // `token` starts a value.
        let mut value = match token {
            Token::Str(s) => Value::String(lua.create_string(s)?),
            Token::Number(n) => Value::Number(n),
            Token::Boolean(b) => Value::Boolean(b),
            Token::Null => Value::LightUserData(LightUserData(std::ptr::null_mut())),
            Token::ArrBegin => {
                descend(&open, slots, 2, lexer.pos)?;
                let table = lua.create_table()?;
                let (next, next_at) = lexer.next();
                if matches!(next, Token::ArrEnd) {
                    Value::Table(table)
                } else {
                    open.push(Open::Array(table, 1));
                    slots += 1;
                    (token, at) = (next, next_at);
                    continue;
                }
            }
            Token::ObjBegin => {
                descend(&open, slots, 3, lexer.pos)?;
                let table = lua.create_table()?;
                let (next, next_at) = lexer.next();
                if matches!(next, Token::ObjEnd) {
                    Value::Table(table)
                } else {
                    let key = object_key(lua, &mut lexer, next, next_at)?;
                    open.push(Open::Object(table, key));
                    slots += 2;
                    (token, at) = lexer.next();
                    continue;
                }
            }
            other => return Err(parse_error("value", &other, at)),
        };
        // Put the finished value in its container; close the containers it ends.
        loop {
            let Some(innermost) = open.last_mut() else {
                let (next, next_at) = lexer.next();
                if !matches!(next, Token::End) {
                    return Err(parse_error("the end", &next, next_at));
                }
                return Ok(value);
            };
            let (next, next_at) = match innermost {
                Open::Array(table, i) => {
                    table.raw_set(*i, value)?;
                    *i += 1;
                    let (next, next_at) = lexer.next();
                    match next {
                        Token::ArrEnd => {
                            value = close(&mut open, &mut slots);
                            continue;
                        }
                        Token::Comma => lexer.next(),
                        other => return Err(parse_error("comma or array end", &other, next_at)),
                    }
                }
                Open::Object(table, key) => {
                    table.raw_set(key.clone(), value)?;
                    let (next, next_at) = lexer.next();
                    match next {
                        Token::ObjEnd => {
                            value = close(&mut open, &mut slots);
                            continue;
                        }
                        Token::Comma => {
                            let (next, next_at) = lexer.next();
                            *key = object_key(lua, &mut lexer, next, next_at)?;
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

/// An object's key and the colon after it.
fn object_key(
    lua: &Lua,
    lexer: &mut Lexer<'_>,
    token: Token,
    at: usize,
) -> mlua::Result<mlua::String> {
    let Token::Str(key) = token else {
        return Err(parse_error("object key string", &token, at));
    };
    let key = lua.create_string(key)?;
    let (colon, colon_at) = lexer.next();
    if !matches!(colon, Token::Colon) {
        return Err(parse_error("colon", &colon, colon_at));
    }
    Ok(key)
}

/// Pops the innermost container, which is complete, as a value.
fn close(open: &mut Vec<Open>, slots: &mut usize) -> Value {
    match open.pop() {
        Some(Open::Array(table, _)) => {
            *slots -= 1;
            Value::Table(table)
        }
        Some(Open::Object(table, _)) => {
            *slots -= 2;
            Value::Table(table)
        }
        None => Value::Nil,
    }
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
