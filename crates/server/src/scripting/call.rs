//! `redis.call` and `redis.pcall`: a script's command, run on its client with the
//! shards the script holds, its reply turned into Lua values.
//!
//! Both are C functions working on the interpreter's stack, as Redis's are: through
//! mlua's safe API every argument and every string of a reply became a handle first (an
//! allocation, a lock and a reference-thread slot each), about a third of a short
//! command's cost inside a script. An error is raised as Redis 7.0 raises it, an
//! `{err=...}` table (`redis.pcall` returns it instead).
//!
//! Pushing a reply allocates in the interpreter; should its allocator fail, Lua leaves
//! by `longjmp` to the run's protected call: what the call still holds (the parsed
//! reply, the reply buffer) is leaked rather than freed, and the run stays unpublished
//! (later calls of that run fail as outside one). Nothing else is skipped: errors of our
//! own are raised only after everything is dropped (`call_or_pcall`).
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use bytes::{Bytes, BytesMut};
use mlua::{ffi, Lua, Table, Value, Variadic};
use redline_resp::command::{self, CommandFlags};
use redline_resp::Frame;

use super::active::{self, RunContext};
use super::convert;
use crate::cmd::Ctx;
use crate::net::client::ClientState;

/// Redis's errors for a library call's arguments.
const NO_ARGS: &str = "ERR Please specify at least one argument for this redis lib call";
const BAD_ARG: &str = "ERR Lua redis lib command arguments must be strings or integers";
/// What a call made outside a run gets (Redis's text).
const OUTSIDE_RUN: &str = "ERR redis.call/pcall can only be called inside a script invocation";

/// Puts `call`, `pcall` and `acl_check_cmd` in the `redis` table, for the interpreter's
/// life: they act on the run published in [`active`].
pub fn install(lua: &Lua, redis: &Table) -> mlua::Result<()> {
    // SAFETY: both are C functions of the signature Lua expects; what they do on the
    // stack is explained at `call_or_pcall`.
    let (call, pcall) = unsafe {
        (
            lua.create_c_function(lua_call)?,
            lua.create_c_function(lua_pcall)?,
        )
    };
    redis.raw_set("call", call)?;
    redis.raw_set("pcall", pcall)?;
    let acl_check_cmd = lua.create_function(|_, argv: Variadic<Value>| {
        if argv.is_empty() {
            return Err(super::redis_error(NO_ARGS));
        }
        let Some(args) = argv.iter().map(value_bytes).collect::<Option<Vec<Bytes>>>() else {
            return Err(super::redis_error(BAD_ARG));
        };
        let Some(spec) = command::resolve(&args) else {
            return Err(super::lib_error(
                "Invalid command passed to redis.acl_check_cmd()",
            ));
        };
        active::with(|run| {
            let user = run
                .client
                .user
                .clone()
                .unwrap_or_else(|| run.shared.acl.default_user().clone());
            let allowed = crate::acl::check::check(&user.rules(), spec, &args).is_ok();
            allowed
        })
        .ok_or_else(|| super::redis_error(OUTSIDE_RUN))
    })?;
    redis.raw_set("acl_check_cmd", acl_check_cmd)
}

/// An argument given as a Lua value, as bytes (numbers as [`number_bytes`] writes them).
fn value_bytes(v: &Value) -> Option<Bytes> {
    match v {
        Value::String(s) => Some(Bytes::copy_from_slice(&s.as_bytes())),
        // Lua 5.1 has only doubles: mlua calls the whole ones integers.
        Value::Integer(n) => Some(number_bytes(*n as f64)),
        Value::Number(n) => Some(number_bytes(*n)),
        _ => None,
    }
}

/// A Lua number as a command argument: `%.17g`, as Redis 7.0 writes it (not Lua's own
/// `%.14g`, which loses digits). Whole numbers that `%.17g` prints in full take the
/// integer formatter, the same text for less work.
fn number_bytes(n: f64) -> Bytes {
    const FULL: f64 = 1e17; // below this, %.17g prints a whole number's every digit
    if n.abs() < FULL && n.fract() == 0.0 && !(n == 0.0 && n.is_sign_negative()) {
        return Bytes::copy_from_slice(itoa::Buffer::new().format(n as i64).as_bytes());
    }
    Bytes::from(crate::cmd::float::fmt_g(n, 17))
}

unsafe extern "C-unwind" fn lua_call(state: *mut ffi::lua_State) -> c_int {
    call_or_pcall(state, false)
}

