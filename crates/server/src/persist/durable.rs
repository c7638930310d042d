//! Renames that survive a crash.
//!
//! A file replaced by a rename (the dump file, the AOF's manifest, the configuration
//! file, the ACL file) is fsynced before the rename, but the rename itself
//! is a change of its directory: until the directory is on disk too, a power loss can
//! bring back the old name, or no file at all. Redis 7.0 syncs the directory after each
//! such rename (`fsyncFileDir`); so does [`rename`].

use std::fs::File;
use std::io;
use std::path::Path;

/// Renames `from` to `to`, then sends `to`'s directory to disk.
///
/// ```no_run
/// # fn main() -> std::io::Result<()> {
/// std::fs::write("temp-1.rdb", b"REDIS0010")?;
/// std::fs::File::open("temp-1.rdb")?.sync_all()?;
/// redline_server::persist::durable::rename("temp-1.rdb", "dump.rdb")?;
/// # Ok(())
/// # }
/// ```
pub fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    std::fs::rename(from, &to)?;
    sync_directory_of(to.as_ref())
}

/// Writes `bytes` to `temp`, sends them to disk and renames `temp` to `path` with
/// [`rename`]: a crash leaves the old file or the new one, never part of one. `temp`
/// goes if anything fails.
pub fn write(temp: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let written = std::fs::write(temp, bytes)
        .and_then(|()| File::open(temp)?.sync_all())
        .and_then(|()| rename(temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(temp);
    }
    written
}

/// Sends the directory holding `path` to disk. File systems that cannot sync a
/// directory (EINVAL, EBADF) are let be, as Redis lets them be.
pub fn sync_directory_of(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    match File::open(dir)?.sync_all() {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EBADF)) => Ok(()),
        result => result,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn renames_into_the_current_and_other_directories() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("temp");
        std::fs::write(&from, b"x").unwrap();
        let to = dir.path().join("dump.rdb");
        rename(&from, &to).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"x");
        assert!(!from.exists());
        // A bare name's directory is the working directory.
        sync_directory_of(Path::new("dump.rdb")).unwrap();
    }

    #[test]
    fn write_replaces_a_file_and_leaves_no_temporary_one() {
        let dir = tempfile::tempdir().unwrap();
        let (temp, path) = (dir.path().join("f.tmp"), dir.path().join("f"));
        std::fs::write(&path, b"old").unwrap();
        write(&temp, &path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert!(!temp.exists());
        // Renaming onto a directory fails: the old file stays, the temporary one goes.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("x"), b"").unwrap();
        assert!(write(&temp, &sub, b"new").is_err());
        assert!(!temp.exists());
    }

    #[test]
    fn a_missing_source_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = rename(dir.path().join("none"), dir.path().join("to")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
