//! What a shutdown saves: SHUTDOWN's flags, or the `shutdown-on-sigterm` /
//! `shutdown-on-sigint` words for a signal, read the same way and applied by one
//! function, as Redis 7.0 does.

use crate::shared::Shared;

use super::snapshot;

/// `save`, `nosave`, `now`, `force` (and `default`: none of them).
///
/// ```
/// use redline_server::persist::shutdown::ShutdownFlags;
///
/// let flags = ShutdownFlags::from_words(["nosave", "now"]).unwrap();
/// assert!(flags.nosave && !flags.save);
/// assert!(ShutdownFlags::from_words(["save", "nosave"]).is_none());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShutdownFlags {
    /// Save even without save points.
    pub save: bool,
    /// Do not save, whatever the save points.
    pub nosave: bool,
    /// Exit even when the save fails.
    pub force: bool,
    /// Do not wait for lagging replicas (see [`super::graceful`]).
    pub now: bool,
}

impl ShutdownFlags {
    /// The flags from their words, any case; `None` for an unknown word or for both
    /// `save` and `nosave`.
    pub fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Option<ShutdownFlags> {
        let mut flags = ShutdownFlags::default();
        for word in words {
            match word.to_ascii_lowercase().as_str() {
                "save" => flags.save = true,
                "nosave" => flags.nosave = true,
                "force" => flags.force = true,
                "now" => flags.now = true,
                "default" => {}
                _ => return None,
            }
        }
        (!(flags.save && flags.nosave)).then_some(flags)
    }

    /// The flags a signal's parameter (`shutdown-on-sigterm` or `shutdown-on-sigint`)
    /// holds; the default ones when it cannot be read.
    pub fn for_signal(shared: &Shared, param: &str) -> ShutdownFlags {
        let config = shared.config.read();
        ShutdownFlags::from_words(config.param(param).split_whitespace()).unwrap_or_default()
    }
}

/// The save before exiting: when `save` is given, or when save points are set and
/// `nosave` is not; never while the dataset is loading. False when the save failed and
/// `force` was not given: the server must not exit.
pub fn final_save(shared: &Shared, flags: ShutdownFlags) -> bool {
    if shared.persistence.loading.is_active() {
        // Half a dataset must not replace the file it is read from (Redis forces
        // NOSAVE while loading).
        return true;
    }
    if flags.save || (!flags.nosave && snapshot::has_save_points(shared)) {
        tracing::info!("Saving the final RDB snapshot before exiting.");
        crate::supervision::notify("STATUS=Saving the final RDB snapshot\n");
        // The save logs its own error first, as Redis's rdbSave does.
        if snapshot::save(shared).is_err() {
            if flags.force {
                tracing::warn!("Error trying to save the DB. Exit anyway.");
            } else {
                tracing::warn!("Error trying to save the DB, can't exit.");
                crate::supervision::notify("STATUS=Error trying to save the DB, can't exit.\n");
                return false;
            }
        }
    }
    true
}
