//! A server process's peak memory over a span of a test (Linux's `VmHWM`), to check
//! that an operation does not hold a second copy of the data.

/// The process's resident memory when the span began; its peak is reset then.
///
/// ```no_run
/// use redline_testkit::{PeakMemory, RedlineServer};
///
/// let server = RedlineServer::start().unwrap();
/// let span = PeakMemory::start(server.pid().unwrap()).unwrap();
/// server.cmd(&["SAVE"]).unwrap();
/// assert!(span.grown_kb().unwrap() < 12 << 10);
/// ```
#[derive(Debug)]
pub struct PeakMemory {
    pid: u32,
    start_kb: u64,
}

impl PeakMemory {
    /// Resets process `pid`'s peak to its current resident size (`clear_refs` 5) and
    /// remembers that size.
    pub fn start(pid: u32) -> std::io::Result<PeakMemory> {
        std::fs::write(format!("/proc/{pid}/clear_refs"), "5")?;
        Ok(PeakMemory {
            pid,
            start_kb: status_kb(pid, "VmRSS")?,
        })
    }

    /// How far the peak rose above the start, in kB.
    pub fn grown_kb(&self) -> std::io::Result<u64> {
        Ok(status_kb(self.pid, "VmHWM")?.saturating_sub(self.start_kb))
    }
}

/// A field of `/proc/<pid>/status`, in kB.
fn status_kb(pid: u32, field: &str) -> std::io::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no {field} for process {pid}")))
}
