//! Sets. A set of integers is a sorted vector of them ([`SortedInts`]), as Redis keeps
//! one in an intset: 2, 4 or 8 bytes a member instead of a hashed entry (50k sets of 10
//! integers took 6.6x Redis's memory as maps), members in ascending order as Redis lists
//! an intset's. A member that
//! is not an integer in canonical form, or more than [`INTS_MAX`] of them, makes it a
//! map of members for good (Redis converts an intset to a hashtable and never back).
//! What Redis reports as the encoding follows Redis's configured limit (`converted` and
//! the most members it held since the limit last changed), whichever form is held here.

use std::ops::Deref;

use super::incremental_map::{self, IncrementalMap};

use super::by_position::{random_below, ByPosition};
use super::compact::CompactBytes;
use super::sorted_ints::{self, SortedInts};
use super::value::{canonical_int, saturating_u32, Hasher};

/// Integers a set holds as a vector at most (Redis's default `set-max-intset-entries`).
pub const INTS_MAX: usize = 512;

/// A set: see the module docs.
///
/// What decides Redis's encoding (whether a member that is not an integer was ever
/// added, and the most members held; an intset has no length limit of its members, so
/// no longest member is kept, as [`super::value::Peaks`] keeps one) lives in the
/// integers' buffer or beside the map, so a set of integers is one allocation, which a
/// key's entry holds without a box.
#[derive(Debug, Clone, Default)]
pub struct SetValue {
    repr: Repr,
}

#[derive(Debug, Clone)]
enum Repr {
    /// Ascending, distinct; never text (the first text member makes a map).
    Ints(SortedInts),
    /// Boxed: a set of integers, the common small case, stays two words wide.
    Members(Box<Members>),
}

/// A set held as a map.
#[derive(Debug, Clone)]
struct Members {
    /// Removal leaves the member's position vacant and moves no other member (see
    /// [`IncrementalMap::vacate`]): SSCAN's cursors are positions.
    set: IncrementalMap<CompactBytes, (), Hasher>,
    /// Redis made it a hashtable for good: a member that is not an integer was added,
    /// or it held more than the limit in force before a change (see
    /// [`SetValue::settle_encoding`]).
    converted: bool,
    /// The most members it held; in 32 bits, saturating.
    most_members: u32,
}

impl Members {
    fn with_capacity(capacity: usize, most_members: u32) -> Box<Members> {
        Box::new(Members {
            set: IncrementalMap::with_capacity(capacity),
            converted: false,
            most_members,
        })
    }

    /// The map of a set of integers, with room for `capacity` members and its peak.
    fn of_ints(ints: &SortedInts, capacity: usize) -> Box<Members> {
        let mut m = Members::with_capacity(capacity, saturating_u32(ints.most()));
        for n in ints.iter() {
            m.set.insert(
                CompactBytes::new(itoa::Buffer::new().format(n).as_bytes()),
                (),
            );
        }
        m
    }
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Ints(SortedInts::default())
    }
}

/// A member, borrowed or (an integer) written out.
#[derive(Clone, Copy)]
pub struct Member<'a>(Inner<'a>);

#[derive(Clone, Copy)]
enum Inner<'a> {
    Bytes(&'a [u8]),
    /// The decimal digits, at most 20 (`i64::MIN`).
    Int {
        digits: [u8; 20],
        len: u8,
    },
}

impl Member<'_> {
    fn int(n: i64) -> Member<'static> {
        let mut buffer = itoa::Buffer::new();
        let text = buffer.format(n).as_bytes();
        let mut digits = [0u8; 20];
        digits[..text.len()].copy_from_slice(text);
        Member(Inner::Int {
            digits,
            len: text.len() as u8,
        })
    }
}

impl Deref for Member<'_> {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Inner::Bytes(b) => b,
            Inner::Int { digits, len } => &digits[..usize::from(*len)],
        }
    }
}

