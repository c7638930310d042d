//! Assembly: open SQLite, connect the chosen cache, and route.

use std::sync::Arc;

use axum::routing::get;
use axum::Router;

use crate::cache::{Backend, Cache, CacheError, FredCache, RedisRsCache, RedlineCache};
use crate::config::Config;
use crate::db::{Db, DbError};
use crate::routes::{create_user, delete_user, get_user, list_users, update_user, AppState};

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The database could not be opened, created or seeded.
    #[error("database: {0}")]
    Db(#[from] DbError),
    /// The cache could not be reached at start (later failures only degrade to SQLite).
    #[error("cache: {0}")]
    Cache(#[from] CacheError),
    /// Opening the database did not complete.
    #[error("database task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Opens the database (seeding it when empty or asked to) and connects the backend that
/// `config` names; the router serves the five endpoints.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let router = rest_cache::build(&rest_cache::Config::default()).await?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// axum::serve(listener, router).await?;
/// # Ok(()) }
/// ```
pub async fn build(config: &Config) -> Result<Router, StartError> {
    let (path, size, reseed) = (config.sqlite_db.clone(), config.sqlite_pool, config.reseed);
    let db = tokio::task::spawn_blocking(move || Db::open(&path, size, reseed)).await??;
    let (url, cluster, timeout) = (
        &config.redis_url,
        config.redis_cluster,
        config.cache_timeout,
    );
    Ok(match config.backend {
        Backend::Redline => build_with(RedlineCache::connect(url, cluster, timeout).await?, db),
        Backend::Fred => build_with(FredCache::connect(url, cluster, timeout).await?, db),
        Backend::RedisRs => build_with(RedisRsCache::connect(url, cluster, timeout).await?, db),
    })
}

/// The router over any [`Cache`]; handlers are monomorphized per backend, so no backend
/// pays for dynamic dispatch the others do not.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// let db = rest_cache::Db::open("users.db".as_ref(), 4, false)?;
/// let cache = rest_cache::cache::RedlineCache::connect("redis://127.0.0.1:6379", false, Duration::from_secs(1)).await?;
/// let router = rest_cache::build_with(cache, db);
/// # let _ = router;
/// # Ok(()) }
/// ```
pub fn build_with<C: Cache>(cache: C, db: Db) -> Router {
    Router::new()
        .route("/users", get(list_users::<C>).post(create_user::<C>))
        .route(
            "/users/{id}",
            get(get_user::<C>)
                .put(update_user::<C>)
                .delete(delete_user::<C>),
        )
        .with_state(Arc::new(AppState { cache, db }))
}
