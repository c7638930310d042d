//! The Lua debugger, as Redis 7.0's LDB, in both its modes (`SCRIPT DEBUG YES`, which
//! `redis-cli --ldb` sends, and `SCRIPT DEBUG SYNC`, `redis-cli --ldb-sync-mode`): the
//! next EVAL of the client runs under a line hook that stops where the client asks
//! (step, breakpoints, `redis.breakpoint()`), and in between reads debugger commands
//! from the client's connection and answers them with an array of status lines. The
//! connection is closed after the EVAL's reply, as in Redis.
//!
//! The script runs on a thread of its own for the session ([`DebugIo`] is its side of
//! the connection): the connection's task relays the client's bytes to it and its
//! output to the client ([`Relay`]), so the session works over TCP and TLS alike and
//! never blocks a runtime worker. A synchronous session runs on the dataset and keeps
//! its changes; other clients wait for it (it holds the script turn and the shards), as
//! Redis is blocked then. A forked one runs on a copy ([`super::forked`]) and other
//! clients go on meanwhile.

use std::sync::mpsc;
use std::time::Instant;

use bytes::Bytes;
use mlua::{Function, Lua, Table, Value};
use parking_lot::Mutex;
use redline_resp::Frame;

/// The last log line of a session.
const END_MARK: &str = "<endsession>";
/// Breakpoints kept at most (Redis's `LDB_BREAKPOINTS_MAX`).
const MAX_BREAKPOINTS: usize = 64;
/// Default trimming of logged replies and values (Redis's `LDB_MAX_LEN_DEFAULT`).
const DEFAULT_MAXLEN: usize = 256;
/// Nesting shown of a table value (Redis's `LDB_MAX_VALUES_DEPTH`).
const MAX_DEPTH: usize = 10;
/// Debugger input kept unparsed at most before the script fails.
const MAX_INPUT: usize = 1 << 20;

/// What the script's side sends the connection.
#[derive(Debug)]
pub enum IoEvent {
    /// Bytes for the client.
    Write(Bytes),
    /// The script waits for the client's next bytes.
    NeedInput,
}

/// The script's side of the connection during a session.
#[derive(Debug)]
pub struct DebugIo {
    input: Mutex<mpsc::Receiver<Option<Bytes>>>,
    events: tokio::sync::mpsc::UnboundedSender<IoEvent>,
}

/// The connection's side: what to write, when to read.
#[derive(Debug)]
pub struct Relay {
    /// Bytes read from the client; `None` when it closed the connection.
    pub input: mpsc::Sender<Option<Bytes>>,
    /// The script's requests.
    pub events: tokio::sync::mpsc::UnboundedReceiver<IoEvent>,
}

/// A connected pair of sides.
pub fn channel() -> (DebugIo, Relay) {
    let (input_tx, input_rx) = mpsc::channel();
    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    (
        DebugIo {
            input: Mutex::new(input_rx),
            events: events_tx,
        },
        Relay {
            input: input_tx,
            events: events_rx,
        },
    )
}

impl DebugIo {
    fn write(&self, bytes: Vec<u8>) {
        // A closed connection shows on the next read.
        let _ = self.events.send(IoEvent::Write(bytes.into()));
    }

    /// Sends log lines: an array of status lines (line breaks made spaces).
    fn send_log(&self, lines: impl ExactSizeIterator<Item = String>) {
        let mut out = format!("*{}\r\n", lines.len()).into_bytes();
        for line in lines {
            out.push(b'+');
            out.extend(line.bytes().map(|b| match b {
                b'\r' | b'\n' => b' ',
                b => b,
            }));
            out.extend_from_slice(b"\r\n");
        }
        self.write(out);
    }

    /// Ends a session whose script never started (it failed to compile, or was
    /// refused): the `<endsession>` mark goes ahead of the EVAL's error, as in Redis,
    /// whose session begins before the script is looked at.
    pub fn end_unstarted(&self) {
        self.send_log(std::iter::once(END_MARK.to_string()));
    }

