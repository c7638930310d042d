//! Lua scripting as Redis 7.0 embeds it: EVAL scripts cached by SHA1, and FUNCTION
//! libraries, run by one Lua 5.1 interpreter (built from source by `mlua`).
//!
//! # Atomicity and locking
//!
//! A script may touch any key of any database (Redis allows undeclared keys outside
//! cluster mode, and SELECT), so before it starts it holds **every shard of every
//! database up to its client's**, locked in the one global order (database, then shard)
//! that EXEC uses, and every shard of each further database before it first touches it
//! (`Held::databases` in [`crate::store::Held`]: as isolated as holding everything from
//! the start, at a sixteenth of the cost for a script in database 0); inside EXEC it
//! borrows the transaction's shards instead.
//! Its `redis.call`s then run through the ordinary dispatcher with shard access
//! redirected to those guards, exactly like queued commands. Nobody can see a script
//! half done, on any shard, and since every lock is taken up front in the global order a
//! script can never deadlock with another script, a transaction or a plain command.
//!
//! Before taking the shards, a top-level script takes the **script turn** (`turn`).
//! Clients that find it taken queue their batches instead of putting worker threads to
//! sleep on shard locks, and the holder runs the queued batches, in order, before it lets
//! go. A script runs inline on the worker thread of the connection that holds the turn; only if it runs long does the
//! interpreter's hook hand the worker on to another thread (`watchdog`), so BUSY replies
//! and SCRIPT KILL are still served.
//!
//! The interpreter itself is behind its own mutex, always taken *after* the shards: a
//! script inside EXEC already holds its shards when it asks for the interpreter, and a
//! plain EVAL takes the shards first too, so the two locks are always taken in one order.
//! Commands that only manage scripts (SCRIPT LOAD/EXISTS/FLUSH, FUNCTION LOAD/LIST...)
//! take the interpreter alone.
//!
//! # The sandbox
//!
//! `prelude.lua` builds what scripts see: the base library without `loadfile`/`dofile`/
//! `debug`, `string`, `table`, `math`, `bit` and `cjson`, the `redis` table, all behind
//! read-only proxies; reading a global that does not exist and writing any global are
//! errors with Redis's texts. `math.random` is Redis's generator (`random`), not
//! reseeded per run: Redis 7 replicates a script's effects, so scripts need not be
//! deterministic. Errors carry `script: <sha>, on @user_script:<line>.` as in Redis.

mod active;
mod args;
mod busy_watches;
mod call;
mod cjson;
mod convert;
pub mod debugger;
mod flags;
pub mod forked;
mod libs;
mod loaders;
mod msgpack;
mod random;
mod readonly;
mod sequences;
mod structlib;
mod turn;
mod watchdog;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use mlua::{Function, Lua, ObjectLike, RegistryKey, StdLib, Table, Value, Variadic};
use parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
use redline_resp::{encode, Protocol};
use sha1::{Digest, Sha1};

use crate::cmd::Ctx;

pub use busy_watches::BusyWatch;
pub use flags::{eval_shebang, ScriptFlags};
pub use turn::{Queued, ScriptWait, Turn, TurnPermit, Use};

/// A compiled EVAL script. Held through the Lua registry, never as an mlua handle: each
/// live handle takes a slot of mlua's auxiliary stack, which Lua 5.1 caps at about
/// 8,000, past which mlua panics; Redis's script cache has no such bound.
struct Script {
    func: RegistryKey,
    flags: ScriptFlags,
}

/// One function of a library.
#[derive(Clone)]
pub struct FunctionDef {
    /// Its name.
    pub name: String,
    /// The Lua callback, in the registry (see [`Script`]).
    func: Arc<RegistryKey>,
    /// Its flags.
    pub flags: ScriptFlags,
    /// Its description, if given.
    pub description: Option<String>,
}

/// A library loaded by FUNCTION LOAD.
#[derive(Clone)]
pub struct Library {
    /// Its name.
    pub name: String,
    /// Its source, shebang included.
    pub code: Bytes,
    /// Its functions, by name.
    pub functions: BTreeMap<String, FunctionDef>,
}

/// The interpreter and what it holds.
pub struct Engine {
    lua: Lua,
    state: Table,
    globals: Table,
    env: Table,
    /// The `redis` table, kept at hand.
    redis: Table,
    /// The RESP version the running script asked for with `redis.setresp` (2 or 3).
    script_resp: Arc<std::sync::atomic::AtomicU8>,
    /// Where the running script's changes go (`redis.set_repl`'s flags; 3 is both).
    script_repl: Arc<std::sync::atomic::AtomicU8>,
    /// What every run looks up, made once: interning a name costs a hash each time.
    names: RunNames,
    /// The interpreter's hook is the standard one (every 100,000 instructions): not yet
    /// installed, or switched to every line by a kill, means a run installs it again.
    hook_ready: bool,
    /// Runs since the collector last took a step (see [`GC_STEP_EVERY`]).
    runs_since_gc: u32,
    /// Cached EVAL scripts by SHA1 (looked up twice per EVALSHA: a fast hash).
    scripts: HashMap<String, Script, foldhash::fast::RandomState>,
    /// Loaded libraries, by name (compared with case, as Redis's library table does;
    /// their functions are found without case).
    pub libraries: BTreeMap<String, Library>,
    /// `cjson`'s settings, which SCRIPT FLUSH sets back.
    json_settings: cjson::SettingsHandle,
}

/// What the scripting engine holds, in bytes, as INFO memory reports it. One interpreter
/// runs both EVAL scripts and functions here (Redis has one for each), so `vm` is all of
/// it: INFO shows it as the EVAL interpreter's, and the functions' as 0.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptMemory {
    /// The interpreter's heap (compiled scripts and functions, their data).
    pub vm: usize,
    /// The EVAL cache's table: its slots and the SHA1s (Redis's `lua_caches`).
    pub scripts: usize,
    /// The libraries: their code, names and function entries (Redis's
    /// `functions_caches`).
    pub functions: usize,
}

