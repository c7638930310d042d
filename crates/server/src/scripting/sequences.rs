//! KEYS and ARGV, built on the interpreter's stack.
//!
//! Through mlua's safe API every string becomes a handle first (an allocation, a lock
//! and a slot in its reference thread) before it is put in the table, and the tables
//! were then set as globals from Rust; a run of a short script spent more on that than
//! on the script. Instead the prelude's `run` functions call [`lua_run_args`], a C
//! function that pushes the two tables straight from the request's arguments, which the
//! run publishes with the rest of its context ([`super::active`]).
#![allow(unsafe_code)]

use std::ffi::c_int;

use bytes::Bytes;
use mlua::{ffi, Lua, Table};

use super::active;

/// Makes `state.run_args` for the prelude.
pub fn install(lua: &Lua, state: &Table) -> mlua::Result<()> {
    // SAFETY: a C function of the signature Lua expects.
    let run_args = unsafe { lua.create_c_function(lua_run_args)? };
    state.set("run_args", run_args)
}

/// `state.run_args()`: the running script's keys and arguments as two new sequences
/// (empty outside a run).
///
/// Its Lua calls allocate; should the interpreter's allocator fail, Lua leaves this
/// function by `longjmp` to the run's protected call, skipping [`active::with`]'s
/// guard, which then leaves the run unpublished for the rest of that failed run only.
unsafe extern "C-unwind" fn lua_run_args(state: *mut ffi::lua_State) -> c_int {
    ffi::lua_settop(state, 0);
    let pushed = active::with(|run| {
        // SAFETY: two values on an emptied stack, within LUA_MINSTACK.
        unsafe {
            push_sequence(state, run.keys);
            push_sequence(state, run.args);
        }
    });
    if pushed.is_none() {
        ffi::lua_createtable(state, 0, 0);
        ffi::lua_createtable(state, 0, 0);
    }
    2
}

/// Pushes a new table holding `items` as strings at 1..=n.
///
/// # Safety
/// `state` is a running Lua state with room for two more values.
unsafe fn push_sequence(state: *mut ffi::lua_State, items: &[Bytes]) {
    let size = c_int::try_from(items.len()).unwrap_or(c_int::MAX);
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
    fn outside_a_run_both_are_empty() {
        let lua = Lua::new();
        // SAFETY: a C function of the signature Lua expects.
        let f = unsafe { lua.create_c_function(lua_run_args) }.unwrap();
        let (keys, args): (Table, Table) = f.call(()).unwrap();
        assert_eq!((keys.raw_len(), args.raw_len()), (0, 0));
    }
}
