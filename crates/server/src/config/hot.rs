//! The parameters the dispatcher reads on every command, as atomics beside the
//! configuration's lock.
//!
//! Reading one through [`Config::param`] costs the lock, an index lookup, a walk of the
//! parameters set and a parse: about a thousand instructions for the two or three that
//! every command checks (NOREPLICAS, MASTERDOWN, READONLY) and every script run reads
//! (BUSY), the two every XADD reads, and the encoding limits every collection scan
//! reads. They are copied here whenever the
//! configuration changes ([`crate::shared::Shared::update_config`]) instead.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use super::Config;

/// One list makes the struct, its loader and its getters: each entry is a getter's
/// name, its atomic and value types, and how and under which name `Config` reads it.
macro_rules! hot_params {
    ($($(#[$doc:meta])* $field:ident: $atomic:ty => $value:ty = $read:ident($name:literal);)*) => {
        /// The parameters below, as last configured.
        #[derive(Debug, Default)]
        pub struct HotParams {
            $($field: $atomic,)*
        }

        impl HotParams {
            /// Copies the parameters from `config`.
            pub fn load(&self, config: &Config) {
                $(self.$field.store(config.$read($name), Ordering::Relaxed);)*
            }

            $(
                $(#[$doc])*
                pub fn $field(&self) -> $value {
                    self.$field.load(Ordering::Relaxed)
                }
            )*
        }
    };
}

hot_params! {
    /// `min-replicas-to-write`.
    min_replicas_to_write: AtomicI64 => i64 = param_int("min-replicas-to-write");
    /// `min-replicas-max-lag`, in seconds.
    min_replicas_max_lag: AtomicI64 => i64 = param_int("min-replicas-max-lag");
    /// `replica-serve-stale-data`.
    replica_serve_stale_data: AtomicBool => bool = param_bool("replica-serve-stale-data");
    /// `replica-read-only`.
    replica_read_only: AtomicBool => bool = param_bool("replica-read-only");
    /// `busy-reply-threshold` (`lua-time-limit`), in milliseconds.
    busy_reply_threshold: AtomicI64 => i64 = param_int("busy-reply-threshold");
    /// `stream-node-max-entries`.
    stream_node_max_entries: AtomicI64 => i64 = param_int("stream-node-max-entries");
    /// `stream-node-max-bytes`.
    stream_node_max_bytes: AtomicI64 => i64 = param_int("stream-node-max-bytes");
    /// `hash-max-listpack-entries` (OBJECT ENCODING and the collection scans read the
    /// five compact-encoding limits).
    hash_max_listpack_entries: AtomicI64 => i64 = param_int("hash-max-listpack-entries");
    /// `hash-max-listpack-value`.
    hash_max_listpack_value: AtomicI64 => i64 = param_int("hash-max-listpack-value");
    /// `set-max-intset-entries`.
    set_max_intset_entries: AtomicI64 => i64 = param_int("set-max-intset-entries");
    /// `zset-max-listpack-entries`.
    zset_max_listpack_entries: AtomicI64 => i64 = param_int("zset-max-listpack-entries");
    /// `zset-max-listpack-value`.
    zset_max_listpack_value: AtomicI64 => i64 = param_int("zset-max-listpack-value");
    /// `list-max-listpack-size`: a quicklist node's fill, as saved.
    list_max_listpack_size: AtomicI64 => i64 = param_int("list-max-listpack-size");
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
        assert_eq!(hot.hash_max_listpack_entries(), 512);
        assert_eq!(hot.zset_max_listpack_value(), 64);
        config
            .params
            .insert("min-replicas-to-write", "2".to_string());
        config.params.insert("replica-read-only", "no".to_string());
        hot.load(&config);
        assert_eq!(hot.min_replicas_to_write(), 2);
        assert!(!hot.replica_read_only());
    }
}
