//! WATCH state of one shard: who watches which key, and whether a change since broke
//! their transaction (Redis's `watched_keys` and `touchWatchedKey`).
//!
//! Redis keeps a flag per client and key rather than a version, because not every
//! change counts: deleting a key that was already stale when WATCH ran is no logical
//! change, nor is FLUSHDB or SWAPDB over a key that was missing on both sides or stays
//! stale. A version cannot tell those apart from a key created and deleted again, which
//! must break the transaction, so each watcher carries its own state here.

use std::collections::HashMap;

use super::compact::CompactBytes;
use super::value::Hasher;

/// One client's WATCH of one key (Redis's `watchedKey`).
#[derive(Debug, Clone, Copy)]
struct Watcher {
    client: u64,
    /// The key was stale (expired, not reclaimed) when watched, and nothing since
    /// changed that: its deletion does not count.
    stale: bool,
    /// A change since WATCH: EXEC must fail.
    dirty: bool,
}

/// What a key looks like on one side of a FLUSHDB or SWAPDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Not there.
    Missing,
    /// There but expired.
    Stale,
    /// There and live.
    Live,
}

/// The watched keys of a shard. Empty unless a transaction watches a key here, so a
/// write pays one branch.
#[derive(Debug, Default)]
pub struct Watches {
    keys: HashMap<CompactBytes, Vec<Watcher>, Hasher>,
}

impl Watches {
    /// Whether somebody watches `key`.
    #[inline]
    pub fn is_watched(&self, key: &[u8]) -> bool {
        !self.keys.is_empty() && self.keys.contains_key(key)
    }

    /// `client` starts watching `key`, which is `stale` right now. WATCH skips the keys
    /// a client already watches, so each client is here once per key.
    pub fn watch(&mut self, key: &[u8], client: u64, stale: bool) {
        self.keys
            .entry(CompactBytes::new(key))
            .or_default()
            .push(Watcher {
                client,
                stale,
                dirty: false,
            });
    }

    /// `client` stops watching `key`.
    pub fn unwatch(&mut self, key: &[u8], client: u64) {
        if let Some(watchers) = self.keys.get_mut(key) {
            watchers.retain(|w| w.client != client);
            if watchers.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    /// Whether `client`'s transaction must fail because of `key`, which is `stale_now`:
    /// a change since WATCH, or the key expired since (Redis's `isWatchedKeyExpired`).
    /// A key the client does not watch counts as changed.
    pub fn broken(&self, key: &[u8], client: u64, stale_now: bool) -> bool {
        self.keys
            .get(key)
            .and_then(|watchers| watchers.iter().find(|w| w.client == client))
            .is_none_or(|w| w.dirty || (!w.stale && stale_now))
    }

    /// Whether `key` changed since `client` watched it: Redis's `CLIENT_DIRTY_CAS`, set
    /// as the change happens (a key that merely expired is found at EXEC, by
    /// [`Watches::broken`]). A key the client does not watch counts as changed.
    pub fn changed(&self, key: &[u8], client: u64) -> bool {
        self.keys
            .get(key)
            .and_then(|watchers| watchers.iter().find(|w| w.client == client))
            .is_none_or(|w| w.dirty)
    }

    /// `key` changed and is `present` afterwards. Removing a key that was stale when
    /// watched is no change; anything else is.
    pub fn touched(&mut self, key: &[u8], present: bool) {
        if let Some(watchers) = self.keys.get_mut(key) {
            for w in watchers {
                if w.stale && !present {
                    w.stale = false;
                } else {
                    w.dirty = true;
                }
            }
        }
    }

    /// Every key of the shard is replaced by what `after` says (missing after FLUSHDB)
    /// where `before` said what it was (Redis's `touchAllWatchedKeysInDb`): a key
    /// missing on both sides, a stale key that goes or stays stale, and a missing key
    /// replaced by a stale one do not count.
    pub fn replaced(
        &mut self,
        before: impl Fn(&[u8]) -> Presence,
        after: impl Fn(&[u8]) -> Presence,
    ) {
        for (key, watchers) in &mut self.keys {
            let (was, will) = (before(key.as_bytes()), after(key.as_bytes()));
            if was == Presence::Missing && will == Presence::Missing {
                continue;
            }
            for w in watchers.iter_mut() {
                if w.stale {
                    match will {
                        Presence::Missing => {
                            w.stale = false;
                            continue;
                        }
                        Presence::Stale => continue,
                        Presence::Live => {}
                    }
                } else if was == Presence::Missing && will == Presence::Stale {
                    w.stale = true;
                    continue;
                }
                w.dirty = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_change_breaks_a_watch_of_a_missing_or_live_key() {
        let mut w = Watches::default();
        w.watch(b"k", 1, false);
        assert!(!w.broken(b"k", 1, false));
        // Created then deleted: back to missing, still a change.
        w.touched(b"k", true);
        w.touched(b"k", false);
        assert!(w.broken(b"k", 1, false));
        assert!(w.broken(b"other", 1, false), "not watched");
    }

    #[test]
    fn removing_a_stale_key_is_no_change_once() {
        let mut w = Watches::default();
        w.watch(b"k", 1, true);
        w.watch(b"k", 2, false);
        w.touched(b"k", false);
        assert!(!w.broken(b"k", 1, false));
        assert!(w.broken(b"k", 2, false));
        w.touched(b"k", true);
        assert!(w.broken(b"k", 1, false));
    }

    #[test]
    fn a_key_that_expires_after_watch_breaks_it() {
        let mut w = Watches::default();
        w.watch(b"live", 1, false);
        w.watch(b"stale", 1, true);
        assert!(w.broken(b"live", 1, true));
        assert!(!w.broken(b"stale", 1, true));
    }

    #[test]
    fn flush_and_swap_follow_redis() {
        use Presence::*;
        let mut w = Watches::default();
        w.watch(b"missing", 1, false);
        w.watch(b"stale", 1, true);
        w.replaced(|k| if k == b"stale" { Stale } else { Missing }, |_| Missing);
        assert!(!w.broken(b"missing", 1, false));
        assert!(!w.broken(b"stale", 1, false));
        // A missing key replaced by a stale one is watched as stale from then on.
        w.replaced(|_| Missing, |_| Stale);
        assert!(!w.broken(b"missing", 1, true));
        w.replaced(|_| Stale, |_| Live);
        assert!(w.broken(b"missing", 1, false));
        w.unwatch(b"missing", 1);
        w.unwatch(b"stale", 1);
        assert!(w.keys.is_empty());
    }
}