    /// The client's next bytes; `None` once it is gone.
    fn read(&self) -> Option<Bytes> {
        self.events.send(IoEvent::NeedInput).ok()?;
        self.input.lock().recv().ok().flatten()
    }
}

/// What `SCRIPT DEBUG` set: whether a client's next EVAL starts a session, and which.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum DebugMode {
    /// `NO`: EVAL runs as usual.
    #[default]
    Off,
    /// `YES`: the session runs on a copy of the dataset, and its changes are dropped,
    /// while the server goes on serving (Redis forks; see [`super::forked`]).
    Forked,
    /// `SYNC`: the session runs on the dataset itself, keeping its changes, and the
    /// server waits for it.
    Sync,
}

/// A debugging client's setting and, on the session's thread, its connection.
#[derive(Debug, Default)]
pub struct ClientDebug {
    /// What `SCRIPT DEBUG` set.
    pub mode: DebugMode,
    /// The EVAL waiting for its session (the connection starts it).
    pub pending: Option<Vec<Bytes>>,
    /// The connection, while the session's EVAL runs.
    pub io: Option<DebugIo>,
}

/// The Lua functions of the engine's private state the debugger reads the stack with.
pub struct StackAccess {
    /// `state.ldb_getlocal(level, i)`: whether frame `level` exists, and the name and
    /// value of its local `i`.
    pub getlocal: Function,
    /// `state.ldb_frame(level)`: the short source, function name and current line of
    /// frame `level`, or nothing.
    pub frame: Function,
    /// The scripts' environment, where `eval` code runs.
    pub env: Table,
    /// The table behind it, where the run's KEYS and ARGV are.
    pub globals: Table,
    /// The `redis` table (`redis.call` for the `redis` command).
    pub redis: Table,
}

/// How a stop ended: the script goes on, or fails with this error reply.
type Resume = Result<(), String>;

/// One debugging session: the EVAL's source, the breakpoints, and the log to send.
pub struct Session {
    io: DebugIo,
    state: Mutex<State>,
    stack: StackAccess,
}

struct State {
    src: Vec<String>,
    breakpoints: Vec<i64>,
    /// Stop at the next line; also, while set, commands and replies are logged.
    step: bool,
    /// `redis.breakpoint()` was called: stop at the next line.
    lua_breakpoint: bool,
    current_line: i64,
    maxlen: usize,
    maxlen_hint_sent: bool,
    logs: Vec<String>,
    input: Vec<u8>,
    /// The last call's reply was logged (see [`Session::take_reply_logged`]).
    reply_logged: bool,
    /// When the script last stopped (or started): for the infinite-loop stop.
    since: Instant,
    /// `busy-reply-threshold` (5 s when 0): a script running this long stops.
    timeout_ms: u64,
}

impl Session {
    /// A session for the EVAL of `source`, talking over `io`.
    pub fn new(io: DebugIo, source: &[u8], stack: StackAccess, timeout_ms: u64) -> Session {
        let text = String::from_utf8_lossy(source);
        let text = text.trim_end_matches(['\n', '\r']);
        let src = if text.is_empty() {
            Vec::new()
        } else {
            text.split('\n').map(str::to_string).collect()
        };
        Session {
            io,
            state: Mutex::new(State {
                src,
                breakpoints: Vec::new(),
                step: true,
                lua_breakpoint: false,
                current_line: 0,
                maxlen: DEFAULT_MAXLEN,
                maxlen_hint_sent: false,
                logs: Vec::new(),
                input: Vec::new(),
                reply_logged: false,
                since: Instant::now(),
                timeout_ms: if timeout_ms == 0 { 5000 } else { timeout_ms },
            }),
            stack,
        }
    }

    /// Whether commands the script calls are logged now (Redis's `ldbIsEnabled`).
    pub fn tracing(&self) -> bool {
        self.state.lock().step
    }

