//! `loadstring` and `load`: Lua's own argument checks, in C, in front of the prelude's
//! loaders (which read binary chunks as text and give a chunk its environment).
//!
//! Written in Lua, the checks named the function '?' or lost the caller's line when a
//! script called it in tail position (`return loadstring(nil)`): Lua drops a Lua
//! caller's frame there, not a C one's. A C function's `luaL_argerror` names and places
//! the error as Lua's own `loadstring` does.
#![allow(unsafe_code)]

use std::ffi::c_int;

use mlua::{ffi, Function, Lua};

/// The loader whose arguments a [`checked`] function checks.
#[derive(Clone, Copy)]
pub enum Loader {
    /// `loadstring(code [, name])`: a string (or number), then an optional name.
    LoadString,
    /// `load(reader [, name])`: a function, then an optional name.
    Load,
}

/// `inner` behind the argument checks of `loader`: a C closure that checks, then calls
/// `inner` with the same arguments and returns what it returns.
pub fn checked(lua: &Lua, loader: Loader, inner: Function) -> mlua::Result<Function> {
    let f: ffi::lua_CFunction = match loader {
        Loader::LoadString => checked_loadstring,
        Loader::Load => checked_load,
    };
    // SAFETY: the closure runs in a protected call with `inner` as its one argument and
    // leaves one value, the new closure holding it as its upvalue.
    unsafe {
        lua.exec_raw(inner, |state| {
            ffi::lua_pushcclosure(state, f, 1);
        })
    }
}

unsafe extern "C-unwind" fn checked_loadstring(state: *mut ffi::lua_State) -> c_int {
    let mut len = 0;
    ffi::luaL_checklstring(state, 1, &mut len);
    check_name(state);
    call_inner(state)
}

unsafe extern "C-unwind" fn checked_load(state: *mut ffi::lua_State) -> c_int {
    // Lua 5.1's load reads the name before the reader.
    check_name(state);
    ffi::luaL_checktype(state, 1, ffi::LUA_TFUNCTION);
    call_inner(state)
}

/// luaL_optstring's check of argument 2, the chunk's name: absent, nil, or a string (a
/// number counts, as Lua converts it).
unsafe fn check_name(state: *mut ffi::lua_State) {
    if ffi::lua_type(state, 2) > ffi::LUA_TNIL {
        let mut len = 0;
        ffi::luaL_checklstring(state, 2, &mut len);
    }
}

/// Calls upvalue 1 with this call's arguments; returns its results.
///
/// Nothing here needs dropping: an error in the call leaves by `longjmp`.
unsafe fn call_inner(state: *mut ffi::lua_State) -> c_int {
    let args = ffi::lua_gettop(state);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    ffi::lua_insert(state, 1);
    ffi::lua_call(state, args, ffi::LUA_MULTRET);
    ffi::lua_gettop(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua_with(name: &str, loader: Loader) -> Lua {
        let lua = Lua::new();
        let inner: Function = lua.globals().get(name).unwrap();
        let f = checked(&lua, loader, inner).unwrap();
        lua.globals().set(name, f).unwrap();
        lua
    }

    #[test]
    fn bad_arguments_are_named_and_placed_from_a_tail_call() {
        let lua = lua_with("loadstring", Loader::LoadString);
        let err = lua
            .load("return loadstring(nil)")
            .set_name("=s")
            .exec()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("s:1: bad argument #1 to 'loadstring' (string expected, got nil)"),
            "{err}"
        );
        let err = lua
            .load("loadstring('x', {})")
            .exec()
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad argument #2 to 'loadstring'"), "{err}");
        let lua = lua_with("load", Loader::Load);
        let err = lua.load("return load(1)").exec().unwrap_err().to_string();
        assert!(
            err.contains("bad argument #1 to 'load' (function expected, got number)"),
            "{err}"
        );
    }

    #[test]
    fn good_arguments_reach_the_loader() {
        let lua = lua_with("loadstring", Loader::LoadString);
        let n: i64 = lua
            .load("return loadstring('return 1 + 1', 'c')()")
            .eval()
            .unwrap();
        assert_eq!(n, 2);
        let got: (Option<Function>, String) = lua.load("return loadstring('+')").eval().unwrap();
        assert!(got.0.is_none() && got.1.contains("unexpected symbol"));
    }
}