/// A script's run, from [`RunFlags::start`] to its drop.
#[must_use]
struct Running<'a>(&'a RunFlags);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// What other connections may know about the script running now (lock-free: they read
/// it without waiting for the interpreter or the shards).
#[derive(Debug, Default)]
pub struct RunFlags {
    running: AtomicBool,
    busy: AtomicBool,
    /// The running script declared allow-oom.
    allow_oom: AtomicBool,
    /// Too few good replicas when the script started (`min-replicas-to-write`).
    replicas_short: AtomicBool,
    /// Cluster mode: the running script may reach keys of several slots (no shebang,
    /// or `allow-cross-slot-keys`).
    cross_slot: AtomicBool,
    kill: AtomicBool,
    wrote: AtomicBool,
    eval: AtomicBool,
    threshold_ms: AtomicU64,
    started: Mutex<Option<Instant>>,
    /// The running script's name and the command that started it (FUNCTION STATS).
    current: Mutex<Option<(String, Vec<Bytes>)>>,
    /// Libraries, functions and cached EVAL scripts, published by [`EngineGuard`] so
    /// FUNCTION STATS and INFO answer while a script runs (the interpreter is busy then).
    libraries: AtomicUsize,
    functions: AtomicUsize,
    scripts: AtomicUsize,
    /// Bytes: the interpreter's heap, the EVAL cache's table and the libraries,
    /// measured when INFO asks (see [`Scripting::memory`]), kept for when the engine is
    /// busy.
    vm_bytes: AtomicUsize,
    scripts_bytes: AtomicUsize,
    functions_bytes: AtomicUsize,
    /// While FUNCTION LOAD runs library code: when it must have finished (Redis allows
    /// 500 ms).
    load_deadline: Mutex<Option<Instant>>,
    /// Wakes the clients waiting for a script to end (or to turn busy).
    ended: tokio::sync::Notify,
    /// When (milliseconds into the run) the hook hands the script's worker on to another
    /// thread (`u64::MAX`: never, the script is not on a runtime worker).
    release_at_ms: AtomicU64,
    /// A kill switched the interpreter's hook to every line: the next run reinstalls the
    /// standard one.
    hook_changed: AtomicBool,
    /// WATCHes other clients sent while the script was BUSY, for its thread to register.
    pub watches: busy_watches::BusyWatches,
}

impl RunFlags {
    /// Records whether the script about to run declared allow-oom.
    pub fn set_allows_oom(&self, on: bool) {
        self.allow_oom.store(on, Ordering::Release);
    }

    /// Records whether the script about to run may reach keys of several slots.
    pub fn set_cross_slot(&self, on: bool) {
        self.cross_slot.store(on, Ordering::Release);
    }

    /// Whether the running script may reach keys of several slots (cluster mode).
    pub fn cross_slot(&self) -> bool {
        self.cross_slot.load(Ordering::Acquire)
    }

    /// Records whether too few good replicas were there when the script started.
    pub fn set_replicas_short(&self, short: bool) {
        self.replicas_short.store(short, Ordering::Release);
    }

    /// Whether the running script's writes are refused NOREPLICAS. Decided when it
    /// started, as Redis counts good replicas in its cron, which does not run while a
    /// script does: a replica dropping during the script does not fail its next write.
    pub fn replicas_short(&self) -> bool {
        self.replicas_short.load(Ordering::Acquire)
    }

    /// Whether the running script may write above `maxmemory`: it declared allow-oom, or
    /// it already wrote (refusing now would break its atomicity, as Redis reasons).
    pub fn allows_oom(&self) -> bool {
        self.allow_oom.load(Ordering::Acquire) || self.wrote.load(Ordering::Acquire)
    }

    /// A script is running and has run past `busy-reply-threshold`: other clients get
    /// BUSY.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    /// A script is running but not yet busy: other clients wait for it (asynchronously,
    /// in their connection loop) instead of blocking a worker thread on its locks.
    pub fn must_wait(&self) -> bool {
        self.running.load(Ordering::Acquire) && !self.busy()
    }

    /// A script is running, BUSY or not.
    pub fn running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// Waits while [`Self::must_wait`], woken when the script ends or turns busy.
    pub async fn wait_end(&self) {
        self.wait_while(Self::must_wait).await;
    }

    async fn wait_while(&self, condition: impl Fn(&Self) -> bool) {
        loop {
            let notified = self.ended.notified();
            tokio::pin!(notified);
            // Registered before the check, so an end between the two is not missed.
            notified.as_mut().enable();
            if !condition(self) {
                return;
            }
            notified.await;
        }
    }

    /// The running script is an EVAL (not a function).
    pub fn is_eval(&self) -> bool {
        self.eval.load(Ordering::Acquire)
    }

