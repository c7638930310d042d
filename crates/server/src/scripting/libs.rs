//! The extra libraries Redis gives scripts, written here in Rust: `bit` (LuaBitOp's
//! 32-bit operations) here, `cjson`, `cmsgpack` and `struct` in modules of their own.

use mlua::{Lua, Table, Value, Variadic};

/// Installs `bit`, `cjson`, `cmsgpack` and `struct` as globals; returns the handle on
/// `cjson`'s settings.
pub fn install(lua: &Lua) -> mlua::Result<super::cjson::SettingsHandle> {
    let g = lua.globals();
    let (cjson, settings) = super::cjson::cjson(lua)?;
    g.set("bit", bit(lua)?)?;
    g.set("cjson", cjson)?;
    g.set("cmsgpack", super::msgpack::cmsgpack(lua)?)?;
    g.set("struct", super::structlib::structlib(lua)?)?;
    Ok(settings)
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
        super::args::function(lua, move |lua, a: Variadic<Value>| {
            Ok(op(barg(lua, &a, 1, name)?))
        })
    };
    t.set("tobit", unary("tobit", |x| x)?)?;
    t.set("bnot", unary("bnot", |x| !x)?)?;
    t.set("bswap", unary("bswap", |x| (x as u32).swap_bytes() as i32)?)?;
    let fold = |name: &'static str, op: fn(i32, i32) -> i32| {
        super::args::function(lua, move |lua, a: Variadic<Value>| {
            let mut acc = barg(lua, &a, 1, name)?;
            // LuaBitOp folds from the last argument down: a bad one is found last first.
            for n in (2..=a.len()).rev() {
                acc = op(acc, barg(lua, &a, n, name)?);
            }
            Ok(acc)
        })
    };
    t.set("band", fold("band", |x, y| x & y)?)?;
    t.set("bor", fold("bor", |x, y| x | y)?)?;
    t.set("bxor", fold("bxor", |x, y| x ^ y)?)?;
    let shift = |name: &'static str, op: fn(i32, u32) -> i32| {
        super::args::function(lua, move |lua, a: Variadic<Value>| {
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
        super::args::function(lua, |lua, a: Variadic<Value>| {
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
