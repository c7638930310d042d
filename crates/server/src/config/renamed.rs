//! `rename-command <name> <new-name>`: a config-file directive (not settable at run
//! time, as in Redis) that gives a command another name, or none when the new name is
//! empty. The command is then unknown under its own name, everywhere a client names a
//! command (requests, MULTI, scripts, a master's stream).

use redline_resp::command::{self, CommandSpec};

/// The renames of the config file, applied in order.
///
/// ```
/// use redline_server::config::RenamedCommands;
///
/// let mut renamed = RenamedCommands::default();
/// renamed.rename(b"flushdb", b"badger").unwrap();
/// assert!(renamed.lookup(b"FLUSHDB").is_none());
/// assert_eq!(renamed.lookup(b"badger").map(|c| c.name), Some("flushdb"));
/// assert!(renamed.rename(b"flushdb", b"x").is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenamedCommands {
    /// New names (lower case), each with the table name of the command it names: a
    /// few at most, scanned without allocating.
    by_new_name: Vec<(Vec<u8>, &'static str)>,
    /// Table names no longer known as themselves.
    hidden: Vec<&'static str>,
}

impl RenamedCommands {
    /// True when no command was renamed: lookups go straight to the table.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.by_new_name.is_empty() && self.hidden.is_empty()
    }

    /// The command `name` (any case) names now; the table's own lookup when nothing
    /// was renamed (every command comes this way).
    #[inline]
    pub fn lookup(&self, name: &[u8]) -> Option<&'static CommandSpec> {
        if self.is_empty() {
            return command::lookup(name);
        }
        if let Some(table_name) = self.renamed_to(name) {
            return command::lookup(table_name.as_bytes());
        }
        command::lookup(name).filter(|spec| !self.hidden.contains(&spec.name))
    }

    /// The table name of the command renamed to `name`, if any.
    fn renamed_to(&self, name: &[u8]) -> Option<&'static str> {
        self.by_new_name
            .iter()
            .find(|(new, _)| new.eq_ignore_ascii_case(name))
            .map(|(_, table_name)| *table_name)
    }

    /// The command or subcommand `args` calls ([`command::resolve`] under the names
    /// this server gives).
    pub fn resolve<A: AsRef<[u8]>>(&self, args: &[A]) -> Option<&'static CommandSpec> {
        if self.is_empty() {
            return command::resolve(args);
        }
        let spec = self.lookup(args.first()?.as_ref())?;
        match args.get(1) {
            Some(sub) if spec.has_subcommands() => command::lookup_subcommand(spec, sub.as_ref()),
            _ => Some(spec),
        }
    }

    /// Renames the command now called `from` to `to` (removes it when `to` is empty),
    /// with Redis's errors.
    pub fn rename(&mut self, from: &[u8], to: &[u8]) -> Result<(), &'static str> {
        let spec = self
            .lookup(from)
            .ok_or("No such command in rename-command")?;
        // A command known by a new name loses it; one known by its own name is hidden.
        let before = self.by_new_name.len();
        self.by_new_name
            .retain(|(new, _)| !new.eq_ignore_ascii_case(from));
        if self.by_new_name.len() == before {
            self.hidden.push(spec.name);
        }
        if to.is_empty() {
            return Ok(());
        }
        if self.lookup(to).is_some() {
            return Err("Target command name already exists");
        }
        self.by_new_name.push((to.to_ascii_lowercase(), spec.name));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renames_chain_and_remove() {
        let mut r = RenamedCommands::default();
        assert!(r.is_empty());
        r.rename(b"get", b"fetch").unwrap();
        r.rename(b"FETCH", b"grab").unwrap();
        assert!(r.lookup(b"get").is_none());
        assert!(r.lookup(b"fetch").is_none());
        assert_eq!(r.lookup(b"GRAB").map(|c| c.name), Some("get"));
        r.rename(b"set", b"").unwrap();
        assert!(r.lookup(b"set").is_none());
        assert_eq!(r.lookup(b"del").map(|c| c.name), Some("del"));
        // Back to its own name, and a name already taken.
        r.rename(b"grab", b"get").unwrap();
        assert_eq!(r.lookup(b"get").map(|c| c.name), Some("get"));
        assert_eq!(
            r.rename(b"del", b"get"),
            Err("Target command name already exists")
        );
        assert_eq!(
            r.rename(b"nosuch", b"x"),
            Err("No such command in rename-command")
        );
    }
}
