//! KEYS and ARGV, built on the interpreter's stack.
//!
//! Through mlua's safe API every string becomes a handle first (an allocation, a lock
//! and a slot in its reference thread) before it is put in the table; a run of a short
//! script spent more on that than on the script. Here the strings go from the request
//! straight into the tables, inside mlua's protected call (`exec_raw`), which catches
//! the interpreter's memory errors.
#![allow(unsafe_code)]

use bytes::Bytes;
use mlua::{ffi, Lua, Table};

/// Sets the `KEYS` and `ARGV` globals of an EVAL run to `keys` and `args`.
pub fn set_globals(lua: &Lua, globals: &Table, keys: &[Bytes], args: &[Bytes]) -> mlua::Result<()> {
    // SAFETY: `exec_raw` pushes `globals` (index 1 of the protected call's stack, which
    // has room for LUA_MINSTACK values: we use three) and runs this closure under
    // `lua_pcall`; it holds nothing that needs dropping, so an error's `longjmp` out of
    // it skips no destructor. It leaves the stack empty, for `()`.
    unsafe {
        lua.exec_raw::<()>(globals, |state| {
            for (name, items) in [(c"KEYS", keys), (c"ARGV", args)] {
                ffi::lua_pushstring(state, name.as_ptr());
                push_sequence(state, items);
                ffi::lua_rawset(state, 1);
            }
            ffi::lua_settop(state, 0);
        })
    }
}

/// `keys` and `args` as two new sequences (the arguments of an FCALL's function).
pub fn tables(lua: &Lua, keys: &[Bytes], args: &[Bytes]) -> mlua::Result<(Table, Table)> {
    // SAFETY: as in `set_globals`; the closure leaves exactly the two tables, read back
    // as `(Table, Table)`.
    unsafe {
        lua.exec_raw::<(Table, Table)>((), |state| {
            push_sequence(state, keys);
            push_sequence(state, args);
        })
    }
}

/// Pushes a new table holding `items` as strings at 1..=n.
///
/// # Safety
/// `state` is a running Lua state inside a protected call, with room for two more values.
unsafe fn push_sequence(state: *mut ffi::lua_State, items: &[Bytes]) {
    let size = i32::try_from(items.len()).unwrap_or(i32::MAX);
    ffi::lua_createtable(state, size, 0);
    for (i, item) in (1..).zip(items) {
        ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
        ffi::lua_rawseti(state, -2, i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_the_globals_and_builds_the_tables() {
        let lua = Lua::new();
        let globals = lua.create_table().unwrap();
        let keys = [Bytes::from_static(b"k\0ey"), Bytes::from_static(b"")];
        set_globals(&lua, &globals, &keys, &[]).unwrap();
        let got: Table = globals.raw_get("KEYS").unwrap();
        assert_eq!(got.raw_len(), 2);
        assert_eq!(got.raw_get::<mlua::String>(1).unwrap().as_bytes()[..], b"k\0ey"[..]);
        let argv: Table = globals.raw_get("ARGV").unwrap();
        assert_eq!(argv.raw_len(), 0);
        let (k, a) = tables(&lua, &keys[..1], &keys).unwrap();
        assert_eq!((k.raw_len(), a.raw_len()), (1, 2));
    }
}
