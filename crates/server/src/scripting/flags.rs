//! Script flags: the `#!lua flags=...` shebang of EVAL scripts and the `flags` of
//! registered functions, with Redis 7.0's names and errors.

/// What a script declares about itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// No shebang: Redis 6 compatibility (writes allowed, checked per command).
    pub eval_compat: bool,
    /// `no-writes`.
    pub no_writes: bool,
    /// `allow-oom`.
    pub allow_oom: bool,
    /// `allow-stale`.
    pub allow_stale: bool,
    /// `no-cluster`.
    pub no_cluster: bool,
    /// `allow-cross-slot-keys`.
    pub allow_cross_slot: bool,
}

impl ScriptFlags {
    /// Adds one flag by name; `false` for an unknown name.
    pub fn add(&mut self, name: &str) -> bool {
        match name {
            "no-writes" => self.no_writes = true,
            "allow-oom" => self.allow_oom = true,
            "allow-stale" => self.allow_stale = true,
            "no-cluster" => self.no_cluster = true,
            "allow-cross-slot-keys" => self.allow_cross_slot = true,
            _ => return false,
        }
        true
    }

    /// The flag names, in Redis's order (FUNCTION LIST).
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.no_writes {
            names.push("no-writes");
        }
        if self.allow_oom {
            names.push("allow-oom");
        }
        if self.allow_stale {
            names.push("allow-stale");
        }
        if self.no_cluster {
            names.push("no-cluster");
        }
        if self.allow_cross_slot {
            names.push("allow-cross-slot-keys");
        }
        names
    }
}

/// Reads an EVAL script's shebang. Returns the flags and the body to compile (the
/// shebang line blanked, so line numbers stay right).
pub fn eval_shebang(body: &[u8]) -> Result<(ScriptFlags, Vec<u8>), String> {
    if !body.starts_with(b"#!") {
        let flags = ScriptFlags {
            eval_compat: true,
            ..ScriptFlags::default()
        };
        return Ok((flags, body.to_vec()));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid script shebang".into());
    };
    let line = String::from_utf8_lossy(&body[..end]);
    let parts: Vec<&str> = line.split_whitespace().collect();
    let Some(engine) = parts.first() else {
        return Err("ERR Invalid engine in script shebang".into());
    };
    if *engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = ScriptFlags::default();
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        for flag in list.split(',').filter(|f| !f.is_empty()) {
            if !flags.add(flag) {
                return Err(format!("ERR Unexpected flag in script shebang: {flag}"));
            }
        }
    }
    let mut code = body[end..].to_vec();
    code.insert(0, b' ');
    Ok((flags, code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs() {
        let (f, code) = eval_shebang(b"return 1").unwrap();
        assert!(f.eval_compat);
        assert_eq!(code, b"return 1");
        let (f, code) = eval_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(f.no_writes && f.allow_oom && !f.eval_compat);
        assert_eq!(code, b" \nreturn 1");
        assert_eq!(
            eval_shebang(b"#!lua flags=bad\n").unwrap_err(),
            "ERR Unexpected flag in script shebang: bad"
        );
        assert_eq!(
            eval_shebang(b"#!python\n").unwrap_err(),
            "ERR Unexpected engine in script shebang: #!python"
        );
        assert!(eval_shebang(b"#!lua").is_err());
    }
}
