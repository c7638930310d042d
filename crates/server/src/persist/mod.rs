//! Persistence: Redis's on-disk and on-the-wire formats.
//!
//! - [`rdb`]: the RDB codec: one value (DUMP/RESTORE) and whole images ([`rdb::file`]).
//! - [`aof`]: the multi-part append-only file, fed by the replication stream.
//! - [`aof_load`]: reading it back (manifest, base, incremental files) as Redis does.
//! - [`bgsave`]: BGSAVE and full syncs as a copy-on-write cut of the keyspace, without
//!   fork.
//! - [`loading`]: the load at start as clients and INFO see it, and load counters.
//! - [`snapshot`]: the dataset as an RDB image: SAVE, BGSAVE, DEBUG RELOAD, loading at
//!   start, the payload of a replication full sync.

pub mod aof;
pub mod aof_load;
pub mod bgsave;
pub mod loading;
pub mod rdb;
pub mod shutdown;
pub mod snapshot;
