//! The Redis command table: name, arity, flags and key positions of every command.
