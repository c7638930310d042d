//! The open-files limit and `maxclients`, as Redis fits one to the other: a server that
//! needs more descriptors than `ulimit -n` allows raises the limit, and when it cannot,
//! lowers `maxclients` to what fits and says so. The clients past it are then answered
//! `-ERR max number of clients reached`, instead of waiting in the listen queue of a
//! server whose accepts fail with EMFILE.
//!
//! Unsafe code: `getrlimit`/`setrlimit` are system calls std has no wrapper for.
#![allow(unsafe_code)]

/// Descriptors kept beside the clients' (listeners, files, replication, the cluster
/// bus), as Redis keeps them (`CONFIG_MIN_RESERVED_FDS`).
pub const RESERVED_FDS: u64 = 32;

/// The step by which Redis lowers its attempt when `setrlimit` refuses a limit.
const STEP: u64 = 16;

fn limit() -> Option<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, which lives on this frame.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (got == 0).then_some(limit)
}

fn set_limit(files: u64) -> Result<(), std::io::Error> {
    let limit = libc::rlimit {
        rlim_cur: files,
        rlim_max: files,
    };
    // SAFETY: setrlimit only reads the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// What [`fit`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fitted {
    /// The limit already allowed `maxclients`, or was raised to.
    Fits,
    /// The limit could not be raised far enough: `maxclients` this many at most.
    Lowered(u64),
    /// Not even the reserved descriptors fit (a limit of this many files).
    TooLow(u64),
}

/// Raises the open-files limit to `maxclients` plus the reserve when it is lower, in
/// Redis's steps, and says whether `maxclients` fits (logging as Redis does). Calls no
/// `setrlimit` when the limit is already high enough, as Redis: a service unit that
/// forbids it (systemd's `@resources`) sets `LimitNOFILE=` instead.
pub fn fit(maxclients: u64) -> Fitted {
    let needed = maxclients.saturating_add(RESERVED_FDS);
    let Some(current) = limit() else {
        tracing::warn!(
            "Unable to obtain the current NOFILE limit ({}), assuming 1024 and setting the max clients configuration accordingly.",
            std::io::Error::last_os_error()
        );
        return Fitted::Lowered(1024 - RESERVED_FDS);
    };
    let old = current.rlim_cur;
    if old >= needed {
        return Fitted::Fits;
    }
    let mut best = needed;
    let mut error = None;
    while best > old {
        match set_limit(best) {
            Ok(()) => break,
            Err(e) => error = Some(e),
        }
        if best < STEP {
            best = old;
            break;
        }
        best -= STEP;
    }
    let best = best.max(old);
    if best >= needed {
        tracing::info!(
            "Increased maximum number of open files to {needed} (it was originally set to {old})."
        );
        return Fitted::Fits;
    }
    if best <= RESERVED_FDS {
        tracing::warn!(
            "Your current 'ulimit -n' of {old} is not enough for the server to start. Please increase your open file limit to at least {}. Exiting.",
            RESERVED_FDS + 1
        );
        return Fitted::TooLow(old);
    }
    let lowered = best - RESERVED_FDS;
    tracing::warn!(
        "You requested maxclients of {maxclients} requiring at least {needed} max file descriptors."
    );
    tracing::warn!(
        "Server can't set maximum open files to {needed} because of OS error: {}.",
        error.map_or_else(String::new, |e| crate::cstr::strerror(&e))
    );
    tracing::warn!(
        "Current maximum open files is {best}. maxclients has been reduced to {lowered} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
    );
    Fitted::Lowered(lowered)
}
