//! Redis Functions: `FCALL`/`FCALL_RO` and the `FUNCTION` subcommands (LOAD [REPLACE],
//! DELETE, FLUSH, LIST, DUMP, RESTORE, STATS), with typed replies for LIST and STATS.
//!
//! On a [`ClusterClient`](crate::ClusterClient) the routing comes from Redis's command
//! table, as for every command: `FCALL` goes to its keys' slot owner, `FUNCTION
//! LOAD/DELETE/FLUSH/RESTORE` to every master (`request_policy:all_shards`, each must
//! succeed), `FUNCTION LIST/DUMP/STATS` to one master.

use bytes::Bytes;
use redline_resp::Frame;

use super::commands;
use super::scripting::script_tail;
use crate::cmd::{cmd, Cmd, ToArg};
use crate::error::Error;
use crate::reply::{pairs, FromReply};

/// One library as `FUNCTION LIST` describes it.
///
/// ```no_run
/// # async fn demo(client: redline::Client) -> redline::Result<()> {
/// for library in client.function_list().await? {
///     let names: Vec<&str> = library.functions.iter().map(|f| f.name.as_str()).collect();
///     println!("{} ({}): {names:?}", library.name, library.engine);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    /// The name given in the `#!lua name=...` shebang.
    pub name: String,
    /// The engine (`LUA`).
    pub engine: String,
    /// The functions the library registered.
    pub functions: Vec<LibraryFunction>,
    /// The library's source, when asked for (`WITHCODE`).
    pub code: Option<Bytes>,
}

/// One function of a [`Library`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryFunction {
    /// The name `FCALL` calls it by.
    pub name: String,
    /// The description given to `redis.register_function`, if any.
    pub description: Option<String>,
    /// Its flags (`no-writes`, `allow-oom`, `allow-stale`, `no-cluster`...).
    pub flags: Vec<String>,
}

/// What `FUNCTION STATS` reports: the function running now, if any, and per engine how
/// many libraries and functions are loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionStats {
    /// The function running at the time of the call (only ever seen from another
    /// connection while a long function runs).
    pub running_script: Option<RunningFunction>,
    /// Per engine (`LUA`): libraries and functions loaded.
    pub engines: Vec<EngineStats>,
}

/// A function running at the time of `FUNCTION STATS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningFunction {
    /// The function's name.
    pub name: String,
    /// The `FCALL` command that runs it, as sent.
    pub command: Vec<Bytes>,
    /// How long it has run, in milliseconds.
    pub duration_ms: u64,
}

/// Counts for one engine in [`FunctionStats`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineStats {
    /// The engine (`LUA`).
    pub engine: String,
    /// Libraries loaded.
    pub libraries_count: u64,
    /// Functions loaded, over every library.
    pub functions_count: u64,
}

/// What `FUNCTION RESTORE` does with libraries already loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FunctionRestorePolicy {
    /// Adds the dumped libraries; fails if one of them already exists (Redis's default).
    #[default]
    Append,
    /// Adds the dumped libraries, replacing those of the same name.
    Replace,
    /// Deletes every library first.
    Flush,
}

impl FunctionRestorePolicy {
    fn as_arg(self) -> &'static str {
        match self {
            FunctionRestorePolicy::Append => "APPEND",
            FunctionRestorePolicy::Replace => "REPLACE",
            FunctionRestorePolicy::Flush => "FLUSH",
        }
    }
}

/// The fields of a reply that is a RESP3 map or a RESP2 flat array of name, value...
fn fields(frame: Frame) -> Result<Vec<(String, Frame)>, Error> {
    pairs(frame)
}

impl FromReply for Library {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        let mut library = Library {
            name: String::new(),
            engine: String::new(),
            functions: Vec::new(),
            code: None,
        };
        for (field, value) in fields(frame)? {
            match field.as_str() {
                "library_name" => library.name = String::from_reply(value)?,
                "engine" => library.engine = String::from_reply(value)?,
                "functions" => library.functions = Vec::from_reply(value)?,
                "library_code" => library.code = Option::from_reply(value)?,
                _ => {}
            }
        }
        Ok(library)
    }
}

impl FromReply for LibraryFunction {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        let mut function = LibraryFunction {
            name: String::new(),
            description: None,
            flags: Vec::new(),
        };
        for (field, value) in fields(frame)? {
            match field.as_str() {
                "name" => function.name = String::from_reply(value)?,
                "description" => function.description = Option::from_reply(value)?,
                "flags" => function.flags = Vec::from_reply(value)?,
                _ => {}
            }
        }
        Ok(function)
    }
}

impl FromReply for FunctionStats {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        let mut stats = FunctionStats {
            running_script: None,
            engines: Vec::new(),
        };
        for (field, value) in fields(frame)? {
            match field.as_str() {
                "running_script" => stats.running_script = Option::from_reply(value)?,
                "engines" => {
                    for (engine, counts) in fields(value)? {
                        let mut entry = EngineStats {
                            engine,
                            libraries_count: 0,
                            functions_count: 0,
                        };
                        for (name, n) in fields(counts)? {
                            match name.as_str() {
                                "libraries_count" => entry.libraries_count = u64::from_reply(n)?,
                                "functions_count" => entry.functions_count = u64::from_reply(n)?,
                                _ => {}
                            }
                        }
                        stats.engines.push(entry);
                    }
                }
                _ => {}
            }
        }
        Ok(stats)
    }
}

impl FromReply for RunningFunction {
    fn from_reply(frame: Frame) -> Result<Self, Error> {
        let mut running = RunningFunction {
            name: String::new(),
            command: Vec::new(),
            duration_ms: 0,
        };
        for (field, value) in fields(frame)? {
            match field.as_str() {
                "name" => running.name = String::from_reply(value)?,
                "command" => running.command = Vec::from_reply(value)?,
                "duration_ms" => running.duration_ms = u64::from_reply(value)?,
                _ => {}
            }
        }
        Ok(running)
    }
}

