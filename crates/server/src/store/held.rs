//! Shards held for the length of a transaction: MULTI/EXEC locks every shard of every
//! database it may touch, in one global order (database, then shard), before the first
//! queued command runs, and releases them after the last; the queued commands borrow
//! their shards from here instead of locking. That makes EXEC atomic and isolated
//! without a global lock on the ordinary path.
//!
//! When every queued command is one whose keys the command table names (the data
//! commands, DEL, EXPIRE...), EXEC holds only those keys' shards (and the WATCHed
//! keys'); a transaction with anything that may reach other keys (SELECT, FLUSHDB, KEYS,
//! SORT with patterns, SWAPDB...) holds every shard.
//!
//! A script holds every shard of the databases it may touch, growing upwards from
//! database 0 as it reaches them ([`Held::databases`]).

use std::cell::{RefCell, RefMut};

use parking_lot::MutexGuard;

use super::{Shard, Store};

/// Access to held shards, with the guards' lifetime hidden behind a trait object: a
/// context borrowing the transaction for a short time cannot name the (longer)
/// lifetime of the locks themselves.
pub trait ShardMap {
    /// Shard `index` of database `db`.
    fn shard(&mut self, db: usize, index: usize) -> &mut Shard;
    /// SWAPDB on held shards.
    fn swap(&mut self, a: usize, b: usize);
    /// Two different shards at once, `(db, index)` each (MOVE, COPY ... DB).
    fn pair(&mut self, a: (usize, usize), b: (usize, usize)) -> Option<(&mut Shard, &mut Shard)>;
}

/// A transaction's shards, shared by the commands it runs one after another.
pub trait HeldShards {
    /// Borrows the held shards (one command at a time).
    fn borrow_map(&self) -> RefMut<'_, dyn ShardMap + '_>;
}

impl ShardMap for Held<'_> {
    fn shard(&mut self, db: usize, index: usize) -> &mut Shard {
        self.reach(db);
        self.get_or_first(db, index)
    }
    fn swap(&mut self, a: usize, b: usize) {
        self.reach(a.max(b));
        self.swap_dbs(a, b)
    }
    fn pair(&mut self, a: (usize, usize), b: (usize, usize)) -> Option<(&mut Shard, &mut Shard)> {
        self.reach(a.0.max(b.0));
        let pa = self.guards.binary_search_by_key(&a, |(k, _)| *k).ok()?;
        let pb = self.guards.binary_search_by_key(&b, |(k, _)| *k).ok()?;
        if pa == pb {
            return None;
        }
        let (lo, hi) = (pa.min(pb), pa.max(pb));
        let (left, right) = self.guards.split_at_mut(hi);
        let (x, y) = (&mut *left[lo].1, &mut *right[0].1);
        Some(if pa < pb { (x, y) } else { (y, x) })
    }
}

impl HeldShards for RefCell<Held<'_>> {
    fn borrow_map(&self) -> RefMut<'_, dyn ShardMap + '_> {
        RefMut::map(self.borrow_mut(), |h| h as &mut dyn ShardMap)
    }
}

/// Locked shards, sorted by (database, shard).
pub struct Held<'a> {
    guards: Vec<((usize, usize), MutexGuard<'a, Shard>)>,
    /// For [`Held::databases`]: the store, and how many databases (from 0) are held;
    /// more are locked, in order, when touched.
    grows: Option<(&'a Store, usize)>,
}

impl<'a> Held<'a> {
    /// Locks every shard of every database, in order.
    pub fn all(store: &'a Store) -> Held<'a> {
        let mut guards = Vec::new();
        for (d, db) in store.dbs().iter().enumerate() {
            for i in 0..db.shard_count() {
                guards.push(((d, i), db.lock_index(i)));
            }
        }
        Held {
            guards,
            grows: None,
        }
    }

    /// Locks every shard of databases `0..=through` now, and of each further database
    /// when it is first touched (with the ones between): what a script holds. It may
    /// reach any database, but most touch only the one they start in, and a prefix of
    /// the databases grown upwards keeps the one global lock order (database, then
    /// shard), so this cannot deadlock where [`Held::all`] could not. It is as isolated
    /// as holding everything from the start: a database is locked before the first
    /// access to it, and whatever ran there before did not touch (and cannot see) the
    /// databases already held, so it could have run before the whole script.
    pub fn databases(store: &'a Store, through: usize) -> Held<'a> {
        let mut held = Held {
            guards: Vec::new(),
            grows: Some((store, 0)),
        };
        held.reach(through);
        held
    }

    /// For a growing set: locks every database up to `db` not held yet, in order.
    fn reach(&mut self, db: usize) {
        let Some((store, held)) = &mut self.grows else {
            return;
        };
        let dbs = store.dbs();
        while *held <= db && *held < dbs.len() {
            let d = *held;
            self.guards.reserve(dbs[d].shard_count());
            for i in 0..dbs[d].shard_count() {
                self.guards.push(((d, i), dbs[d].lock_index(i)));
            }
            *held += 1;
        }
    }

    /// Locks the given `(database, shard)` pairs, each once, in the global order.
    pub fn some(store: &'a Store, mut shards: Vec<(usize, usize)>) -> Held<'a> {
        shards.sort_unstable();
        shards.dedup();
        let guards = shards
            .into_iter()
            .map(|(d, i)| ((d, i), store.db(d).lock_index(i)))
            .collect();
        Held {
            guards,
            grows: None,
        }
    }

    /// Shard `index` of database `db`, if held.
    pub fn get(&mut self, db: usize, index: usize) -> Option<&mut Shard> {
        self.reach(db);
        let pos = self
            .guards
            .binary_search_by_key(&(db, index), |(k, _)| *k)
            .ok()?;
        Some(&mut *self.guards[pos].1)
    }

    /// Shard `index` of database `db`. EXEC holds every shard, so the shard is always
    /// there; should a plan ever miss one, the first held shard is returned rather
    /// than panicking (and the miss shows up as wrong data in tests, not a crash).
    pub fn get_or_first(&mut self, db: usize, index: usize) -> &mut Shard {
        let pos = self
            .guards
            .binary_search_by_key(&(db, index), |(k, _)| *k)
            .unwrap_or(0);
        &mut self.guards[pos].1
    }

    /// Exchanges the contents of databases `a` and `b` (SWAPDB inside EXEC).
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        if a == b {
            return;
        }
        let (lo, hi) = (a.min(b), a.max(b));
        let split = self.guards.partition_point(|((d, _), _)| *d < hi);
        let (low, high) = self.guards.split_at_mut(split);
        for ((d, i), x) in low.iter_mut() {
            if *d != lo {
                continue;
            }
            if let Some((_, y)) = high.iter_mut().find(|((e, j), _)| *e == hi && j == i) {
                x.swap(y);
            }
        }
    }
}
