//! Sorted sets: member → score for lookups, plus the members ordered by (score, member)
//! for ranges and ranks (a small set is only its ordered buffer; see [`ZSet`]).

use std::cmp::Ordering;
use std::ops::Bound;

use super::incremental_map::IncrementalMap;

use super::by_position::{random_below, ByPosition};
use super::compact::CompactBytes;
use super::packed_members::{self, PackedMembers};
use super::sorted_blocks::SortedBlocks;
use super::value::{ElementBytes, Hasher, Peaks};

/// A score with the order Redis uses: by value, -0 and 0 equal (C's `<` in a
/// skiplist's walk, so they tie and the member decides); scores are never NaN.
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
        self.0
            .partial_cmp(&other.0)
            .unwrap_or_else(|| self.0.total_cmp(&other.0))
    }
}

/// A score bound of a range query: a value, and whether a score equal to it is out
/// (`(` in Redis's syntax).
#[derive(Debug, Clone, Copy)]
pub struct ScoreBound {
    /// The bound.
    pub value: f64,
    /// A score equal to `value` is outside the range.
    pub exclusive: bool,
}

/// A member and its score, from an index entry.
fn pair((s, m): &(Score, CompactBytes)) -> (&[u8], f64) {
    (m.as_bytes(), s.0)
}

/// The float after `x` (`f64::next_up`, newer than this crate's minimum Rust).
fn next_up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let bits = x.to_bits();
    f64::from_bits(if x > 0.0 { bits + 1 } else { bits - 1 })
}

/// The scores from `min` to `max` as a half-open range of (score, "") keys, each side
/// unbounded when `None`: every score lies between two adjacent floats, so "above x"
/// starts at the float after x and "up to x" ends before it. `None` when it is empty.
fn score_keys(min: ScoreBound, max: ScoreBound) -> Option<(Option<Score>, Option<Score>)> {
    let lower = match (min.exclusive, min.value) {
        (true, f64::INFINITY) => return None,
        (false, f64::NEG_INFINITY) => None,
        (true, v) => Some(next_up(normal(v).0)),
        (false, v) => Some(normal(v).0),
    };
    let upper = match (max.exclusive, max.value) {
        (true, f64::NEG_INFINITY) => return None,
        (false, f64::INFINITY) => None,
        (true, v) => Some(normal(v).0),
        (false, v) => Some(next_up(normal(v).0)),
    };
    if let (Some(lo), Some(hi)) = (lower, upper) {
        if lo.total_cmp(&hi).is_ge() {
            return None;
        }
    }
    Some((lower.map(Score), upper.map(Score)))
}

/// Members a small set holds before it takes its indexes (Redis's default
/// `zset-max-listpack-entries`).
pub const SMALL_MAX: usize = 128;

/// A sorted set.
///
/// Its [`Peaks`] (what decides Redis's encoding, see [`ZSet::is_listpack`]) live in the
/// packed buffer's header or beside the indexes, so a small set is one allocation,
/// which a key's entry holds without a box.
#[derive(Debug, Clone, Default)]
pub struct ZSet {
    repr: Repr,
}

/// How the members are held. A small set is one buffer in (score, member) order
/// ([`PackedMembers`]), as Redis keeps one in a listpack. Past [`SMALL_MAX`] members, or
/// with a member longer than [`packed_members::MAX_LEN`], it takes the indexes for good
/// (as Redis converts to a skiplist and never back).
#[derive(Debug, Clone)]
enum Repr {
    Small(PackedMembers),
    /// Boxed: a small set, the common case, stays two words wide.
    Large(Box<Indexes>),
}

/// A large set's indexes.
#[derive(Debug, Clone)]
struct Indexes {
    scores: IncrementalMap<CompactBytes, f64, Hasher>,
    order: Order,
    peaks: Peaks,
    /// Its members' bytes together.
    bytes: ElementBytes,
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Small(PackedMembers::default())
    }
}

