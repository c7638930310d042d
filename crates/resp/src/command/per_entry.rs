//! A value kept per table entry, so a hot path asks an array instead of comparing names.

use super::{all, CommandSpec};

/// A value derived once for every entry of the table (indexed by [`CommandSpec::id`], which
/// numbers entries in [`all`]'s order), with the same function as the fallback for an
/// entry defined outside the table.
///
/// ```
/// use std::sync::LazyLock;
/// use redline_resp::command::{self, PerEntry};
///
/// static NAME_LEN: LazyLock<PerEntry<usize>> = LazyLock::new(|| PerEntry::new(|s| s.name.len()));
/// assert_eq!(NAME_LEN.get(command::lookup(b"GET").unwrap()), 3);
/// ```
#[derive(Debug)]
pub struct PerEntry<T> {
    by_id: Box<[T]>,
    derive: fn(&'static CommandSpec) -> T,
}

impl<T: Copy> PerEntry<T> {
    /// Derives the value of every entry now.
    pub fn new(derive: fn(&'static CommandSpec) -> T) -> Self {
        PerEntry {
            by_id: all().map(derive).collect(),
            derive,
        }
    }

    /// The value of `spec`'s entry; derived on the spot for an entry without an id.
    #[inline]
    pub fn get(&self, spec: &'static CommandSpec) -> T {
        self.by_id
            .get(usize::from(spec.id))
            .copied()
            .unwrap_or_else(|| (self.derive)(spec))
    }
}