impl AsRef<[u8]> for Member<'_> {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// The members of a set, in its order.
pub enum Iter<'a> {
    /// Of a set of integers: ascending.
    Ints(sorted_ints::Iter<'a>),
    /// Of a map of members.
    Members(incremental_map::Iter<'a, CompactBytes, ()>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = Member<'a>;

    #[inline]
    fn next(&mut self) -> Option<Member<'a>> {
        match self {
            Iter::Ints(ints) => ints.next().map(Member::int),
            Iter::Members(m) => m.next().map(|(m, ())| Member(Inner::Bytes(m.as_bytes()))),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Ints(ints) => ints.size_hint(),
            Iter::Members(m) => m.size_hint(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl SetValue {
    /// An empty set with room for `capacity` members (a load).
    pub fn with_capacity(capacity: usize) -> SetValue {
        if capacity > INTS_MAX {
            SetValue {
                repr: Repr::Members(Members::with_capacity(capacity, 0)),
            }
        } else {
            // Integers are added one reallocation at a time, as to an intset.
            SetValue::default()
        }
    }

    /// A set of integers at once (an intset being loaded), in any order; `None` when
    /// one repeats.
    pub fn from_ints(mut ints: Vec<i64>) -> Option<SetValue> {
        ints.sort_unstable();
        if ints.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        let mut set = SetValue::default();
        if ints.len() <= INTS_MAX {
            set.repr = Repr::Ints(SortedInts::from_sorted(&ints));
            set.saw_members(ints.len());
        } else {
            for n in ints {
                set.insert(itoa::Buffer::new().format(n).as_bytes());
            }
        }
        Some(set)
    }

    /// How many members it holds.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Ints(ints) => ints.len(),
            Repr::Members(m) => m.set.len(),
        }
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `member` is in it.
    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.repr {
            // A member that is not a canonical integer cannot be in a set of them.
            Repr::Ints(ints) => canonical_int(member).is_some_and(|n| ints.search(n).is_ok()),
            Repr::Members(m) => m.set.contains_key(member),
        }
    }

    /// Adds `member`; true when it was not there.
    pub fn insert(&mut self, member: &[u8]) -> bool {
        // Parsed only while the set may still be an intset: once converted, its
        // encoding is settled and an addition costs no parse.
        let int = if self.converted() {
            None
        } else {
            canonical_int(member)
        };
        let added = self.put(member, int);
        if added {
            if let (Repr::Members(m), None) = (&mut self.repr, int) {
                m.converted = true;
            }
            self.saw_members(self.len());
        }
        added
    }

    /// Whether Redis holds it as a hashtable for good (see [`Members::converted`]).
    fn converted(&self) -> bool {
        match &self.repr {
            Repr::Ints(_) => false,
            Repr::Members(m) => m.converted,
        }
    }

    fn put(&mut self, member: &[u8], int: Option<i64>) -> bool {
        if let (Repr::Ints(ints), Some(n)) = (&mut self.repr, int) {
            match ints.search(n) {
                Ok(_) => return false,
                Err(at) if ints.len() < INTS_MAX => {
                    ints.insert_at(at, n);
                    return true;
                }
                Err(_) => {}
            }
        }
        // A set of integers that outgrew its form becomes a map, for good.
        let mut members = match std::mem::take(&mut self.repr) {
            Repr::Members(m) => m,
            Repr::Ints(ints) => Members::of_ints(&ints, ints.len() + 1),
        };
        let added = members.set.insert(CompactBytes::new(member), ()).is_none();
        self.repr = Repr::Members(members);
        added
    }

    /// Removes `member`; true when it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.repr {
            Repr::Ints(ints) => match canonical_int(member).map(|n| ints.search(n)) {
                Some(Ok(at)) => ints.remove_at(at).is_some(),
                _ => false,
            },
            Repr::Members(m) => m.set.vacate_key(member).is_some(),
        }
    }

    /// Removes the member at position `i` and returns it (SPOP).
    pub fn remove_index(&mut self, i: usize) -> Option<CompactBytes> {
        match &mut self.repr {
            Repr::Ints(ints) => ints
                .remove_at(i)
                .map(|n| CompactBytes::new(itoa::Buffer::new().format(n).as_bytes())),
            Repr::Members(m) => m.set.vacate(i, |_, _, _, _| {}).map(|(member, ())| member),
        }
    }

    /// The member at position `i` (in [`SetValue::iter`]'s order; `None` where it is
    /// vacant), in O(1).
    pub fn get_index(&self, i: usize) -> Option<Member<'_>> {
        match &self.repr {
            Repr::Ints(ints) => ints.get(i).map(Member::int),
            Repr::Members(m) => {
                let (member, ()) = m.set.get_index(i)?;
                Some(Member(Inner::Bytes(member.as_bytes())))
            }
        }
    }

    /// The members: ascending for a set of integers, else in the map's order.
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Ints(ints) => Iter::Ints(ints.iter()),
            Repr::Members(m) => Iter::Members(m.set.iter()),
        }
    }

    /// The members as integers, when it is held as a set of them (ascending).
    pub fn ints(&self) -> Option<&SortedInts> {
        match &self.repr {
            Repr::Ints(ints) => Some(ints),
            Repr::Members(_) => None,
        }
    }

    /// Records that it holds `members` now.
    fn saw_members(&mut self, members: usize) {
        match &mut self.repr {
            Repr::Ints(ints) => ints.saw(members),
            Repr::Members(m) => m.most_members = m.most_members.max(saturating_u32(members)),
        }
    }

    /// Holds it as a map from now on, as it is: SSCAN pages a set Redis keeps as a hash
    /// table by positions, which a map keeps put and sorted integers do not (an insertion
    /// moves every larger one). Its encoding history is unchanged.
    pub fn unpack(&mut self) {
        if let Repr::Ints(ints) = &self.repr {
            self.repr = Repr::Members(Members::of_ints(ints, ints.len()));
        }
    }

    /// Whether Redis would still hold it as an `intset` under a limit of `max_entries`:
    /// integers only, now and always, never more than the limit.
    pub fn is_intset(&self, max_entries: usize) -> bool {
        // Every addition passes `insert` (or `from_ints`), so `converted` and the peak
        // cover what was added since the limit last changed; what it held before then
        // was settled by `settle_encoding`.
        let most = match &self.repr {
            Repr::Ints(ints) => ints.most(),
            Repr::Members(m) => m.most_members as usize,
        };
        !self.converted() && most <= max_entries
    }

    /// Keeps the encoding Redis gave it under the limit in force until now, before it
    /// changes: past it, a hashtable for good; within it, an intset until an addition
    /// passes the new limit, whatever it holds.
    pub fn settle_encoding(&mut self, max_entries: usize) {
        if self.is_intset(max_entries) {
            match &mut self.repr {
                Repr::Ints(ints) => ints.forget_most(),
                Repr::Members(m) => m.most_members = 0,
            }
        } else {
            self.unpack();
            if let Repr::Members(m) = &mut self.repr {
                m.converted = true;
            }
        }
    }

    /// Bytes it holds on the heap, about (MEMORY USAGE), the members' own bytes
    /// estimated from `samples` of them ([`super::sampled::sampled_sum`]).
    pub fn heap_size(&self, samples: usize) -> usize {
        match &self.repr {
            Repr::Ints(ints) => ints.heap_size(),
            Repr::Members(m) => {
                // Each member, its hash and its index slot.
                let members = m.set.keys().map(CompactBytes::heap_size);
                m.set.capacity() * (std::mem::size_of::<CompactBytes>() + 16)
                    + super::sampled::sampled_sum(members, m.set.len(), samples)
            }
        }
    }
}

