//! Crash reports. On a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) the
//! server writes to its log what redis-server writes: which signal, then a stack trace
//! between a START and an END line; then it dies of that same signal, so a core dump
//! and the exit status are what they would have been. A crash in production then leaves
//! something to report.
//!
//! Only async-signal-safe calls run in the handler (`write`, glibc's `backtrace` and
//! `backtrace_symbols_fd`, which are warmed up at install so the unwinder is loaded;
//! Redis relies on the same two). Rust's own SIGSEGV/SIGBUS handler, which tells a stack
//! overflow apart, runs first: an overflow becomes its message and an abort, reported
//! as SIGABRT.
//!
//! SIGXFSZ is ignored, so that a file past the process's size limit is a write error
//! the server reports, not its death.
//!
//! Installed by the `redline-server` program ([`crate::launcher`]), not by a library
//! embedding the server, whose process is its own to manage.
// Signal handling is system calls on raw pointers; each block says why it is sound.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{IntoRawFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

/// Where reports go: the log file, or standard output.
static LOG_FD: AtomicI32 = AtomicI32::new(1);

const SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

/// The handlers that were there before (Rust's, for SIGSEGV and SIGBUS), by signal.
static PREVIOUS: OnceLock<[Option<libc::sigaction>; 5]> = OnceLock::new();

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod trace {
    extern "C" {
        fn backtrace(buffer: *mut *mut libc::c_void, size: libc::c_int) -> libc::c_int;
        fn backtrace_symbols_fd(
            buffer: *const *mut libc::c_void,
            size: libc::c_int,
            fd: libc::c_int,
        );
    }

    /// Writes the calling thread's stack, one frame a line, to `fd`.
    pub fn write(fd: libc::c_int) {
        let mut frames = [std::ptr::null_mut::<libc::c_void>(); 100];
        // SAFETY: the buffer holds `frames.len()` pointers, as `backtrace` is told.
        unsafe {
            let n = backtrace(frames.as_mut_ptr(), frames.len() as libc::c_int);
            backtrace_symbols_fd(frames.as_ptr(), n, fd);
        }
    }

    /// Loads the unwinder now: its first use may allocate, which a handler must not.
    pub fn warm_up() {
        let mut frames = [std::ptr::null_mut::<libc::c_void>(); 4];
        // SAFETY: as in `write`.
        unsafe {
            backtrace(frames.as_mut_ptr(), frames.len() as libc::c_int);
        }
    }

    pub const SUPPORTED: bool = true;
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod trace {
    pub fn write(_fd: libc::c_int) {}
    pub fn warm_up() {}
    pub const SUPPORTED: bool = false;
}

/// Installs the handlers; reports go to `logfile` (appended to), or to standard output
/// when it is empty.
pub fn install(logfile: &str) -> io::Result<()> {
    if !logfile.is_empty() {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(logfile)?;
        LOG_FD.store(file.into_raw_fd(), Ordering::Relaxed);
    }
    trace::warm_up();
    let mut previous_actions = [None; 5];
    for (i, &signal) in SIGNALS.iter().enumerate() {
        // SAFETY: a zeroed `sigaction` is a valid starting point, and the handler has
        // the SA_SIGINFO signature.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handle as extern "C" fn(_, _, _) as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, &action, &mut previous) != 0 {
                return Err(io::Error::last_os_error());
            }
            previous_actions[i] = Some(previous);
        }
    }
    // A signal handled before this is set simply does not chain.
    let _ = PREVIOUS.set(previous_actions);
    // A file grown past RLIMIT_FSIZE fails its write (EFBIG: an AOF write error, which
    // refuses writes until it clears) instead of killing the server.
    // SAFETY: ignoring a signal has no memory effect.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    Ok(())
}

/// DEBUG SEGFAULT: crashes the server, as redis-server's does, to test crash handling.
pub fn segfault() -> ! {
    // SAFETY: raising a signal has no memory effect; the handler ends the process.
    unsafe {
        libc::raise(libc::SIGSEGV);
    }
    std::process::abort()
}

/// Where reports go (async-signal-safe).
pub(crate) fn log_fd() -> RawFd {
    LOG_FD.load(Ordering::Relaxed)
}

/// Writes the calling thread's stack as redis-server's reports show one, where it can
/// be taken (async-signal-safe).
pub(crate) fn write_stack_trace(fd: RawFd) {
    if trace::SUPPORTED {
        write_all(
            fd,
            b"\n------ STACK TRACE ------\n(addr2line -f -C -e <redline-server> <+offset> names a frame)\n\nBacktrace:\n",
        );
        trace::write(fd);
    } else {
        write_all(fd, b"Sorry: no support for backtrace().\n");
    }
}

/// Loads the unwinder, so that a handler's first stack trace does not allocate.
pub(crate) fn warm_up_stack_trace() {
    trace::warm_up();
}

/// Writes all of `bytes` to `fd`, as far as it goes (async-signal-safe).
pub(crate) fn write_all(fd: RawFd, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a valid buffer of its length.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

fn write_number(fd: RawFd, n: i64) {
    let mut buffer = itoa::Buffer::new();
    write_all(fd, buffer.format(n).as_bytes());
}

extern "C" fn handle(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let previous = SIGNALS
        .iter()
        .position(|&s| s == signal)
        .and_then(|i| PREVIOUS.get().and_then(|all| all[i]));
    {
        if let Some(previous) = previous {
            let handler = previous.sa_sigaction;
            if previous.sa_flags & libc::SA_SIGINFO != 0
                && handler != libc::SIG_DFL
                && handler != libc::SIG_IGN
            {
                // SAFETY: it was installed with this signature (SA_SIGINFO); Rust's own
                // handler reports a stack overflow (and aborts) or returns.
                let previous_handler: extern "C" fn(
                    libc::c_int,
                    *mut libc::siginfo_t,
                    *mut libc::c_void,
                ) = unsafe { std::mem::transmute(handler) };
                previous_handler(signal, info, context);
            }
        }
    }
    let fd = LOG_FD.load(Ordering::Relaxed);
    write_all(
        fd,
        b"\n\n=== REDLINE BUG REPORT START: Cut & paste starting from here ===\n",
    );
    // SAFETY: `getpid` has no preconditions.
    write_number(fd, i64::from(unsafe { libc::getpid() }));
    write_all(fd, b":M # redline-server ");
    write_all(fd, env!("CARGO_PKG_VERSION").as_bytes());
    write_all(fd, b" crashed by signal: ");
    write_number(fd, i64::from(signal));
    if !info.is_null() {
        write_all(fd, b", si_code: ");
        // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO.
        write_number(fd, i64::from(unsafe { (*info).si_code }));
    }
    write_all(fd, b"\n");
    write_stack_trace(fd);
    write_all(
        fd,
        b"\n=== REDLINE BUG REPORT END. Make sure to include from START to END. ===\n\n",
    );
    // Die of the same signal, with its default action (a core dump where enabled).
    // SAFETY: resetting a disposition and raising are async-signal-safe.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}
