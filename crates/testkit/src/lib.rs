//! Real servers for tests: redis-server (standalone, TLS, cluster) and redline-server.
