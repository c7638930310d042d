//! The user record, as stored in SQLite and as sent over HTTP (the cached bytes are exactly
//! `serde_json::to_vec(&user)`, so a hit and a miss answer the same bytes).

use serde::{Deserialize, Serialize};

/// One user. Field order is the JSON field order.
///
/// ```
/// let user = rest_cache::User {
///     id: 1,
///     name: "Ada Lovelace".into(),
///     email: "ada@example.com".into(),
///     bio: "".into(),
///     created_at: "2020-01-01T00:00:00Z".into(),
/// };
/// let json = serde_json::to_string(&user)?;
/// assert!(json.starts_with(r#"{"id":1,"name":"Ada Lovelace""#));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Primary key.
    pub id: i64,
    /// Display name.
    pub name: String,
    /// Unique email address.
    pub email: String,
    /// Free text.
    pub bio: String,
    /// Creation time, RFC 3339 UTC (`2021-03-04T05:06:07Z`).
    pub created_at: String,
}

/// Body of `POST /users`.
///
/// ```
/// let new: rest_cache::NewUser = serde_json::from_str(r#"{"name":"A","email":"a@b.c"}"#)?;
/// assert_eq!(new.validate(), Ok(()));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Deserialize)]
pub struct NewUser {
    /// Display name (required, not blank).
    pub name: String,
    /// Email (required, contains `@`, unique).
    pub email: String,
    /// Free text (optional).
    #[serde(default)]
    pub bio: String,
}

impl NewUser {
    /// Checks the fields; the error text goes into the 400 body.
    pub fn validate(&self) -> Result<(), &'static str> {
        check_name(&self.name)?;
        check_email(&self.email)
    }
}

/// Body of `PUT /users/{id}`: the fields given are replaced, the others kept.
///
/// ```
/// let patch: rest_cache::UserPatch = serde_json::from_str(r#"{"bio":"new"}"#)?;
/// assert_eq!(patch.validate(), Ok(()));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UserPatch {
    /// New name.
    pub name: Option<String>,
    /// New email.
    pub email: Option<String>,
    /// New bio.
    pub bio: Option<String>,
}

impl UserPatch {
    /// Checks the fields that are present; at least one must be.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.name.is_none() && self.email.is_none() && self.bio.is_none() {
            return Err("Nothing to update");
        }
        if let Some(name) = &self.name {
            check_name(name)?;
        }
        if let Some(email) = &self.email {
            check_email(email)?;
        }
        Ok(())
    }
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.trim().is_empty() {
        return Err("name is required");
    }
    Ok(())
}

fn check_email(email: &str) -> Result<(), &'static str> {
    if !email.contains('@') || email.trim() != email {
        return Err("email must be an address");
    }
    Ok(())
}