impl<'a> FromIterator<&'a [u8]> for SetValue {
    fn from_iter<I: IntoIterator<Item = &'a [u8]>>(members: I) -> SetValue {
        let mut set = SetValue::default();
        for member in members {
            set.insert(member);
        }
        set
    }
}

/// Positions as [`SetValue::get_index`] reads them.
impl ByPosition for SetValue {
    fn elements(&self) -> usize {
        self.len()
    }

    fn positions(&self) -> usize {
        match &self.repr {
            Repr::Ints(ints) => ints.len(),
            Repr::Members(m) => m.set.positions(),
        }
    }

    fn holds(&self, i: usize) -> bool {
        self.get_index(i).is_some()
    }

    fn random_index(&self) -> Option<usize> {
        match &self.repr {
            Repr::Ints(ints) => random_below(ints.len()),
            Repr::Members(m) => m.set.random_index(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A limit lowered converts nothing until an addition; one raised converts nothing
    /// back, whichever form the set is held in.
    #[test]
    fn settled_sets_keep_the_old_limits_decision() {
        let mut s: SetValue = [&b"1"[..], b"2", b"3"].into_iter().collect();
        s.settle_encoding(512);
        assert!(s.is_intset(2));
        s.remove(b"3");
        s.insert(b"3");
        assert!(!s.is_intset(2));
        s.settle_encoding(2);
        assert!(!s.is_intset(512));
        assert!(s.ints().is_none());
        s.insert(b"4");
        assert!(!s.is_intset(512));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Vec<u8>),
        Remove(Vec<u8>),
        RemoveIndex(usize),
    }

    fn member() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            8 => (-50i64..50).prop_map(|n| n.to_string().into_bytes()),
            1 => Just(b"007".to_vec()),
            1 => Just(b"text".to_vec()),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => member().prop_map(Op::Insert),
            2 => member().prop_map(Op::Remove),
            1 => (0usize..60).prop_map(Op::RemoveIndex),
        ]
    }

