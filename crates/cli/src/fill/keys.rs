//! Key names for fill: unique, exactly `--key-size` bytes, and in cluster mode carrying a
//! hash tag that puts each key in a chosen slot.
//!
//! Standalone keys are `k` followed by the key's index, zero-padded. Cluster keys are
//! `{tag}` followed by the padded index, where `tag` comes from a table of one short tag
//! per slot (found once by trying short alphanumeric strings), so a key generated for a
//! master's slot is sent to that master and never draws a MOVED.

use redline_resp::slot::{key_slot, SLOTS};

/// One short hash tag per slot.
#[derive(Debug)]
pub(crate) struct TagTable {
    tags: Vec<Vec<u8>>,
    longest: usize,
}

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

impl TagTable {
    /// Tries 1-, 2-, 3-character... tags until every slot has one (three characters
    /// suffice; the search takes milliseconds).
    pub(crate) fn build() -> TagTable {
        let mut tags: Vec<Vec<u8>> = vec![Vec::new(); usize::from(SLOTS)];
        let mut missing = usize::from(SLOTS);
        let mut longest = 0;
        let mut len = 1;
        while missing > 0 && len <= 4 {
            let mut candidate = vec![0usize; len];
            loop {
                let tag: Vec<u8> = candidate.iter().map(|&i| ALPHABET[i]).collect();
                let slot = usize::from(key_slot(&tag));
                if tags[slot].is_empty() {
                    tags[slot] = tag;
                    missing -= 1;
                    longest = len;
                }
                // Next candidate of this length (odometer).
                let mut pos = len;
                loop {
                    if pos == 0 {
                        break;
                    }
                    pos -= 1;
                    candidate[pos] += 1;
                    if candidate[pos] < ALPHABET.len() {
                        break;
                    }
                    candidate[pos] = 0;
                    if pos == 0 {
                        pos = usize::MAX;
                        break;
                    }
                }
                if pos == usize::MAX || missing == 0 {
                    break;
                }
            }
            len += 1;
        }
        TagTable { tags, longest }
    }

    /// The tag for `slot`.
    pub(crate) fn tag(&self, slot: u16) -> &[u8] {
        &self.tags[usize::from(slot)]
    }

    /// The longest tag (sizes are checked against it).
    pub(crate) fn longest(&self) -> usize {
        self.longest
    }
}

/// Decimal digits needed to write every index below `count`.
pub(crate) fn digits_for(count: u64) -> usize {
    count.saturating_sub(1).max(1).ilog10() as usize + 1
}

/// Writes key `index` of exactly `size` bytes into `out`: `prefix` (`k` or `{tag}`), then
/// the index zero-padded to fill the rest. The caller has checked that it fits.
pub(crate) fn write_key(out: &mut Vec<u8>, prefix: &[u8], index: u64, size: usize) {
    out.extend_from_slice(prefix);
    let digits = size - prefix.len();
    let start = out.len();
    out.resize(start + digits, b'0');
    let mut n = index;
    let mut pos = start + digits;
    while n > 0 && pos > start {
        pos -= 1;
        out[pos] = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_gets_a_tag_that_hashes_to_it() {
        let table = TagTable::build();
        for slot in 0..SLOTS {
            let tag = table.tag(slot);
            assert!(!tag.is_empty());
            let mut key = b"{".to_vec();
            key.extend_from_slice(tag);
            key.extend_from_slice(b"}0001");
            assert_eq!(key_slot(&key), slot);
        }
        assert!(table.longest() <= 3);
    }

    #[test]
    fn keys_have_the_exact_size() {
        let mut out = Vec::new();
        write_key(&mut out, b"{ab}", 42, 10);
        assert_eq!(out, b"{ab}000042");
        assert_eq!(digits_for(65_536), 5);
        assert_eq!(digits_for(1), 1);
        assert_eq!(digits_for(10), 1);
        assert_eq!(digits_for(11), 2);
    }
}
