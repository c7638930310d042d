//! Redis Sentinel: finding the master by name, and following it when Sentinel moves it.
//!
//! With [`Config::sentinel`](crate::Config::sentinel) set (a `redis+sentinel://` URL or
//! [`Config::from_sentinels`](crate::Config::from_sentinels)), a [`Client`](crate::Client)
//! never dials a fixed address. Every connection it opens, first or re-established, goes
//! through `Discovery::connect`, which follows Redis's guidelines for Sentinel clients:
//!
//! 1. ask the sentinels in turn `SENTINEL get-master-addr-by-name <name>`; the first
//!    that answers wins and moves to the front of the list, so a dead sentinel costs one
//!    failed attempt, not one per connection;
//! 2. connect to that address and run the usual handshake;
//! 3. check with `ROLE` that it is a master (a sentinel may still report a demoted one
//!    for a moment); if not, ask again after a short pause.
//!
//! When no sentinel answers, the last master seen is tried, so an outage of the
//! sentinels alone does not take the client down.
//!
//! Meanwhile one task per client (`sentinel/watch.rs`) stays subscribed to `+switch-master` on one
//! of the sentinels (the next one when it fails). The latest master address, whoever
//! learns it first (that task or a connection attempt), is published on a `watch`
//! channel, and every connection opened through Sentinel carries a future that
//! resolves when the address moves away from the one it was opened to: the
//! multiplexer then closes it, failing the commands in flight on it with
//! [`Error::MasterSwitched`], and the next command connects to the new master. A
//! connection lost for any other reason (the master was killed) is re-established the
//! same way, through the sentinels, so callers never have to find the new master.
//!
//! Dedicated connections and [`Subscriber`](crate::Subscriber)s are opened and reopened
//! the same way; an idle dedicated connection to a moved master is closed instead of
//! being leased again. One in use is not closed under its caller: Sentinel itself
//! closes the normal and pub/sub clients of a master it demotes (`CLIENT KILL TYPE
//! normal|pubsub` in its reconfiguration), and the next use reconnects to the new one.
//!
//! ```no_run
//! # async fn demo() -> redline::Result<()> {
//! let client = redline::Client::connect("redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster").await?;
//! client.set("k", "v").await?; // on whichever server Sentinel calls master now
//! # Ok(()) }
//! ```

pub(crate) mod watch;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redline_resp::{Frame, Protocol};
use tokio::sync::watch as channel;

use crate::cmd::cmd;
use crate::config::Config;
use crate::error::Error;
use crate::net::{self, Connection, Endpoint};

/// The port sentinels listen on unless told otherwise.
pub const DEFAULT_PORT: u16 = 26379;

/// How many times a connection attempt asks the sentinels again when the address they
/// gave does not answer `ROLE` as a master.
const ROLE_ATTEMPTS: u32 = 5;
/// The pause before asking again.
const ROLE_RETRY: Duration = Duration::from_millis(100);
/// The least time one sentinel gets to answer within a connection attempt.
const MIN_SENTINEL_TIME: Duration = Duration::from_millis(200);

/// Where to find the master: the sentinels to ask and the name they know it by.
///
/// ```
/// use redline::{Config, SentinelConfig};
///
/// let mut sentinel = SentinelConfig::new([("10.0.0.1", 26379), ("10.0.0.2", 26379)], "cache");
/// sentinel.password = Some("sentinel-secret".into()); // the sentinels' own password
/// let mut cfg = Config::default();
/// cfg.sentinel = Some(sentinel);
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SentinelConfig {
    /// The sentinels, `(host, port)`, asked in this order (the last one that answered
    /// first).
    pub sentinels: Vec<(String, u16)>,
    /// The master's name, as in `sentinel monitor <name> ...`.
    pub master_name: String,
    /// ACL user for the sentinels (`sentinel_username` in a URL).
    pub username: Option<String>,
    /// Password for the sentinels (`sentinel_password` in a URL); the master's own is
    /// [`Config::password`](crate::Config::password).
    pub password: Option<String>,
}

impl std::fmt::Debug for SentinelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelConfig")
            .field("sentinels", &self.sentinels)
            .field("master_name", &self.master_name)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl SentinelConfig {
    /// Sentinels to ask for the master named `master_name`, without credentials.
    ///
    /// ```
    /// let s = redline::SentinelConfig::new([("127.0.0.1", 26379)], "mymaster");
    /// assert_eq!(s.master_name, "mymaster");
    /// ```
    pub fn new<I, H>(sentinels: I, master_name: impl Into<String>) -> SentinelConfig
    where
        I: IntoIterator<Item = (H, u16)>,
        H: Into<String>,
    {
        SentinelConfig {
            sentinels: sentinels.into_iter().map(|(h, p)| (h.into(), p)).collect(),
            master_name: master_name.into(),
            username: None,
            password: None,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.sentinels.is_empty() {
            return Err(Error::Config("no sentinels to ask"));
        }
        if self.master_name.is_empty() {
            return Err(Error::Config("the Sentinel master name is empty"));
        }
        if self.sentinels.iter().any(|(h, p)| h.is_empty() || *p == 0) {
            return Err(Error::Config("a sentinel address is empty or has port 0"));
        }
        Ok(())
    }
}

/// A master address as the sentinels give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Master {
    host: String,
    port: u16,
    /// `host:port`, for errors.
    addr: Arc<str>,
}