/// `FCALL`/`FCALL_RO function numkeys key... arg...`.
fn fcall_cmd(
    name: &'static str,
    function: impl ToArg,
    keys: impl IntoIterator<Item = impl ToArg>,
    args: impl IntoIterator<Item = impl ToArg>,
) -> Cmd {
    Cmd::new(name)
        .arg(function)
        .append_encoded(&script_tail(keys, args))
}

commands! {
    /// `FCALL function numkeys key... arg...`: calls a function of a loaded library,
    /// converting its reply to `T` (on a cluster, on the keys' slot owner: keys must
    /// share a slot, and [`function_load`](Self::function_load) loads the library on
    /// every master).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// client
    ///     .function_load_replace(
    ///         "#!lua name=counters\n\
    ///          redis.register_function('bump', function(keys, args) \
    ///              return redis.call('INCRBY', keys[1], args[1]) end)",
    ///     )
    ///     .await?;
    /// let n: i64 = client.fcall("bump", ["hits"], [5]).await?;
    /// let (m, v): (i64, String) = client.pipeline().fcall("bump", ["hits"], [1]).get("hits").query().await?;
    /// # let _ = (n, m, v);
    /// # Ok(()) }
    /// ```
    fn fcall<T>(function: impl ToArg, keys: impl IntoIterator<Item = impl ToArg>, args: impl IntoIterator<Item = impl ToArg>) -> T {
        fcall_cmd("FCALL", function, keys, args)
    }

    /// `FCALL_RO function numkeys key... arg...`: calls a function flagged `no-writes`
    /// (a replica may serve it; on a cluster with
    /// [`ReadFrom::Replica`](crate::ReadFrom::Replica)).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let v: Option<String> = client.fcall_ro("peek", ["hits"], [0u8; 0]).await?;
    /// # let _ = v;
    /// # Ok(()) }
    /// ```
    fn fcall_ro<T>(function: impl ToArg, keys: impl IntoIterator<Item = impl ToArg>, args: impl IntoIterator<Item = impl ToArg>) -> T {
        fcall_cmd("FCALL_RO", function, keys, args)
    }

    /// `FUNCTION LOAD code`: loads a library; its name. Fails if a library of that name
    /// is loaded (see [`function_load_replace`](Self::function_load_replace)).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let name = client
    ///     .function_load("#!lua name=lib\nredis.register_function('one', function() return 1 end)")
    ///     .await?;
    /// assert_eq!(name, "lib");
    /// # Ok(()) }
    /// ```
    fn function_load(code: impl ToArg) -> String { cmd!("FUNCTION").arg("LOAD").arg(code) }

    /// `FUNCTION LOAD REPLACE code`: loads a library, replacing one of the same name;
    /// its name.
    fn function_load_replace(code: impl ToArg) -> String {
        cmd!("FUNCTION").arg("LOAD").arg("REPLACE").arg(code)
    }

    /// `FUNCTION DELETE library`: removes a library and its functions.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// client.function_delete("lib").await?;
    /// # Ok(()) }
    /// ```
    fn function_delete(library: impl ToArg) -> () { cmd!("FUNCTION").arg("DELETE").arg(library) }

    /// `FUNCTION FLUSH`: removes every library.
    fn function_flush() -> () { cmd!("FUNCTION").arg("FLUSH") }

    /// `FUNCTION LIST`: every library, without its code.
    fn function_list() -> Vec<Library> { cmd!("FUNCTION").arg("LIST") }

    /// `FUNCTION LIST LIBRARYNAME pattern [WITHCODE]`: the libraries whose name matches
    /// the glob pattern, with their code if asked.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let libs = client.function_list_matching("count*", true).await?;
    /// for lib in libs {
    ///     println!("{}: {} bytes", lib.name, lib.code.map_or(0, |c| c.len()));
    /// }
    /// # Ok(()) }
    /// ```
    fn function_list_matching(pattern: impl ToArg, with_code: bool) -> Vec<Library> {
        let cmd = cmd!("FUNCTION").arg("LIST").arg("LIBRARYNAME").arg(pattern);
        if with_code { cmd.arg("WITHCODE") } else { cmd }
    }

    /// `FUNCTION DUMP`: every library as an opaque payload for
    /// [`function_restore`](Self::function_restore).
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client, other: redline::Client) -> redline::Result<()> {
    /// use redline::FunctionRestorePolicy;
    ///
    /// let payload = client.function_dump().await?;
    /// other.function_restore(payload, FunctionRestorePolicy::Replace).await?;
    /// # Ok(()) }
    /// ```
    fn function_dump() -> Bytes { cmd!("FUNCTION").arg("DUMP") }

    /// `FUNCTION RESTORE payload APPEND|REPLACE|FLUSH`: loads the libraries of a
    /// [`function_dump`](Self::function_dump) payload.
    fn function_restore(payload: impl ToArg, policy: FunctionRestorePolicy) -> () {
        cmd!("FUNCTION").arg("RESTORE").arg(payload).arg(policy.as_arg())
    }

    /// `FUNCTION STATS`: the running function, if any, and libraries/functions loaded per
    /// engine.
    ///
    /// ```no_run
    /// # async fn demo(client: redline::Client) -> redline::Result<()> {
    /// let stats = client.function_stats().await?;
    /// for engine in &stats.engines {
    ///     println!("{}: {} libraries", engine.engine, engine.libraries_count);
    /// }
    /// # Ok(()) }
    /// ```
    fn function_stats() -> FunctionStats { cmd!("FUNCTION").arg("STATS") }
}
