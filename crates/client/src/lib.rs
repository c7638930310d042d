//! redline: a Redis client built for throughput and dependable failure handling.
