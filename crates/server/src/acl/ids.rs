//! Command ids for ACL bitmaps: every entry of the shared command table (commands and
//! subcommands, table order) gets a dense index, so a user's allowed commands are a bitmap
//! and a permission check is one bit test, as in Redis's `allowed_commands`.

use std::sync::LazyLock;

use redline_resp::command::{self, CommandSpec};

/// The table entries by id.
static SPECS: LazyLock<Vec<&'static CommandSpec>> = LazyLock::new(|| command::all().collect());

/// The id of a table entry (`None` for an entry outside the table: CLIENT SETINFO).
#[inline]
pub fn id_of(spec: &'static CommandSpec) -> Option<usize> {
    spec.index()
}

/// Number of ids.
pub fn count() -> usize {
    command::ENTRY_COUNT
}

/// Top-level commands, in table order (subcommands are reached through them).
pub fn top_level() -> impl Iterator<Item = &'static CommandSpec> {
    SPECS.iter().copied().filter(|s| !s.is_subcommand())
}

/// A set of command ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandBits(Vec<u64>);

impl CommandBits {
    /// No command.
    pub fn none() -> Self {
        CommandBits(vec![0; count().div_ceil(64)])
    }

    /// Every command.
    pub fn all() -> Self {
        CommandBits(vec![u64::MAX; count().div_ceil(64)])
    }

    /// Whether `id` is in the set.
    #[inline]
    pub fn get(&self, id: usize) -> bool {
        self.0
            .get(id / 64)
            .is_some_and(|word| word & (1 << (id % 64)) != 0)
    }

    /// Adds or removes `id`.
    pub fn set(&mut self, id: usize, on: bool) {
        if let Some(word) = self.0.get_mut(id / 64) {
            if on {
                *word |= 1 << (id % 64);
            } else {
                *word &= !(1 << (id % 64));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_has_an_id() {
        for spec in command::all() {
            assert!(id_of(spec).is_some(), "{}", spec.name);
        }
        let mut bits = CommandBits::none();
        bits.set(count() - 1, true);
        assert!(bits.get(count() - 1) && !bits.get(0));
    }
}