unsafe extern "C-unwind" fn lua_pcall(state: *mut ffi::lua_State) -> c_int {
    call_or_pcall(state, true)
}

/// What a call leaves for Lua: a number of results on the stack, or an error to raise
/// (its value on the stack).
enum Outcome {
    Return(c_int),
    Raise,
}

/// The body of both functions. All the work, and every value that needs dropping, is in
/// `call_and_push`, which returns before anything is raised: `lua_error` leaves this
/// frame with a `longjmp`, which must skip no destructor. A panic is caught here, so it
/// never unwinds through the interpreter's C frames.
unsafe fn call_or_pcall(state: *mut ffi::lua_State, protected: bool) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| call_and_push(state, protected)));
    match outcome {
        Ok(Outcome::Return(n)) => n,
        Ok(Outcome::Raise) => ffi::lua_error(state),
        Err(payload) => {
            drop(payload);
            ffi::lua_pushstring(state, c"redis.call failed unexpectedly".as_ptr());
            ffi::lua_error(state)
        }
    }
}

thread_local! {
    /// The buffer a script's commands reply into, kept from call to call: a command's
    /// reply is parsed out of it and dropped before the next call, so the allocation is
    /// reused (unless a large reply grew it past `REPLY_KEPT`).
    static REPLY: Cell<BytesMut> = Cell::new(BytesMut::new());
    /// The list a call's arguments are read into, kept from call to call the same way
    /// (emptied after each, unless a long call grew it past `ARGS_KEPT`).
    static ARGS: Cell<Vec<Bytes>> = const { Cell::new(Vec::new()) };
}

const REPLY_KEPT: usize = 64 * 1024;
const ARGS_KEPT: usize = 1024;

/// Reads the arguments, runs the command and pushes its reply (or the error table).
unsafe fn call_and_push(state: *mut ffi::lua_State, protected: bool) -> Outcome {
    let mut out = REPLY.with(Cell::take);
    let mut args = ARGS.with(Cell::take);
    let outcome = call_into(state, protected, &mut args, &mut out);
    out.clear();
    if out.capacity() <= REPLY_KEPT {
        REPLY.with(|r| r.set(out));
    }
    args.clear();
    if args.capacity() <= ARGS_KEPT {
        ARGS.with(|a| a.set(args));
    }
    outcome
}

unsafe fn call_into(
    state: *mut ffi::lua_State,
    protected: bool,
    args: &mut Vec<Bytes>,
    out: &mut BytesMut,
) -> Outcome {
    if let Err(text) = read_args(state, ffi::lua_gettop(state), args) {
        return fail(state, protected, text, false);
    }
    ffi::lua_settop(state, 0);
    let Some(result) = active::with(|run| run_call(run, args, out)) else {
        push_error(state, OUTSIDE_RUN, false);
        return Outcome::Raise;
    };
    match result {
        Ok(frame) => match push_frame(state, frame, 0) {
            Ok(()) => Outcome::Return(1),
            Err(text) => {
                ffi::lua_settop(state, 0);
                ffi::lua_pushstring(state, text.as_ptr());
                Outcome::Raise
            }
        },
        Err(e) => fail(state, protected, &e.text, e.counted),
    }
}

/// An error reply: raised by `redis.call`, returned by `redis.pcall`.
unsafe fn fail(state: *mut ffi::lua_State, protected: bool, text: &str, counted: bool) -> Outcome {
    push_error(state, text, counted);
    if protected {
        Outcome::Return(1)
    } else {
        Outcome::Raise
    }
}

/// The arguments on the stack (1..=argc) as bytes into `args`, with Redis's errors.
unsafe fn read_args(
    state: *mut ffi::lua_State,
    argc: c_int,
    args: &mut Vec<Bytes>,
) -> Result<(), &'static str> {
    if argc == 0 {
        return Err(NO_ARGS);
    }
    args.reserve(usize::try_from(argc).unwrap_or(0));
    for i in 1..=argc {
        let arg = match ffi::lua_type(state, i) {
            ffi::LUA_TSTRING => Bytes::copy_from_slice(super::args::stack_bytes(state, i)),
            ffi::LUA_TNUMBER => number_bytes(ffi::lua_tonumber(state, i)),
            _ => return Err(BAD_ARG),
        };
        args.push(arg);
    }
    Ok(())
}