    proptest! {
        /// Every operation answers as a set of byte strings does; while only integers
        /// were added, the members come back ascending.
        #[test]
        fn behaves_as_a_set(ops in proptest::collection::vec(op(), 0..200)) {
            let mut set = SetValue::default();
            let mut model = std::collections::BTreeSet::<Vec<u8>>::new();
            for op in ops {
                match op {
                    Op::Insert(m) => prop_assert_eq!(set.insert(&m), model.insert(m)),
                    Op::Remove(m) => prop_assert_eq!(set.remove(&m), model.remove(&m)),
                    Op::RemoveIndex(i) => {
                        let there = set.get_index(i).map(|m| m.to_vec());
                        let got = set.remove_index(i).map(|m| m.as_bytes().to_vec());
                        prop_assert_eq!(&got, &there);
                        if let Some(m) = got {
                            prop_assert!(model.remove(&m));
                        }
                    }
                }
                prop_assert_eq!(set.len(), model.len());
                for m in &model {
                    prop_assert!(set.contains(m));
                }
                let members: Vec<Vec<u8>> = set.iter().map(|m| m.to_vec()).collect();
                let by_position: Vec<Vec<u8>> = (0..set.positions())
                    .filter_map(|i| set.get_index(i))
                    .map(|m| m.to_vec())
                    .collect();
                prop_assert_eq!(&members, &by_position);
                if let Some(i) = set.random_index() {
                    prop_assert!(set.get_index(i).is_some());
                }
                let mut sorted = members.clone();
                sorted.sort();
                prop_assert_eq!(sorted, model.iter().cloned().collect::<Vec<_>>());
                if let Some(ints) = set.ints() {
                    let ints: Vec<i64> = ints.iter().collect();
                    prop_assert!(ints.windows(2).all(|w| w[0] < w[1]));
                }
            }
        }
    }

    #[test]
    fn integers_until_text_or_the_limit() {
        let mut set = SetValue::default();
        for n in 0..INTS_MAX as i64 {
            set.insert(n.to_string().as_bytes());
        }
        assert!(set.ints().is_some());
        set.insert(b"100000");
        assert!(set.ints().is_none());
        let mut text = SetValue::default();
        text.insert(b"1");
        text.insert(b"01");
        assert!(text.ints().is_none());
        assert!(text.contains(b"1") && text.contains(b"01"));
        assert_eq!(
            SetValue::from_ints(vec![3, -1, 2])
                .map(|s| s.iter().map(|m| m.to_vec()).collect::<Vec<_>>()),
            Some(vec![b"-1".to_vec(), b"2".to_vec(), b"3".to_vec()])
        );
        assert!(SetValue::from_ints(vec![1, 1]).is_none());
    }
}
