//! SQLite: a small pool of connections used from tokio's blocking pool, and the five
//! queries the service needs. The async workers never run SQLite code themselves.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection, ErrorCode, OptionalExtension, Row};

use crate::seed::{rfc3339, seed_users};
use crate::user::{NewUser, User, UserPatch};

/// A failed database call.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// SQLite said no.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Another user already has this email (UNIQUE constraint).
    #[error("email already in use")]
    EmailTaken,
    /// The blocking task did not complete (panicked or the runtime is shutting down).
    #[error("database task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// A pool of SQLite connections in WAL mode with `busy_timeout=5000`.
///
/// ```no_run
/// # async fn demo() -> Result<(), rest_cache::DbError> {
/// let db = rest_cache::Db::open("users.db".as_ref(), 4, false)?;
/// let user = db.get_user(1).await?;
/// # let _ = user;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Db {
    pool: Arc<Pool>,
}

struct Pool {
    idle: Mutex<Vec<Connection>>,
    returned: Condvar,
}

const COLUMNS: &str = "id, name, email, bio, created_at";

impl Db {
    /// Opens `size` connections to `path`, creates the table, and seeds the 10,000 users
    /// when the table is empty or `reseed` is set.
    pub fn open(path: &Path, size: usize, reseed: bool) -> Result<Db, DbError> {
        let mut first = open_conn(path)?;
        Db::create_schema(&first)?;
        let count: i64 = first.query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))?;
        if reseed || count == 0 {
            seed_users(&mut first)?;
        }
        let mut idle = vec![first];
        for _ in 1..size.max(1) {
            idle.push(open_conn(path)?);
        }
        Ok(Db {
            pool: Arc::new(Pool {
                idle: Mutex::new(idle),
                returned: Condvar::new(),
            }),
        })
    }

    /// Creates the `users` table if it does not exist.
    ///
    /// ```
    /// let conn = rusqlite::Connection::open_in_memory()?;
    /// rest_cache::Db::create_schema(&conn)?;
    /// # Ok::<(), rusqlite::Error>(())
    /// ```
    pub fn create_schema(conn: &Connection) -> rusqlite::Result<()> {
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS users (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                name TEXT NOT NULL,
                email TEXT NOT NULL UNIQUE,
                bio TEXT NOT NULL,
                created_at TEXT NOT NULL
            )",
        )
    }

    /// Runs `f` with a pooled connection on tokio's blocking pool.
    async fn run<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, DbError> + Send + 'static,
    {
        let pool = Arc::clone(&self.pool);
        tokio::task::spawn_blocking(move || {
            let mut conn = pool.take();
            let out = f(&mut conn);
            pool.give_back(conn);
            out
        })
        .await?
    }

    /// One user by id.
    pub async fn get_user(&self, id: i64) -> Result<Option<User>, DbError> {
        self.run(move |conn| {
            let mut stmt =
                conn.prepare_cached(&format!("SELECT {COLUMNS} FROM users WHERE id = ?1"))?;
            Ok(stmt.query_row([id], user_from_row).optional()?)
        })
        .await
    }

    /// One page of users by id (page 1 is the first), and the total count.
    pub async fn list_users(&self, page: u32, limit: u32) -> Result<(Vec<User>, i64), DbError> {
        self.run(move |conn| {
            let offset = i64::from(page.saturating_sub(1)) * i64::from(limit);
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM users ORDER BY id LIMIT ?1 OFFSET ?2"
            ))?;
            let users = stmt
                .query_map(params![limit, offset], user_from_row)?
                .collect::<Result<Vec<_>, _>>()?;
            let total = conn
                .prepare_cached("SELECT COUNT(*) FROM users")?
                .query_row([], |r| r.get(0))?;
            Ok((users, total))
        })
        .await
    }

    /// Inserts a user; the id and `created_at` (now) are assigned here.
    pub async fn insert_user(&self, new: NewUser) -> Result<User, DbError> {
        self.run(move |conn| {
            let created_at = rfc3339(now_unix());
            let mut stmt = conn.prepare_cached(&format!(
                "INSERT INTO users (name, email, bio, created_at) VALUES (?1, ?2, ?3, ?4) RETURNING {COLUMNS}"
            ))?;
            stmt.query_row(params![new.name, new.email, new.bio, created_at], user_from_row)
                .map_err(unique_violation)
        })
        .await
    }

    /// Replaces the fields present in `patch`; `None` when there is no such user.
    pub async fn update_user(&self, id: i64, patch: UserPatch) -> Result<Option<User>, DbError> {
        self.run(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "UPDATE users SET name = COALESCE(?2, name), email = COALESCE(?3, email),
                 bio = COALESCE(?4, bio) WHERE id = ?1 RETURNING {COLUMNS}"
            ))?;
            stmt.query_row(
                params![id, patch.name, patch.email, patch.bio],
                user_from_row,
            )
            .optional()
            .map_err(unique_violation)
        })
        .await
    }

    /// Deletes a user; false when there was none.
    pub async fn delete_user(&self, id: i64) -> Result<bool, DbError> {
        self.run(move |conn| {
            let n = conn
                .prepare_cached("DELETE FROM users WHERE id = ?1")?
                .execute([id])?;
            Ok(n > 0)
        })
        .await
    }
}

impl Pool {
    fn take(&self) -> Connection {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(conn) = idle.pop() {
                return conn;
            }
            idle = self
                .returned
                .wait(idle)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn give_back(&self, conn: Connection) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(conn);
        self.returned.notify_one();
    }
}

fn open_conn(path: &Path) -> Result<Connection, DbError> {
    let conn = Connection::open(path)?;
    // WAL lets readers run beside the one writer; busy_timeout makes concurrent writers
    // wait for the lock instead of failing with SQLITE_BUSY. synchronous=NORMAL is the
    // usual WAL pairing (durable at checkpoints, no fsync per commit).
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.busy_timeout(Duration::from_millis(5000))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

fn user_from_row(row: &Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: row.get(0)?,
        name: row.get(1)?,
        email: row.get(2)?,
        bio: row.get(3)?,
        created_at: row.get(4)?,
    })
}

fn unique_violation(err: rusqlite::Error) -> DbError {
    match &err {
        rusqlite::Error::SqliteFailure(e, _) if e.code == ErrorCode::ConstraintViolation => {
            DbError::EmailTaken
        }
        _ => DbError::Sqlite(err),
    }
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
