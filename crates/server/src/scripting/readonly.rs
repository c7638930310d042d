//! The base functions that meet Redis's read-only tables, written in C as Lua's and
//! Redis's are.
//!
//! The sandbox's read-only tables (`redis`, `string`, `_G`...) are empty proxies whose
//! metatable reads from the real table and refuses writes (`prelude.lua`). Redis's Lua
//! instead marks real tables read-only inside the VM, so the raw functions must be
//! taught what a proxy is: `rawset`, `setmetatable` and `table.insert` (which writes
//! with `lua_rawseti`, past any metatable) refuse one, `rawget`, `next` and `pairs` see
//! through it to its table, and `getmetatable` shows what Redis's table would have (no
//! metatable, but for the globals').
//!
//! Each is a C closure over the prelude's tables and the library's own function, which
//! it runs on the same stack once the proxy case is out of the way. Being C, their
//! errors name the function as the caller called it and place it at the caller's line,
//! even from a tail call, and a loop over a script's own tables pays little for them:
//! only a table with a metatable is looked up (against the Lua wrappers they replace, a
//! loop of `rawset`s runs 1.66x, of `setmetatable`s 1.19x; `table.insert` as unguarded).
//!
//! Every function here raises with `lua_error`, a `longjmp`: nothing in them needs
//! dropping, so no destructor is skipped.
#![allow(unsafe_code)]

use std::ffi::c_int;

use mlua::{ffi, Function, Lua, Table, Value};

/// The prelude's tables of proxies, each keyed by proxy (weak keys).
struct Proxies {
    /// proxy → true.
    protected: Table,
    /// proxy → the table it shows.
    real_of: Table,
    /// proxy → what `getmetatable` returns for it (absent: nil).
    shown_meta: Table,
}

/// Makes, for the prelude, `state.guards(protected, real_of, shown_meta)` (see
/// [`guards`]) and `state.protected_table_error`, the globals' `__index`.
pub fn install(lua: &Lua, state: &Table) -> mlua::Result<()> {
    // SAFETY: a C function of the signature Lua expects.
    let index = unsafe { lua.create_c_function(protected_table_error)? };
    state.set("protected_table_error", index)?;
    let make = lua.create_function(|lua, (protected, real_of, shown_meta)| {
        let proxies = Proxies {
            protected,
            real_of,
            shown_meta,
        };
        guards(lua, proxies)
    })?;
    state.set("guards", make)
}

/// The guarded functions by their global names, for the prelude to install; replaces
/// `table.insert` in the interpreter's `table` library (the table behind the scripts'
/// view of it). Call before the prelude replaces any of the base functions.
fn guards(lua: &Lua, proxies: Proxies) -> mlua::Result<Table> {
    let g = lua.globals();
    let library: Table = g.get("table")?;
    let out = lua.create_table()?;
    let refusing: [(&str, ffi::lua_CFunction, Function); 3] = [
        ("rawset", guarded_rawset, g.get("rawset")?),
        ("setmetatable", guarded_setmetatable, g.get("setmetatable")?),
        ("insert", guarded_insert, library.get("insert")?),
    ];
    for (name, guard, original) in refusing {
        out.set(
            name,
            c_closure(lua, guard, (proxies.protected.clone(), original))?,
        )?;
    }
    let see_through_of = |name: &str| -> mlua::Result<Function> {
        let original: Function = g.get(name)?;
        c_closure(lua, see_through, (proxies.real_of.clone(), original))
    };
    out.set("rawget", see_through_of("rawget")?)?;
    out.set("next", see_through_of("next")?)?;
    // Upvalue 1 unused: every guard keeps its function at 2.
    let iterator = see_through_of("next")?;
    out.set(
        "pairs",
        c_closure(lua, guarded_pairs, (Value::Nil, iterator))?,
    )?;
    let original: Function = g.get("getmetatable")?;
    out.set(
        "getmetatable",
        c_closure(
            lua,
            guarded_getmetatable,
            (proxies.protected, original, proxies.shown_meta),
        )?,
    )?;
    library.set("insert", out.get::<Function>("insert")?)?;
    Ok(out)
}

/// A C closure of `f` over `upvalues` (also the loaders' way to make theirs).
pub(super) fn c_closure(
    lua: &Lua,
    f: ffi::lua_CFunction,
    upvalues: impl mlua::IntoLuaMulti,
) -> mlua::Result<Function> {
    // SAFETY: the closure runs in a protected call with the upvalues as its arguments
    // (and nothing else on its stack) and leaves one value, the new closure.
    unsafe {
        lua.exec_raw(upvalues, |state| {
            let n = ffi::lua_gettop(state);
            ffi::lua_pushcclosure(state, f, n);
        })
    }
}