impl Master {
    fn new(host: String, port: u16) -> Master {
        let addr = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        Master {
            host,
            port,
            addr: Arc::from(addr),
        }
    }
}

/// Resolves when the connection it belongs to must close, with the error to fail its
/// commands with.
pub(crate) type Retire = Pin<Box<dyn Future<Output = Error> + Send>>;

/// One client's view of Sentinel: the sentinels, and the master address last learned.
#[derive(Debug)]
pub(crate) struct Discovery {
    name: Arc<str>,
    /// Prepared connections to each sentinel; the last one that answered first.
    sentinels: Mutex<Vec<Arc<Endpoint>>>,
    /// The master address last learned (`None` before the first).
    current: channel::Sender<Option<Master>>,
    /// How long one sentinel may take to answer within a connection attempt.
    per_sentinel: Duration,
    /// How many times the master address changed: a reconnect backoff that started
    /// before a change is moot (the next attempt goes elsewhere).
    moves: AtomicU64,
}

impl Discovery {
    /// Prepares the sentinels' endpoints (RESP2, their own credentials, no database).
    pub(crate) fn new(cfg: &Config, sentinel: &SentinelConfig) -> Result<Discovery, Error> {
        sentinel.validate()?;
        let endpoints = sentinel
            .sentinels
            .iter()
            .map(|(host, port)| {
                let scfg = Config {
                    host: host.clone(),
                    port: *port,
                    username: sentinel.username.clone(),
                    password: sentinel.password.clone(),
                    protocol: Protocol::Resp2,
                    connect_timeout: cfg.connect_timeout,
                    ..Config::default()
                };
                Endpoint::new(&scfg).map(Arc::new)
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let count = u32::try_from(endpoints.len()).unwrap_or(u32::MAX);
        let per_sentinel = (cfg.connect_timeout / count.saturating_add(1)).max(MIN_SENTINEL_TIME);
        Ok(Discovery {
            name: Arc::from(sentinel.master_name.as_str()),
            sentinels: Mutex::new(endpoints),
            current: channel::Sender::new(None),
            per_sentinel,
            moves: AtomicU64::new(0),
        })
    }

    /// The label connection errors carry before a master is known.
    pub(crate) fn label(&self) -> String {
        format!("{} (via Sentinel)", self.name)
    }

    /// Opens a connection to the current master (see the module docs); `ep` supplies
    /// the handshake, timeouts and limits.
    pub(crate) async fn connect(&self, ep: &Endpoint) -> Result<Connection, Error> {
        let mut last = None;
        for attempt in 0..ROLE_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(ROLE_RETRY).await;
            }
            let master = match self.ask().await {
                Ok(master) => master,
                Err(e) => match self.current.borrow().clone() {
                    Some(known) => {
                        tracing::debug!(error = %e, master = %known.addr, "no sentinel answered; trying the last known master");
                        known
                    }
                    None => return Err(e),
                },
            };
            let mut conn = net::dial(ep, &master.host, master.port, &master.addr).await?;
            match role(&mut conn, &master.addr).await? {
                Some(role) if role == "master" => {
                    self.publish(master.clone());
                    conn.retire = Some(self.retire_when_moved(master));
                    return Ok(conn);
                }
                other => {
                    let role = other.unwrap_or_else(|| "an unexpected reply".into());
                    tracing::debug!(master = %master.addr, %role, "Sentinel's master is not a master yet");
                    last = Some(Error::MasterNotFound {
                        name: self.name.clone(),
                        reason: Arc::from(format!("{} answers ROLE with {role}", master.addr)),
                    });
                }
            }
        }
        Err(last.unwrap_or_else(|| self.not_found("no attempt made".into())))
    }

    /// Asks the sentinels in turn for the master's address.
    async fn ask(&self) -> Result<Master, Error> {
        let sentinels = self.sentinels_snapshot();
        let mut reasons = Vec::new();
        for ep in &sentinels {
            match tokio::time::timeout(self.per_sentinel, self.ask_one(ep)).await {
                Ok(Ok(Some(master))) => {
                    self.prefer(ep);
                    return Ok(master);
                }
                Ok(Ok(None)) => reasons.push(format!("{} does not know it", ep.addr)),
                Ok(Err(e)) => reasons.push(format!("{}: {e}", ep.addr)),
                Err(_) => {
                    reasons.push(format!("{}: no answer in {:?}", ep.addr, self.per_sentinel))
                }
            }
        }
        Err(self.not_found(reasons.join("; ")))
    }

