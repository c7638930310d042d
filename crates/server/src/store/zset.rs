//! Sorted sets: member → score for lookups, plus the members ordered by (score, member)
//! for ranges. Ranks walk the ordered set (O(rank)); an order-statistic tree would make
//! them O(log n) and is the planned replacement.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use indexmap::IndexMap;

use super::compact::CompactBytes;
use super::value::{Hasher, Peaks};

/// A score with the total order Redis uses (scores are never NaN).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score(pub f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A sorted set.
#[derive(Debug, Clone, Default)]
pub struct ZSet {
    scores: IndexMap<CompactBytes, f64, Hasher>,
    order: BTreeSet<(Score, CompactBytes)>,
    /// What decides Redis's encoding (see [`ZSet::is_listpack`]).
    peaks: Peaks,
}

impl ZSet {
    /// A set of `members` at once (a load): both indexes sized for them, the ordered one
    /// built in one pass, with full nodes, rather than split on the way as inserts do.
    /// `None` when a member repeats.
    pub fn from_members(members: Vec<(CompactBytes, f64)>) -> Option<ZSet> {
        let mut scores = IndexMap::with_capacity_and_hasher(members.len(), Hasher::default());
        let mut peaks = Peaks::default();
        let mut order = Vec::with_capacity(members.len());
        for (member, score) in members {
            // -0.0 and 0.0 are the same score to Redis (see `insert`).
            let score = if score == 0.0 { 0.0 } else { score };
            peaks.saw(scores.len() + 1, member.len());
            if scores.insert(member.clone(), score).is_some() {
                return None;
            }
            order.push((Score(score), member));
        }
        // Mostly in order already (Redis writes them sorted): the sort only checks.
        order.sort_unstable();
        Some(ZSet {
            scores,
            order: order.into_iter().collect(),
            peaks,
        })
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The member's score.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Adds or updates a member; returns the previous score.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        // -0.0 and 0.0 are the same score to Redis; keep one spelling so ordering agrees.
        let score = if score == 0.0 { 0.0 } else { score };
        let key = CompactBytes::new(member);
        let old = self.scores.insert(key.clone(), score);
        self.peaks.saw(self.scores.len(), member.len());
        if let Some(old) = old {
            self.order.remove(&(Score(old), key.clone()));
        }
        self.order.insert((Score(score), key));
        old
    }

    /// Whether Redis would still hold it as a `listpack` under these limits: it converts
    /// to a skiplist once the set outgrows them, and never back.
    pub fn is_listpack(&self, max_entries: usize, max_value: usize) -> bool {
        let now = Peaks {
            entries: self.len(),
            longest: self.scores.keys().map(|m| m.len()).max().unwrap_or(0),
        };
        self.peaks.within(now, max_entries, max_value)
    }

    /// Removes a member; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let (key, score) = self.scores.swap_remove_entry(member)?;
        self.order.remove(&(Score(score), key));
        Some(score)
    }

    /// Members in ascending (score, member) order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        self.order.iter().map(|(s, m)| (m.as_bytes(), s.0))
    }

    /// The member at `index` in the lookup table (random picks and scan cursors; not
    /// score order).
    pub fn get_index(&self, index: usize) -> Option<(&[u8], f64)> {
        self.scores
            .get_index(index)
            .map(|(m, s)| (m.as_bytes(), *s))
    }

    /// Members with a score of at least `min`, in ascending (score, member) order.
    pub fn range_from(&self, min: f64) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        self.order
            .range((Score(min), CompactBytes::new(b""))..)
            .map(|(s, m)| (m.as_bytes(), s.0))
    }

    /// 0-based rank of a member in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        let key = CompactBytes::new(member);
        Some(self.order.range(..(Score(score), key)).count())
    }
}
