//! The process title (`proc-title-template`, `set-proc-title`): what `ps`, `top` and
//! `/proc/<pid>/cmdline` show for the server, as redis-server sets it
//! (`/usr/bin/redline-server 127.0.0.1:6379 [cluster]`), so that operators tell several
//! servers on one host apart.
//!
//! Linux shows a process's command line from the memory its arguments were passed in. A
//! title may run on past the arguments into the environment strings that follow them,
//! once those strings are copied elsewhere: what BSD's `setproctitle(3)` does, and
//! Redis's copy of it. [`init`] makes that room once, before any thread starts; [`set`]
//! writes a title into it. A process that never called [`init`] (a server embedded in a
//! test or an application) keeps its own command line: [`set`] does nothing there.
//!
//! ```
//! use redline_server::proc_title::expand;
//!
//! let vars = |name: &str| (name == "port").then(|| "6379".to_string());
//! assert_eq!(expand("redis {port} {{x}", vars).as_deref(), Some("redis 6379 {x}"));
//! assert_eq!(expand("{nope}", vars), None);
//! ```

// Writing the title into the argument memory and moving the environment strings take
// raw pointers; each use says why it is sound.
#![allow(unsafe_code)]

use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::config::Config;

/// What CONFIG SET and the configuration file answer to a template [`expand`] refuses
/// or that expands to nothing (Redis's wording).
pub const INVALID_TEMPLATE: &str = "template format is invalid or contains unknown variables";

/// Expands `{name}` variables (Redis's `sdstemplate`): `{{` is a literal `{`, a `}`
/// alone is itself. `None` when a variable is unknown to `var` or a brace is left open.
/// The result is trimmed of spaces at both ends, as Redis trims a title.
pub fn expand(template: &str, var: impl Fn(&str) -> Option<String>) -> Option<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if after.is_empty() {
            return None;
        }
        if let Some(quoted) = after.strip_prefix('{') {
            out.push('{');
            rest = quoted;
            continue;
        }
        let close = after.find('}')?;
        out.push_str(&var(&after[..close])?);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Some(out.trim_matches(' ').to_string())
}

/// The title `config`'s `proc-title-template` gives a server started as `program`,
/// listening on `port` (the port it got, for `port 0`). The variables are Redis's:
/// `title`, `listen-addr`, `server-mode`, `config-file`, `port`, `tls-port`,
/// `unixsocket`. `None` when the template is not valid (see [`expand`]).
pub fn title_for(config: &Config, program: &str, port: u16) -> Option<String> {
    expand_with(config, config.param("proc-title-template"), program, port)
}

/// `template` expanded with `config`'s values (see [`title_for`]).
fn expand_with(config: &Config, template: &str, program: &str, port: u16) -> Option<String> {
    let tls_port = config.param("tls-port");
    let unixsocket = config.param("unixsocket");
    expand(template, |name| {
        Some(match name {
            "title" => program.to_string(),
            "listen-addr" if port != 0 || tls_port != "0" => {
                let addr = config.bind.first().map_or("*", String::as_str);
                if port != 0 {
                    format!("{addr}:{port}")
                } else {
                    format!("{addr}:{tls_port}")
                }
            }
            "listen-addr" => format!("unixsocket:{unixsocket}"),
            "server-mode" if config.param_bool("cluster-enabled") => "[cluster]".to_string(),
            "server-mode" => String::new(),
            "config-file" => config
                .config_file
                .as_ref()
                .map_or_else(|| "-".to_string(), |f| f.display().to_string()),
            "port" => port.to_string(),
            "tls-port" => tls_port.to_string(),
            "unixsocket" => unixsocket.to_string(),
            _ => return None,
        })
    })
}

/// Whether `template` is one [`set`] could show for `config`: it expands, and not to
/// nothing (Redis validates with an empty `title`).
pub fn is_valid(config: &Config, template: &str) -> bool {
    expand_with(config, template, "", config.port).is_some_and(|t| !t.is_empty())
}

/// The memory the title is written into, and how the program was started.
struct Room {
    /// First byte of the arguments.
    start: usize,
    /// Bytes from `start` a title may use, its terminating NUL included.
    len: usize,
    /// Bytes of the arguments themselves, the first `arg_len` of `len`.
    arg_len: usize,
    /// The program as started (the `{title}` variable), read before any title.
    program: String,
}

static ROOM: OnceLock<Mutex<Room>> = OnceLock::new();

/// Makes room for process titles: copies the environment strings that follow the
/// arguments elsewhere, so that a title may overwrite both. Call it once, at the start
/// of `main` before any other thread exists (the environment's pointers change under
/// it), and not at all in a process whose command line must stay. Returns why not
/// where titles cannot be set (not Linux, or `/proc` not readable); the process then
/// keeps its command line.
pub fn init() -> Result<(), String> {
    if ROOM.get().is_some() {
        return Ok(());
    }
    let program = std::env::args_os()
        .next()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (start, len, arg_len) = os::make_room()?;
    if arg_len < 2 {
        return Err("no room for a process title".into());
    }
    let _ = ROOM.set(Mutex::new(Room {
        start,
        len,
        arg_len,
        program,
    }));
    Ok(())
}

/// How the program was started (its first argument), once [`init`] ran.
pub fn program() -> Option<String> {
    ROOM.get().map(|room| room.lock().program.clone())
}