    /// `<redis> GET key` before a command the script calls, while stepping.
    pub fn log_command(&self, args: &[Bytes]) {
        let mut state = self.state.lock();
        if !state.step {
            return;
        }
        let mut line = String::from("<redis>");
        for (j, arg) in args.iter().enumerate() {
            if j == 10 {
                line.push_str(&format!(" ... ({} more)", args.len() - j - 1));
                break;
            }
            line.push(' ');
            line.push_str(&String::from_utf8_lossy(arg));
        }
        state.logs.push(line);
    }

    /// `<reply> ...` after it, while stepping (an error reply too, as Redis logs it).
    pub fn log_reply(&self, reply: &Frame) {
        let mut state = self.state.lock();
        state.reply_logged = true;
        if !state.step {
            return;
        }
        let mut line = String::from("<reply> ");
        human_reply(&mut line, reply);
        state.log_trimmed(line);
    }

    /// Whether the last call's reply went through [`Session::log_reply`] (it ran).
    pub fn take_reply_logged(&self) -> bool {
        std::mem::take(&mut self.state.lock().reply_logged)
    }

    /// `<error> ...` for a call refused before it ran, while stepping (without the
    /// generic `ERR` code, as Redis words these).
    pub fn log_error(&self, text: &str) {
        let mut state = self.state.lock();
        if state.step {
            let text = text.strip_prefix("ERR ").unwrap_or(text);
            state.logs.push(format!("<error> {text}"));
        }
    }

    /// `redis.breakpoint()`: stop at the next line.
    pub fn breakpoint(&self) {
        self.state.lock().lua_breakpoint = true;
    }