/// Pushes `{err = text}`, with `ignore_error_stats_update = true` when the error
/// statistics counted it already.
unsafe fn push_error(state: *mut ffi::lua_State, text: &str, counted: bool) {
    ffi::lua_settop(state, 0);
    ffi::lua_createtable(state, 0, 2);
    ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
    ffi::lua_setfield(state, -2, c"err".as_ptr());
    if counted {
        ffi::lua_pushboolean(state, 1);
        ffi::lua_setfield(state, -2, c"ignore_error_stats_update".as_ptr());
    }
}

/// Pushes a reply as Redis converts it for scripts (`redisProtocolToLuaType`).
unsafe fn push_frame(
    state: *mut ffi::lua_State,
    frame: Frame,
    depth: usize,
) -> Result<(), &'static std::ffi::CStr> {
    if depth > convert::MAX_DEPTH || ffi::lua_checkstack(state, 4) == 0 {
        return Err(c"reached lua stack limit");
    }
    let bytes = |b: &[u8]| {
        ffi::lua_pushlstring(state, b.as_ptr().cast(), b.len());
    };
    // `{tag = <the value on top>}`.
    let tagged = |tag: &std::ffi::CStr| {
        ffi::lua_createtable(state, 0, 1);
        ffi::lua_insert(state, -2);
        ffi::lua_setfield(state, -2, tag.as_ptr());
    };
    match frame {
        Frame::Integer(n) => ffi::lua_pushnumber(state, n as f64),
        Frame::Bulk(b) => bytes(&b),
        Frame::Simple(s) => {
            bytes(&s);
            tagged(c"ok");
        }
        Frame::Error(e) | Frame::BulkError(e) => {
            bytes(&e);
            tagged(c"err");
        }
        Frame::NullBulk | Frame::NullArray => ffi::lua_pushboolean(state, 0),
        Frame::Null => ffi::lua_pushnil(state),
        Frame::Array(items) | Frame::Push(items) => {
            ffi::lua_createtable(state, c_int::try_from(items.len()).unwrap_or(0), 0);
            for (i, item) in (1..).zip(items) {
                push_frame(state, item, depth + 1)?;
                ffi::lua_rawseti(state, -2, i);
            }
        }
        Frame::Map(pairs) => {
            ffi::lua_createtable(state, 0, c_int::try_from(pairs.len()).unwrap_or(0));
            for (k, v) in pairs {
                push_frame(state, k, depth + 1)?;
                push_frame(state, v, depth + 1)?;
                ffi::lua_rawset(state, -3);
            }
            tagged(c"map");
        }
        Frame::Set(items) => {
            ffi::lua_createtable(state, 0, c_int::try_from(items.len()).unwrap_or(0));
            for item in items {
                push_frame(state, item, depth + 1)?;
                ffi::lua_pushboolean(state, 1);
                ffi::lua_rawset(state, -3);
            }
            tagged(c"set");
        }
        Frame::Double(d) => {
            ffi::lua_pushnumber(state, d);
            tagged(c"double");
        }
        Frame::Boolean(b) => ffi::lua_pushboolean(state, c_int::from(b)),
        Frame::BigNumber(n) => {
            bytes(&n);
            tagged(c"big_number");
        }
        Frame::Verbatim { format, text } => {
            ffi::lua_createtable(state, 0, 2);
            bytes(&format);
            ffi::lua_setfield(state, -2, c"format".as_ptr());
            bytes(&text);
            ffi::lua_setfield(state, -2, c"string".as_ptr());
            tagged(c"verbatim_string");
        }
        Frame::Attribute { value, .. } => push_frame(state, *value, depth)?,
    }
    Ok(())
}

/// An error reply `redis.call`/`redis.pcall` got, and whether the error statistics
/// already counted it (the command ran, or was refused with the command known), so the
/// script's own error reply does not count it twice (Redis's `ignore_error_stats_update`).
struct CallError {
    text: String,
    counted: bool,
}

/// A refusal of the script layer: counted now, as a rejected call of `spec` if known.
fn refused(
    client: &mut ClientState,
    spec: Option<&'static command::CommandSpec>,
    message: &str,
) -> Result<Frame, CallError> {
    client.cmdstats.error(message.as_bytes());
    if let Some(spec) = spec {
        client.cmdstats.rejected(spec.name);
    }
    Err(CallError {
        text: message.to_string(),
        counted: true,
    })
}

