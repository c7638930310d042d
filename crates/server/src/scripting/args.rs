//! Argument checks for the libraries written in Rust, with the messages Lua's auxiliary
//! library gives C libraries (`luaL_checknumber`, `luaL_checklstring`, `luaL_argerror`),
//! so a script's error reads as it does on redis-server.

use mlua::{Lua, Value};

/// Most values a library function returns at once. Lua 5.1 lets a C function grow its
/// stack to about 8,000 slots (`luaL_checkstack` fails past that), and each value held
/// in Rust until it is returned takes one of mlua's reference slots, of which there are
/// about as many: past them mlua panics. A little under both.
pub const MAX_RESULTS: usize = 7_900;

/// `luaL_checkstack`'s error when a function would return more than [`MAX_RESULTS`].
pub fn too_many_results(msg: &str) -> mlua::Error {
    mlua::Error::runtime(format!("stack overflow ({msg})"))
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