    /// `redis.debug(...)`: `<debug> line N: values`.
    pub fn debug(&self, values: &[Value]) {
        let mut state = self.state.lock();
        let mut line = format!("<debug> line {}: ", state.current_line);
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                line.push_str(", ");
            }
            value_repr(&mut line, v, 0);
        }
        state.logs.push(line);
    }

    /// The end: what is left of the log and the `<endsession>` mark.
    pub fn end(&self) {
        let mut state = self.state.lock();
        state.logs.push(END_MARK.into());
        self.send_logs(&mut state);
    }

    /// The line hook: stops when stepping, at a breakpoint, after `redis.breakpoint()`,
    /// or (on the instruction count event) after the script ran too long.
    pub fn on_hook(&self, lua: &Lua, line: i64, count_event: bool, in_script: bool) -> Resume {
        // Lines outside the script (the sandbox's own Lua) are not the script's place.
        if !in_script {
            return Ok(());
        }
        let reason = {
            let mut state = self.state.lock();
            state.current_line = line;
            let at_breakpoint = state.breakpoints.contains(&line) || state.lua_breakpoint;
            let mut timeout = false;
            if count_event && !state.step && !at_breakpoint {
                if state.since.elapsed().as_millis() < u128::from(state.timeout_ms) {
                    return Ok(());
                }
                timeout = true;
                state.step = true;
            }
            if !state.step && !at_breakpoint {
                return Ok(());
            }
            let reason = if at_breakpoint {
                if state.lua_breakpoint {
                    "redis.breakpoint() called"
                } else {
                    "break point"
                }
            } else if timeout {
                "timeout reached, infinite loop?"
            } else {
                "step over"
            };
            state.step = false;
            state.lua_breakpoint = false;
            state
                .logs
                .push(format!("* Stopped at {line}, stop reason = {reason}"));
            state.log_source_line(line);
            self.send_logs(&mut state);
            timeout
        };
        let connected = self.repl(lua)?;
        if !connected && reason {
            return Err("ERR timeout during Lua debugging with client closing connection".into());
        }
        self.state.lock().since = Instant::now();
        Ok(())
    }

    /// Reads and runs debugger commands until one resumes the script. `Ok(false)` when
    /// the client went away (the script then runs to its end without stopping).
    fn repl(&self, lua: &Lua) -> Result<bool, String> {
        loop {
            let argv = match self.next_command()? {
                Some(argv) => argv,
                None => {
                    let mut state = self.state.lock();
                    state.step = false;
                    state.breakpoints.clear();
                    return Ok(false);
                }
            };
            let name = argv[0].to_ascii_lowercase();
            let is = |short: &str, long: &str| name == short.as_bytes() || name == long.as_bytes();
            if is("h", "help") {
                let mut state = self.state.lock();
                state.logs.extend(HELP.iter().map(|l| l.to_string()));
            } else if is("s", "step") || is("n", "next") {
                self.state.lock().step = true;
                return Ok(true);
            } else if is("c", "continue") {
                return Ok(true);
            } else if is("t", "trace") {
                self.trace();
            } else if is("m", "maxlen") {
                self.maxlen(&argv);
            } else if is("b", "break") {
                self.state.lock().breakpoint_command(&argv);
            } else if is("e", "eval") {
                self.eval(lua, &argv);
            } else if is("a", "abort") {
                return Err("ERR script aborted for user request".into());
            } else if argv.len() > 1 && is("r", "redis") {
                self.redis(lua, &argv);
            } else if is("p", "print") {
                match argv.get(1) {
                    Some(var) if argv.len() == 2 => self.print(var),
                    _ => self.print_all(),
                }
            } else if is("l", "list") {
                let mut state = self.state.lock();
                let mut around = state.current_line;
                if let Some(n) = argv.get(1).map(|a| atoi(a)).filter(|&n| n > 0) {
                    around = n;
                }
                let context = argv.get(2).map_or(5, |a| atoi(a));
                state.list(around, context);
            } else if is("w", "whole") {
                self.state.lock().list(1, 1_000_000);
            } else {
                self.state.lock().logs.push(
                    "<error> Unknown Redis Lua debugger command or wrong number of arguments."
                        .into(),
                );
            }
            let mut state = self.state.lock();
            self.send_logs(&mut state);
        }
    }

    /// The next command from the client (Redis's forgiving multibulk parser: at most
    /// 1024 arguments of 1 to 1024 bytes); `None` once the client is gone. A malformed
    /// command fails the script.
    fn next_command(&self) -> Result<Option<Vec<Vec<u8>>>, String> {
        loop {
            {
                let mut state = self.state.lock();
                match parse_command(&state.input) {
                    Parsed::Command(argv) => {
                        state.input.clear();
                        return Ok(Some(argv));
                    }
                    Parsed::Error => return Err("ERR protocol error".into()),
                    Parsed::Incomplete => {}
                }
            }
            let Some(bytes) = self.io.read() else {
                return Ok(None);
            };
            let mut state = self.state.lock();
            state.input.extend_from_slice(&bytes);
            if state.input.len() > MAX_INPUT {
                state.input.clear();
                return Err("ERR max client buffer reached".into());
            }
        }
    }

    /// Sends the log as an array of status lines, CR and LF made spaces.
    fn send_logs(&self, state: &mut State) {
        self.io.send_log(state.logs.drain(..));
    }

    fn maxlen(&self, argv: &[Vec<u8>]) {
        let mut state = self.state.lock();
        if argv.len() == 2 {
            let asked = atoi(&argv[1]);
            state.maxlen_hint_sent = true;
            state.maxlen = match asked {
                0 => 0,
                n if n <= 60 => 60,
                n => usize::try_from(n).unwrap_or(usize::MAX),
            };
        }
        let line = if state.maxlen > 0 {
            format!("<value> replies are truncated at {} bytes.", state.maxlen)
        } else {
            "<value> replies are unlimited.".to_string()
        };
        state.logs.push(line);
    }

    /// A backtrace of the script's frames.
    fn trace(&self) {
        let mut lines = Vec::new();
        let mut level = 0i64;
        while let Ok((Some(source), name, line)) =
            self.stack
                .frame
                .call::<(Option<String>, Option<String>, i64)>(level)
        {
            if source.contains("user_script") {
                let at = if level == 0 { "In" } else { "From" };
                lines.push((
                    format!("{at} {}:", name.as_deref().unwrap_or("top level")),
                    line,
                ));
            }
            level += 1;
        }
        let mut state = self.state.lock();
        if level == 0 {
            state.logs.push("<error> Can't retrieve Lua stack.".into());
        }
        for (header, line) in lines {
            state.logs.push(header);
            state.log_source_line(line);
        }
    }

    /// `print <var>`: the first local of that name from the current frame outwards, or
    /// the KEYS and ARGV globals.
    fn print(&self, var: &[u8]) {
        let mut level = 0i64;
        'frames: loop {
            for i in 1.. {
                let found = self
                    .stack
                    .getlocal
                    .call::<(bool, Option<mlua::String>, Value)>((level, i));
                match found {
                    Ok((true, Some(name), value)) => {
                        if name.as_bytes()[..] == var[..] {
                            self.log_value("<value> ", &value);
                            return;
                        }
                    }
                    Ok((true, None, _)) => break,
                    _ => break 'frames,
                }
            }
            level += 1;
        }
        if var == b"ARGV" || var == b"KEYS" {
            let name = String::from_utf8_lossy(var);
            let value = self
                .stack
                .globals
                .raw_get::<Value>(&*name)
                .unwrap_or(Value::Nil);
            self.log_value("<value> ", &value);
        } else {
            self.state.lock().logs.push("No such variable.".into());
        }
    }

    /// `print`: every local of the current frame.
    fn print_all(&self) {
        let mut shown = 0;
        for i in 1.. {
            let Ok((true, Some(name), value)) =
                self.stack
                    .getlocal
                    .call::<(bool, Option<mlua::String>, Value)>((0i64, i))
            else {
                break;
            };
            let name = name.to_string_lossy();
            if !name.contains("(*temporary)") {
                self.log_value(&format!("<value> {name} = "), &value);
                shown += 1;
            }
        }
        if shown == 0 {
            self.state
                .lock()
                .logs
                .push("No local variables in the current context.".into());
        }
    }

    /// `eval <code>`: the code run as an expression (`return ...`), else as a
    /// statement, in the scripts' environment; its first value is shown.
    fn eval(&self, lua: &Lua, argv: &[Vec<u8>]) {
        let code = argv[1..].join(&b' ');
        let mut expr = b"return ".to_vec();
        expr.extend_from_slice(&code);
        let env = self.stack.env.clone();
        let load = |text: &[u8]| {
            lua.load(text)
                .set_name("@ldb_eval")
                .set_mode(mlua::ChunkMode::Text)
                .set_environment(env.clone())
                .into_function()
        };
        let func = match load(&expr).or_else(|_| load(&code)) {
            Ok(f) => f,
            Err(e) => {
                self.state
                    .lock()
                    .logs
                    .push(format!("<error> {}", lua_text(&e)));
                return;
            }
        };
        match func.call::<Value>(()) {
            Ok(value) => self.log_value("<retval> ", &value),
            Err(e) => self
                .state
                .lock()
                .logs
                .push(format!("<error> {}", lua_text(&e))),
        }
    }

    /// `redis <command>`: runs it through `redis.call`, logged as the script's calls
    /// are while stepping.
    fn redis(&self, lua: &Lua, argv: &[Vec<u8>]) {
        let call = match self.stack.redis.raw_get::<Value>("call") {
            Ok(Value::Function(f)) => f,
            _ => return,
        };
        let args: Vec<mlua::Value> = match argv[1..]
            .iter()
            .map(|a| lua.create_string(a).map(Value::String))
            .collect::<mlua::Result<Vec<_>>>()
        {
            Ok(args) => args,
            Err(_) => return,
        };
        self.state.lock().step = true;
        let result = call.call::<Value>(mlua::Variadic::from_iter(args));
        let mut state = self.state.lock();
        state.step = false;
        // redis.call raised the error reply: it was logged when it came back.
        drop(result);
    }

    fn log_value(&self, prefix: &str, value: &Value) {
        let mut line = prefix.to_string();
        value_repr(&mut line, value, 0);
        self.state.lock().log_trimmed(line);
    }
}

