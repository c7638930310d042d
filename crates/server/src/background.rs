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
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
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
