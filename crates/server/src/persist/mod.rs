//! Persistence: Redis's on-disk and on-the-wire value formats.
//!
//! - [`rdb`]: the RDB value codec (DUMP/RESTORE payloads now, RDB snapshots later).
//!
//! AOF and snapshot files are planned here too; they share the codec rather than
//! growing their own.

pub mod rdb;