impl State {
    /// Logs `line`, trimmed to `maxlen` with a one-time hint, as Redis's
    /// `ldbLogWithMaxLen`.
    fn log_trimmed(&mut self, mut line: String) {
        let mut trimmed = false;
        if self.maxlen > 0 && line.len() > self.maxlen {
            let mut cut = self.maxlen;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push_str(" ...");
            trimmed = true;
        }
        self.logs.push(line);
        if trimmed && !self.maxlen_hint_sent {
            self.maxlen_hint_sent = true;
            self.logs.push(
                "<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.".into(),
            );
        }
    }

    fn source_line(&self, line: i64) -> &str {
        usize::try_from(line - 1)
            .ok()
            .and_then(|i| self.src.get(i))
            .map_or("<out of range source code line>", String::as_str)
    }

    /// `-> 3   return x`: the line, marked when current (`->`) or a breakpoint (`#`).
    fn log_source_line(&mut self, line: i64) {
        let current = self.current_line == line;
        let breakpoint = self.breakpoints.contains(&line);
        let prefix = match (current, breakpoint) {
            (true, true) => "->#",
            (true, false) => "-> ",
            (false, true) => "  #",
            (false, false) => "   ",
        };
        let text = format!("{prefix}{line:<3} {}", self.source_line(line));
        self.logs.push(text);
    }

