//! Persistence: Redis's on-disk and on-the-wire formats.
//!
//! - [`rdb`]: the RDB codec: one value (DUMP/RESTORE) and whole images ([`rdb::file`]).
//! - [`aof`]: the multi-part append-only file, fed by the replication stream.
//! - [`aof_load`]: reading it back (base, incremental files) as Redis does.
//! - [`aof_manifest`]: the manifest listing the AOF's files.
//! - [`bgsave`]: BGSAVE and full syncs as a copy-on-write cut of the keyspace, without
//!   fork.
//! - [`shutdown`]: what a shutdown saves; [`graceful`]: a shutdown that first waits for
//!   the replicas to catch up.
//! - [`group_commit`]: when `appendfsync always` starts its next fsync.
//! - [`loading`]: the load at start as clients and INFO see it, and load counters.
//! - [`data_file`]: data files written in pieces of a size the kernel copies fast.
//! - [`durable`]: renames that survive a crash (the directory synced after them).
//! - [`snapshot`]: the dataset as an RDB image: SAVE, BGSAVE, DEBUG RELOAD, loading at
//!   start, the payload of a replication full sync.

pub mod aof;
pub mod aof_commands;
pub mod aof_load;
pub mod aof_manifest;
pub mod bgsave;
pub mod data_file;
pub mod dump_file;
pub mod durable;
pub mod graceful;
mod group_commit;
pub mod loading;
pub mod rdb;
pub mod run_clock;
pub mod shutdown;
pub mod snapshot;
