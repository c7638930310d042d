//! The HTTP handlers: cache-aside reads, SQLite writes that invalidate.
//!
//! Status codes: 200 read/update, 201 + `Location` create, 204 delete, 400 bad input,
//! 404 `{"error":"User not found"}`, 409 duplicate email, 500 only when SQLite fails.
//! A cache failure is never an error status: it is logged and the request uses SQLite.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::cache::Cache;
use crate::db::{Db, DbError};
use crate::user::{NewUser, User, UserPatch};

/// Cached user JSON lives this long.
pub(crate) const CACHE_TTL_SECS: u64 = 60;
const DEFAULT_LIMIT: u32 = 20;
const MAX_LIMIT: u32 = 100;

/// What every handler shares.
pub(crate) struct AppState<C> {
    pub(crate) cache: C,
    pub(crate) db: Db,
}

type Shared<C> = State<Arc<AppState<C>>>;

fn cache_key(id: i64) -> String {
    format!("user:{id}")
}

fn json(status: StatusCode, body: impl Into<axum::body::Body>) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.into(),
    )
        .into_response()
}

/// Every non-success answer. Small on purpose: handlers return `Result<Response, ApiError>`.
#[derive(Debug)]
pub(crate) enum ApiError {
    /// 400 with a message.
    BadRequest(String),
    /// 404 `{"error":"User not found"}`.
    NotFound,
    /// 409: the email belongs to another user.
    EmailTaken,
    /// 500: SQLite failed (logged where it happened).
    Internal,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            ApiError::NotFound => {
                return json(StatusCode::NOT_FOUND, &br#"{"error":"User not found"}"#[..])
            }
            ApiError::BadRequest(m) => (StatusCode::BAD_REQUEST, m),
            ApiError::EmailTaken => (StatusCode::CONFLICT, "Email already in use".to_owned()),
            ApiError::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal error".to_owned(),
            ),
        };
        json(status, serde_json::json!({ "error": message }).to_string())
    }
}

impl From<DbError> for ApiError {
    fn from(err: DbError) -> Self {
        match err {
            DbError::EmailTaken => ApiError::EmailTaken,
            other => {
                tracing::error!(error = %other, "database call failed");
                ApiError::Internal
            }
        }
    }
}

fn parse_id(raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>()
        .map_err(|_| ApiError::BadRequest("Invalid user id".to_owned()))
}

fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::BadRequest(format!("Invalid JSON body: {e}")))
}

fn user_json(user: &User) -> Bytes {
    // Serializing a struct of strings and integers cannot fail.
    Bytes::from(serde_json::to_vec(user).unwrap_or_default())
}

/// Deletes the cached copy after a write; a failure only means the entry lives until its TTL.
async fn invalidate<C: Cache>(cache: &C, id: i64) {
    if let Err(err) = cache.del(&cache_key(id)).await {
        tracing::warn!(error = %err, id, "cache invalidation failed; entry expires with its TTL");
    }
}

/// `GET /users/{id}`: cache, then SQLite (and fill the cache).
pub(crate) async fn get_user<C: Cache>(
    State(app): Shared<C>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw)?;
    let key = cache_key(id);
    match app.cache.get(&key).await {
        Ok(Some(cached)) => return Ok(json(StatusCode::OK, cached)),
        Ok(None) => {}
        Err(err) => tracing::warn!(error = %err, id, "cache read failed; using SQLite"),
    }
    let user = app.db.get_user(id).await?.ok_or(ApiError::NotFound)?;
    let body = user_json(&user);
    if let Err(err) = app.cache.set_ex(&key, body.clone(), CACHE_TTL_SECS).await {
        tracing::warn!(error = %err, id, "cache write failed");
    }
    Ok(json(StatusCode::OK, body))
}

#[derive(Serialize)]
struct Page {
    page: u32,
    limit: u32,
    total: i64,
    users: Vec<User>,
}

/// `GET /users?page&limit`: straight from SQLite (pages are not cached). Defaults 1 and
/// 20; `limit` is capped at 100 and both are at least 1.
pub(crate) async fn list_users<C: Cache>(
    State(app): Shared<C>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let number = |name: &str, default: u32| -> Result<u32, ApiError> {
        match query.get(name).map(String::as_str) {
            None | Some("") => Ok(default),
            Some(v) => v
                .parse::<u32>()
                .map_err(|_| ApiError::BadRequest(format!("{name} must be a positive integer"))),
        }
    };
    let page = number("page", 1)?.max(1);
    let limit = number("limit", DEFAULT_LIMIT)?.clamp(1, MAX_LIMIT);
    let (users, total) = app.db.list_users(page, limit).await?;
    let body = Page {
        page,
        limit,
        total,
        users,
    };
    Ok(json(
        StatusCode::OK,
        serde_json::to_vec(&body).unwrap_or_default(),
    ))
}

/// `POST /users`: 201 with the user and `Location: /users/{id}`.
pub(crate) async fn create_user<C: Cache>(
    State(app): Shared<C>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let new: NewUser = parse_body(&body)?;
    new.validate()
        .map_err(|m| ApiError::BadRequest(m.to_owned()))?;
    let user = app.db.insert_user(new).await?;
    // Nothing should be cached under a fresh id, but a key left over from an earlier
    // database (reseeded under a live cache) must not shadow the new row.
    invalidate(&app.cache, user.id).await;
    let mut resp = json(StatusCode::CREATED, user_json(&user));
    if let Ok(location) = HeaderValue::from_str(&format!("/users/{}", user.id)) {
        resp.headers_mut().insert(header::LOCATION, location);
    }
    Ok(resp)
}

/// `PUT /users/{id}`: replaces the fields given, then invalidates.
pub(crate) async fn update_user<C: Cache>(
    State(app): Shared<C>,
    Path(raw): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw)?;
    let patch: UserPatch = parse_body(&body)?;
    patch
        .validate()
        .map_err(|m| ApiError::BadRequest(m.to_owned()))?;
    let user = app
        .db
        .update_user(id, patch)
        .await?
        .ok_or(ApiError::NotFound)?;
    invalidate(&app.cache, id).await;
    Ok(json(StatusCode::OK, user_json(&user)))
}

/// `DELETE /users/{id}`: 204, then invalidates.
pub(crate) async fn delete_user<C: Cache>(
    State(app): Shared<C>,
    Path(raw): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&raw)?;
    if !app.db.delete_user(id).await? {
        return Err(ApiError::NotFound);
    }
    invalidate(&app.cache, id).await;
    Ok(StatusCode::NO_CONTENT.into_response())
}