    /// The BUSY error for the running script's kind.
    pub fn busy_error(&self) -> &'static str {
        if self.is_eval() {
            BUSY_EVAL
        } else {
            BUSY_FUNCTION
        }
    }

    /// SCRIPT KILL / FUNCTION KILL (`eval` says which): Redis's checks and replies.
    pub fn kill(&self, eval: bool) -> Result<(), &'static str> {
        if !self.running.load(Ordering::Acquire) {
            return Err("NOTBUSY No scripts in execution right now.");
        }
        if self.wrote.load(Ordering::Acquire) {
            return Err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");
        }
        if eval && !self.is_eval() {
            return Err(BUSY_FUNCTION);
        }
        if !eval && self.is_eval() {
            return Err(BUSY_EVAL);
        }
        self.kill.store(true, Ordering::Release);
        Ok(())
    }

    /// After [`Self::kill`]: waits, up to `limit`, until the killed script has ended (a
    /// finished or newly started script clears the request). Redis stops the script
    /// before it reads another client's command, so a command sent after the kill's
    /// reply never gets BUSY; here the script stops at its next hook check, on its own
    /// thread, which is why the reply waits for it.
    pub fn wait_killed(&self, limit: std::time::Duration) {
        let deadline = Instant::now() + limit;
        while self.kill.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }

    /// The running script: its name, the command that started it, and how long it has
    /// run.
    pub fn current(&self) -> Option<(String, Vec<Bytes>, u64)> {
        let started = (*self.started.lock())?;
        let (name, command) = self.current.lock().clone()?;
        Some((name, command, started.elapsed().as_millis() as u64))
    }

    /// EVAL scripts in the cache.
    pub fn cached_scripts(&self) -> usize {
        self.scripts.load(Ordering::Relaxed)
    }

    /// Libraries and functions loaded.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.libraries.load(Ordering::Relaxed),
            self.functions.load(Ordering::Relaxed),
        )
    }

    fn publish_counts(&self, engine: &Engine) {
        let functions = engine.libraries.values().map(|l| l.functions.len()).sum();
        self.scripts.store(engine.scripts.len(), Ordering::Relaxed);
        self.libraries
            .store(engine.libraries.len(), Ordering::Relaxed);
        self.functions.store(functions, Ordering::Relaxed);
    }

    /// Marks a script as running until the returned guard drops: however the run ends
    /// (a panic included), other clients' commands stop waiting for it.
    fn start(&self, eval: bool, threshold_ms: u64) -> Running<'_> {
        *self.started.lock() = Some(Instant::now());
        self.threshold_ms.store(threshold_ms, Ordering::Release);
        self.kill.store(false, Ordering::Release);
        self.wrote.store(false, Ordering::Release);
        self.eval.store(eval, Ordering::Release);
        let release_at = if watchdog::on_runtime_worker() {
            watchdog::RELEASE_AFTER_MS
        } else {
            u64::MAX
        };
        self.release_at_ms.store(release_at, Ordering::Relaxed);
        self.watches.open();
        self.running.store(true, Ordering::Release);
        Running(self)
    }

    fn finish(&self) {
        self.running.store(false, Ordering::Release);
        self.busy.store(false, Ordering::Release);
        self.kill.store(false, Ordering::Release);
        *self.started.lock() = None;
        *self.current.lock() = None;
        self.ended.notify_waiters();
    }

    /// Installs the interpreter hook for a run: every 100,000 instructions, like Redis.
    fn watch(self: &Arc<Self>, lua: &Lua) -> mlua::Result<()> {
        let flags = self.clone();
        lua.set_hook(
            mlua::HookTriggers::new().every_nth_instruction(100_000),
            move |lua, _| flags.tick(lua),
        )
    }

    /// Called by the interpreter's hook.
    fn tick(self: &Arc<Self>, lua: &Lua) -> mlua::Result<mlua::VmState> {
        if let Some(deadline) = *self.load_deadline.lock() {
            if Instant::now() >= deadline {
                return Err(lib_error("FUNCTION LOAD timeout"));
            }
        }
        if !self.running.load(Ordering::Acquire) {
            return Ok(mlua::VmState::Continue);
        }
        let threshold = self.threshold_ms.load(Ordering::Acquire);
        let elapsed = self
            .started
            .lock()
            .map_or(0, |t| t.elapsed().as_millis() as u64);
        if threshold > 0 && elapsed >= threshold && !self.busy() {
            tracing::warn!("Slow script detected: still in execution after {elapsed} milliseconds. You can try killing the script using the SCRIPT KILL command.");
            self.busy.store(true, Ordering::Release);
            self.ended.notify_waiters();
        }
        if elapsed >= self.release_at_ms.load(Ordering::Relaxed) {
            self.release_at_ms
                .store(elapsed + watchdog::RETRY_MS, Ordering::Relaxed);
            watchdog::release_worker();
        }
        if self.kill.load(Ordering::Acquire) {
            // From now on fail at every line, so a script that catches the error with
            // pcall cannot carry on (as Redis switches its hook to every line).
            let flags = self.clone();
            self.hook_changed.store(true, Ordering::Relaxed);
            lua.set_hook(mlua::HookTriggers::EVERY_LINE, move |lua, _| {
                flags.tick(lua)
            })?;
            return Err(lib_error("Script killed by user with SCRIPT KILL..."));
        }
        Ok(mlua::VmState::Continue)
    }
}

/// The BUSY reply while an EVAL script runs long.
pub const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// The BUSY reply while a function runs long.
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// Scripting state of the server: the interpreter, created on first use, and what the
/// running script is doing.
#[derive(Default)]
pub struct Scripting {
    engine: Mutex<Option<Engine>>,
    /// The running script, as other connections see it.
    pub flags: Arc<RunFlags>,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: let scripts run commands flagged `noscript`.
    pub allow_denied: AtomicBool,
    /// The script turn: scripts run one at a time, in the order clients asked.
    pub turn: Turn,
}

impl Scripting {
    /// What the scripting engine holds, in bytes (see [`ScriptMemory`]). Measured here,
    /// when asked, not after every run (the cache's and the libraries' figures walk
    /// them); while a script holds the engine, the last ones measured.
    pub fn memory(&self) -> ScriptMemory {
        let flags = &self.flags;
        if let Some(guard) = self.engine.try_lock() {
            if let Some(engine) = guard.as_ref() {
                flags
                    .vm_bytes
                    .store(engine.lua.used_memory(), Ordering::Relaxed);
                flags
                    .scripts_bytes
                    .store(engine.scripts_memory(), Ordering::Relaxed);
                flags
                    .functions_bytes
                    .store(engine.functions_memory(), Ordering::Relaxed);
            }
        }
        ScriptMemory {
            vm: flags.vm_bytes.load(Ordering::Relaxed),
            scripts: flags.scripts_bytes.load(Ordering::Relaxed),
            functions: flags.functions_bytes.load(Ordering::Relaxed),
        }
    }
}

impl std::fmt::Debug for Scripting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scripting")
    }
}

/// An error raised the way Redis raises its own: an `{err=...}` table with `reply`
/// (Redis's error text, code first), placed at the script's line, without Lua's position
/// prefix. The prelude's error handler reads the text between the markers.
pub(super) fn redis_error(reply: &str) -> mlua::Error {
    mlua::Error::runtime(format!("\u{1}{reply}\u{1}"))
}

/// [`redis_error`] with the `ERR` code, as Redis's library functions raise theirs.
pub(super) fn lib_error(text: &str) -> mlua::Error {
    redis_error(&format!("ERR {text}"))
}

/// A setting a running script makes with `redis.<name>(n)`: Redis's checks and errors.
struct RunSetting {
    name: &'static str,
    /// The error for another count of arguments.
    count_error: &'static str,
    valid: std::ops::RangeInclusive<i64>,
    /// The error for a number outside `valid`.
    invalid: &'static str,
}

/// Installs `redis.<name>`, which stores its one argument in the returned cell (at
/// `initial` until a script sets it) for the run, read as Redis reads it, and refuses it
/// outside a run, with another count of arguments, or out of range.
fn install_run_setting(
    lua: &Lua,
    redis: &Table,
    setting: RunSetting,
    initial: u8,
) -> mlua::Result<Arc<AtomicU8>> {
    let cell = Arc::new(AtomicU8::new(initial));
    let name = setting.name;
    let stored = cell.clone();
    let function = lua.create_function(move |lua, argv: Variadic<Value>| {
        if !active::is_published() {
            return Err(lib_error(&format!(
                "redis.{} can only be called inside a script invocation",
                setting.name
            )));
        }
        let [arg] = &argv[..] else {
            return Err(lib_error(setting.count_error));
        };
        let n = lua_int(lua, arg)?;
        if !setting.valid.contains(&n) {
            return Err(lib_error(setting.invalid));
        }
        stored.store(n as u8, Ordering::Relaxed);
        Ok(())
    })?;
    redis.raw_set(name, function)?;
    Ok(cell)
}

/// `lua_tonumber` cast to a C integer, as Redis reads a numeric argument: what is not a
/// number (nor a string of one) reads as 0.
fn lua_int(lua: &Lua, v: &Value) -> mlua::Result<i64> {
    Ok(lua.coerce_number(v.clone())?.map_or(0, args::c_cast_i64))
}

