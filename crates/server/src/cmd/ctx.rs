//! The context a command runs in, and the only way commands reach shards.
//!
//! Outside a transaction `lock`/`lock_keys`/`lock_index` lock shards for the length of
//! the command. Inside EXEC the transaction already holds them ([`Held`]) and these
//! calls borrow from it instead, so the same command code runs in both cases and a
//! queued command can never deadlock against its own transaction.

use std::cell::RefMut;
use std::ops::{Deref, DerefMut};

use bytes::BytesMut;
use parking_lot::MutexGuard;
use redline_resp::Protocol;

use crate::net::client::ClientState;
use crate::shared::Shared;
use crate::store::{Db, HeldShards, Locked, Shard, ShardMap, Value};

/// What a handler can reach: the server, its own connection's state, and the output.
pub struct Ctx<'a> {
    /// Server-wide state.
    pub shared: &'a Shared,
    /// The calling connection.
    pub client: &'a mut ClientState,
    /// Where replies go.
    pub out: &'a mut BytesMut,
    /// The shards EXEC holds while it runs the queued commands; `None` otherwise.
    pub held: Option<&'a (dyn HeldShards + 'a)>,
    /// Run by EXEC or by a script rather than by the client directly.
    pub nested: bool,
}

/// One shard, locked for this command or borrowed from the running transaction.
pub enum ShardRef<'a> {
    /// Locked now; unlocked when dropped.
    Owned(MutexGuard<'a, Shard>),
    /// Held by EXEC.
    Held(RefMut<'a, Shard>),
}

impl Deref for ShardRef<'_> {
    type Target = Shard;
    #[inline]
    fn deref(&self) -> &Shard {
        match self {
            ShardRef::Owned(g) => g,
            ShardRef::Held(g) => g,
        }
    }
}

impl DerefMut for ShardRef<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Shard {
        match self {
            ShardRef::Owned(g) => g,
            ShardRef::Held(g) => g,
        }
    }
}

/// The shards of a multi-key command.
pub enum KeysRef<'a> {
    /// Locked now, in ascending order.
    Owned(Locked<'a>),
    /// Held by EXEC.
    Held {
        /// The transaction's shards.
        held: RefMut<'a, dyn ShardMap + 'a>,
        /// The database the command runs in.
        db: &'a Db,
        /// Its index.
        index: usize,
    },
}

impl KeysRef<'_> {
    /// The shard that holds `key`.
    pub fn shard(&mut self, key: &[u8]) -> &mut Shard {
        match self {
            KeysRef::Owned(locked) => locked.shard(key),
            KeysRef::Held { held, db, index } => {
                let shard = db.shard_index(key);
                held.shard(*index, shard)
            }
        }
    }

    /// The value at `key`, read as the server reads for itself (no hit or miss counted,
    /// nothing reclaimed): for a command that has looked its keys up already.
    pub fn peek(&mut self, key: &[u8]) -> Option<&Value> {
        self.shard(key).peek(key).map(|e| &e.value)
    }
}

impl<'a> Ctx<'a> {
    /// A context for one command outside a transaction.
    pub fn new(shared: &'a Shared, client: &'a mut ClientState, out: &'a mut BytesMut) -> Self {
        Ctx {
            shared,
            client,
            out,
            held: None,
            nested: false,
        }
    }

    /// The selected database (borrowed from the server, not from `self`, so a shard can
    /// stay locked while the reply is written to `out`).
    #[inline]
    pub fn db(&self) -> &'a Db {
        self.shared.store.db(self.client.db)
    }

    /// The shard of `key` in the selected database.
    #[inline]
    pub fn lock(&self, key: &[u8]) -> ShardRef<'a> {
        let db = self.db();
        self.lock_in(self.client.db, db.shard_index(key))
    }

    /// Shard number `index` of the selected database (whole-keyspace commands).
    pub fn lock_index(&self, index: usize) -> ShardRef<'a> {
        self.lock_in(self.client.db, index)
    }

    /// Shard number `index` of database `db`.
    pub fn lock_in(&self, db: usize, index: usize) -> ShardRef<'a> {
        match self.held {
            None => ShardRef::Owned(self.shared.store.db(db).lock_index(index)),
            Some(held) => ShardRef::Held(RefMut::map(held.borrow_map(), |h| h.shard(db, index))),
        }
    }

    /// Number of keys in database `db` (DBSIZE), read through the transaction's shards
    /// when inside one (locking them again would deadlock).
    pub fn db_len(&self, db: usize) -> usize {
        (0..self.shared.store.db(db).shard_count())
            .map(|i| self.lock_in(db, i).len())
            .sum()
    }

    /// The shard that holds cluster hash slot `slot` in database 0.
    pub fn lock_slot(&self, slot: usize) -> ShardRef<'a> {
        self.lock_in(0, self.shared.store.db(0).shard_of_slot(slot))
    }

    /// The shards of several keys, locked in ascending order (multi-key commands).
    pub fn lock_keys<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> KeysRef<'a> {
        match self.held {
            None => KeysRef::Owned(self.db().lock_keys(keys)),
            Some(held) => KeysRef::Held {
                held: held.borrow_map(),
                db: self.db(),
                index: self.client.db,
            },
        }
    }

    /// Runs `f` on the shard of key `a` in database `db_a` and of key `b` in another
    /// database `db_b`, both locked (in the global (database, shard) order) for its length.
    pub fn with_two_dbs<R>(
        &self,
        (db_a, a): (usize, &[u8]),
        (db_b, b): (usize, &[u8]),
        f: impl FnOnce(&mut Shard, &mut Shard) -> R,
    ) -> Option<R> {
        if db_a == db_b {
            return None;
        }
        let store = &self.shared.store;
        let ia = store.db(db_a).shard_index(a);
        let ib = store.db(db_b).shard_index(b);
        match self.held {
            None => {
                if (db_a, ia) < (db_b, ib) {
                    let mut x = store.db(db_a).lock_index(ia);
                    let mut y = store.db(db_b).lock_index(ib);
                    Some(f(&mut x, &mut y))
                } else {
                    let mut y = store.db(db_b).lock_index(ib);
                    let mut x = store.db(db_a).lock_index(ia);
                    Some(f(&mut x, &mut y))
                }
            }
            Some(held) => {
                let mut map = held.borrow_map();
                let (x, y) = map.pair((db_a, ia), (db_b, ib))?;
                Some(f(x, y))
            }
        }
    }

    /// Exchanges two databases (SWAPDB), atomically in both modes.
    pub fn swap_dbs(&self, a: usize, b: usize) {
        match self.held {
            None => self.shared.store.swap_dbs(a, b),
            Some(held) => {
                held.borrow_map().swap(a, b);
                self.shared.store.swap_avg_ttl(a, b);
            }
        }
        // One change, as Redis counts it (and so replicated).
        crate::store::dirty::mark();
    }

    /// The connection's protocol.
    #[inline]
    pub fn proto(&self) -> Protocol {
        self.client.protocol
    }
}
