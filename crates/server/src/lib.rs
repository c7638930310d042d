//! redline-server: a Redis-compatible server that uses every core.
