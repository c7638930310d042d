//! `include <path>`: another configuration file read where the directive stands, as
//! Redis does. A path with `*`, `?` or `[` is a pattern: every file it matches is read,
//! in name order, and none matching is not an error (an empty `conf.d` directory); a
//! plain path that cannot be opened is fatal.

use std::path::{Path, PathBuf};

use super::ConfigError;

/// How deep includes may nest: past this a file is taken to include itself. Redis has
/// no limit and overflows its stack instead.
pub const MAX_DEPTH: usize = 16;

/// The text of the files `path` names, one after the other.
pub fn read(path: &str) -> Result<String, ConfigError> {
    let open_error = |file: &Path, e: std::io::Error| ConfigError::Open {
        path: file.display().to_string(),
        reason: crate::cstr::strerror(&e),
    };
    if !path.contains(['*', '?', '[']) {
        let file = Path::new(path);
        return std::fs::read_to_string(file).map_err(|e| open_error(file, e));
    }
    let mut text = String::new();
    for file in matching(path) {
        text.push_str(&std::fs::read_to_string(&file).map_err(|e| open_error(&file, e))?);
    }
    Ok(text)
}

/// The paths `pattern` matches, as `glob(3)` finds them: component by component,
/// wildcards matching no leading dot, sorted.
fn matching(pattern: &str) -> Vec<PathBuf> {
    let absolute = pattern.starts_with('/');
    let mut found = vec![PathBuf::from(if absolute { "/" } else { "" })];
    for part in pattern.split('/').filter(|p| !p.is_empty()) {
        if !part.contains(['*', '?', '[']) {
            found = found.into_iter().map(|dir| dir.join(part)).collect();
            continue;
        }
        let mut next = Vec::new();
        for dir in &found {
            let listed = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir.as_path()
            };
            let Ok(entries) = std::fs::read_dir(listed) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let bytes = name.as_encoded_bytes();
                let hidden = bytes.first() == Some(&b'.') && !part.starts_with('.');
                if !hidden && crate::glob::glob_match(part.as_bytes(), bytes, false) {
                    next.push(dir.join(&name));
                }
            }
        }
        next.sort();
        found = next;
    }
    found.retain(|path| path.exists());
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_files_in_name_order() {
        let dir = std::env::temp_dir().join(format!("redline-include-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("conf.d")).unwrap();
        for (name, text) in [
            ("b.conf", "hz 20\n"),
            ("a.conf", "hz 10\n"),
            (".x.conf", ""),
        ] {
            std::fs::write(dir.join("conf.d").join(name), text).unwrap();
        }
        let pattern = format!("{}/conf.d/*.conf", dir.display());
        assert_eq!(read(&pattern).unwrap(), "hz 10\nhz 20\n");
        let none = format!("{}/empty.d/*.conf", dir.display());
        assert_eq!(read(&none).unwrap(), "");
        let missing = format!("{}/nope.conf", dir.display());
        assert!(matches!(read(&missing), Err(ConfigError::Open { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
