//! Redis Cluster key slots: CRC16-XMODEM of the key's hash tag (or of the whole key),
//! modulo 16384.
//!
//! Shared by the cluster client (routing) and the server (keyspace sharding and cluster
//! mode), so both agree on where a key lives.

/// Number of hash slots in a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// The slot of `key`, as `CLUSTER KEYSLOT` computes it.
///
/// Redis's hash-tag rule: if the key has a `{`, and a `}` after it with at least one byte
/// between them, only the bytes between the first `{` and the first `}` after it are hashed.
///
/// ```
/// use redline_resp::slot::key_slot;
///
/// assert_eq!(key_slot(b"foo"), 12182);
/// assert_eq!(key_slot(b"user:{42}:name"), key_slot(b"42"));
/// assert_eq!(key_slot(b"{}x"), key_slot(b"{}x")); // empty tag: whole key hashed
/// ```
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) & (SLOTS - 1)
}

/// The part of `key` that is hashed: the hash tag if there is a non-empty one, else the key.
pub fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = crate::parse::find_byte(b'{', key) {
        let rest = &key[open + 1..];
        if let Some(close) = crate::parse::find_byte(b'}', rest) {
            if close > 0 {
                return &rest[..close];
            }
        }
    }
    key
}

/// CRC16-XMODEM (polynomial 0x1021, initial value 0), the checksum Redis Cluster uses.
///
/// Four bytes per step, then two: a step's table lookups do not depend on each other,
/// where the byte-at-a-time form chains every lookup on the one before (see the test
/// for the derivation's check against that form). The server hashes every key it
/// touches (its shards follow slots): a 16-byte key took 150 instructions two bytes
/// at a time.
pub fn crc16(data: &[u8]) -> u16 {
    let mut quads = data.chunks_exact(4);
    let mut crc = 0u16;
    for quad in &mut quads {
        let a = usize::from((crc >> 8) as u8 ^ quad[0]);
        let b = usize::from(crc as u8 ^ quad[1]);
        crc = CRC16_TABLE_4[a]
            ^ CRC16_TABLE_3[b]
            ^ CRC16_TABLE_2[usize::from(quad[2])]
            ^ CRC16_TABLE[usize::from(quad[3])];
    }
    let mut pairs = quads.remainder().chunks_exact(2);
    for pair in &mut pairs {
        let high = usize::from((crc >> 8) as u8 ^ pair[0]);
        let low = usize::from(crc as u8 ^ pair[1]);
        crc = CRC16_TABLE_2[high] ^ CRC16_TABLE[low];
    }
    match pairs.remainder() {
        [last] => crc16_byte(crc, *last),
        _ => crc,
    }
}

/// One byte into the CRC register.
fn crc16_byte(crc: u16, byte: u8) -> u16 {
    (crc << 8) ^ CRC16_TABLE[usize::from((crc >> 8) as u8 ^ byte)]
}

/// Byte-at-a-time lookup table for [`crc16`], computed at compile time.
const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// The CRC of byte `i` followed by a zero byte: the high byte of a pair goes through the
/// register twice. Since the CRC is linear, feeding the pair `(a, b)` to a register `r`
/// gives `TABLE_2[(r >> 8) ^ a] ^ TABLE[(r & 0xff) ^ b]`.
const CRC16_TABLE_2: [u16; 256] = after_zero_byte(&CRC16_TABLE);

/// Byte `i` followed by two zero bytes, and by three: with them, four bytes `(a, b, c,
/// d)` into a register `r` give `TABLE_4[(r >> 8) ^ a] ^ TABLE_3[(r & 0xff) ^ b] ^
/// TABLE_2[c] ^ TABLE[d]` (the register is 16 bits, so it only meets the first two).
const CRC16_TABLE_3: [u16; 256] = after_zero_byte(&CRC16_TABLE_2);
const CRC16_TABLE_4: [u16; 256] = after_zero_byte(&CRC16_TABLE_3);

/// Each entry of `table` fed one more zero byte.
const fn after_zero_byte(table: &[u16; 256]) -> [u16; 256] {
    let mut next = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let once = table[i];
        next[i] = (once << 8) ^ CRC16_TABLE[(once >> 8) as usize];
        i += 1;
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_check_value() {
        // The standard check value of CRC-16/XMODEM.
        assert_eq!(crc16(b"123456789"), 0x31c3);
    }

    #[test]
    fn hash_tags_follow_redis_rule() {
        assert_eq!(hash_tag(b"user:{42}"), b"42");
        assert_eq!(hash_tag(b"a{b}c{d}"), b"b");
        assert_eq!(hash_tag(b"{}x"), b"{}x");
        assert_eq!(hash_tag(b"{a"), b"{a");
        assert_eq!(hash_tag(b"x{}{y}"), b"x{}{y}");
        assert_eq!(hash_tag(b"{{a}}"), b"{a");
        assert_eq!(hash_tag(b""), b"");
    }

    /// The four- and two-byte form against the byte-at-a-time one, on every length up
    /// to 64 and every byte value in each position of a step.
    #[test]
    fn pairwise_crc_is_the_bytewise_crc() {
        let bytewise = |data: &[u8]| data.iter().fold(0u16, |crc, &b| crc16_byte(crc, b));
        let data: Vec<u8> = (0..64u32).map(|i| (i * 131 + 7) as u8).collect();
        for len in 0..=data.len() {
            assert_eq!(crc16(&data[..len]), bytewise(&data[..len]), "{len}");
        }
        for a in 0..=255u8 {
            for b in [0u8, 1, 0x7f, 0x80, 0xff, a] {
                let pair = [0x5a, a, b];
                assert_eq!(crc16(&pair), bytewise(&pair));
                assert_eq!(crc16(&pair[1..]), bytewise(&pair[1..]));
                // Every byte value in each position of a four-byte step, after a
                // register that is not zero.
                for at in 0..4 {
                    let mut quad = [0xa5, 0x3c, 0x0f, 0xf0, 0x69, 0x96];
                    quad[1 + at] = a;
                    quad[(2 + at) % 6] = b;
                    assert_eq!(crc16(&quad), bytewise(&quad));
                }
            }
        }
    }

    #[test]
    fn known_slots() {
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b""), 0);
    }
}