/// Shows `title` as this process's command line (cut to the room [`init`] made); does
/// nothing if [`init`] did not run or failed.
pub fn set(title: &str) {
    let Some(room) = ROOM.get() else {
        return;
    };
    let room = room.lock();
    let bytes = title.as_bytes();
    let n = bytes.len().min(room.len - 1);
    // SAFETY: `[start, start + len)` is this process's argument and environment memory
    // (from /proc/self/stat): mapped, writable, and nothing reads it any more once
    // `init` moved the environment strings away (std's own argument list points there:
    // `std::env::args` reads the title after this, which nothing in the server does).
    // The lock keeps two writers apart; every index below is under `len`.
    unsafe {
        let base = room.start as *mut u8;
        std::ptr::write_bytes(base, 0, room.len);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), base, n);
        // Linux reads a title up to its NUL only when the arguments' last byte is not
        // NUL (else it shows the whole argument area, padding and all), as
        // `setproctitle` arranges it.
        let last_arg_byte = room.arg_len - 1;
        if n < last_arg_byte {
            *base.add(last_arg_byte) = b'.';
        } else if n == last_arg_byte && n + 1 < room.len {
            *base.add(n) = b' ';
        }
    }
}

#[cfg(target_os = "linux")]
mod os {
    use std::ffi::{c_char, CStr};

    extern "C" {
        /// The C library's environment: a NULL-terminated array of `NAME=value` strings.
        static mut environ: *mut *mut c_char;
    }

    /// The argument and environment areas from `/proc/self/stat` (fields 48 to 51:
    /// `arg_start`, `arg_end`, `env_start`, `env_end`), the environment strings moved
    /// to the heap. Returns the start and length of the room, and the arguments' length.
    pub(super) fn make_room() -> Result<(usize, usize, usize), String> {
        let stat = std::fs::read_to_string("/proc/self/stat")
            .map_err(|e| format!("can't read /proc/self/stat: {e}"))?;
        // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
        let after_name = stat
            .rfind(')')
            .map(|i| &stat[i + 1..])
            .ok_or("unexpected /proc/self/stat")?;
        let fields: Vec<usize> = after_name
            .split_whitespace()
            .skip(45) // this list starts at field 3
            .take(4)
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        let [arg_start, arg_end, env_start, env_end] = fields[..] else {
            return Err("no argument addresses in /proc/self/stat".into());
        };
        if arg_start == 0 || arg_end <= arg_start {
            return Err("no argument addresses in /proc/self/stat".into());
        }
        // Linux shows a title past the arguments only when the environment follows
        // them at once (its `get_mm_cmdline`).
        let end = if env_start == arg_end && env_end > env_start {
            env_end
        } else {
            arg_end
        };
        // SAFETY: called before any other thread exists (see `init`), so nothing reads
        // `environ` while its entries change. Each entry pointing into the room is
        // replaced by a copy that is never freed: the environment keeps it for the
        // life of the process, as C programs expect.
        unsafe {
            let mut entry = environ;
            while !entry.is_null() && !(*entry).is_null() {
                let at = *entry as usize;
                if (arg_start..end).contains(&at) {
                    *entry = CStr::from_ptr(*entry).to_owned().into_raw();
                }
                entry = entry.add(1);
            }
        }
        Ok((arg_start, end - arg_start, arg_end - arg_start))
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    pub(super) fn make_room() -> Result<(usize, usize, usize), String> {
        Err("process titles are set on Linux only".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<String> {
        match name {
            "a" => Some("1".into()),
            "empty" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_like_sdstemplate() {
        assert_eq!(expand("x{a}y", vars).as_deref(), Some("x1y"));
        assert_eq!(expand("{{a} }x", vars).as_deref(), Some("{a} }x"));
        assert_eq!(expand("  {empty} t  ", vars).as_deref(), Some("t"));
        assert_eq!(expand("", vars).as_deref(), Some(""));
        for bad in ["{", "x{a", "{b}", "{}"] {
            assert_eq!(expand(bad, vars), None, "{bad}");
        }
    }

    #[test]
    fn redis_variables() {
        let mut config = Config {
            bind: vec!["127.0.0.1".into()],
            config_file: Some("/etc/redis.conf".into()),
            ..Config::default()
        };
        config.params.insert(
            "proc-title-template",
            "{title} {listen-addr} {server-mode} {port} {tls-port} {unixsocket} {config-file}"
                .into(),
        );
        assert_eq!(
            title_for(&config, "/bin/rl", 7000).as_deref(),
            Some("/bin/rl 127.0.0.1:7000  7000 0  /etc/redis.conf")
        );
        config.params.insert("cluster-enabled", "yes".into());
        config.params.insert("unixsocket", "/tmp/s".into());
        config
            .params
            .insert("proc-title-template", "{listen-addr} {server-mode}".into());
        assert_eq!(
            title_for(&config, "", 0).as_deref(),
            Some("unixsocket:/tmp/s [cluster]")
        );
        config.params.insert("tls-port", "7443".into());
        assert_eq!(
            title_for(&config, "", 0).as_deref(),
            Some("127.0.0.1:7443 [cluster]")
        );
    }

    #[test]
    fn validity() {
        let config = Config::default();
        assert!(is_valid(&config, "{title} {listen-addr} {server-mode}"));
        assert!(!is_valid(&config, "{invalid-var}"));
        assert!(!is_valid(&config, ""));
        // Empty once expanded with an empty title: refused, as Redis does.
        assert!(!is_valid(&config, "{title} {unixsocket}"));
    }
}
