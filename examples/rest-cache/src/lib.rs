//! rest-cache: a cache-aside REST service over SQLite, the setting redline is measured in.
//!
//! Users live in SQLite (WAL, `busy_timeout=5000`, 10,000 rows seeded from seed 42). `GET
//! /users/{id}` looks in the cache first (`user:{id}`): a hit returns the cached JSON bytes as
//! they are; a miss reads SQLite, answers, and caches the same bytes for 60 s. Writes go to
//! SQLite and then delete the key. The cache is one of three clients behind the small
//! [`Cache`] trait — redline, fred or redis-rs — so the HTTP and SQL code is identical and
//! only the client differs when the service is load-tested. A cache error is logged and the
//! request is served from SQLite: the cache can make the service faster, never break it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let config = rest_cache::Config::from_env()?;
//! let router = rest_cache::build(&config).await?;
//! let listener = tokio::net::TcpListener::bind(("0.0.0.0", config.port)).await?;
//! axum::serve(listener, router).await?;
//! # Ok(()) }
//! ```
//!
//! SQLite calls are blocking, so they run on tokio's blocking pool with a connection taken
//! from a small pool ([`Db`]); the async workers only ever wait on the cache and the socket.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod app;
pub mod cache;
mod config;
mod db;
mod routes;
mod seed;
mod user;

pub use app::{build, build_with, StartError};
pub use cache::{Backend, Cache, CacheError};
pub use config::{Config, ConfigError};
pub use db::{Db, DbError};
pub use seed::{seed_users, SEED, SEED_USERS};
pub use user::{NewUser, User, UserPatch};
