//! Memory the machine, or the container the server runs in, can still give: the
//! kernel's `MemAvailable` (`/proc/meminfo`), and under a cgroup memory limit what is
//! left below it (v2: `memory.max` less `memory.current`; v1: `memory.limit_in_bytes`
//! less `memory.usage_in_bytes`), whichever is smaller.
//!
//! Read before something would double the dataset in memory (a forked debugging
//! session's copy, `crate::scripting::forked`): Redis's fork shares the dataset's pages
//! until they are written, a copy does not, and running the host out of memory would
//! bring the OOM killer to the server.

use std::path::Path;

/// Bytes available now; `None` where neither figure can be read (another OS).
pub fn available() -> Option<u64> {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_available(&text));
    let container = cgroup_room(Path::new("/proc/self/cgroup"), Path::new("/sys/fs/cgroup"));
    match (machine, container) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kb: u64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    kb.checked_mul(1024)
}

/// What the process's cgroup may still take below its memory limit; `None` without a
/// limit that can be read. The paths `/proc/self/cgroup` names are tried under `root`
/// (v2: `0::/path`; v1: `N:memory:/path`), then the hierarchy's own root, which is
/// where a container with its own cgroup namespace sees its group.
fn cgroup_room(self_cgroup: &Path, root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(self_cgroup).unwrap_or_default();
    let path_of = |prefix: &str| {
        text.lines()
            .find_map(|l| {
                l.split_once(prefix)
                    .map(|(_, p)| p.trim().trim_start_matches('/'))
            })
            .unwrap_or("")
            .to_string()
    };
    let (v2, v1) = (path_of("0::"), path_of(":memory:"));
    let candidates = [
        (root.join(&v2), "memory.max", "memory.current"),
        (root.to_path_buf(), "memory.max", "memory.current"),
        (
            root.join("memory").join(&v1),
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
        ),
        (
            root.join("memory"),
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
        ),
    ];
    candidates.iter().find_map(|(dir, max, current)| {
        let max = std::fs::read_to_string(dir.join(max)).ok()?;
        let current = std::fs::read_to_string(dir.join(current)).ok()?;
        room_below(&max, &current)
    })
}

/// A limit less the usage (`max`, cgroup v2's word for none, gives `None`).
fn room_below(max: &str, current: &str) -> Option<u64> {
    let max: u64 = max.trim().parse().ok()?;
    let current: u64 = current.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_available() {
        let text =
            "MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   16000000 kB\n";
        assert_eq!(mem_available(text), Some(16_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn a_cgroup_limit_leaves_what_is_below_it() {
        assert_eq!(
            room_below("1073741824\n", "73741824\n"),
            Some(1_000_000_000)
        );
        assert_eq!(room_below("max\n", "73741824\n"), None);
        assert_eq!(room_below("100\n", "200\n"), Some(0));
    }

    /// [`cgroup_room`] over a scratch tree: `/proc/self/cgroup` says `entry`, and
    /// `files` are (path under the cgroup root, contents).
    fn room_in_tree(name: &str, entry: &str, files: &[(&str, &str)]) -> Option<u64> {
        let dir = std::env::temp_dir().join(format!("redline-{name}-{}", std::process::id()));
        let root = dir.join("sys/fs/cgroup");
        for (path, text) in files {
            let file = root.join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent).unwrap_or_default();
            }
            std::fs::write(file, text).unwrap_or_default();
        }
        std::fs::write(dir.join("cgroup"), entry).unwrap_or_default();
        let room = cgroup_room(&dir.join("cgroup"), &root);
        let _ = std::fs::remove_dir_all(&dir);
        room
    }

    #[test]
    fn a_v1_memory_cgroup_is_read_too() {
        let files = [
            ("memory/memory.limit_in_bytes", "5000\n"),
            ("memory/memory.usage_in_bytes", "1000\n"),
        ];
        let entry = "4:memory:/docker/abc\n0::/\n";
        assert_eq!(room_in_tree("cg1", entry, &files), Some(4000));
    }

    #[test]
    fn the_cgroup_is_found_from_the_process_s_entry() {
        let files = [
            ("app.slice/memory.max", "1000\n"),
            ("app.slice/memory.current", "400\n"),
        ];
        assert_eq!(room_in_tree("cg2", "0::/app.slice\n", &files), Some(600));
    }
}