/// The lower-case hex SHA1 of `data` (script ids, `redis.sha1hex`).
pub fn sha1_hex(data: &[u8]) -> String {
    let digest = Sha1::digest(data);
    let mut hex = String::with_capacity(40);
    for b in digest {
        hex.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    hex
}

/// The interpreter, locked; when released it publishes what it holds to [`RunFlags`]
/// (so no command has to remember to).
pub struct EngineGuard<'a> {
    engine: MappedMutexGuard<'a, Engine>,
    flags: &'a RunFlags,
}

impl std::ops::Deref for EngineGuard<'_> {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl std::ops::DerefMut for EngineGuard<'_> {
    fn deref_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }
}

impl Drop for EngineGuard<'_> {
    fn drop(&mut self) {
        self.flags.publish_counts(&self.engine);
    }
}

impl Scripting {
    /// The interpreter, created on first use.
    pub fn engine(&self) -> Result<EngineGuard<'_>, String> {
        let mut guard = self.engine.lock();
        if guard.is_none() {
            let engine = Engine::new().map_err(|e| format!("ERR Lua engine failed: {e}"))?;
            *guard = Some(engine);
        }
        let engine = MutexGuard::try_map(guard, Option::as_mut)
            .map_err(|_| "ERR Lua engine unavailable".to_string())?;
        Ok(EngineGuard {
            engine,
            flags: &self.flags,
        })
    }

    /// Whether an EVAL/EVALSHA/FCALL declares it writes nothing (a `no-writes` shebang
    /// or function flag): CLIENT PAUSE WRITE lets those run, as Redis computes their
    /// flags per call. When the interpreter is busy the answer is "may write".
    pub fn declared_no_writes(&self, args: &[Bytes]) -> bool {
        self.declared_flags(args).is_some_and(|f| f.no_writes)
    }

    /// The flags an EVAL/EVALSHA/FCALL (or their `_RO` forms) declares: its shebang's
    /// or its function's. `None` for a script without a shebang (it is checked command
    /// by command), an unknown one, or while the interpreter is busy. Redis derives the
    /// call's write and stale flags from them.
    pub fn declared_flags(&self, args: &[Bytes]) -> Option<ScriptFlags> {
        let (name, target) = (args.first()?, args.get(1)?);
        let is = |word: &[u8]| name.eq_ignore_ascii_case(word);
        if is(b"eval") || is(b"eval_ro") {
            return eval_shebang(target)
                .ok()
                .map(|(flags, _)| flags)
                .filter(|f| !f.eval_compat);
        }
        let guard = self.engine.try_lock()?;
        let engine = guard.as_ref()?;
        let target = String::from_utf8_lossy(target).to_ascii_lowercase();
        if is(b"evalsha") || is(b"evalsha_ro") {
            engine.script_flags(&target).filter(|f| !f.eval_compat)
        } else if is(b"fcall") || is(b"fcall_ro") {
            engine.function(&target).map(|f| f.flags)
        } else {
            None
        }
    }
}

/// The prelude functions every run calls, looked up once.
struct RunNames {
    /// `state.run` (an EVAL script under the error handler) and `state.run_function`.
    run: Function,
    run_function: Function,
}

impl RunNames {
    fn new(state: &Table) -> mlua::Result<RunNames> {
        Ok(RunNames {
            run: state.get("run")?,
            run_function: state.get("run_function")?,
        })
    }
}

/// The protocol `redis.setresp` chose (2 or 3).
fn protocol_of(resp: &AtomicU8) -> Protocol {
    if resp.load(Ordering::Relaxed) == 3 {
        Protocol::Resp3
    } else {
        Protocol::Resp2
    }
}

/// Runs `call` with `redis.breakpoint` and `redis.debug` talking to the debugging
/// session, and puts the stand-ins back after.
fn with_debug_functions(
    lua: &Lua,
    redis: &Table,
    session: &Arc<debugger::Session>,
    call: impl FnOnce() -> mlua::Result<(bool, Value)>,
) -> mlua::Result<(bool, Value)> {
    let saved = (
        redis.raw_get::<Value>("breakpoint")?,
        redis.raw_get::<Value>("debug")?,
    );
    let outcome = lua.scope(|scope| {
        let s = Arc::clone(session);
        redis.raw_set(
            "breakpoint",
            scope.create_function(move |_, ()| {
                s.breakpoint();
                Ok(true)
            })?,
        )?;
        let s = Arc::clone(session);
        redis.raw_set(
            "debug",
            scope.create_function(move |_, values: Variadic<Value>| {
                s.debug(&values);
                Ok(())
            })?,
        )?;
        Ok(call())
    });
    redis.raw_set("breakpoint", saved.0)?;
    redis.raw_set("debug", saved.1)?;
    outcome?
}

/// How a run was asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// EVAL/EVALSHA: KEYS and ARGV are globals.
    Eval,
    /// FCALL: keys and args are the callback's arguments.
    Function,
}

