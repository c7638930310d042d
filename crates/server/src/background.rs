//! Background threads that must not slow the command path: the snapshot walker and its
//! file writer run at a lower scheduling priority than the worker threads.
//!
//! On a machine with few cores a walker serialising gigabytes competes with the workers
//! for the CPU; at equal priority the scheduler hands it full time slices while commands
//! wait, which shows as a tail in client latency during BGSAVE. Lowered (as a nice value
//! of 10 would), it runs on what the workers leave. It only ever holds a shard's lock
//! for one short batch, so being preempted costs a waiting worker little.
//!
//! The second module allowed `unsafe` (besides [`crate::alloc`]): lowering one thread's
//! priority is one libc call.
#![allow(unsafe_code)]

/// Lowers the calling thread's scheduling priority (nice +10). Best effort: a failure
/// (another OS, a restricted container) leaves the thread as it is.
///
/// Not under a seccomp filter: a service unit's `SystemCallFilter=~@resources` (as in
/// Debian's unit for redis-server) kills the whole process at its first `setpriority`,
/// and which calls a filter allows cannot be asked. Redis never changes priorities, so
/// such units are written without them.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    if !under_syscall_filter() {
        extern "C" {
            fn setpriority(
                which: std::ffi::c_int,
                who: std::ffi::c_uint,
                prio: std::ffi::c_int,
            ) -> std::ffi::c_int;
        }
        const PRIO_PROCESS: std::ffi::c_int = 0;
        // SAFETY: setpriority only reads its integer arguments; on Linux `who = 0` with
        // PRIO_PROCESS names the calling thread (a task), and nothing else is touched.
        unsafe {
            setpriority(PRIO_PROCESS, 0, 10);
        }
    }
}

/// Whether a seccomp filter restricts this process's system calls (`Seccomp: 2` in
/// `/proc/self/status`); read once.
#[cfg(target_os = "linux")]
fn under_syscall_filter() -> bool {
    static FILTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FILTERED.get_or_init(|| {
        std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
            status
                .lines()
                .any(|line| line.strip_prefix("Seccomp:").map(str::trim) == Some("2"))
        })
    })
}
