//! DUMP and RESTORE (Redis's `cluster.c`): a key's value as an RDB payload, and back.
//!
//! The serialisation itself is [`crate::persist::rdb`]. RESTORE parses its options,
//! its TTL and the payload before locking the key's shard, so a large payload is decoded
//! without holding the lock; the errors are then answered in Redis's order (options,
//! existing key, TTL, payload checksum, payload contents).

use crate::notify::{event, NotifyClass};
use bytes::Bytes;
use redline_resp::encode;

use super::args::{int, is};
use super::reply::{ok, CmdError, CmdResult, SYNTAX};
use super::{Ctx, Handler};
use crate::acl::user::Sanitize;
use crate::persist::rdb;
use crate::store::encoding::{settle_loaded, EncodingLimits};
use crate::store::now_ms;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("dump", dump),
    ("restore", restore),
    // What a cluster node sends while migrating a slot: RESTORE, allowed on an importing
    // slot. Without cluster mode it is RESTORE.
    ("restore-asking", restore),
];

const BUSYKEY: CmdError = CmdError::Static("BUSYKEY Target key name already exists.");
const BAD_TTL: CmdError = CmdError::Static("ERR Invalid TTL value, must be >= 0");
const BAD_IDLETIME: CmdError = CmdError::Static("ERR Invalid IDLETIME value, must be >= 0");
const BAD_FREQ: CmdError = CmdError::Static("ERR Invalid FREQ value, must be >= 0 and <= 255");

fn dump(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let key = &args[1];
    let proto = ctx.proto();
    let limits = crate::store::encoding::EncodingLimits::now(&ctx.shared.hot);
    let mut shard = ctx.lock(key);
    match shard.get(key) {
        Some(entry) => encode::write_bulk(ctx.out, &rdb::dump_payload(&entry.value, &limits)),
        None => encode::write_null_bulk(ctx.out, proto),
    }
    Ok(())
}

/// Whether RESTORE checks a payload deeply (`sanitize-dump-payload`): `yes` always,
/// `clients` unless the command comes from our master or a user with
/// `skip-sanitize-payload`, `no` never.
fn deep_sanitization(ctx: &Ctx<'_>) -> bool {
    match ctx.shared.config.read().param("sanitize-dump-payload") {
        "yes" => true,
        "clients" => {
            let acl = &ctx.shared.acl;
            let user = ctx.client.user.as_ref().unwrap_or(acl.default_user());
            !ctx.client.is_master && user.rules().sanitize != Sanitize::Skip
        }
        _ => false,
    }
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency].
fn restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (mut replace, mut absttl) = (false, false);
    // Validated like Redis, then unused: this server keeps no LRU/LFU data per key.
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut j = 4;
    while j < args.len() {
        let has_value = j + 1 < args.len();
        if is(&args[j], "replace") {
            replace = true;
        } else if is(&args[j], "absttl") {
            absttl = true;
        } else if is(&args[j], "idletime") && has_value && freq.is_none() {
            let n = int(&args[j + 1])?;
            if n < 0 {
                return Err(BAD_IDLETIME);
            }
            idle = Some(n);
            j += 1;
        } else if is(&args[j], "freq") && has_value && idle.is_none() {
            let n = int(&args[j + 1])?;
            if !(0..=255).contains(&n) {
                return Err(BAD_FREQ);
            }
            freq = Some(n);
            j += 1;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    let ttl = int(&args[2]);
    let value = match ttl {
        Ok(ttl) if ttl >= 0 => {
            let skip = &ctx.shared.persistence.skip_checksum_validation;
            let verify_crc = !skip.load(std::sync::atomic::Ordering::Relaxed);
            Some(rdb::restore_payload_with(
                &args[3],
                verify_crc,
                deep_sanitization(ctx),
            ))
        }
        _ => None,
    };
    let key = &args[1];
    let mut shard = ctx.lock(key);
    if !replace && shard.contains(key) {
        return Err(BUSYKEY);
    }
    let ttl = ttl?;
    let mut value = match value {
        Some(Ok(value)) => value,
        Some(Err(e)) => {
            if let rdb::PayloadError::BadData(c) = e {
                // Redis logs why a payload was refused (its `rdbReportError`), not
                // for an empty collection, which it refuses without a report.
                if c != rdb::decode::EMPTY {
                    tracing::warn!("Internal error in RDB reading -> {}", c.0);
                }
            }
            return Err(CmdError::Static(e.text()));
        }
        None => return Err(BAD_TTL),
    };
    settle_loaded(&mut value, &EncodingLimits::now(&ctx.shared.hot));
    let now = now_ms() as i64;
    // Redis adds without an overflow check; a wrapped deadline is in the past.
    let deadline = if ttl != 0 && !absttl {
        ttl.wrapping_add(now)
    } else {
        ttl
    };
    if deadline != 0 && super::keys::already_expired(ctx, deadline) {
        // Already expired: the old value (with REPLACE) goes, nothing is created.
        if replace && shard.remove(key).is_some() {
            event(ctx, NotifyClass::Generic, "del", key);
        }
    } else {
        // Added anew even over an old value (Redis deletes it first): its waiters look.
        shard.signal_ready(key, &value);
        shard.insert(key, value, deadline as u64);
        let eviction = &ctx.shared.store.events().eviction;
        let access = match (idle, freq) {
            (Some(idle), _) if !eviction.policy().is_lfu() => Some(eviction.with_idle(idle as u64)),
            (_, Some(freq)) if eviction.policy().is_lfu() => {
                Some(eviction.with_freq(u8::try_from(freq).unwrap_or(u8::MAX)))
            }
            // A new object, as Redis's (its REPLACE deletes the old key first).
            _ => None,
        };
        shard.set_access(key, access.unwrap_or_else(|| eviction.fresh()));
        event(ctx, NotifyClass::Generic, "restore", key);
    }
    ok(ctx.out);
    Ok(())
}