/// Pushes `upvalue[argument 1]` and returns true when argument 1 has a metatable, as
/// every proxy has; pushes nothing and returns false otherwise (a script's plain
/// tables, the common case, stop here). Argument 1 may be missing: index 1 is still an
/// acceptable index, and reads as nil, which has no metatable.
unsafe fn lookup(state: *mut ffi::lua_State, upvalue: c_int) -> bool {
    if ffi::lua_getmetatable(state, 1) == 0 {
        return false;
    }
    ffi::lua_pop(state, 1);
    ffi::lua_pushvalue(state, 1);
    ffi::lua_rawget(state, ffi::lua_upvalueindex(upvalue));
    true
}

/// Whether argument 1 is a read-only proxy (upvalue 1: the set of them).
unsafe fn is_proxy(state: *mut ffi::lua_State) -> bool {
    if !lookup(state, 1) {
        return false;
    }
    let found = ffi::lua_toboolean(state, -1) != 0;
    ffi::lua_pop(state, 1);
    found
}

/// Runs the library's own function (upvalue 2) on this stack.
unsafe fn original(state: *mut ffi::lua_State) -> c_int {
    match ffi::lua_tocfunction(state, ffi::lua_upvalueindex(2)) {
        Some(f) => f(state),
        None => 0,
    }
}

/// `rawset(t, k, v)`: a proxy is refused once the arguments pass the library's checks,
/// where Redis's `lua_rawset` refuses a read-only table.
unsafe extern "C-unwind" fn guarded_rawset(state: *mut ffi::lua_State) -> c_int {
    if is_proxy(state) {
        ffi::luaL_checkany(state, 2);
        ffi::luaL_checkany(state, 3);
        readonly_error(state);
    }
    original(state)
}

/// `setmetatable(t, mt)`: the same, after the library's checks of both arguments.
unsafe extern "C-unwind" fn guarded_setmetatable(state: *mut ffi::lua_State) -> c_int {
    if is_proxy(state) {
        let kind = ffi::lua_type(state, 2);
        if kind != ffi::LUA_TNIL && kind != ffi::LUA_TTABLE {
            ffi::luaL_argerror(state, 2, c"nil or table expected".as_ptr());
        }
        readonly_error(state);
    }
    original(state)
}

/// `table.insert(t, [pos,] v)`: the same, at the point Redis's `tinsert` would reach its
/// first write (after it has checked the arguments).
unsafe extern "C-unwind" fn guarded_insert(state: *mut ffi::lua_State) -> c_int {
    if is_proxy(state) {
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
    original(state)
}

/// `rawget(t, k)` and `next(t, k)`: a proxy's table (upvalue 1: proxy → table) takes
/// its place.
unsafe extern "C-unwind" fn see_through(state: *mut ffi::lua_State) -> c_int {
    if lookup(state, 1) {
        if ffi::lua_isnil(state, -1) != 0 {
            ffi::lua_pop(state, 1);
        } else {
            ffi::lua_replace(state, 1);
        }
    }
    original(state)
}

/// `pairs(t)`: Lua 5.1's (iterator, t, nil), with a seeing-through `next` of its own
/// (upvalue 2) as the iterator: as in Redis, it is not the global `next`, and `t` is
/// returned as given (a proxy too).
unsafe extern "C-unwind" fn guarded_pairs(state: *mut ffi::lua_State) -> c_int {
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(2));
    ffi::lua_pushvalue(state, 1);
    ffi::lua_pushnil(state);
    3
}

/// `getmetatable(v)`: what a proxy shows (upvalue 3: proxy → metatable, absent for
/// none); the library's own answer for anything else.
unsafe extern "C-unwind" fn guarded_getmetatable(state: *mut ffi::lua_State) -> c_int {
    if is_proxy(state) {
        ffi::lua_pushvalue(state, 1);
        ffi::lua_rawget(state, ffi::lua_upvalueindex(3));
        return 1;
    }
    original(state)
}

/// Redis's `luaProtectedTableError`: the globals' `__index`, which refuses a name the
/// globals lack, with the caller's place (a script line).
unsafe extern "C-unwind" fn protected_table_error(state: *mut ffi::lua_State) -> c_int {
    if ffi::lua_gettop(state) != 2 {
        raise_placed(
            state,
            b"Wrong number of arguments to luaProtectedTableError",
        );
    }
    // lua_isstring: a string or a number (which lua_tolstring then writes as Lua does).
    if ffi::lua_isstring(state, -1) == 0 {
        raise_placed(
            state,
            b"Second argument to luaProtectedTableError must be a string or number",
        );
    }
    let mut len = 0;
    let name = ffi::lua_tolstring(state, 2, &mut len);
    // SAFETY: Lua's string at index 2 (converted in place if it was a number), which
    // stays on the stack until the error is raised. Redis formats it with %s: up to a NUL.
    let name = std::slice::from_raw_parts(name.cast::<u8>(), len);
    let name = crate::cstr::c_string(name);
    ffi::luaL_where(state, 1);
    ffi::lua_pushstring(
        state,
        c"Script attempted to access nonexistent global variable '".as_ptr(),
    );
    ffi::lua_pushlstring(state, name.as_ptr().cast(), name.len());
    ffi::lua_pushstring(state, c"'".as_ptr());
    ffi::lua_concat(state, 4);
    ffi::lua_error(state)
}