    /// The whole source (`around` 0) or `context` lines either side of `around`.
    fn list(&mut self, around: i64, context: i64) {
        for line in 1..=self.src.len() as i64 {
            if around != 0 && (around - line).abs() > context {
                continue;
            }
            self.log_source_line(line);
        }
    }

    /// `break`: lists, adds (`N`), removes (`-N`) or clears (`0`) breakpoints.
    fn breakpoint_command(&mut self, argv: &[Vec<u8>]) {
        if argv.len() == 1 {
            if self.breakpoints.is_empty() {
                self.logs
                    .push("No breakpoints set. Use 'b <line>' to add one.".into());
            } else {
                self.logs
                    .push(format!("{} breakpoints set:", self.breakpoints.len()));
                for line in self.breakpoints.clone() {
                    self.log_source_line(line);
                }
            }
            return;
        }
        for arg in &argv[1..] {
            let Some(line) = std::str::from_utf8(arg)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
            else {
                self.logs.push(format!(
                    "Invalid argument:'{}'",
                    String::from_utf8_lossy(arg)
                ));
                continue;
            };
            if line == 0 {
                self.breakpoints.clear();
                self.logs.push("All breakpoints removed.".into());
            } else if line > 0 {
                if self.breakpoints.len() == MAX_BREAKPOINTS {
                    self.logs.push("Too many breakpoints set.".into());
                } else if line <= self.src.len() as i64 && !self.breakpoints.contains(&line) {
                    self.breakpoints.push(line);
                    self.list(line, 1);
                } else {
                    self.logs.push("Wrong line number.".into());
                }
            } else if let Some(at) = self.breakpoints.iter().position(|&b| b == -line) {
                self.breakpoints.remove(at);
                self.logs.push("Breakpoint removed.".into());
            } else {
                self.logs
                    .push("No breakpoint in the specified line.".into());
            }
        }
    }
}

const HELP: &[&str] = &[
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
];

enum Parsed {
    Command(Vec<Vec<u8>>),
    Incomplete,
    Error,
}

