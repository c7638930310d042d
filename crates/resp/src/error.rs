//! Why a byte stream is not valid RESP.

/// A malformed or over-limit input. The `Display` text is Redis's own wording where Redis
/// has one, so a server can send it back as `-ERR <text>` unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// An aggregate length that is not a number, or is out of range.
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    /// A bulk length that is not a number, or exceeds `max_bulk_len`.
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
}
