//! `table.insert` that refuses Redis's read-only tables.
//!
//! The sandbox's read-only tables (`redis`, `string`, `_G`...) are empty proxies whose
//! metatable refuses writes; `table.insert` writes with `lua_rawseti`, which no
//! metatable sees, so it could plant values in a proxy that every later script read
//! (`table.insert(redis, 1)`, then `redis[1]`). Redis's Lua marks such tables read-only
//! inside `lua_rawseti` itself. Here the library's own `insert` is wrapped in a C
//! function that asks the prelude's set of proxies first, for tables with a metatable
//! only: a loop of inserts into a script's own table runs as fast as before (a Lua
//! wrapper made it 0.35x, a set lookup on every call 0.88x).
#![allow(unsafe_code)]

use std::ffi::c_int;

use mlua::{ffi, Function, Lua, Table};

/// Replaces `table.insert` in the interpreter's `table` library (the table behind the
/// scripts' read-only view of it) with the guarded one. `protected` is the prelude's
/// set of read-only proxies (proxy → true).
pub fn install(lua: &Lua, protected: Table) -> mlua::Result<()> {
    let library: Table = lua.globals().get("table")?;
    let insert: Function = library.get("insert")?;
    // SAFETY: the closure runs in a protected call with the two values as its
    // arguments and leaves one value, the new closure holding them as upvalues.
    let guarded: Function = unsafe {
        lua.exec_raw((protected, insert), |state| {
            ffi::lua_pushcclosure(state, guarded_insert, 2);
        })?
    };
    library.set("insert", guarded)
}

/// Raises Redis's error when the table is a read-only proxy, at the point Redis's
/// `tinsert` would reach its first write (after it has checked the arguments); runs the
/// library's own `insert` (upvalue 2) on the same stack otherwise.
///
/// Nothing here needs dropping, so `lua_error`'s `longjmp` skips no destructor.
unsafe extern "C-unwind" fn guarded_insert(state: *mut ffi::lua_State) -> c_int {
    // Only a table with a metatable can be a proxy: a script's plain tables (the common
    // case) pass on that test alone. Argument 1 may be missing: index 1 is still an
    // acceptable index, and reads as nil, which has no metatable.
    if ffi::lua_getmetatable(state, 1) != 0 && is_proxy(state) {
        match ffi::lua_gettop(state) {
            2 => readonly_error(state),
            3 => {
                // The position must be a number, as `tinsert` checks before writing.
                ffi::luaL_checkinteger(state, 2);
                readonly_error(state)
            }
            // The library's own refusal of the count ("wrong number of arguments").
            _ => {}
        }
    }
    match ffi::lua_tocfunction(state, ffi::lua_upvalueindex(2)) {
        Some(insert) => insert(state),
        None => 0,
    }
}

/// Whether argument 1 is in the set of proxies (upvalue 1); pops the metatable
/// `lua_getmetatable` pushed.
unsafe fn is_proxy(state: *mut ffi::lua_State) -> bool {
    ffi::lua_pushvalue(state, 1);
    ffi::lua_rawget(state, ffi::lua_upvalueindex(1));
    let readonly = ffi::lua_toboolean(state, -1) != 0;
    ffi::lua_pop(state, 2);
    readonly
}

/// Redis's text, without a position: its Lua raises it from inside a C function.
unsafe fn readonly_error(state: *mut ffi::lua_State) -> ! {
    ffi::lua_pushstring(state, c"Attempt to modify a readonly table".as_ptr());
    ffi::lua_error(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua_with_guard() -> (Lua, Table) {
        let lua = Lua::new();
        let protected = lua.create_table().unwrap();
        // As the prelude's proxies: empty, with a metatable (reads go to the real table).
        let proxy = lua.create_table().unwrap();
        proxy
            .set_metatable(Some(lua.create_table().unwrap()))
            .unwrap();
        protected.set(proxy.clone(), true).unwrap();
        install(&lua, protected).unwrap();
        lua.globals().set("proxy", proxy.clone()).unwrap();
        (lua, proxy)
    }

    #[test]
    fn a_proxy_is_refused_and_stays_empty() {
        let (lua, proxy) = lua_with_guard();
        for code in ["table.insert(proxy, 1)", "table.insert(proxy, 1, 'x')"] {
            let err = lua.load(code).exec().unwrap_err().to_string();
            assert!(err.contains("Attempt to modify a readonly table"), "{err}");
        }
        assert_eq!(proxy.raw_len(), 0);
    }

    #[test]
    fn argument_errors_come_first_as_in_the_library() {
        let (lua, _) = lua_with_guard();
        let err = lua.load("table.insert(proxy)").exec().unwrap_err();
        assert!(err
            .to_string()
            .contains("wrong number of arguments to 'insert'"));
        let err = lua.load("table.insert(proxy, 'x', 1)").exec().unwrap_err();
        assert!(err.to_string().contains("bad argument #2 to 'insert'"));
        let err = lua.load("table.insert(nil, 1)").exec().unwrap_err();
        assert!(err.to_string().contains("table expected, got nil"));
    }

    #[test]
    fn a_table_with_a_metatable_of_its_own_is_not_a_proxy() {
        let (lua, _) = lua_with_guard();
        let n: i64 = lua
            .load("local t = setmetatable({}, {}) table.insert(t, 7) return t[1]")
            .eval()
            .unwrap();
        assert_eq!(n, 7);
    }

    #[test]
    fn other_tables_insert_as_before() {
        let (lua, _) = lua_with_guard();
        let n: i64 = lua
            .load("local t = {} for i = 1, 5 do table.insert(t, i) end table.insert(t, 1, 0) return t[1] * 100 + #t")
            .eval()
            .unwrap();
        assert_eq!(n, 6);
    }
}