/// Runs one command on the script's (fake) client with the shards already held; its
/// reply, or the error reply's text.
fn run_call(
    run: &mut RunContext<'_>,
    args: &[Bytes],
    out: &mut BytesMut,
) -> Result<Frame, CallError> {
    if let Some(session) = run.session {
        session.take_reply_logged();
        session.log_command(args);
    }
    let result = run_call_traced(run, args, out);
    // An error the command itself replied was logged as its reply; one from before it
    // ran (unknown command, arity, ACL...) is logged here.
    if let (Some(session), Err(e)) = (run.session, &result) {
        if !session.take_reply_logged() {
            session.log_error(&e.text);
        }
    }
    result
}

fn run_call_traced(
    run: &mut RunContext<'_>,
    args: &[Bytes],
    out: &mut BytesMut,
) -> Result<Frame, CallError> {
    let RunContext {
        shared,
        held,
        ref mut client,
        read_only,
        session,
        resp,
        repl,
        ..
    } = *run;
    // WATCHes sent while the script was BUSY take effect before its next command.
    shared
        .scripting
        .flags
        .watches
        .register_waiting(shared, held);
    let Some(spec) = shared.renamed.resolve(args) else {
        return refused(client, None, "ERR Unknown Redis command called from script");
    };
    if !spec.arity_ok(args.len()) {
        let text = "ERR Wrong number of args calling Redis command from script";
        return refused(client, Some(spec), text);
    }
    if spec.flags.contains(CommandFlags::NOSCRIPT)
        && !shared.scripting.allow_denied.load(Ordering::Relaxed)
    {
        let text = "ERR This Redis command is not allowed from script";
        return refused(client, Some(spec), text);
    }
    // The caller's ACL rules, checked here, before the script's own rules, as Redis's
    // `scriptVerifyACL` (the dispatcher's check then passes).
    let user = client
        .user
        .clone()
        .unwrap_or_else(|| shared.acl.default_user().clone());
    if !user.unrestricted() {
        if let Err(denied) = crate::acl::check::check(&user.rules(), spec, args) {
            client.in_script = true;
            let ctx = Ctx {
                shared,
                client,
                out: &mut *out,
                held,
                nested: true,
            };
            crate::cmd::acl::log_denied(&ctx, spec, denied, args);
            client.in_script = false;
            let text = crate::cmd::acl::script_denied_error(denied);
            return refused(client, Some(spec), text);
        }
    }
    if read_only && (spec.is_write() || spec.may_replicate()) {
        let text = "ERR Write commands are not allowed from read-only scripts.";
        return refused(client, Some(spec), text);
    }
    out.clear();
    let saved = client.protocol;
    client.protocol = super::protocol_of(resp);
    client.repl_targets = crate::repl::journal::Targets::from_flags(repl.load(Ordering::Relaxed));
    client.in_script = true;
    {
        let mut inner = Ctx {
            shared,
            client,
            out: &mut *out,
            held,
            nested: true,
        };
        crate::cmd::execute(&mut inner, args);
    }
    // Marked after the call: a write refused above maxmemory does not count as the
    // script's first write.
    if spec.is_write() && !out.starts_with(b"-") {
        shared.scripting.flags.wrote.store(true, Ordering::Release);
    }
    client.protocol = saved;
    client.in_script = false;
    let frame = match redline_resp::parse(out) {
        Ok(Some(frame)) => frame,
        _ => Frame::NullBulk,
    };
    if let Some(session) = session {
        session.log_reply(&frame);
    }
    match frame {
        Frame::Error(e) | Frame::BulkError(e) => Err(CallError {
            text: String::from_utf8_lossy(&e).into_owned(),
            counted: true,
        }),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_arguments() {
        assert_eq!(number_bytes(3.0), "3");
        assert_eq!(number_bytes(-0.0), "-0");
        assert_eq!(number_bytes(1e15), "1000000000000000");
        assert_eq!(number_bytes(0.5), "0.5");
        // What redis-server 7.0.15 sends for each.
        assert_eq!(number_bytes(0.1), "0.10000000000000001");
        assert_eq!(number_bytes(99_999_999_999_999_999.0), "1e+17");
        assert_eq!(
            number_bytes(123_456_789_012_345_678.0),
            "1.2345678901234568e+17"
        );
        assert_eq!(
            number_bytes(-9_223_372_036_854_775_808.0),
            "-9.2233720368547758e+18"
        );
        assert_eq!(number_bytes(1e300), "1.0000000000000001e+300");
        assert_eq!(number_bytes(f64::INFINITY), "inf");
    }
}
