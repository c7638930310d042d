//! Bounds the parser enforces before it trusts a length from the wire.

/// Limits applied while parsing; every length read from the wire is checked against them
/// before anything is allocated.
///
/// ```
/// use redline_resp::Limits;
///
/// let strict = Limits { max_bulk_len: 1024, ..Limits::default() };
/// assert_eq!(strict.max_depth, Limits::default().max_depth);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest bulk string accepted, in bytes. Redis's `proto-max-bulk-len`: 512 MiB.
    pub max_bulk_len: usize,
    /// Largest element count of an array, map, set, push or attribute. Redis accepts up to
    /// `i32::MAX` elements in a request.
    pub max_array_len: usize,
    /// Deepest nesting of aggregates. Requests are one level; replies rarely exceed a few.
    pub max_depth: usize,
    /// Longest inline command line (and longest simple line of any type): Redis's
    /// `PROTO_INLINE_MAX_SIZE`, 64 KiB. The request decoder lets an inline request run
    /// a quarter past it (16 KiB by default), as Redis's 16 KiB reads do.
    pub max_inline_len: usize,
}

impl Limits {
    /// Redis's own defaults.
    pub const DEFAULT: Limits = Limits {
        max_bulk_len: 512 * 1024 * 1024,
        max_array_len: i32::MAX as usize,
        max_depth: 128,
        max_inline_len: 64 * 1024,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}