impl Engine {
    fn new() -> mlua::Result<Engine> {
        let lua = new_lua();
        let g = lua.globals();
        let redis = lua.create_table()?;
        redis.set(
            "REDIS_VERSION",
            crate::cmd::connection::REDIS_VERSION.to_string(),
        )?;
        redis.set(
            "REDIS_VERSION_NUM",
            version_num(crate::cmd::connection::REDIS_VERSION),
        )?;
        redis.set(
            "sha1hex",
            lua.create_function(|lua, args: Variadic<Value>| {
                if args.len() != 1 {
                    return Err(lib_error("wrong number of arguments"));
                }
                // lua_tolstring: a string, a number as Lua writes it, else nothing.
                let bytes = lua
                    .coerce_string(args[0].clone())?
                    .map_or_else(Vec::new, |s| s.as_bytes().to_vec());
                lua.create_string(sha1_hex(&bytes))
            })?,
        )?;
        redis.set(
            "log",
            lua.create_function(|lua, args: Variadic<Value>| {
                if args.len() < 2 {
                    return Err(lib_error("redis.log() requires two arguments or more."));
                }
                let level = match &args[0] {
                    Value::Integer(n) => *n,
                    Value::Number(n) => *n as i64,
                    _ => return Err(lib_error("First argument must be a number (log level).")),
                };
                if !(0..=3).contains(&level) {
                    return Err(lib_error("Invalid debug level."));
                }
                let text: Vec<String> = args[1..]
                    .iter()
                    .map(|v| lua_text(lua, v).unwrap_or_default())
                    .collect();
                let line = text.join(" ");
                match level {
                    0 => tracing::debug!("{line}"),
                    1 => tracing::info!("{line}"),
                    2 => tracing::warn!("{line}"),
                    _ => tracing::error!("{line}"),
                }
                Ok(())
            })?,
        )?;
        g.set("redis", redis.clone())?;
        let json_settings = libs::install(&lua)?;
        random::install(&lua, &g.get::<Table>("math")?)?;
        let state = lua.create_table()?;
        state.set("redis", redis.clone())?;
        let globals = lua.create_table()?;
        state.set("globals", globals.clone())?;
        readonly::install(&lua, &state)?;
        loaders::install(&lua, &state)?;
        lua.load(include_str!("prelude.lua"))
            .set_name("=redline")
            .call::<()>(state.clone())?;
        let env: Table = state.get("env")?;
        // redis.setresp and redis.set_repl: one function each for the engine's life,
        // recording the run's choice. Written in Rust, as Redis writes them in C, so an
        // error points at the script's line even from a tail call.
        let script_resp = install_run_setting(
            &lua,
            &redis,
            RunSetting {
                name: "setresp",
                count_error: "redis.setresp() requires one argument.",
                valid: 2..=3,
                invalid: "RESP version must be 2 or 3.",
            },
            2,
        )?;
        let script_repl = install_run_setting(
            &lua,
            &redis,
            RunSetting {
                name: "set_repl",
                // Redis's own wording, though it takes one argument.
                count_error: "redis.set_repl() requires two arguments.",
                valid: 0..=3,
                invalid:
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
            },
            3,
        )?;
        let names = RunNames::new(&state)?;
        call::install(&lua, &redis)?;
        sequences::install(&lua, &state)?;
        // What setting up left behind goes now, not in the first scripts' runs.
        lua.gc_collect()?;
        Ok(Engine {
            lua,
            state,
            globals,
            env,
            redis,
            script_resp,
            script_repl,
            names,
            hook_ready: false,
            runs_since_gc: 0,
            scripts: HashMap::default(),
            libraries: BTreeMap::new(),
            json_settings,
        })
    }

    /// Compiles `body` as a script (cached by its SHA1, also on failure nothing is kept).
    /// The error is bytes: Lua's message quotes the source near the fault as it is.
    pub fn load_script(&mut self, body: &[u8]) -> Result<String, Vec<u8>> {
        let sha = sha1_hex(body);
        if self.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, code) = eval_shebang(body).map_err(String::into_bytes)?;
        let code = as_text(code);
        let func = self
            .lua
            .load(&code[..])
            .set_name("@user_script")
            .set_mode(mlua::ChunkMode::Text)
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| {
                let mut text = b"ERR Error compiling script (new function): ".to_vec();
                text.extend(
                    self.syntax_error(&code, "@user_script")
                        .unwrap_or_else(|| lua_message(&e).into_bytes()),
                );
                text
            })?;
        let func = self
            .lua
            .create_registry_value(func)
            .map_err(|e| format!("ERR {}", lua_message(&e)).into_bytes())?;
        self.scripts.insert(sha.clone(), Script { func, flags });
        Ok(sha)
    }

    /// Lua's own message for code that does not compile, as bytes (mlua's error holds
    /// it as lossy UTF-8).
    fn syntax_error(&self, code: &[u8], name: &str) -> Option<Vec<u8>> {
        let code = self.lua.create_string(code).ok()?;
        match self
            .state
            .call_function::<Value>("syntax_error", (code, name))
        {
            Ok(Value::String(message)) => Some(message.as_bytes().to_vec()),
            _ => None,
        }
    }

    /// Bytes of the EVAL cache's table: a slot per entry of its room (key, value and a
    /// control byte) and each SHA1's text.
    fn scripts_memory(&self) -> usize {
        let slot = std::mem::size_of::<(String, Script)>() + 1;
        self.scripts.capacity() * slot + self.scripts.keys().map(String::capacity).sum::<usize>()
    }

    /// Bytes of the libraries: each one's entry, name and code, and its functions'
    /// entries, names and descriptions.
    fn functions_memory(&self) -> usize {
        self.libraries
            .iter()
            .map(|(key, lib)| {
                let functions: usize = lib
                    .functions
                    .iter()
                    .map(|(key, f)| {
                        std::mem::size_of::<(String, FunctionDef)>()
                            + key.len()
                            + f.name.len()
                            + f.description.as_ref().map_or(0, String::len)
                    })
                    .sum();
                std::mem::size_of::<(String, Library)>()
                    + key.len()
                    + lib.name.len()
                    + lib.code.len()
                    + functions
            })
            .sum()
    }

    /// Whether a script with this SHA1 is cached.
    pub fn has_script(&self, sha: &str) -> bool {
        self.scripts.contains_key(&sha.to_ascii_lowercase())
    }

    /// SCRIPT FLUSH.
    pub fn flush_scripts(&mut self) {
        // A new table, as Redis's SCRIPT FLUSH makes a new dict: one that held many
        // scripts would keep its room.
        self.scripts = HashMap::default();
        // Redis's flush starts a new interpreter: `cjson` has its defaults again.
        self.json_settings.reset();
        self.collect();
    }

    /// A full collection, with the registry slots of dropped scripts and functions
    /// given back. After SCRIPT FLUSH and the FUNCTION commands that load or drop
    /// libraries: a library's load leaves its compilation and the library it replaced
    /// behind (10,000 FUNCTION LOAD REPLACE and FCALL left 152 KB where 62 KB were
    /// live), and these commands are rare enough to pay for a whole cycle.
    pub fn collect(&mut self) {
        self.lua.expire_registry_values();
        let _ = self.lua.gc_collect();
    }

    /// The flags of a cached script.
    pub fn script_flags(&self, sha: &str) -> Option<ScriptFlags> {
        self.scripts.get(sha).map(|s| s.flags)
    }

    /// The function `name` of any library, with its flags.
    pub fn function(&self, name: &str) -> Option<&FunctionDef> {
        let key = name.to_ascii_lowercase();
        self.libraries
            .values()
            .find_map(|lib| lib.functions.get(&key))
    }

    /// Loads each library of an image (its code, in order); with `replace`, one
    /// replaces a library of the same name, else the load fails on it, as Redis's does.
    pub fn load_libraries(
        &mut self,
        codes: &[Vec<u8>],
        replace: bool,
        flags: &Arc<RunFlags>,
    ) -> Result<(), String> {
        for code in codes {
            self.load_library(code, replace, flags)
                .map_err(|e| String::from_utf8_lossy(&e).into_owned())?;
        }
        Ok(())
    }

    /// FUNCTION LOAD: evaluates the library's code, which registers its functions.
    /// The error is bytes: a compile error quotes the source near the fault as it is.
    pub fn load_library(
        &mut self,
        code: &[u8],
        replace: bool,
        flags: &Arc<RunFlags>,
    ) -> Result<String, Vec<u8>> {
        let (name, body) = library_shebang(code)?;
        // Library names compare with case (functions' names do not).
        let key = name.clone();
        if self.libraries.contains_key(&key) && !replace {
            return Err(format!("ERR Library '{name}' already exists").into_bytes());
        }
        let env: Table = self
            .state
            .call_function("library_env", ())
            .map_err(|e| format!("ERR {}", lua_message(&e)).into_bytes())?;
        let chunk = self
            .lua
            .load(&body[..])
            .set_name("@user_function")
            .set_mode(mlua::ChunkMode::Text)
            .set_environment(env.clone())
            .into_function()
            .map_err(|e| {
                let mut text = b"ERR Error compiling function: ".to_vec();
                text.extend(
                    self.syntax_error(&body, "@user_function")
                        .unwrap_or_else(|| lua_message(&e).into_bytes()),
                );
                text
            })?;
        let registered: RefCell<Vec<FunctionDef>> = RefCell::new(Vec::new());
        let outcome = self.lua.scope(|scope| {
            let register = scope.create_function(|lua, args: Variadic<Value>| {
                let def = register_args(lua, &args).map_err(|e| lib_error(&e))?;
                let mut list = registered.borrow_mut();
                if list.iter().any(|f| f.name.eq_ignore_ascii_case(&def.name)) {
                    return Err(lib_error("Function already exists in the library"));
                }
                list.push(def);
                Ok(())
            })?;
            self.state.set("register", register)?;
            self.state.set("loading", true)?;
            *flags.load_deadline.lock() = Some(Instant::now() + LOAD_TIMEOUT);
            flags.watch(&self.lua)?;
            self.hook_ready = true;
            let result = chunk.call::<Value>(());
            *flags.load_deadline.lock() = None;
            self.state.set("loading", false)?;
            self.state.set("register", Value::Nil)?;
            Ok(result)
        });
        match outcome {
            Ok(Ok(_)) => {}
            Ok(Err(e)) | Err(e) => {
                return Err(
                    format!("ERR Error registering functions: {}", load_error_text(&e))
                        .into_bytes(),
                )
            }
        }
        self.state
            .call_function::<()>("library_loaded", env)
            .map_err(|e| format!("ERR {}", lua_message(&e)).into_bytes())?;
        let functions = registered.into_inner();
        if functions.is_empty() {
            return Err(b"ERR No functions registered".to_vec());
        }
        for f in &functions {
            let fkey = f.name.to_ascii_lowercase();
            if self
                .libraries
                .iter()
                .any(|(lib, l)| *lib != key && l.functions.contains_key(&fkey))
            {
                return Err(format!("ERR Function {} already exists", f.name).into_bytes());
            }
        }
        self.libraries.insert(
            key,
            Library {
                name: name.clone(),
                code: Bytes::copy_from_slice(code),
                functions: functions
                    .into_iter()
                    .map(|f| (f.name.to_ascii_lowercase(), f))
                    .collect(),
            },
        );
        Ok(name)
    }
}

