//! `loadstring` and `load`: Lua's own argument checks, in C, in front of the prelude's
//! loaders (which read binary chunks as text and give a chunk its environment).
//!
//! Written in Lua, the checks named the function '?' or lost the caller's line when a
//! script called it in tail position (`return loadstring(nil)`): Lua drops a Lua
//! caller's frame there, not a C one's. A C function's `luaL_argerror` names and places
//! the error as Lua's own `loadstring` does.
#![allow(unsafe_code)]

use std::ffi::c_int;

use mlua::{ffi, Function, Lua, Table};

use super::readonly::c_closure;

/// Makes `state.checked_loadstring(f)` and `state.checked_load(f)` for the prelude:
/// each returns `f` behind the argument checks of the Lua function it stands for.
pub fn install(lua: &Lua, state: &Table) -> mlua::Result<()> {
    let checks: [(&str, ffi::lua_CFunction); 2] = [
        ("checked_loadstring", checked_loadstring),
        ("checked_load", checked_load),
    ];
    for (name, check) in checks {
        let wrap = lua.create_function(move |lua, inner: Function| c_closure(lua, check, inner))?;
        state.set(name, wrap)?;
    }
    Ok(())
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
    let mut len = 0;
    ffi::luaL_optlstring(state, 2, c"".as_ptr(), &mut len);
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

    fn lua_with(name: &str) -> Lua {
        let lua = Lua::new();
        let state = lua.create_table().unwrap();
        install(&lua, &state).unwrap();
        let wrap: Function = state.get(format!("checked_{name}")).unwrap();
        let inner: Function = lua.globals().get(name).unwrap();
        let f: Function = wrap.call(inner).unwrap();
        lua.globals().set(name, f).unwrap();
        lua
    }

    #[test]
    fn bad_arguments_are_named_and_placed_from_a_tail_call() {
        let lua = lua_with("loadstring");
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
        let lua = lua_with("load");
        let err = lua.load("return load(1)").exec().unwrap_err().to_string();
        assert!(
            err.contains("bad argument #1 to 'load' (function expected, got number)"),
            "{err}"
        );
    }

    #[test]
    fn good_arguments_reach_the_loader() {
        let lua = lua_with("loadstring");
        let n: i64 = lua
            .load("return loadstring('return 1 + 1', 'c')()")
            .eval()
            .unwrap();
        assert_eq!(n, 2);
        let got: (Option<Function>, String) = lua.load("return loadstring('+')").eval().unwrap();
        assert!(got.0.is_none() && got.1.contains("unexpected symbol"));
    }
}
