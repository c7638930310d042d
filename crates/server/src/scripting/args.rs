//! Argument checks for the libraries written in Rust, with the messages Lua's auxiliary
//! library gives C libraries (`luaL_checknumber`, `luaL_checklstring`, `luaL_argerror`),
//! so a script's error reads as it does on redis-server.

use mlua::{FromLuaMulti, IntoLuaMulti, Lua, Value};

/// Most values a library function returns at once. Lua 5.1 lets a C function grow its
/// stack to about 8,000 slots (`luaL_checkstack` fails past that), and each value held
/// in Rust until it is returned takes one of mlua's reference slots, of which there are
/// about as many: past them mlua panics. A little under both.
pub const MAX_RESULTS: usize = 7_900;

/// Lua 5.1's `LUAI_MAXCSTACK`: `lua_checkstack` refuses to grow a C function's stack
/// past this many slots. The C libraries' nesting limits (Lua CJSON's, lua-cmsgpack's)
/// come from it, so the libraries here count the slots theirs would hold against it.
pub const MAX_C_STACK: usize = 8000;

/// `luaL_checkstack`'s error when a function would return more than [`MAX_RESULTS`].
pub fn too_many_results(msg: &str) -> mlua::Error {
    mlua::Error::runtime(format!("stack overflow ({msg})"))
}

/// `%s` of a Lua string in a C library's message: its bytes up to the first NUL.
/// An error's text is a Rust string, so bytes that are not UTF-8 (and the escape byte
/// itself) travel as `\x04` and two hex digits, which the prelude's `rust_message` turns
/// back into the bytes.
pub fn c_text(bytes: &[u8]) -> String {
    let bytes = crate::cstr::c_string(bytes);
    let mut out = String::with_capacity(bytes.len());
    let escape = |b: u8, out: &mut String| {
        out.push('\u{4}');
        out.push_str(&format!("{b:02x}"));
    };
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\u{4}' {
                escape(4, &mut out);
            } else {
                out.push(c);
            }
        }
        for &b in chunk.invalid() {
            escape(b, &mut out);
        }
    }
    out
}

/// `luaL_argerror`: "bad argument #n to 'func' (msg)".
pub fn arg_error(n: usize, func: &str, msg: &str) -> mlua::Error {
    mlua::Error::runtime(format!("bad argument #{n} to '{func}' ({msg})"))
}

/// `luaL_typerror`: "<expected> expected, got <type>", "no value" past the last one.
pub fn type_error(args: &[Value], n: usize, func: &str, expected: &str) -> mlua::Error {
    let got = args.get(n - 1).map_or("no value", Value::type_name);
    arg_error(n, func, &format!("{expected} expected, got {got}"))
}

/// `luaL_checknumber`: numbers, and strings Lua converts to one (`" 0x10 "`).
pub fn check_number(lua: &Lua, args: &[Value], n: usize, func: &str) -> mlua::Result<f64> {
    let v = args.get(n - 1).cloned().unwrap_or(Value::Nil);
    lua.coerce_number(v)?
        .ok_or_else(|| type_error(args, n, func, "number"))
}

/// `luaL_checkinteger`: a number truncated toward zero, as x86-64 converts it.
pub fn check_integer(lua: &Lua, args: &[Value], n: usize, func: &str) -> mlua::Result<i64> {
    check_number(lua, args, n, func).map(c_cast_i64)
}

/// `luaL_optinteger`: `default` when the argument is absent or nil.
pub fn opt_integer(
    lua: &Lua,
    args: &[Value],
    n: usize,
    func: &str,
    default: i64,
) -> mlua::Result<i64> {
    match args.get(n - 1) {
        None | Some(Value::Nil) => Ok(default),
        Some(_) => check_integer(lua, args, n, func),
    }
}

/// `luaL_checklstring`: strings (the Lua string itself, not a copy), and numbers as Lua
/// prints them.
pub fn check_string(lua: &Lua, args: &[Value], n: usize, func: &str) -> mlua::Result<mlua::String> {
    let v = args.get(n - 1).cloned().unwrap_or(Value::Nil);
    lua.coerce_string(v)?
        .ok_or_else(|| type_error(args, n, func, "string"))
}

/// `(long long)` of a double as x86-64 converts it (`cvttsd2si`): truncation, and
/// i64::MIN for NaN and anything out of range.
pub fn c_cast_i64(n: f64) -> i64 {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if n.is_nan() || !(-TWO_POW_63..TWO_POW_63).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// A library function written in Rust whose errors read as a C library's do: an
/// argument error names the function as its caller called it (`'?'` from C, such as
/// `pcall(f, ...)`), and any error starts with the caller's place when the caller is
/// Lua code (`luaL_where`). The `\u{3}` before it tells the error handler that the
/// place is there already.
pub fn function<A, R>(
    lua: &Lua,
    f: impl Fn(&Lua, A) -> mlua::Result<R> + Send + 'static,
) -> mlua::Result<mlua::Function>
where
    A: FromLuaMulti,
    R: IntoLuaMulti,
{
    lua.create_function(move |lua, args: A| f(lua, args).map_err(|e| locate(lua, e)))
}

/// [`function`]'s error: named and placed as `luaL_argerror`/`luaL_error` would.
fn locate(lua: &Lua, e: mlua::Error) -> mlua::Error {
    let mlua::Error::RuntimeError(message) = &e else {
        return e;
    };
    // The engine's marked errors, and errors placed already, go through untouched.
    if message.starts_with('\u{1}') || message.starts_with('\u{3}') {
        return e;
    }
    let mut message = message.clone();
    if let Some(rest) = message.strip_prefix("bad argument #") {
        if let (Some(open), Some(close)) = (rest.find("to '"), rest.find("' (")) {
            let called = lua
                .inspect_stack(0, |d| d.names().name.map(|n| n.into_owned()))
                .flatten()
                .unwrap_or_else(|| "?".into());
            message = format!(
                "bad argument #{}to '{called}{}",
                &rest[..open],
                &rest[close..]
            );
        }
    }
    let place = lua
        .inspect_stack(1, |d| {
            let source = d.source();
            match (source.what, source.short_src, d.current_line()) {
                ("Lua" | "main", Some(src), Some(line)) => format!("{src}:{line}: "),
                _ => String::new(),
            }
        })
        .unwrap_or_default();
    mlua::Error::runtime(format!("\u{3}{place}{message}"))
}

/// The bytes of the string at `index` (valid while it stays on the stack).
///
/// # Safety
/// A string is at `index` of `state`'s stack, and stays there while the slice is used.
#[allow(unsafe_code)]
pub unsafe fn stack_bytes<'a>(
    state: *mut mlua::ffi::lua_State,
    index: std::ffi::c_int,
) -> &'a [u8] {
    let mut len = 0usize;
    let ptr = mlua::ffi::lua_tolstring(state, index, &mut len);
    if ptr.is_null() {
        return &[];
    }
    std::slice::from_raw_parts(ptr.cast::<u8>(), len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_text_stops_at_a_nul_and_escapes_what_is_not_utf8() {
        assert_eq!(c_text(b"abc"), "abc");
        assert_eq!(c_text(b"a\0b"), "a");
        assert_eq!(c_text("é".as_bytes()), "é");
        assert_eq!(c_text(b"\xff\x04x"), "\u{4}ff\u{4}04x");
    }
}