/// Redis's `ldbReplParseCommand`: `*<n>\r\n` then `$<len>\r\n<bytes>\r\n` n times, from
/// the first `*` on.
fn parse_command(buf: &[u8]) -> Parsed {
    if buf.is_empty() {
        return Parsed::Incomplete;
    }
    let Some(star) = buf.iter().position(|&b| b == b'*') else {
        return Parsed::Error;
    };
    let mut p = star + 1;
    let line_end = |from: usize| buf[from..].windows(2).position(|w| w == b"\r\n");
    let Some(end) = line_end(p) else {
        return Parsed::Incomplete;
    };
    let count = atoi(&buf[p..p + end]);
    if !(1..=1024).contains(&count) {
        return Parsed::Error;
    }
    p += end + 2;
    let mut argv = Vec::new();
    while (argv.len() as i64) < count {
        match buf.get(p) {
            None => return Parsed::Incomplete,
            Some(b'$') => {}
            Some(_) => return Parsed::Error,
        }
        let Some(end) = line_end(p + 1) else {
            return Parsed::Incomplete;
        };
        let len = atoi(&buf[p + 1..p + 1 + end]);
        if !(1..=1024).contains(&len) {
            return Parsed::Error;
        }
        let start = p + 1 + end + 2;
        let len = len as usize;
        if start + len + 2 > buf.len() {
            return Parsed::Incomplete;
        }
        argv.push(buf[start..start + len].to_vec());
        if &buf[start + len..start + len + 2] != b"\r\n" {
            return Parsed::Error;
        }
        p = start + len + 2;
    }
    Parsed::Command(argv)
}

/// C's `atoi`: leading digits (with a sign) after spaces, 0 when none.
fn atoi(text: &[u8]) -> i64 {
    let text = std::str::from_utf8(text).unwrap_or("");
    let text = text.trim_start();
    let (sign, digits) = match text.as_bytes().first() {
        Some(b'-') => (-1, &text[1..]),
        Some(b'+') => (1, &text[1..]),
        _ => (1, text),
    };
    let digits: String = digits.chars().take_while(char::is_ascii_digit).collect();
    digits.parse::<i64>().map_or(0, |n| sign * n)
}

/// A Lua value as the debugger shows it (Redis's `ldbCatStackValue`): strings quoted,
/// numbers as `%g`, tables as `{1; 2}` (arrays) or `{[k]=v; ...}`.
fn value_repr(out: &mut String, value: &Value, depth: usize) {
    if depth == MAX_DEPTH {
        out.push_str("<max recursion level reached! Nested table?>");
        return;
    }
    match value {
        Value::String(s) => out.push_str(&crate::config::repr(&s.as_bytes())),
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Integer(n) => out.push_str(&crate::cmd::float::fmt_g(*n as f64, 6)),
        Value::Number(n) => out.push_str(&crate::cmd::float::fmt_g(*n, 6)),
        Value::Nil => out.push_str("nil"),
        Value::Table(t) => {
            let mut array = String::new();
            let mut map = String::new();
            let mut is_array = true;
            let mut expected = 1.0;
            for pair in t.clone().pairs::<Value, Value>() {
                let Ok((k, v)) = pair else { break };
                let index = match k {
                    Value::Integer(n) => Some(n as f64),
                    Value::Number(n) => Some(n),
                    _ => None,
                };
                if index != Some(expected) {
                    is_array = false;
                }
                value_repr(&mut array, &v, depth + 1);
                array.push_str("; ");
                map.push('[');
                value_repr(&mut map, &k, depth + 1);
                map.push_str("]=");
                value_repr(&mut map, &v, depth + 1);
                map.push_str("; ");
                expected += 1.0;
            }
            let body = if is_array { array } else { map };
            out.push('{');
            out.push_str(body.strip_suffix("; ").unwrap_or(&body));
            out.push('}');
        }
        other => {
            let kind = match other {
                Value::Function(_) => "function",
                Value::Thread(_) => "thread",
                Value::LightUserData(_) => "light-userdata",
                _ => "userdata",
            };
            out.push_str(&format!("\"{kind}@{:p}\"", other.to_pointer()));
        }
    }
}

