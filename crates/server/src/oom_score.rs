//! `oom-score-adj`: the process's `/proc/self/oom_score_adj` set from
//! `oom-score-adj-values` by role (master, replica), as Redis sets it, so that under
//! memory pressure Linux's OOM killer picks a replica before its master.
//!
//! `yes` and `relative` add the value to the score the process had when the setting
//! was first turned on; `absolute` writes the value itself; `no` puts the original
//! score back if this server changed it. Background saves run in threads here, so the
//! third value (Redis's forked children) has no process to apply to.

use parking_lot::Mutex;

const PATH: &str = "/proc/self/oom_score_adj";

/// What this server changed.
#[derive(Debug, Default)]
pub struct OomScore {
    /// The score before this server first changed it (`None`: never changed).
    base: Mutex<Option<i32>>,
}

impl OomScore {
    /// Applies `mode` (`no`, `yes`, `relative`, `absolute`) with `values` (master,
    /// replica, child) for this role. Errors are the file's.
    pub fn apply(&self, mode: &str, values: &str, replica: bool) -> std::io::Result<()> {
        let mut base = self.base.lock();
        let value = if mode == "no" {
            match base.take() {
                Some(original) => original,
                None => return Ok(()),
            }
        } else {
            let original = match *base {
                Some(original) => original,
                None => {
                    let text = std::fs::read_to_string(PATH)?;
                    *base.insert(text.trim().parse().unwrap_or(0))
                }
            };
            let chosen: i32 = values
                .split_whitespace()
                .nth(usize::from(replica))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let value = if mode == "absolute" {
                chosen
            } else {
                chosen + original
            };
            value.clamp(-1000, 1000)
        };
        std::fs::write(PATH, format!("{value}\n"))
    }
}
