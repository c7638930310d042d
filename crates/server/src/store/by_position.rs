//! Collections read by position: SPOP, SRANDMEMBER, HRANDFIELD and ZRANDMEMBER pick
//! positions at random, and a paged HSCAN, SSCAN or ZSCAN walks them. A large form's
//! positions may be vacant (see `IncrementalMap::vacate`); a packed form has none.

/// A collection whose elements sit at positions `0..positions()`, some maybe vacant.
pub trait ByPosition {
    /// Positions in use or vacant: every element's position is below it.
    fn positions(&self) -> usize;

    /// Whether position `i` holds an element.
    fn holds(&self, i: usize) -> bool;

    /// A random element's position (`None` when it is empty).
    fn random_index(&self) -> Option<usize>;

    /// How many elements it holds.
    fn elements(&self) -> usize;
}

/// A random position below `len`, for a form without vacant positions.
pub(super) fn random_below(len: usize) -> Option<usize> {
    (len > 0).then(|| fastrand::usize(..len))
}