/// Where the members with a score between `min` and `max` start and end: in a small
/// set's buffer, and in a large set's ordered index.
fn score_span(
    min: ScoreBound,
    max: ScoreBound,
) -> (
    impl Fn(&PackedMembers) -> std::ops::Range<usize>,
    impl Fn(&Order) -> (usize, usize),
) {
    // `None`: an empty range.
    let keys = score_keys(min, max);
    let small = move |p: &PackedMembers| {
        let Some((lower, upper)) = keys else {
            return 0..0;
        };
        let start = lower.map_or(0, |lo| p.partition_point(|_, s| Score(s) < lo));
        let end = upper.map_or(p.len(), |hi| p.partition_point(|_, s| Score(s) < hi));
        start..end.max(start)
    };
    let large = move |order: &Order| {
        let Some((lower, upper)) = keys else {
            return (0, 0);
        };
        let key = |s: Score| (s, CompactBytes::new(b""));
        let (lower, upper) = (lower.map(key), upper.map(key));
        order.positions(
            lower.as_ref().map_or(Bound::Unbounded, Bound::Included),
            upper.as_ref().map_or(Bound::Unbounded, Bound::Excluded),
        )
    };
    (small, large)
}

/// A large set's members in (score, member) order.
type Order = SortedBlocks<(Score, CompactBytes)>;

/// A bound's score with one spelling of zero, so the float after it is the one above 0.
fn normal(score: f64) -> Score {
    Score(if score == 0.0 { 0.0 } else { score })
}

/// Whether `score` is -0: Redis keeps its sign in a skiplist and prints it, a listpack
/// stores a whole score as an integer and reads it back as 0.
fn is_negative_zero(score: f64) -> bool {
    score == 0.0 && score.is_sign_negative()
}

impl ZSet {
    /// A set of `members` at once (a load): sized for them, ordered in one sort, the
    /// indexes of a large one built in one pass. `None` when a member repeats.
    pub fn from_members(members: Vec<(CompactBytes, f64)>) -> Option<ZSet> {
        let mut peaks = Peaks::default();
        for (i, (member, _)) in members.iter().enumerate() {
            peaks.saw(i + 1, member.len());
        }
        let mut order: Vec<(Score, CompactBytes)> = members
            .into_iter()
            .map(|(member, score)| (Score(score), member))
            .collect();
        // Mostly in order already (Redis writes them sorted): the sort only checks.
        order.sort_unstable();
        let packable =
            order.len() <= SMALL_MAX && order.iter().all(|(_, m)| packed_members::fits(m));
        let repr = if packable {
            let mut by_member: Vec<&[u8]> = order.iter().map(|(_, m)| m.as_bytes()).collect();
            by_member.sort_unstable();
            if by_member.windows(2).any(|w| w[0] == w[1]) {
                return None;
            }
            Repr::Small(PackedMembers::from_sorted(order.iter().map(pair), peaks))
        } else {
            Self::indexed(order, peaks)?
        };
        Some(ZSet { repr })
    }