/// A reply as the debugger shows it (Redis's `ldbRedisProtocolToHuman`).
fn human_reply(out: &mut String, frame: &Frame) {
    let list = |out: &mut String, items: &[Frame], open: &str, close: &str| {
        out.push_str(open);
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            human_reply(out, item);
        }
        out.push_str(close);
    };
    match frame {
        Frame::Integer(n) => out.push_str(&n.to_string()),
        Frame::Bulk(b) => out.push_str(&crate::config::repr(b)),
        Frame::NullBulk | Frame::NullArray => out.push_str("NULL"),
        Frame::Simple(s) => {
            let mut status = b"+".to_vec();
            status.extend_from_slice(s);
            out.push_str(&crate::config::repr(&status));
        }
        Frame::Error(e) | Frame::BulkError(e) => {
            let mut status = b"-".to_vec();
            status.extend_from_slice(e);
            out.push_str(&crate::config::repr(&status));
        }
        Frame::Array(items) | Frame::Push(items) => list(out, items, "[", "]"),
        Frame::Set(items) => list(out, items, "~(", ")"),
        Frame::Map(pairs) => {
            out.push('{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                human_reply(out, k);
                out.push_str(" => ");
                human_reply(out, v);
            }
            out.push('}');
        }
        Frame::Null => out.push_str("(null)"),
        Frame::Boolean(b) => out.push_str(if *b { "#true" } else { "#false" }),
        Frame::Double(d) => {
            out.push_str("(double) ");
            out.push_str(&crate::cmd::float::fmt_g17(*d));
        }
        Frame::BigNumber(n) => out.push_str(&String::from_utf8_lossy(n)),
        Frame::Verbatim { text, .. } => out.push_str(&crate::config::repr(text)),
        Frame::Attribute { value, .. } => human_reply(out, value),
    }
}

/// An mlua error's message without mlua's prefix and traceback.
fn lua_text(e: &mlua::Error) -> String {
    let text = e.to_string();
    let text = text.split("\nstack traceback:").next().unwrap_or("");
    text.trim_start_matches("runtime error: ")
        .trim_start_matches("syntax error: ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_like_redis() {
        assert!(matches!(parse_command(b""), Parsed::Incomplete));
        assert!(matches!(
            parse_command(b"*1\r\n$4\r\nst"),
            Parsed::Incomplete
        ));
        match parse_command(b"*2\r\n$1\r\np\r\n$3\r\nfoo\r\n") {
            Parsed::Command(argv) => assert_eq!(argv, [b"p".to_vec(), b"foo".to_vec()]),
            _ => panic!("a whole command"),
        }
        assert!(matches!(parse_command(b"hello"), Parsed::Error));
        assert!(matches!(parse_command(b"*0\r\n"), Parsed::Error));
        assert!(matches!(parse_command(b"*1\r\n$0\r\n\r\n"), Parsed::Error));
        assert!(matches!(parse_command(b"*1\r\nx"), Parsed::Error));
    }

    #[test]
    fn atoi_as_c() {
        assert_eq!(atoi(b" 12x"), 12);
        assert_eq!(atoi(b"-3"), -3);
        assert_eq!(atoi(b"x"), 0);
    }

    #[test]
    fn replies_shown_as_redis_shows_them() {
        let mut s = String::new();
        human_reply(
            &mut s,
            &Frame::Array(vec![
                Frame::Integer(1),
                Frame::Bulk("a\n".into()),
                Frame::NullBulk,
                Frame::Simple("OK".into()),
            ]),
        );
        assert_eq!(s, r#"[1,"a\n",NULL,"+OK"]"#);
    }
}
