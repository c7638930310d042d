//! DEBUG DIGEST and DIGEST-VALUE: a dataset fingerprint built the way Redis builds its
//! own (not bit-identical to redis-server's: digests compare datasets within one
//! server, which is what DEBUG DIGEST is for). Each value is folded
//! into a 20-byte digest with SHA1: "mix" (xor the element's SHA1 in, then hash the
//! digest itself: order matters) for strings and list elements, "xor" (order does not
//! matter) for set members and for hash fields and sorted-set members (each pair mixed
//! into its own digest first). Keys carry their type and an expiry mark; databases
//! their index. Equal datasets give equal digests, whatever order they were built in.

use sha1::{Digest as _, Sha1};

use super::stream::StreamId;
use super::value::{Entry, Value};
use super::Shard;
use crate::cmd::float::fmt_g17;

/// A 20-byte digest.
pub type Digest = [u8; 20];

fn xor_digest(digest: &mut Digest, data: &[u8]) {
    let hash = Sha1::digest(data);
    for (d, h) in digest.iter_mut().zip(hash.iter()) {
        *d ^= h;
    }
}

fn mix_digest(digest: &mut Digest, data: &[u8]) {
    xor_digest(digest, data);
    let hash = Sha1::digest(*digest);
    digest.copy_from_slice(&hash);
}

/// Redis's type codes (`OBJ_STRING`...), hashed big-endian.
fn type_code(value: &Value) -> u32 {
    match value {
        Value::Int(_) | Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
    }
}

/// The digest of one value (DIGEST-VALUE), expiry included.
pub fn value_digest(entry: &Entry) -> Digest {
    value_digest_from([0u8; 20], entry)
}

/// Mixes a value into `digest` (Redis's `xorObjectDigest`, which DEBUG DIGEST runs on
/// the key's digest and DIGEST-VALUE on zeros).
fn value_digest_from(mut digest: Digest, entry: &Entry) -> Digest {
    mix_digest(&mut digest, &type_code(&entry.value).to_be_bytes());
    match &entry.value {
        Value::Int(_) | Value::Str(_) => {
            entry.value.with_str(|b| mix_digest(&mut digest, b));
        }
        Value::List(list) => {
            for item in list.iter() {
                mix_digest(&mut digest, item);
            }
        }
        Value::Set(set) => {
            for member in set.iter() {
                xor_digest(&mut digest, &member);
            }
        }
        Value::ZSet(zset) => {
            for (member, score) in zset.iter() {
                let mut element = [0u8; 20];
                mix_digest(&mut element, member);
                // Redis 7.0 writes the score with `%.17g` (7.2's shortest form is
                // another text, so another digest).
                mix_digest(&mut element, fmt_g17(score).as_bytes());
                xor_digest(&mut digest, &element);
            }
        }
        Value::Hash(hash) => {
            for (field, value) in hash.iter() {
                let mut element = [0u8; 20];
                mix_digest(&mut element, field);
                mix_digest(&mut element, value);
                xor_digest(&mut digest, &element);
            }
        }
        // Redis mixes each entry's id as `ms.seq`, then its fields and values; the
        // last id and the consumer groups are not part of the digest.
        Value::Stream(stream) => {
            for (id, fields) in stream.range(StreamId::MIN, StreamId::MAX) {
                mix_digest(&mut digest, format!("{}.{}", id.ms, id.seq).as_bytes());
                for f in fields.iter() {
                    mix_digest(&mut digest, f);
                }
            }
        }
    }
    if entry.expires_at != 0 {
        xor_digest(&mut digest, b"!!expire!!");
    }
    digest
}

/// Folds every live key of `shard` into `db_digest` (the xor of key digests).
pub fn fold_shard(shard: &Shard, db_digest: &mut Digest) -> usize {
    let mut keys = 0;
    shard.for_each_stored(|key, entry| {
        let mut digest = [0u8; 20];
        mix_digest(&mut digest, key.as_bytes());
        // The value is mixed into the key's running digest, then the pair's hash xored
        // into the database's (order of keys does not matter, order within a value does).
        let digest = value_digest_from(digest, entry);
        xor_digest(db_digest, &digest);
        keys += 1;
    });
    keys
}

fn xor_digest_raw(digest: &mut Digest, other: &Digest) {
    for (d, o) in digest.iter_mut().zip(other.iter()) {
        *d ^= o;
    }
}

/// Mixes one database's folded keys into the dataset digest, as Redis does per non-empty
/// database.
pub fn mix_db(final_digest: &mut Digest, db: usize, keys_digest: &Digest) {
    mix_digest(final_digest, &(db as u32).to_be_bytes());
    xor_digest_raw(final_digest, keys_digest);
}

/// Lower-case hex of a digest.
pub fn hex(digest: &Digest) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::compact::CompactBytes;

    fn set_of(members: &[&str]) -> Entry {
        let mut set = super::super::value::SetValue::default();
        for m in members {
            set.insert(m.as_bytes());
        }
        Entry {
            value: Value::Set(set),
            expires_at: 0,
            access: 0,
        }
    }

    #[test]
    fn sets_digest_alike_in_any_order_and_expiry_counts() {
        let a = set_of(&["x", "y", "z"]);
        let mut b = set_of(&["z", "x", "y"]);
        assert_eq!(value_digest(&a), value_digest(&b));
        b.expires_at = 1;
        assert_ne!(value_digest(&a), value_digest(&b));
        assert_ne!(value_digest(&a), value_digest(&set_of(&["x", "y"])));
    }

    #[test]
    fn strings_of_either_encoding_agree() {
        let int = Entry {
            value: Value::Int(42),
            expires_at: 0,
            access: 0,
        };
        let text = Entry {
            value: Value::Str(CompactBytes::new(b"42")),
            expires_at: 0,
            access: 0,
        };
        assert_eq!(value_digest(&int), value_digest(&text));
    }

    #[test]
    fn a_sorted_set_digests_as_redis_7_0_does() {
        // DEBUG DIGEST-VALUE of `ZADD zt <score> m` on redis-server 7.0.15 (a listpack,
        // so -0 is stored as 0).
        for (score, expected) in [
            (0.1, "285a6e508750d13f749019c7cddbd43bf282cb72"),
            (1e300, "fd852e7e97fef06dbd494354e8eade3a63f3d84e"),
            (-2.25e-10, "2e9cf97b19678e434397cee137e3a790a5d4ff9c"),
            (1.5, "0b67afcf657d7aa53a5226bcca2f55ea7f2fff48"),
            (-0.0, "669bd9943b43e6b31f3ab60847ee6a38dd154aba"),
            (f64::INFINITY, "61a9a206eaf26d298dc4d0f7c1b377be6038b61f"),
        ] {
            let mut zset = super::super::zset::ZSet::default();
            zset.insert_under(b"m", score, 128, 64);
            let entry = Entry {
                value: Value::ZSet(zset),
                expires_at: 0,
                access: 0,
            };
            assert_eq!(hex(&value_digest(&entry)), expected, "score {score}");
        }
    }
}
