//! An ordered set kept as a list of sorted blocks (a "sorted list" of a few hundred
//! entries per block): the index of a large sorted set. Redis's skiplist counts spans
//! so that a rank (ZRANK, ZRANGE by position) costs O(log n); a B-tree cannot count, and
//! walking it to a rank costs the rank. Here a rank is a binary search for the block, the
//! sizes of the blocks before it (a few thousand additions for millions of entries) and
//! a binary search in the block. Entries are stored in the blocks themselves, contiguous:
//! fewer allocations and less memory per entry than a tree's nodes.

use std::ops::Bound;

/// Entries per block after a split; a block splits past twice this.
const LOAD: usize = 256;

/// Entries of `T` in ascending order, each at most once.
#[derive(Debug, Clone)]
pub struct SortedBlocks<T> {
    /// Non-empty, each sorted, in order: every entry of one is below every entry of the
    /// next.
    blocks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for SortedBlocks<T> {
    fn default() -> Self {
        SortedBlocks {
            blocks: Vec::new(),
            len: 0,
        }
    }
}

impl<T: Ord> SortedBlocks<T> {
    /// From entries already in strictly ascending order (not checked).
    pub fn from_sorted(mut entries: Vec<T>) -> Self {
        let len = entries.len();
        let mut blocks = Vec::with_capacity(len.div_ceil(LOAD));
        while entries.len() > LOAD {
            let rest = entries.split_off(LOAD);
            blocks.push(std::mem::replace(&mut entries, rest));
        }
        if !entries.is_empty() {
            blocks.push(entries);
        }
        SortedBlocks { blocks, len }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The block `x` belongs in: the first whose last entry is not below it (the last
    /// block when `x` is above everything). There must be a block.
    fn block_for(&self, x: &T) -> usize {
        let i = self
            .blocks
            .partition_point(|b| b.last().is_some_and(|last| last < x));
        i.min(self.blocks.len() - 1)
    }

    /// Adds `x`; false when it is there already.
    pub fn insert(&mut self, x: T) -> bool {
        if self.blocks.is_empty() {
            self.blocks.push(vec![x]);
            self.len = 1;
            return true;
        }
        let b = self.block_for(&x);
        let block = &mut self.blocks[b];
        let at = match block.binary_search(&x) {
            Ok(_) => return false,
            Err(at) => at,
        };
        block.insert(at, x);
        self.len += 1;
        if block.len() > 2 * LOAD {
            let tail = block.split_off(LOAD);
            self.blocks.insert(b + 1, tail);
        }
        true
    }

    /// Removes the entry equal to `x`; false when there is none.
    pub fn remove(&mut self, x: &T) -> bool {
        if self.blocks.is_empty() {
            return false;
        }
        let b = self.block_for(x);
        let Ok(at) = self.blocks[b].binary_search(x) else {
            return false;
        };
        self.blocks[b].remove(at);
        self.len -= 1;
        self.rebalance(b);
        true
    }

    /// After a removal from block `b`: an empty block goes, a small one joins a
    /// neighbour that has room, so that blocks stay few.
    fn rebalance(&mut self, b: usize) {
        let len = self.blocks[b].len();
        if len == 0 {
            self.blocks.remove(b);
            return;
        }
        if len >= LOAD / 2 {
            return;
        }
        if b + 1 < self.blocks.len() && len + self.blocks[b + 1].len() <= 2 * LOAD {
            let next = self.blocks.remove(b + 1);
            self.blocks[b].extend(next);
        } else if b > 0 && len + self.blocks[b - 1].len() <= 2 * LOAD {
            let this = self.blocks.remove(b);
            self.blocks[b - 1].extend(this);
        }
    }

    /// Number of entries below `x`.
    pub fn rank(&self, x: &T) -> usize {
        if self.blocks.is_empty() {
            return 0;
        }
        let b = self.block_for(x);
        let before: usize = self.blocks[..b].iter().map(Vec::len).sum();
        before + self.blocks[b].partition_point(|e| e < x)
    }

    /// The position a bound starts (for a lower bound) or ends (for an upper bound, as
    /// an exclusive end) a range at.
    fn position(&self, bound: Bound<&T>, lower: bool) -> usize {
        match (bound, lower) {
            (Bound::Unbounded, true) => 0,
            (Bound::Unbounded, false) => self.len,
            (Bound::Included(x), true) | (Bound::Excluded(x), false) => self.rank(x),
            (Bound::Excluded(x), true) | (Bound::Included(x), false) => {
                self.rank(x) + usize::from(self.contains(x))
            }
        }
    }

    /// Whether an entry equals `x`.
    pub fn contains(&self, x: &T) -> bool {
        !self.blocks.is_empty() && self.blocks[self.block_for(x)].binary_search(x).is_ok()
    }

    /// Positions `start..end` of the entries within the bounds (empty when they cross).
    pub fn positions(&self, lower: Bound<&T>, upper: Bound<&T>) -> (usize, usize) {
        let start = self.position(lower, true);
        let end = self.position(upper, false);
        (start, end.max(start))
    }

    /// The block and offset of position `pos` (at most `len`).
    fn locate(&self, mut pos: usize) -> (usize, usize) {
        for (i, block) in self.blocks.iter().enumerate() {
            if pos < block.len() {
                return (i, pos);
            }
            pos -= block.len();
        }
        match self.blocks.len() {
            0 => (0, 0),
            n => (n - 1, self.blocks[n - 1].len()),
        }
    }

    /// The entries at positions `start..end`, ascending (`rev()` for descending).
    pub fn slice(&self, start: usize, end: usize) -> impl DoubleEndedIterator<Item = &T> + '_ {
        let end = end.min(self.len);
        let start = start.min(end);
        let (first, middle, last): (&[T], &[Vec<T>], &[T]) = if start == end {
            (&[], &[], &[])
        } else {
            let (bs, os) = self.locate(start);
            let (be, oe) = self.locate(end);
            if bs == be {
                (&self.blocks[bs][os..oe], &[], &[])
            } else {
                (
                    &self.blocks[bs][os..],
                    &self.blocks[bs + 1..be],
                    &self.blocks[be][..oe],
                )
            }
        };
        first
            .iter()
            .chain(middle.iter().flatten())
            .chain(last.iter())
    }

    /// The lowest entry.
    pub fn first(&self) -> Option<&T> {
        self.blocks.first()?.first()
    }

    /// The highest entry.
    pub fn last(&self) -> Option<&T> {
        self.blocks.last()?.last()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Inserts and removes (enough to split and join blocks) leave what a B-tree
        /// set holds, and ranks, positions and slices agree with it.
        #[test]
        fn behaves_as_an_ordered_set(
            ops in proptest::collection::vec((any::<bool>(), 0u16..3000), 1..4000),
            probes in proptest::collection::vec(0u16..3100, 1..20),
        ) {
            let mut blocks = SortedBlocks::default();
            let mut model = BTreeSet::new();
            for (add, x) in ops {
                if add {
                    prop_assert_eq!(blocks.insert(x), model.insert(x));
                } else {
                    prop_assert_eq!(blocks.remove(&x), model.remove(&x));
                }
            }
            prop_assert_eq!(blocks.len(), model.len());
            prop_assert!(blocks.slice(0, blocks.len()).eq(model.iter()));
            prop_assert!(blocks.slice(0, blocks.len()).rev().eq(model.iter().rev()));
            prop_assert_eq!(blocks.first(), model.first());
            prop_assert_eq!(blocks.last(), model.last());
            for &p in &probes {
                prop_assert_eq!(blocks.rank(&p), model.range(..p).count());
                prop_assert_eq!(blocks.contains(&p), model.contains(&p));
            }
            for pair in probes.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                for (lower, upper) in [
                    (Bound::Included(&a), Bound::Excluded(&b)),
                    (Bound::Excluded(&a), Bound::Included(&b)),
                    (Bound::Unbounded, Bound::Included(&b)),
                    (Bound::Included(&a), Bound::Unbounded),
                ] {
                    let (start, end) = blocks.positions(lower, upper);
                    let found: Vec<u16> = blocks.slice(start, end).copied().collect();
                    let want: Vec<u16> = model
                        .iter()
                        .copied()
                        .filter(|x| match lower {
                            Bound::Included(a) => x >= a,
                            Bound::Excluded(a) => x > a,
                            Bound::Unbounded => true,
                        })
                        .filter(|x| match upper {
                            Bound::Included(b) => x <= b,
                            Bound::Excluded(b) => x < b,
                            Bound::Unbounded => true,
                        })
                        .collect();
                    prop_assert_eq!(&found, &want);
                    let back: Vec<u16> = blocks.slice(start, end).rev().copied().collect();
                    prop_assert!(back.iter().eq(want.iter().rev()));
                }
                let (s, e) = (usize::from(a.min(b)), usize::from(a.max(b)));
                let sliced: Vec<u16> = blocks.slice(s, e).copied().collect();
                let want: Vec<u16> = model.iter().copied().skip(s).take(e - s).collect();
                prop_assert_eq!(sliced, want);
            }
        }

        #[test]
        fn built_from_sorted_as_inserted(set in proptest::collection::btree_set(any::<u16>(), 0..2000)) {
            let blocks = SortedBlocks::from_sorted(set.iter().copied().collect());
            prop_assert_eq!(blocks.len(), set.len());
            prop_assert!(blocks.slice(0, blocks.len()).eq(set.iter()));
            for x in set.iter().step_by(97) {
                prop_assert_eq!(blocks.rank(x), set.range(..x).count());
            }
        }
    }
}