    /// One sentinel's answer: the address, or `None` when it does not monitor the name.
    async fn ask_one(&self, ep: &Endpoint) -> Result<Option<Master>, Error> {
        // Sentinels are dialled directly (`net::connect` would come back here).
        let mut conn = net::dial(ep, &ep.host, ep.port, &ep.addr).await?;
        let cmd = cmd!("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(&*self.name);
        conn.write_all(&cmd.to_bytes(), &ep.addr).await?;
        match conn.read_reply(&ep.addr).await? {
            Frame::Array(items) => match items.as_slice() {
                [host, port] => {
                    let host = text(host);
                    let port = text(port).and_then(|p| p.parse::<u16>().ok());
                    match (host, port) {
                        (Some(host), Some(port)) => Ok(Some(Master::new(host, port))),
                        _ => Err(self.not_found(format!("{} gave a malformed address", ep.addr))),
                    }
                }
                _ => Err(self.not_found(format!("{} gave a malformed address", ep.addr))),
            },
            Frame::Null | Frame::NullArray | Frame::NullBulk => Ok(None),
            Frame::Error(e) | Frame::BulkError(e) => Err(Error::from_server_reply(&e)),
            other => Err(Error::type_mismatch(
                "master address",
                crate::error::describe(&other),
            )),
        }
    }

    /// Records the master address; connections to any other one retire.
    pub(crate) fn publish(&self, master: Master) {
        self.current.send_if_modified(|current| {
            if current.as_ref() == Some(&master) {
                return false;
            }
            tracing::info!(name = %self.name, master = %master.addr, "Sentinel master");
            *current = Some(master);
            self.moves.fetch_add(1, Ordering::Relaxed);
            true
        });
    }

    /// How many times the master address changed so far.
    pub(crate) fn moves(&self) -> u64 {
        self.moves.load(Ordering::Relaxed)
    }

    /// A future that resolves once the published master is not `dialled` any more.
    fn retire_when_moved(&self, dialled: Master) -> Retire {
        let mut rx = self.current.subscribe();
        let name = self.name.clone();
        Box::pin(async move {
            loop {
                let moved = rx
                    .borrow_and_update()
                    .as_ref()
                    .filter(|now| **now != dialled)
                    .map(|now| now.addr.clone());
                if let Some(addr) = moved {
                    return Error::MasterSwitched { name, addr };
                }
                if rx.changed().await.is_err() {
                    // The client is gone; its connections close with it.
                    std::future::pending::<()>().await;
                }
            }
        })
    }

    fn sentinels_snapshot(&self) -> Vec<Arc<Endpoint>> {
        // A panic while holding this lock cannot leave the list half changed.
        self.sentinels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Moves the sentinel that answered to the front.
    fn prefer(&self, ep: &Arc<Endpoint>) {
        let mut list = self.sentinels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = list.iter().position(|e| Arc::ptr_eq(e, ep)) {
            let chosen = list.remove(i);
            list.insert(0, chosen);
        }
    }

    fn not_found(&self, reason: String) -> Error {
        Error::MasterNotFound {
            name: self.name.clone(),
            reason: Arc::from(reason),
        }
    }
}

/// `ROLE`'s first element (`master`, `slave`...), or `None` for an unexpected reply.
async fn role(conn: &mut Connection, addr: &Arc<str>) -> Result<Option<String>, Error> {
    conn.write_all(&cmd!("ROLE").to_bytes(), addr).await?;
    Ok(match conn.read_reply(addr).await? {
        Frame::Array(items) => items.first().and_then(text),
        Frame::Error(e) | Frame::BulkError(e) => Some(String::from_utf8_lossy(&e).into_owned()),
        _ => None,
    })
}

/// A bulk or simple string as text.
fn text(frame: &Frame) -> Option<String> {
    match frame {
        Frame::Bulk(b) | Frame::Simple(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

/// The new address in a `+switch-master` message for master `name`:
/// `<name> <old-ip> <old-port> <new-ip> <new-port>`.
pub(crate) fn parse_switch(payload: &[u8], name: &str) -> Option<Master> {
    let text = std::str::from_utf8(payload).ok()?;
    let words: Vec<&str> = text.split(' ').collect();
    match words.as_slice() {
        [n, _, _, host, port] if *n == name => {
            Some(Master::new((*host).to_owned(), port.parse().ok()?))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_messages() {
        let m = parse_switch(b"mymaster 127.0.0.1 7000 127.0.0.1 7001", "mymaster").unwrap();
        assert_eq!((m.host.as_str(), m.port), ("127.0.0.1", 7001));
        assert_eq!(&*m.addr, "127.0.0.1:7001");
        assert_eq!(
            &*parse_switch(b"m ::1 1 ::1 2", "m").unwrap().addr,
            "[::1]:2"
        );
        assert!(parse_switch(b"other 127.0.0.1 7000 127.0.0.1 7001", "mymaster").is_none());
        assert!(parse_switch(b"mymaster 127.0.0.1 7000 127.0.0.1 x", "mymaster").is_none());
        assert!(parse_switch(b"mymaster", "mymaster").is_none());
    }

    #[test]
    fn validation() {
        assert!(SentinelConfig::new([("h", 1)], "m").validate().is_ok());
        assert!(SentinelConfig::new(Vec::<(String, u16)>::new(), "m")
            .validate()
            .is_err());
        assert!(SentinelConfig::new([("h", 1)], "").validate().is_err());
        assert!(SentinelConfig::new([("h", 0)], "m").validate().is_err());
    }
}
