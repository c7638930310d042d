//! The parameters the dispatcher reads on every command, as atomics beside the
//! configuration's lock.
//!
//! Reading one through [`Config::param`] costs the lock, an index lookup, a walk of the
//! parameters set and a parse: about a thousand instructions for the two or three that
//! every command checks (NOREPLICAS, MASTERDOWN, READONLY) and every script run reads
//! (BUSY), and the two every XADD reads. They are copied here whenever the configuration changes
//! ([`crate::shared::Shared::update_config`]) instead.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use super::Config;

/// `min-replicas-to-write`, `min-replicas-max-lag`, `replica-serve-stale-data`,
/// `replica-read-only`, `busy-reply-threshold`, `stream-node-max-entries` and
/// `stream-node-max-bytes`, as last configured.
#[derive(Debug, Default)]
pub struct HotParams {
    min_replicas_to_write: AtomicI64,
    min_replicas_max_lag: AtomicI64,
    replica_serve_stale_data: AtomicBool,
    replica_read_only: AtomicBool,
    busy_reply_threshold: AtomicI64,
    stream_node_max_entries: AtomicI64,
    stream_node_max_bytes: AtomicI64,
}

impl HotParams {
    /// Copies the parameters from `config`.
    pub fn load(&self, config: &Config) {
        let int = |a: &AtomicI64, name| a.store(config.param_int(name), Ordering::Relaxed);
        let bool = |a: &AtomicBool, name| a.store(config.param_bool(name), Ordering::Relaxed);
        int(&self.min_replicas_to_write, "min-replicas-to-write");
        int(&self.min_replicas_max_lag, "min-replicas-max-lag");
        bool(&self.replica_serve_stale_data, "replica-serve-stale-data");
        bool(&self.replica_read_only, "replica-read-only");
        int(&self.busy_reply_threshold, "busy-reply-threshold");
        int(&self.stream_node_max_entries, "stream-node-max-entries");
        int(&self.stream_node_max_bytes, "stream-node-max-bytes");
    }

    /// `min-replicas-to-write`.
    pub fn min_replicas_to_write(&self) -> i64 {
        self.min_replicas_to_write.load(Ordering::Relaxed)
    }

    /// `min-replicas-max-lag`, in seconds.
    pub fn min_replicas_max_lag(&self) -> i64 {
        self.min_replicas_max_lag.load(Ordering::Relaxed)
    }

    /// `replica-serve-stale-data`.
    pub fn replica_serve_stale_data(&self) -> bool {
        self.replica_serve_stale_data.load(Ordering::Relaxed)
    }

    /// `replica-read-only`.
    pub fn replica_read_only(&self) -> bool {
        self.replica_read_only.load(Ordering::Relaxed)
    }

    /// `busy-reply-threshold` (`lua-time-limit`), in milliseconds.
    pub fn busy_reply_threshold(&self) -> i64 {
        self.busy_reply_threshold.load(Ordering::Relaxed)
    }

    /// `stream-node-max-entries`.
    pub fn stream_node_max_entries(&self) -> i64 {
        self.stream_node_max_entries.load(Ordering::Relaxed)
    }

    /// `stream-node-max-bytes`.
    pub fn stream_node_max_bytes(&self) -> i64 {
        self.stream_node_max_bytes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_the_defaults_and_what_is_set() {
        let hot = HotParams::default();
        let mut config = Config::default();
        hot.load(&config);
        assert_eq!(hot.min_replicas_to_write(), 0);
        assert_eq!(hot.min_replicas_max_lag(), 10);
        assert!(hot.replica_serve_stale_data());
        assert!(hot.replica_read_only());
        assert_eq!(hot.busy_reply_threshold(), 5000);
        assert_eq!(hot.stream_node_max_entries(), 100);
        assert_eq!(hot.stream_node_max_bytes(), 4096);
        config
            .params
            .insert("min-replicas-to-write", "2".to_string());
        config.params.insert("replica-read-only", "no".to_string());
        hot.load(&config);
        assert_eq!(hot.min_replicas_to_write(), 2);
        assert!(!hot.replica_read_only());
    }
}
