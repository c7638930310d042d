//! `syslog-enabled yes`: every log line also goes to the system log, as Redis sends it
//! (`openlog(syslog-ident, LOG_PID | LOG_NDELAY | LOG_NOWAIT, syslog-facility)`, then
//! the message alone, without the pid and time the log file's lines begin with, at the
//! priority of its level: debug, info for verbose, notice, warning).
//!
//! Unsafe code: `openlog` and `syslog` are libc calls std has no wrapper for.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;

use tracing::{Level, Metadata};

use crate::config::Config;

/// The facility `syslog-facility` names (Redis's list).
fn facility(name: &str) -> libc::c_int {
    match name {
        "user" => libc::LOG_USER,
        "local1" => libc::LOG_LOCAL1,
        "local2" => libc::LOG_LOCAL2,
        "local3" => libc::LOG_LOCAL3,
        "local4" => libc::LOG_LOCAL4,
        "local5" => libc::LOG_LOCAL5,
        "local6" => libc::LOG_LOCAL6,
        "local7" => libc::LOG_LOCAL7,
        _ => libc::LOG_LOCAL0,
    }
}

/// Opens the system log as `syslog-ident` with `syslog-facility`, when
/// `syslog-enabled yes`; returns the writer the log layer sends lines to.
pub fn open(config: &Config) -> Option<SystemLog> {
    if !config.param_bool("syslog-enabled") {
        return None;
    }
    // openlog keeps the pointer: the ident lives as long as the process.
    let ident: &'static CString = Box::leak(Box::new(
        CString::new(config.param("syslog-ident")).unwrap_or_default(),
    ));
    // SAFETY: `ident` is a NUL-terminated string that is never freed.
    unsafe {
        libc::openlog(
            ident.as_ptr(),
            libc::LOG_PID | libc::LOG_NDELAY | libc::LOG_NOWAIT,
            facility(config.param("syslog-facility")),
        );
    }
    Some(SystemLog)
}

/// Sends each formatted line to `syslog` at its level's priority.
pub struct SystemLog;

/// One line on its way: sent whole when the formatter is done with it.
pub struct SystemLogLine {
    priority: libc::c_int,
    line: Vec<u8>,
}

impl io::Write for SystemLogLine {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.line.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for SystemLogLine {
    fn drop(&mut self) {
        while self.line.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
            self.line.pop();
        }
        // A NUL inside the message would end it early: it is sent up to there.
        let end = self
            .line
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.line.len());
        self.line.truncate(end);
        self.line.push(0);
        // SAFETY: "%s" with one NUL-terminated string argument.
        unsafe { libc::syslog(self.priority, c"%s".as_ptr(), self.line.as_ptr()) };
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for SystemLog {
    type Writer = SystemLogLine;

    fn make_writer(&'a self) -> SystemLogLine {
        self.line_at(libc::LOG_NOTICE)
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> SystemLogLine {
        // Redis's map from its levels (see `crate::log::level_of`).
        let priority = match *meta.level() {
            Level::TRACE => libc::LOG_DEBUG,
            Level::DEBUG => libc::LOG_INFO,
            Level::INFO => libc::LOG_NOTICE,
            _ => libc::LOG_WARNING,
        };
        self.line_at(priority)
    }
}

impl SystemLog {
    fn line_at(&self, priority: libc::c_int) -> SystemLogLine {
        SystemLogLine {
            priority,
            line: Vec::with_capacity(128),
        }
    }
}