/// `luaL_error(state, text)`: the text after the caller's place.
unsafe fn raise_placed(state: *mut ffi::lua_State, text: &[u8]) -> ! {
    ffi::luaL_where(state, 1);
    ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
    ffi::lua_concat(state, 2);
    ffi::lua_error(state)
}

/// Redis's text, without a place: its Lua raises it from inside a C function.
unsafe fn readonly_error(state: *mut ffi::lua_State) -> ! {
    ffi::lua_pushstring(state, c"Attempt to modify a readonly table".as_ptr());
    ffi::lua_error(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interpreter with the guards as globals and one proxy, `proxy`, showing
    /// `{a = 1}`, as the prelude builds them.
    fn lua_with_guards() -> (Lua, Table) {
        let lua = Lua::new();
        let weak = || {
            let t = lua.create_table().unwrap();
            let mode = lua.create_table().unwrap();
            mode.set("__mode", "k").unwrap();
            t.set_metatable(Some(mode)).unwrap();
            t
        };
        let proxies = Proxies {
            protected: weak(),
            real_of: weak(),
            shown_meta: weak(),
        };
        let real = lua.create_table().unwrap();
        real.set("a", 1).unwrap();
        let meta = lua.create_table().unwrap();
        meta.set("__index", real.clone()).unwrap();
        let proxy = lua.create_table().unwrap();
        proxy.set_metatable(Some(meta)).unwrap();
        proxies.protected.set(proxy.clone(), true).unwrap();
        proxies.real_of.set(proxy.clone(), real).unwrap();
        let out = guards(&lua, proxies).unwrap();
        for pair in out.pairs::<String, Function>() {
            let (name, f) = pair.unwrap();
            if name != "insert" {
                lua.globals().set(name, f).unwrap();
            }
        }
        lua.globals().set("proxy", proxy.clone()).unwrap();
        (lua, proxy)
    }

    fn error_of(lua: &Lua, code: &str) -> String {
        lua.load(code).exec().unwrap_err().to_string()
    }

    #[test]
    fn writes_to_a_proxy_are_refused_and_leave_it_empty() {
        let (lua, proxy) = lua_with_guards();
        for code in [
            "table.insert(proxy, 1)",
            "table.insert(proxy, 1, 'x')",
            "rawset(proxy, 'b', 2)",
            "setmetatable(proxy, nil)",
        ] {
            let err = error_of(&lua, code);
            assert!(
                err.contains("Attempt to modify a readonly table"),
                "{code}: {err}"
            );
        }
        assert_eq!(proxy.raw_len(), 0);
        assert!(proxy.raw_get::<Option<i64>>("b").unwrap().is_none());
    }

    #[test]
    fn argument_errors_come_first_as_in_the_library() {
        let (lua, _) = lua_with_guards();
        for (code, expected) in [
            (
                "table.insert(proxy)",
                "wrong number of arguments to 'insert'",
            ),
            ("table.insert(proxy, 'x', 1)", "bad argument #2 to 'insert'"),
            ("table.insert(nil, 1)", "table expected, got nil"),
            (
                "rawset(proxy, 'k')",
                "bad argument #3 to 'rawset' (value expected)",
            ),
            (
                "setmetatable(proxy, 1)",
                "bad argument #2 to 'setmetatable' (nil or table expected)",
            ),
            (
                "pairs(1)",
                "bad argument #1 to 'pairs' (table expected, got number)",
            ),
            (
                "rawget()",
                "bad argument #1 to 'rawget' (table expected, got no value)",
            ),
        ] {
            let err = error_of(&lua, code);
            assert!(err.contains(expected), "{code}: {err}");
        }
    }

    #[test]
    fn reads_see_through_a_proxy() {
        let (lua, _) = lua_with_guards();
        let got: (i64, String, i64, bool, bool) = lua
            .load(
                "local n = 0 for k, v in pairs(proxy) do n = n + v end \
                 return rawget(proxy, 'a'), next(proxy), n, getmetatable(proxy) == nil, pairs({}) ~= next",
            )
            .eval()
            .unwrap();
        assert_eq!(got, (1, "a".to_string(), 1, true, true));
    }

    #[test]
    fn other_tables_behave_as_before() {
        let (lua, _) = lua_with_guards();
        let n: i64 = lua
            .load(
                "local t = {} for i = 1, 5 do table.insert(t, i) end table.insert(t, 1, 0) \
                 rawset(t, 'x', 9) local m = {} setmetatable(t, m) \
                 local s = 0 for _, v in pairs(t) do s = s + v end \
                 assert(getmetatable(t) == m and rawget(t, 'x') == 9) \
                 local own = setmetatable({}, {}) table.insert(own, 7) \
                 return s * 100 + #t + own[1]",
            )
            .eval()
            .unwrap();
        assert_eq!(n, 24 * 100 + 6 + 7);
    }
}