    /// The indexes of a large set, from its entries in order; `None` when a member
    /// repeats.
    fn indexed(order: Vec<(Score, CompactBytes)>, peaks: Peaks) -> Option<Repr> {
        let mut scores: IncrementalMap<_, _, Hasher> = IncrementalMap::with_capacity(order.len());
        let mut bytes = ElementBytes::default();
        for (score, member) in &order {
            if scores.insert(member.clone(), score.0).is_some() {
                return None;
            }
            bytes.add(member.len());
        }
        Some(Repr::Large(Box::new(Indexes {
            scores,
            order: SortedBlocks::from_sorted(order),
            peaks,
            bytes,
        })))
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Small(p) => p.len(),
            Repr::Large(ix) => ix.order.len(),
        }
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The member's score.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.repr {
            Repr::Small(p) => p.get(p.find(member)?).map(|(_, s)| s),
            Repr::Large(ix) => ix.scores.get(member).copied(),
        }
    }

    /// Adds or updates a member; returns the previous score. The score is kept as
    /// given, -0 included (see [`ZSet::insert_under`] for what Redis stores).
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        let score = Score(score);
        if !packed_members::fits(member) {
            // A member too long to pack: the indexes, for good.
            self.take_indexes();
        }
        let old = match &mut self.repr {
            Repr::Small(p) => {
                let old = p.find(member).and_then(|i| p.remove_at(i));
                let at = p.partition_point(|m, s| (Score(s), m) < (score, member));
                p.insert_at(at, member, score.0);
                old
            }
            Repr::Large(ix) => {
                let Indexes {
                    scores,
                    order,
                    bytes,
                    ..
                } = &mut **ix;
                let key = CompactBytes::new(member);
                let old = scores.insert(key.clone(), score.0);
                match old {
                    Some(old) => {
                        order.remove(&(Score(old), key.clone()));
                    }
                    None => bytes.add(member.len()),
                }
                order.insert((score, key));
                old
            }
        };
        // Redis weighs a conversion when a member is added, not when a score changes.
        if old.is_none() {
            let len = self.len();
            match &mut self.repr {
                Repr::Small(p) => p.saw(len, member.len()),
                Repr::Large(ix) => ix.peaks.saw(len, member.len()),
            }
        }
        if self.len() > SMALL_MAX {
            self.take_indexes();
        }
        old
    }

    /// Adds or updates a member as Redis 7.0 stores it under these limits: a listpack
    /// holds a whole score as an integer, so -0 becomes 0 there, while a skiplist keeps
    /// the sign. Redis converts before adding the member that outgrows the listpack, so
    /// that member keeps its sign too: what counts is the encoding after the addition.
    pub fn insert_under(
        &mut self,
        member: &[u8],
        score: f64,
        max_entries: usize,
        max_value: usize,
    ) -> Option<f64> {
        let old = self.insert(member, score);
        if is_negative_zero(score) && self.is_listpack(max_entries, max_value) {
            self.insert(member, 0.0);
        }
        old
    }

    /// What Redis keeps of a set it built or loaded as a skiplist and then converted to
    /// a listpack when it fits these limits (the *STORE commands, loading a `ZSET_2`):
    /// its -0 scores become 0. A set that stays a skiplist keeps them.
    pub fn settle_zero_signs(&mut self, max_entries: usize, max_value: usize) {
        if !self.is_listpack(max_entries, max_value) {
            return;
        }
        let zero = ScoreBound {
            value: 0.0,
            exclusive: false,
        };
        let signed: Vec<Vec<u8>> = self
            .by_score(zero, zero)
            .filter(|(_, s)| is_negative_zero(*s))
            .map(|(m, _)| m.to_vec())
            .collect();
        for member in signed {
            self.insert(&member, 0.0);
        }
    }

    /// Turns a small set into a large one (nothing when it is one already).
    fn take_indexes(&mut self) {
        if let Repr::Small(p) = &self.repr {
            let order: Vec<(Score, CompactBytes)> = p
                .range(0..p.len())
                .map(|(m, s)| (Score(s), CompactBytes::new(m)))
                .collect();
            // Its members are distinct, so the indexes are always made.
            if let Some(large) = Self::indexed(order, p.peaks()) {
                self.repr = large;
            }
        }
    }

    /// Holds it in the large form from now on, as it is: ZSCAN pages a sorted set Redis
    /// keeps as a skiplist by positions, which the large form's map keeps put and the
    /// packed form does not (an insertion moves every later member). Its encoding
    /// history is unchanged.
    pub fn unpack(&mut self) {
        self.take_indexes();
    }

    /// Converts it to the skiplist form for good, whatever its size: what Redis's SORT
    /// does to a sorted set before reading it (OBJECT ENCODING says `skiplist` after).
    pub fn convert_to_skiplist(&mut self) {
        self.take_indexes();
        if let Repr::Large(ix) = &mut self.repr {
            ix.bytes.mark_converted();
        }
    }

    /// Whether Redis would still hold it as a `listpack` under these limits: it converts
    /// to a skiplist once the set outgrows them, and never back.
    pub fn is_listpack(&self, max_entries: usize, max_value: usize) -> bool {
        // Every addition passes `insert` (or `from_members`), so the peaks cover what was
        // added since the limits last changed (`settle_encoding` kept the rest): no walk
        // over the members (OBJECT ENCODING and each ZSCAN page ask).
        let outgrew = matches!(&self.repr, Repr::Large(ix) if ix.bytes.outgrew_listpack());
        !outgrew && self.peaks().within(max_entries, max_value)
    }

    /// Removes a member; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.repr {
            Repr::Small(p) => {
                let i = p.find(member)?;
                p.remove_at(i)
            }
            Repr::Large(ix) => {
                let Indexes {
                    scores,
                    order,
                    bytes,
                    ..
                } = &mut **ix;
                let (key, score) = scores.vacate_key(member)?;
                bytes.remove(key.len());
                order.remove(&(Score(score), key));
                Some(score)
            }
        }
    }

    /// Members in ascending (score, member) order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        self.span(|p| 0..p.len(), |order| (0, order.len()))
    }

    /// The entries at the positions `small` picks in a small set's buffer, or `large`
    /// in a large set's index, as (member, score), ascending (`rev()` for descending).
    fn span(
        &self,
        small: impl FnOnce(&PackedMembers) -> std::ops::Range<usize>,
        large: impl FnOnce(&Order) -> (usize, usize),
    ) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        let (small, large) = match &self.repr {
            Repr::Small(p) => (Some(p.range(small(p))), None),
            Repr::Large(ix) => {
                let order = &ix.order;
                let (start, end) = large(order);
                (None, Some(order.slice(start, end)))
            }
        };
        small
            .into_iter()
            .flatten()
            .chain(large.into_iter().flatten().map(pair))
    }

    /// The member at `index` (random picks and ZSCAN; in no promised order; `None`
    /// where it is vacant).
    pub fn get_index(&self, index: usize) -> Option<(&[u8], f64)> {
        match &self.repr {
            Repr::Small(p) => p.get(index),
            Repr::Large(ix) => ix.scores.get_index(index).map(|(m, s)| (m.as_bytes(), *s)),
        }
    }

    /// Members with a score of at least `min`, in ascending (score, member) order.
    pub fn range_from(&self, min: f64) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        let bound = |value| ScoreBound {
            value,
            exclusive: false,
        };
        self.by_score(bound(min), bound(f64::INFINITY))
    }

    /// Members with ranks `start..end` (0-based, clamped to the length), ascending
    /// (`rev()` for descending).
    pub fn by_rank(
        &self,
        start: usize,
        end: usize,
    ) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        let (start, end) = (start.min(end), end);
        self.span(
            move |p: &PackedMembers| start.min(p.len())..end.min(p.len()),
            move |_: &Order| (start, end),
        )
    }

    /// Members with a score between `min` and `max`, in ascending (score, member) order
    /// (`rev()` for descending), found without walking the members before them.
    pub fn by_score(
        &self,
        min: ScoreBound,
        max: ScoreBound,
    ) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        let (small, large) = score_span(min, max);
        self.span(small, large)
    }

    /// How many members have a score between `min` and `max` (ZCOUNT), from where the
    /// range starts and ends, without walking it.
    pub fn count_by_score(&self, min: ScoreBound, max: ScoreBound) -> usize {
        let (small, large) = score_span(min, max);
        match &self.repr {
            Repr::Small(p) => small(p).len(),
            Repr::Large(ix) => {
                let (start, end) = large(&ix.order);
                end.saturating_sub(start)
            }
        }
    }

    /// Members between two member bounds, ascending (`rev()` for descending), found in
    /// the ordered index: for a large set whose members all have one score, what lex
    /// ranges are meant for. `None` otherwise (a small set, or mixed scores: the
    /// caller filters the members).
    pub fn by_lex<'a>(
        &'a self,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
    ) -> Option<impl DoubleEndedIterator<Item = (&'a [u8], f64)> + 'a> {
        let (order, start, end) = self.lex_span(lower, upper)?;
        Some(order.slice(start, end).map(pair))
    }

    /// How many members lie between two member bounds (ZLEXCOUNT), under the same
    /// condition as [`ZSet::by_lex`], without walking them.
    pub fn count_by_lex(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Option<usize> {
        let (_, start, end) = self.lex_span(lower, upper)?;
        Some(end.saturating_sub(start))
    }

    /// Where [`ZSet::by_lex`]'s members start and end in the ordered index.
    fn lex_span(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> Option<(&Order, usize, usize)> {
        let Repr::Large(ix) = &self.repr else {
            return None;
        };
        let order = &ix.order;
        let (first, last) = (order.first()?, order.last()?);
        if first.0 != last.0 {
            return None;
        }
        let score = first.0;
        let key = |b: Bound<&[u8]>| b.map(|m| (score, CompactBytes::new(m)));
        let (lower, upper) = (key(lower), key(upper));
        let (start, end) = order.positions(lower.as_ref(), upper.as_ref());
        Some((order, start, end))
    }

    /// 0-based rank of a member in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.repr {
            Repr::Small(p) => p.find(member),
            Repr::Large(ix) => {
                let Indexes { scores, order, .. } = &**ix;
                let score = *scores.get(member)?;
                Some(order.rank(&(Score(score), CompactBytes::new(member))))
            }
        }
    }

    /// Loaded from a listpack or ziplist: Redis weighs only its count against the
    /// limits then, not its members' lengths (`rdbLoadObject`).
    pub fn loaded_as_listpack(&mut self) {
        self.set_peaks(Peaks::new(self.len(), 0));
    }

    /// Keeps the encoding Redis gave it under the limits in force until now, before
    /// they change (see [`Peaks::settled`]).
    pub fn settle_encoding(&mut self, max_entries: usize, max_value: usize) {
        // Past a listpack's safety size it stays converted by its bytes' own flag.
        self.set_peaks(self.peaks().settled(max_entries, max_value));
    }

    /// What Redis's encoding depends on (see [`Peaks`]).
    fn peaks(&self) -> Peaks {
        match &self.repr {
            Repr::Small(p) => p.peaks(),
            Repr::Large(ix) => ix.peaks,
        }
    }

    fn set_peaks(&mut self, peaks: Peaks) {
        match &mut self.repr {
            Repr::Small(p) => p.set_peaks(peaks),
            Repr::Large(ix) => ix.peaks = peaks,
        }
    }

    /// Bytes it holds on the heap, estimated (MEMORY USAGE), from `samples` of its
    /// members ([`super::sampled::sampled_sum`]).
    pub fn heap_size(&self, samples: usize) -> usize {
        let heap = |m: &[u8]| {
            if m.len() > super::compact::INLINE_CAPACITY {
                m.len()
            } else {
                0
            }
        };
        match &self.repr {
            Repr::Small(p) => p.heap_size(),
            Repr::Large(ix) => {
                let members = ix.scores.keys().map(|m| 112 + 2 * heap(m));
                super::sampled::sampled_sum(members, ix.scores.len(), samples)
            }
        }
    }
}