/// Code to compile as source text, never as a precompiled chunk: Redis's Lua has no
/// loader for those (Lua 5.1 does not verify bytecode, so loading it could run
/// anything), and reads the escape byte that starts one as a stray symbol. A space
/// before it makes this Lua say the same; lines are unchanged.
pub(super) fn as_text(mut code: Vec<u8>) -> Vec<u8> {
    if code.first() == Some(&0x1b) {
        code.insert(0, b' ');
    }
    code
}

/// A Lua state with the libraries Redis opens. `debug` makes mlua call this unsafe: Lua
/// code holding `debug` could corrupt the interpreter. The prelude takes it into a local
/// of the error handler (which only calls `debug.getinfo`, as Redis's does) and removes
/// it from the globals before any script runs, so scripts never reach it.
#[allow(unsafe_code)]
fn new_lua() -> Lua {
    // SAFETY: see above; no user code runs with `debug` reachable.
    unsafe {
        Lua::unsafe_new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
            mlua::LuaOptions::default(),
        )
    }
}

/// How long library code may run in FUNCTION LOAD (Redis's `LOAD_TIMEOUT_MS`).
const LOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

/// `7.0.15` → `0x00070f`.
fn version_num(version: &str) -> i64 {
    version
        .split('.')
        .take(3)
        .fold(0, |acc, part| acc * 256 + part.parse::<i64>().unwrap_or(0))
}

/// The message of a Lua error without mlua's decorations.
fn lua_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_message(cause),
        other => other.to_string(),
    }
    .lines()
    .next()
    .unwrap_or_default()
    .to_string()
}

/// What FUNCTION LOAD says of an error raised while the library ran: Redis's error
/// text for the errors Redis raises as `{err=...}` tables, `ERR` and Lua's message
/// (with its position) for the others.
fn load_error_text(e: &mlua::Error) -> String {
    let text = lua_message(e);
    match text.split('\u{1}').nth(1) {
        Some(marked) => marked.to_string(),
        None => format!("ERR {text}"),
    }
}

/// The name a library's shebang declares.
pub fn library_name(code: &[u8]) -> Result<String, Vec<u8>> {
    library_shebang(code).map(|(name, _)| name)
}

/// Reads `#!lua name=<lib>` (split as Redis splits it, quotes allowed) and returns the
/// name and the code to evaluate. An error quotes the shebang's bytes as they are.
fn library_shebang(code: &[u8]) -> Result<(String, Vec<u8>), Vec<u8>> {
    const INVALID: &[u8] = b"ERR Invalid library metadata";
    let quoting = |head: &[u8], quoted: &[u8], tail: &[u8]| [head, quoted, tail].concat();
    if !code.starts_with(b"#!") {
        return Err(b"ERR Missing library metadata".to_vec());
    }
    let end = code
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| INVALID.to_vec())?;
    let parts = crate::config::split_args(&code[..end])
        .filter(|p| !p.is_empty())
        .ok_or_else(|| INVALID.to_vec())?;
    let engine = parts[0].strip_prefix(b"#!").unwrap_or(&parts[0]);
    if !engine.eq_ignore_ascii_case(b"lua") {
        return Err(quoting(b"ERR Engine '", engine, b"' not found"));
    }
    let mut name: Option<String> = None;
    for part in &parts[1..] {
        match part.get(..5) {
            Some(prefix) if prefix.eq_ignore_ascii_case(b"name=") => {
                if name.is_some() {
                    return Err(
                        b"ERR Invalid metadata value, name argument was given multiple times"
                            .to_vec(),
                    );
                }
                name = Some(String::from_utf8_lossy(&part[5..]).into_owned());
            }
            _ => return Err(quoting(b"ERR Invalid metadata value given: ", part, b"")),
        }
    }
    let name = name.ok_or_else(|| b"ERR Library name was not given".to_vec())?;
    if !valid_name(&name) {
        return Err(b"ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".to_vec());
    }
    let mut body = code[end..].to_vec();
    body.insert(0, b' ');
    Ok((name, body))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `lua_isstring`/`lua_tostring`: a string, or a number as Lua prints it.
