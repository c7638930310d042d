//! Access control lists: named users with passwords and permissions, as Redis 7.0.
//!
//! [`Acl`] holds the users by name (sorted, as Redis's radix tree lists them); each is a
//! shared [`UserCell`] that connections authenticated as it point to, so `ACL SETUSER`
//! takes effect on them at once. A cell caches whether its user may do everything
//! (all commands, keys and channels): the dispatcher reads that one atomic flag per
//! command and only locks and checks the rules for restricted users.
//! The `default` user always exists; `requirepass` sets its password.

pub mod check;
pub mod describe;
pub mod file;
pub mod ids;
pub mod log;
pub mod selector;
pub mod user;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{RwLock, RwLockReadGuard};

pub use check::Denied;
pub use user::{PubsubDefault, RuleError, User};

/// One user, shared by the registry and the connections authenticated as it.
#[derive(Debug)]
pub struct UserCell {
    name: Vec<u8>,
    unrestricted: AtomicBool,
    rules: RwLock<User>,
}

impl UserCell {
    fn new(name: Vec<u8>, user: User) -> UserCell {
        UserCell {
            name,
            unrestricted: AtomicBool::new(user.unrestricted()),
            rules: RwLock::new(user),
        }
    }

    /// The user's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// True when the user may run anything on anything: no check needed.
    #[inline]
    pub fn unrestricted(&self) -> bool {
        self.unrestricted.load(Ordering::Acquire)
    }

    /// The rules, for reading.
    pub fn rules(&self) -> RwLockReadGuard<'_, User> {
        self.rules.read()
    }

    /// Replaces the rules.
    fn replace(&self, user: User) {
        let unrestricted = user.unrestricted();
        *self.rules.write() = user;
        self.unrestricted.store(unrestricted, Ordering::Release);
    }
}

/// The users of the server.
#[derive(Debug)]
pub struct Acl {
    users: RwLock<BTreeMap<Vec<u8>, Arc<UserCell>>>,
    default: Arc<UserCell>,
    /// Connections must authenticate: the default user has a password or is off.
    auth_required: AtomicBool,
    /// `acl-pubsub-default` is `allchannels`.
    pubsub_all: AtomicBool,
    /// ACL LOG.
    pub log: log::AclLog,
}

impl Acl {
    /// Only `default`, with `requirepass` as its password (none when empty).
    pub fn new(requirepass: &[u8]) -> Acl {
        let default = Arc::new(UserCell::new(
            b"default".to_vec(),
            User::default_user(requirepass),
        ));
        let acl = Acl {
            users: RwLock::new(BTreeMap::from([(b"default".to_vec(), default.clone())])),
            default,
            auth_required: AtomicBool::new(false),
            pubsub_all: AtomicBool::new(false),
            log: log::AclLog::default(),
        };
        acl.refresh_auth_required();
        acl
    }

    /// The default user.
    #[inline]
    pub fn default_user(&self) -> &Arc<UserCell> {
        &self.default
    }

    /// Whether a connection that has not authenticated must (Redis's `authRequired`).
    #[inline]
    pub fn auth_required(&self) -> bool {
        self.auth_required.load(Ordering::Acquire)
    }

    fn refresh_auth_required(&self) {
        let rules = self.default.rules();
        self.auth_required
            .store(!rules.nopass || !rules.enabled, Ordering::Release);
    }

    /// What new users, `reset` and new selectors get for channels now.
    pub fn pubsub_default(&self) -> PubsubDefault {
        if self.pubsub_all.load(Ordering::Relaxed) {
            PubsubDefault::AllChannels
        } else {
            PubsubDefault::ResetChannels
        }
    }

    /// Applies `acl-pubsub-default` (to users and selectors made from now on).
    pub fn set_pubsub_default(&self, pubsub: PubsubDefault) {
        self.pubsub_all
            .store(pubsub == PubsubDefault::AllChannels, Ordering::Relaxed);
    }

    /// A user by name.
    pub fn get(&self, name: &[u8]) -> Option<Arc<UserCell>> {
        self.users.read().get(name).cloned()
    }

    /// Every user, by name.
    pub fn all(&self) -> Vec<Arc<UserCell>> {
        self.users.read().values().cloned().collect()
    }

    /// `ACL SETUSER name rules...`: applies the rules left to right to a copy of the user
    /// (a new user when there is none), and stores it only when every rule is valid.
    /// On error, the failing rule's index.
    pub fn set_user(
        &self,
        name: &[u8],
        rules: &[impl AsRef<[u8]>],
    ) -> Result<(), (usize, RuleError)> {
        let pubsub = self.pubsub_default();
        let mut users = self.users.write();
        let existing = users.get(name).cloned();
        let mut user = existing
            .as_ref()
            .map_or_else(|| User::new(pubsub), |cell| cell.rules().clone());
        for (i, rule) in rules.iter().enumerate() {
            user.apply(rule.as_ref(), pubsub).map_err(|e| (i, e))?;
        }
        match existing {
            Some(cell) => cell.replace(user),
            None => {
                users.insert(name.to_vec(), Arc::new(UserCell::new(name.to_vec(), user)));
            }
        }
        drop(users);
        self.refresh_auth_required();
        Ok(())
    }

    /// Replaces every user at once (ACL LOAD, the users of the config file): the
    /// `default` cell stays, with the rules of `users`' `default` or Redis's default
    /// ones. Returns the replaced users (every one but `default`): their clients must go.
    pub fn replace_all(&self, mut users: BTreeMap<Vec<u8>, User>) -> Vec<Arc<UserCell>> {
        let default_rules = users
            .remove(&b"default"[..])
            .unwrap_or_else(|| User::default_user(b""));
        let mut table = self.users.write();
        let old = std::mem::take(&mut *table);
        self.default.replace(default_rules);
        table.insert(b"default".to_vec(), self.default.clone());
        for (name, user) in users {
            table.insert(name.clone(), Arc::new(UserCell::new(name, user)));
        }
        drop(table);
        self.refresh_auth_required();
        old.into_iter()
            .filter(|(name, _)| name != b"default")
            .map(|(_, cell)| cell)
            .collect()
    }

    /// Adds or replaces the named users and leaves the others (`default` included,
    /// unless named): the config file's `user` directives.
    pub fn insert_users(&self, users: BTreeMap<Vec<u8>, User>) {
        let mut table = self.users.write();
        for (name, user) in users {
            match table.get(&name) {
                Some(cell) => cell.replace(user),
                None => {
                    table.insert(name.clone(), Arc::new(UserCell::new(name, user)));
                }
            }
        }
        drop(table);
        self.refresh_auth_required();
    }

    /// `requirepass` changed: the default user's passwords follow it.
    pub fn set_requirepass(&self, requirepass: &[u8]) {
        let mut user = self.default.rules().clone();
        user.set_requirepass(requirepass);
        self.default.replace(user);
        self.refresh_auth_required();
    }

    /// Removes users (never `default`: the caller refuses it first); returns the removed.
    pub fn delete(&self, names: &[impl AsRef<[u8]>]) -> Vec<Arc<UserCell>> {
        let mut users = self.users.write();
        names
            .iter()
            .filter(|n| n.as_ref() != b"default")
            .filter_map(|n| users.remove(n.as_ref()))
            .collect()
    }

    /// The user `name` if `password` opens it (it exists, is on, and has that password or
    /// `nopass`).
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<UserCell>> {
        let cell = self.get(name)?;
        let ok = cell.rules().password_ok(password);
        ok.then_some(cell)
    }
}