/// Positions as [`ZSet::get_index`] reads them.
impl ByPosition for ZSet {
    fn elements(&self) -> usize {
        self.len()
    }

    fn positions(&self) -> usize {
        match &self.repr {
            Repr::Small(p) => p.len(),
            Repr::Large(ix) => ix.scores.positions(),
        }
    }

    fn holds(&self, i: usize) -> bool {
        self.get_index(i).is_some()
    }

    fn random_index(&self) -> Option<usize> {
        match &self.repr {
            Repr::Small(p) => random_below(p.len()),
            Repr::Large(ix) => ix.scores.random_index(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, i8),
        Remove(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (any::<u8>(), any::<i8>()).prop_map(|(m, s)| Op::Insert(m, s)),
            1 => any::<u8>().prop_map(Op::Remove),
        ]
    }

    /// Member names: short and long (boxed) ones, so both kinds of bytes move, and a
    /// few too long to pack (a small set then takes its indexes).
    fn name(m: u8) -> Vec<u8> {
        if m % 61 == 7 {
            format!("{m:-<70}").into_bytes()
        } else if m % 5 == 0 {
            format!("a-long-member-name-past-the-inline-size-{m}").into_bytes()
        } else {
            format!("m{m}").into_bytes()
        }
    }

    fn check(z: &ZSet, model: &BTreeMap<Vec<u8>, f64>) {
        assert_eq!(z.len(), model.len());
        let mut expected: Vec<(f64, Vec<u8>)> =
            model.iter().map(|(m, s)| (*s, m.clone())).collect();
        expected.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let got: Vec<(f64, Vec<u8>)> = z.iter().map(|(m, s)| (s, m.to_vec())).collect();
        assert_eq!(got, expected);
        let back: Vec<(f64, Vec<u8>)> = z.iter().rev().map(|(m, s)| (s, m.to_vec())).collect();
        assert!(back.iter().eq(expected.iter().rev()));
        // The encoding is read from the peaks, not the members: they must cover them.
        for (entries, value) in [(128, 64), (16, 10)] {
            if z.is_listpack(entries, value) {
                assert!(z.len() <= entries && z.iter().all(|(m, _)| m.len() <= value));
            }
        }
        for (rank, (score, member)) in expected.iter().enumerate() {
            assert_eq!(z.score(member), Some(*score));
            assert_eq!(z.rank(member), Some(rank));
        }
        for min in [-200.0, -1.0, 0.0, 3.0, 200.0] {
            let got: Vec<f64> = z.range_from(min).map(|(_, s)| s).collect();
            let want: Vec<f64> = expected.iter().map(|e| e.0).filter(|s| *s >= min).collect();
            assert_eq!(got, want);
        }
        let mut picked: Vec<Vec<u8>> = (0..z.positions())
            .filter_map(|i| z.get_index(i).map(|(m, _)| m.to_vec()))
            .collect();
        assert!(z.random_index().is_none_or(|i| z.get_index(i).is_some()));
        picked.sort();
        assert!(picked.iter().eq(model.keys()));
    }

    proptest! {
        /// Small and large sets (past `SMALL_MAX` on the way) answer as a plain ordered
        /// map of member to score does.
        #[test]
        fn behaves_as_an_ordered_map(ops in proptest::collection::vec(op(), 1..400)) {
            let mut z = ZSet::default();
            let mut model = BTreeMap::new();
            for (i, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Insert(m, s) => {
                        let score = f64::from(s) / 4.0;
                        assert_eq!(z.insert(&name(m), score), model.insert(name(m), score));
                    }
                    Op::Remove(m) => assert_eq!(z.remove(&name(m)), model.remove(&name(m))),
                }
                if i % 16 == 0 {
                    check(&z, &model);
                }
            }
            check(&z, &model);
        }

        /// A set built at once equals the same members inserted one by one, and a
        /// repeated member is refused.
        #[test]
        fn built_at_once_as_inserted(members in proptest::collection::btree_map(any::<u8>(), any::<i8>(), 0..200)) {
            let list: Vec<(CompactBytes, f64)> = members
                .iter()
                .map(|(m, s)| (CompactBytes::new(&name(*m)), f64::from(*s)))
                .collect();
            let model: BTreeMap<Vec<u8>, f64> =
                members.iter().map(|(m, s)| (name(*m), f64::from(*s))).collect();
            let z = ZSet::from_members(list.clone()).unwrap();
            check(&z, &model);
            if let Some(first) = list.first().cloned() {
                let mut repeated = list;
                repeated.push((first.0, 1.5));
                assert!(ZSet::from_members(repeated).is_none());
            }
        }
    }

