//! hashes commands.

use super::Handler;

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[];
