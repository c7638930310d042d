//! The table of connected clients: ids, and the handle that ends a connection task
//! (CLIENT KILL, SHUTDOWN). Touched on connect and disconnect only, never per command.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use tokio::task::AbortHandle;

/// One registered connection.
#[derive(Debug)]
pub struct ClientEntry {
    /// The peer's address.
    pub peer: SocketAddr,
    /// When it connected.
    pub created: Instant,
    abort: Option<AbortHandle>,
}

/// Connected clients.
#[derive(Debug, Default)]
pub struct Clients {
    next_id: AtomicU64,
    map: Mutex<HashMap<u64, ClientEntry>>,
}

impl Clients {
    /// Registers a connection and returns its id (ids start at 1, like Redis's).
    pub fn register(&self, peer: SocketAddr) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        self.map.lock().insert(
            id,
            ClientEntry {
                peer,
                created: Instant::now(),
                abort: None,
            },
        );
        id
    }

    /// Attaches the task's abort handle, unless the task already finished.
    pub fn set_abort(&self, id: u64, abort: AbortHandle) {
        if let Some(entry) = self.map.lock().get_mut(&id) {
            entry.abort = Some(abort);
        }
    }

    /// Forgets a connection (called when its task ends, however it ends).
    pub fn unregister(&self, id: u64) {
        self.map.lock().remove(&id);
    }

    /// Number of connected clients.
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// Whether no client is connected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ends the task of client `id`; false when there is no such client.
    pub fn kill(&self, id: u64) -> bool {
        match self.map.lock().get(&id) {
            Some(entry) => {
                if let Some(abort) = &entry.abort {
                    abort.abort();
                }
                true
            }
            None => false,
        }
    }

    /// Ends every connection task (shutdown).
    pub fn kill_all(&self) {
        for entry in self.map.lock().values() {
            if let Some(abort) = &entry.abort {
                abort.abort();
            }
        }
    }

    /// Ids currently connected (oldest first).
    pub fn ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.map.lock().keys().copied().collect();
        ids.sort_unstable();
        ids
    }
}

/// Unregisters a client when its task ends, even by abort or panic.
pub struct Registration<'a> {
    /// The registry.
    pub clients: &'a Clients,
    /// The client's id.
    pub id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.clients.unregister(self.id);
    }
}