    fn bound() -> impl Strategy<Value = ScoreBound> {
        let value = prop_oneof![
            (-40i8..40).prop_map(|v| f64::from(v) / 4.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
        ];
        (value, any::<bool>()).prop_map(|(value, exclusive)| ScoreBound { value, exclusive })
    }

    proptest! {
        /// Score and rank ranges find (and count) what filtering every member finds,
        /// both ways, in small and large sets.
        #[test]
        fn ranges_find_what_a_scan_finds(
            members in proptest::collection::btree_map(any::<u8>(), -40i8..40, 0..300),
            min in bound(),
            max in bound(),
            start in 0usize..320,
            span in 0usize..320,
        ) {
            let list: Vec<(CompactBytes, f64)> = members
                .iter()
                .map(|(m, s)| (CompactBytes::new(&name(*m)), f64::from(*s) / 4.0))
                .collect();
            let z = ZSet::from_members(list).unwrap();
            let above = |s: f64| if min.exclusive { s > min.value } else { s >= min.value };
            let below = |s: f64| if max.exclusive { s < max.value } else { s <= max.value };
            let scan: Vec<(&[u8], f64)> = z.iter().filter(|(_, s)| above(*s) && below(*s)).collect();
            let found: Vec<(&[u8], f64)> = z.by_score(min, max).collect();
            prop_assert_eq!(&found, &scan);
            prop_assert_eq!(z.count_by_score(min, max), scan.len());
            let back: Vec<(&[u8], f64)> = z.by_score(min, max).rev().collect();
            prop_assert!(back.iter().eq(scan.iter().rev()));
            let ranked: Vec<(&[u8], f64)> = z.by_rank(start, start + span + 1).collect();
            let walked: Vec<(&[u8], f64)> = z.iter().skip(start).take(span + 1).collect();
            prop_assert_eq!(&ranked, &walked);
            let back: Vec<(&[u8], f64)> = z.by_rank(start, start + span + 1).rev().collect();
            prop_assert!(back.iter().eq(walked.iter().rev()));
        }
    }

    fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
        b.as_ref().map(|v| &v[..])
    }

