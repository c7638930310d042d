//! A watchdog that kills our servers if the test process dies without dropping them.
//!
//! `Drop` covers normal ends and panics (the workspace unwinds). It does not cover a test
//! binary killed by a timeout, an abort, or servers kept in a `static` (statics are never
//! dropped). For those, the first server started in a process also starts one small bash
//! process whose stdin is a pipe from us. We tell it each server PID we start, with the
//! server's temporary directory (`+pid dir`), and each PID we reap (`-pid`); when the pipe
//! closes — which the kernel does when our process ends, however it ends — it SIGKILLs
//! whatever is still listed, removes those directories, and exits. Our end of the pipe is
//! close-on-exec, so servers do not inherit it and cannot keep the watchdog waiting.

use std::io::Write;
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Mutex;

const SCRIPT: &str = r#"
trap '' INT HUP
declare -A live
while IFS=' ' read -r pid dir; do
  case "$pid" in
    +*) live["${pid#+}"]="$dir" ;;
    -*) unset "live[${pid#-}]" ;;
  esac
done
if [ "${#live[@]}" -gt 0 ]; then
  kill -9 "${!live[@]}" 2>/dev/null
  for pid in "${!live[@]}"; do
    case "${live[$pid]}" in /*) rm -rf -- "${live[$pid]}" ;; esac
  done
fi
exit 0
"#;

static WATCHDOG: Mutex<Option<ChildStdin>> = Mutex::new(None);
static STARTED: std::sync::Once = std::sync::Once::new();

/// Registers a freshly spawned server PID, and the directory to remove with it.
pub(crate) fn track(pid: u32, dir: &Path) {
    send(&format!("+{pid} {}\n", dir.display()));
}

/// Tells the watchdog a PID was reaped by us, so it must not be killed (it may be reused).
pub(crate) fn untrack(pid: u32) {
    send(&format!("-{pid}\n"));
}

fn send(line: &str) {
    STARTED.call_once(start);
    let mut guard = WATCHDOG.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(stdin) = guard.as_mut() {
        if stdin.write_all(line.as_bytes()).is_err() {
            // The watchdog is gone; Drop still cleans up, we just lose the extra guard.
            *guard = None;
        }
    }
}

fn start() {
    let spawned = Command::new("bash")
        .arg("-c")
        .arg(SCRIPT)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        // The Child handle is dropped on purpose: the watchdog outlives our interest in it
        // and exits by itself when our process (and so the pipe) goes away.
        Ok(mut child) => *WATCHDOG.lock().unwrap_or_else(|e| e.into_inner()) = child.stdin.take(),
        Err(e) => {
            eprintln!("redline-testkit: no watchdog ({e}); servers are still stopped on drop")
        }
    }
}