fn lua_text(lua: &Lua, v: &Value) -> Option<String> {
    lua.coerce_string(v.clone())
        .ok()
        .flatten()
        .map(|s| s.to_string_lossy())
}

/// `redis.register_function(name, callback)` or `redis.register_function{...}`, read
/// as Redis reads them: names may be numbers, the named arguments' keys and the flags
/// compare without case, and the first bad argument met (in the table's own order)
/// is the one reported.
fn register_args(lua: &Lua, args: &[Value]) -> Result<FunctionDef, String> {
    let (name, func, flags, description) = match args {
        [Value::Table(t)] => {
            let mut name = None;
            let mut func = None;
            let mut flags = ScriptFlags::default();
            let mut description = None;
            for pair in t.pairs::<Value, Value>() {
                let (key, value) = pair.map_err(|e| lua_message(&e))?;
                let Some(key) = lua_text(lua, &key) else {
                    return Err("named argument key given to redis.register_function is not a string".into());
                };
                match key.to_ascii_lowercase().as_str() {
                    "function_name" => {
                        name = Some(lua_text(lua, &value).ok_or("function_name argument given to redis.register_function must be a string")?);
                    }
                    "description" => {
                        description = Some(lua_text(lua, &value).ok_or("description argument given to redis.register_function must be a string")?);
                    }
                    "callback" => match value {
                        Value::Function(f) => func = Some(f),
                        _ => return Err("callback argument given to redis.register_function must be a function".into()),
                    },
                    "flags" => {
                        let Value::Table(list) = value else {
                            return Err("flags argument to redis.register_function must be a table representing function flags".into());
                        };
                        // From 1 up to the first nil; each a known name, in any case.
                        for i in 1.. {
                            let flag: Value = list.raw_get(i).map_err(|e| lua_message(&e))?;
                            if flag == Value::Nil {
                                break;
                            }
                            match lua_text(lua, &flag) {
                                Some(text) if flags.add(&text.to_ascii_lowercase()) => {}
                                _ => return Err("unknown flag given".into()),
                            }
                        }
                    }
                    _ => return Err("unknown argument given to redis.register_function".into()),
                }
            }
            let name = name.ok_or("redis.register_function must get a function name argument")?;
            let func = func.ok_or("redis.register_function must get a callback argument")?;
            (name, func, flags, description)
        }
        [_] => return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).".into()),
        [first, second] => {
            let name = lua_text(lua, first).ok_or("first argument to redis.register_function must be a string")?;
            let Value::Function(f) = second else {
                return Err("second argument to redis.register_function must be a function".into());
            };
            (name, f.clone(), ScriptFlags::default(), None)
        }
        _ => return Err("wrong number of arguments to redis.register_function".into()),
    };
    if !valid_name(&name) {
        return Err("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    let func = lua
        .create_registry_value(func)
        .map_err(|e| lua_message(&e))?;
    Ok(FunctionDef {
        name,
        func: Arc::new(func),
        flags,
        description,
    })
}

/// Every this many runs the collector takes a step, as Redis's `LUA_GC_CYCLE_PERIOD`:
/// left to its own pace it lets the heap reach twice what is live before it starts a
/// cycle (124 KB after 10,000 small scripts; Redis's suite expects under 100 KB).
const GC_STEP_EVERY: u32 = 50;

/// The step's size. Redis steps 50 KB, a whole cycle of its 31 KB heap. This engine's
/// live heap is 72 KB: 2 KB keeps it at 80 KB after those runs (1 KB let it settle at
/// 99.6 KB once the live heap had grown from 68 KB, at the edge of the suite's bound;
/// 1 KB cost 400 instructions a run, 50 KB 2,500).
const GC_STEP_KB: i32 = 2;

/// What to run: a cached script or a library function.
pub enum Target<'a> {
    /// A cached EVAL script, by SHA1.
    Script(&'a str),
    /// A function, by name.
    Function(&'a str),
}

/// Runs a script or function for `ctx` and writes its reply. The caller holds the
/// shards (`ctx.held`) and the engine.
pub fn run(
    engine: &mut Engine,
    ctx: &mut Ctx<'_>,
    target: Target<'_>,
    keys: &[Bytes],
    args: &[Bytes],
    read_only: bool,
    command: &[Bytes],
) {
    let start = ctx.out.len();
    let counted = run_and_reply(engine, ctx, target, keys, args, read_only, command);
    // The script's error reply counts in the error statistics, unless it is an error a
    // command of the script returned (counted when it happened).
    if !counted && ctx.out.get(start) == Some(&b'-') {
        let line = &ctx.out[start + 1..];
        let end = line.iter().position(|&b| b == b'\r').unwrap_or(line.len());
        let text = line[..end].to_vec();
        ctx.client.cmdstats.error(&text);
    }
}

/// Whether an `{err=...}` table is an error already counted in the error statistics.
fn stats_counted(table: &Table) -> bool {
    matches!(
        table.raw_get::<Value>("ignore_error_stats_update"),
        Ok(Value::Boolean(true))
    )
}

/// Runs the script and writes its reply; `true` when that reply is an error the error
/// statistics already counted.
fn run_and_reply(
    engine: &mut Engine,
    ctx: &mut Ctx<'_>,
    target: Target<'_>,
    keys: &[Bytes],
    args: &[Bytes],
    read_only: bool,
    command: &[Bytes],
) -> bool {
    let (key, mode, name, script_flags) = match target {
        Target::Script(sha) => match engine.scripts.get(sha) {
            Some(s) => (&s.func, Mode::Eval, sha, s.flags),
            None => {
                encode::write_error(ctx.out, b"NOSCRIPT No matching script. Please use EVAL.");
                return false;
            }
        },
        Target::Function(fname) => match engine.function(fname) {
            Some(f) => (&*f.func, Mode::Function, fname, f.flags),
            None => {
                encode::write_error(ctx.out, b"ERR Function not found");
                return false;
            }
        },
    };
    let func: Function = match engine.lua.registry_value(key) {
        Ok(func) => func,
        Err(e) => {
            write_run_error(ctx.out, name, &lua_message(&e));
            return false;
        }
    };
    ctx.shared
        .scripting
        .flags
        .set_cross_slot(script_flags.eval_compat || script_flags.allow_cross_slot);
    let caller_protocol = ctx.client.protocol;
    let caller_db = ctx.client.db;
    engine.script_resp.store(2, Ordering::Relaxed);
    engine.script_repl.store(3, Ordering::Relaxed);
    let flags = ctx.shared.scripting.flags.clone();
    let threshold = u64::try_from(ctx.shared.hot.busy_reply_threshold()).unwrap_or(0);
    *flags.current.lock() = Some((name.to_owned(), command.to_vec()));
    let running = flags.start(mode == Mode::Eval, threshold);
    let frozen = crate::store::FrozenTime::now();
    // A debugging session (SCRIPT DEBUG SYNC): its line hook replaces the standard one
    // for this run.
    let session = match ctx.client.debug.io.take() {
        Some(io) => match debug_session(engine, io, command, threshold) {
            Ok(session) => Some(session),
            Err(e) => {
                drop(running);
                write_run_error(ctx.out, name, &lua_message(&e));
                return false;
            }
        },
        None => None,
    };
    // Installing the hook costs an allocation: only when it is not the standard one.
    if session.is_some() {
        engine.hook_ready = false;
    } else if !engine.hook_ready || flags.hook_changed.swap(false, Ordering::Relaxed) {
        if let Err(e) = flags.watch(&engine.lua) {
            drop(running);
            write_run_error(ctx.out, name, &lua_message(&e));
            return false;
        }
        engine.hook_ready = true;
    }
    let result = {
        let mut run_ctx = active::RunContext {
            shared: ctx.shared,
            held: ctx.held,
            client: &mut *ctx.client,
            read_only,
            session: session.as_deref(),
            resp: &engine.script_resp,
            repl: &engine.script_repl,
            keys,
            args,
        };
        let _active = active::enter(&mut run_ctx);
        let names = &engine.names;
        let call = || match mode {
            Mode::Eval => names.run.call::<(bool, Value)>(&func),
            Mode::Function => names.run_function.call::<(bool, Value)>(&func),
        };
        match &session {
            Some(session) => with_debug_functions(&engine.lua, &engine.redis, session, call),
            None => call(),
        }
    };
    if let Some(session) = &session {
        engine.lua.remove_hook();
        session.end();
    }
    engine.runs_since_gc += 1;
    if engine.runs_since_gc >= GC_STEP_EVERY {
        engine.runs_since_gc = 0;
        let _ = engine.lua.gc_step_kbytes(GC_STEP_KB);
    }
    ctx.client.repl_targets = crate::repl::journal::Targets::ALL;
    // Still holding the shards: the WATCHes sent while it was BUSY register now.
    flags.watches.close(ctx.shared, ctx.held);
    drop(running);
    drop(frozen);
    ctx.client.protocol = caller_protocol;
    ctx.client.db = caller_db;
    match result {
        Ok((true, value)) => {
            let mut target = convert::ReplyTarget {
                out: ctx.out,
                caller: caller_protocol,
                script: protocol_of(&engine.script_resp),
            };
            convert::lua_to_reply(&mut target, &value, 0);
            matches!(&value, Value::Table(t) if stats_counted(t))
        }
        Ok((false, Value::Table(err))) => {
            // Redis reads the message as a C string: a NUL ends it. A number is
            // taken as Lua's tostring writes it. (redis-server 7.0.15 crashes on a
            // table without either; this server names that.)
            let msg = match err
                .raw_get::<Value>("err")
                .map(|v| engine.lua.coerce_string(v))
            {
                Ok(Ok(Some(s))) => convert::c_string(&s.as_bytes()).to_vec(),
                _ => b"ERR unknown error".to_vec(),
            };
            let mut line = msg;
            if let (Ok(Value::String(source)), Ok(line_no)) =
                (err.raw_get::<Value>("source"), err.raw_get::<Value>("line"))
            {
                let line_no = match line_no {
                    Value::Integer(n) => n,
                    Value::Number(n) => n as i64,
                    _ => 0,
                };
                if line_no > 0 {
                    line.extend_from_slice(
                        format!(
                            " script: {name}, on {}:{line_no}.",
                            source.to_string_lossy()
                        )
                        .as_bytes(),
                    );
                }
            }
            encode::write_error(ctx.out, &convert::one_line(&line));
            stats_counted(&err)
        }
        Ok((false, other)) => {
            let text = match other {
                Value::String(s) => s.to_string_lossy(),
                _ => "execution failure".to_string(),
            };
            write_run_error(ctx.out, name, &text);
            false
        }
        Err(e) => {
            write_run_error(ctx.out, name, &lua_message(&e));
            false
        }
    }
}

/// A debugging session for this run of `command` (an EVAL: its body is the source the
/// debugger lists), with its line hook installed.
fn debug_session(
    engine: &Engine,
    io: debugger::DebugIo,
    command: &[Bytes],
    threshold_ms: u64,
) -> mlua::Result<Arc<debugger::Session>> {
    let stack = debugger::StackAccess {
        getlocal: engine.state.get("ldb_getlocal")?,
        frame: engine.state.get("ldb_frame")?,
        env: engine.env.clone(),
        globals: engine.globals.clone(),
        redis: engine.redis.clone(),
    };
    let source = command.get(1).map_or(&[][..], |b| &b[..]);
    let session = Arc::new(debugger::Session::new(io, source, stack, threshold_ms));
    // Weak: the hook stays installed until the next run replaces it, and must not keep
    // the session (and the client's connection) alive.
    let hooked = Arc::downgrade(&session);
    engine.lua.set_hook(
        mlua::HookTriggers::EVERY_LINE.every_nth_instruction(100_000),
        move |lua, debug| {
            let line = debug.current_line().map_or(0, |l| l as i64);
            let in_script = debug
                .source()
                .short_src
                .is_some_and(|s| s.contains("user_script"));
            let count = matches!(debug.event(), mlua::DebugEvent::Count);
            let Some(session) = hooked.upgrade() else {
                return Ok(mlua::VmState::Continue);
            };
            match session.on_hook(lua, line, count, in_script) {
                Ok(()) => Ok(mlua::VmState::Continue),
                Err(e) => Err(redis_error(&e.to_string())),
            }
        },
    )?;
    Ok(session)
}

fn write_run_error(out: &mut BytesMut, name: &str, text: &str) {
    let text: String = text.chars().take(100).collect();
    let line = format!("ERR Error running script {name}, {text}");
    encode::write_error(out, &convert::one_line(line.as_bytes()));
}