    fn member_bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
        prop_oneof![
            Just(Bound::Unbounded),
            any::<u8>().prop_map(|m| Bound::Included(name(m))),
            any::<u8>().prop_map(|m| Bound::Excluded(name(m))),
            Just(Bound::Included(Vec::new())),
            Just(Bound::Excluded(Vec::new())),
        ]
    }

    proptest! {
        /// Lex ranges of a large set of one score find (and count) what filtering finds;
        /// other sets are left to the caller.
        #[test]
        fn lex_ranges_find_what_a_scan_finds(
            members in proptest::collection::btree_set(any::<u8>(), 129..256),
            lower in member_bound(),
            upper in member_bound(),
            mixed in any::<bool>(),
        ) {
            let list: Vec<(CompactBytes, f64)> = members
                .iter()
                .enumerate()
                .map(|(i, m)| (CompactBytes::new(&name(*m)), if mixed && i == 0 { 1.0 } else { 2.0 }))
                .collect();
            let z = ZSet::from_members(list).unwrap();
            let found = z.by_lex(as_ref(&lower), as_ref(&upper));
            prop_assert_eq!(found.is_some(), !mixed);
            if let Some(found) = found {
                let within = |m: &[u8]| {
                    (match &lower {
                        Bound::Unbounded => true,
                        Bound::Included(v) => m >= &v[..],
                        Bound::Excluded(v) => m > &v[..],
                    }) && (match &upper {
                        Bound::Unbounded => true,
                        Bound::Included(v) => m <= &v[..],
                        Bound::Excluded(v) => m < &v[..],
                    })
                };
                let scan: Vec<(&[u8], f64)> = z.iter().filter(|(m, _)| within(m)).collect();
                let found: Vec<(&[u8], f64)> = found.collect();
                prop_assert_eq!(&found, &scan);
                prop_assert_eq!(z.count_by_lex(as_ref(&lower), as_ref(&upper)), Some(scan.len()));
                let back: Vec<(&[u8], f64)> = z
                    .by_lex(as_ref(&lower), as_ref(&upper))
                    .into_iter()
                    .flatten()
                    .rev()
                    .collect();
                prop_assert!(back.iter().eq(scan.iter().rev()));
            }
        }
    }

    /// The sign of each member's score, in order.
    fn zero_signs(z: &ZSet) -> Vec<(Vec<u8>, bool)> {
        z.iter()
            .map(|(m, s)| (m.to_vec(), s.is_sign_negative()))
            .collect()
    }

    #[test]
    fn zeros_tie_whatever_their_sign() {
        for large in [false, true] {
            let mut z = ZSet::default();
            if large {
                z.unpack();
            }
            z.insert(b"b", -0.0);
            z.insert(b"a", 0.0);
            z.insert(b"c", -0.0);
            z.insert(b"m", -1.0);
            let order: Vec<&[u8]> = z.iter().map(|(m, _)| m).collect();
            assert_eq!(order, [&b"m"[..], b"a", b"b", b"c"]);
            assert_eq!(z.score(b"b").map(f64::is_sign_negative), Some(true));
            assert_eq!(z.rank(b"c"), Some(3));
            let zero = ScoreBound {
                value: -0.0,
                exclusive: false,
            };
            assert_eq!(z.count_by_score(zero, zero), 3);
            assert_eq!(z.remove(b"b"), Some(-0.0));
            assert_eq!(z.len(), 3);
        }
    }

    #[test]
    fn a_listpack_drops_the_sign_of_zero() {
        // Under the limits: a listpack, so -0 is stored as 0.
        let mut z = ZSet::default();
        z.insert_under(b"a", -0.0, 2, 64);
        z.insert_under(b"b", -0.0, 2, 64);
        assert_eq!(
            zero_signs(&z),
            [(b"a".to_vec(), false), (b"b".to_vec(), false)]
        );
        // The member that outgrows it arrives in the skiplist, sign and all, as do
        // later ones; the members converted keep their 0.
        z.insert_under(b"c", -0.0, 2, 64);
        z.insert_under(b"d", -0.0, 2, 64);
        assert_eq!(
            zero_signs(&z),
            [
                (b"a".to_vec(), false),
                (b"b".to_vec(), false),
                (b"c".to_vec(), true),
                (b"d".to_vec(), true)
            ]
        );
    }

    #[test]
    fn a_set_converted_to_a_listpack_drops_the_sign_of_zero() {
        let built = || {
            let mut z = ZSet::default();
            z.insert(b"a", -0.0);
            z.insert(b"b", -0.0);
            z.insert(b"c", 1.0);
            z
        };
        let mut small = built();
        small.settle_zero_signs(128, 64);
        assert!(small.iter().all(|(_, s)| s.is_sign_positive()));
        let mut large = built();
        large.settle_zero_signs(2, 64);
        assert_eq!(
            large.iter().filter(|(_, s)| s.is_sign_negative()).count(),
            2
        );
    }
}
