//! Who writes which keys: the key indices `0..keys` are cut into one contiguous range
//! per master, in proportion to the slots it serves, and each master's range into one
//! range per connection.

/// One server to fill and the slots it serves (empty for a standalone server).
#[derive(Debug, Clone)]
pub(crate) struct Master {
    /// Host to dial.
    pub(crate) host: String,
    /// Port to dial.
    pub(crate) port: u16,
    /// Slots this master serves, in order; keys cycle over them.
    pub(crate) slots: Vec<u16>,
}

/// One connection's share of the work.
#[derive(Debug, Clone)]
pub(crate) struct Share {
    /// Index into the masters list.
    pub(crate) master: usize,
    /// First key index (inclusive).
    pub(crate) start: u64,
    /// Last key index (exclusive).
    pub(crate) end: u64,
    /// Key index where this master's range starts (slot cycling counts from it).
    pub(crate) master_start: u64,
}

/// Cuts `keys` over `masters` (by slot count; equally when standalone) and over
/// `per_master` connections each.
pub(crate) fn shares(masters: &[Master], keys: u64, per_master: usize) -> Vec<Share> {
    let weights: Vec<u64> = masters
        .iter()
        .map(|m| {
            if m.slots.is_empty() {
                1
            } else {
                m.slots.len() as u64
            }
        })
        .collect();
    let total: u64 = weights.iter().sum::<u64>().max(1);
    let mut out = Vec::new();
    let mut next = 0u64;
    let mut given = 0u64;
    let mut weight_so_far = 0u64;
    for (i, &w) in weights.iter().enumerate() {
        weight_so_far += w;
        // Cumulative rounding: the last master ends exactly at `keys`.
        let upto = (u128::from(keys) * u128::from(weight_so_far) / u128::from(total)) as u64;
        let count = upto - given;
        given = upto;
        let master_start = next;
        let conns = per_master.max(1) as u64;
        for c in 0..conns {
            let start = master_start + count * c / conns;
            let end = master_start + count * (c + 1) / conns;
            if end > start {
                out.push(Share {
                    master: i,
                    start,
                    end,
                    master_start,
                });
            }
        }
        next = master_start + count;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn master(slots: std::ops::Range<u16>) -> Master {
        Master {
            host: "h".into(),
            port: 1,
            slots: slots.collect(),
        }
    }

    #[test]
    fn proportional_and_complete() {
        let masters = [master(0..5461), master(5461..10923), master(10923..16384)];
        let shares = shares(&masters, 65_536, 4);
        assert_eq!(shares.len(), 12);
        let total: u64 = shares.iter().map(|s| s.end - s.start).sum();
        assert_eq!(total, 65_536);
        let first: u64 = shares
            .iter()
            .filter(|s| s.master == 0)
            .map(|s| s.end - s.start)
            .sum();
        assert_eq!(first, 65_536 * 5461 / 16384);
        // Ranges are contiguous and disjoint.
        for pair in shares.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
    }
}
