//! Everything a [`Client`](crate::Client) can be told, and `redis://` / `rediss://` URLs.
//!
//! A URL covers the common settings; [`Config`] covers all of them. Both are validated
//! before any connection is made, so a typo is an error at startup, not at the first command.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use redline_resp::{Frame, Limits, Protocol};

use crate::cache::{Cache, CacheConfig};
use crate::error::{Error, UrlError};
use crate::mux::Turns;
use crate::sentinel::SentinelConfig;

/// Connection settings for one server.
///
/// Fields are public; start from [`Config::default`] (127.0.0.1:6379, RESP3) or
/// [`Config::from_url`] and change what you need.
///
/// ```
/// use std::time::Duration;
/// use redline::{Config, FullQueue};
///
/// let mut cfg = Config::from_url("redis://alice:secret@cache.internal:6380/2?protocol=3&timeout=250ms")?;
/// cfg.pool_size = 2;
/// cfg.on_full = FullQueue::Error;
/// assert_eq!(cfg.db, 2);
/// assert_eq!(cfg.command_timeout, Some(Duration::from_millis(250)));
/// # Ok::<(), redline::Error>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    /// Host name or IP address to dial.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// ACL user name; `None` authenticates as `default` when a password is set.
    pub username: Option<String>,
    /// Password (`requirepass` or the ACL user's).
    pub password: Option<String>,
    /// Database selected after connecting (`SELECT`), 0 by default.
    pub db: u32,
    /// Protocol to ask for. RESP3 (the default) falls back to RESP2 on servers without `HELLO`.
    pub protocol: Protocol,
    /// Sent as `CLIENT SETNAME` (within `HELLO`), visible in `CLIENT LIST`.
    pub client_name: Option<String>,
    /// TLS settings; `Some` for `rediss://`.
    pub tls: Option<TlsConfig>,
    /// Limit for TCP connect, TLS and the handshake together. Default 5 s.
    pub connect_timeout: Duration,
    /// Limit for one command's reply, from the moment it is issued (queue wait
    /// included). The caller then gets [`Error::Timeout`]; the command may or may not
    /// have run. While a connection is being (re)established, queued commands wait at
    /// most the connect timeout. `None` waits forever (not recommended). Default 5 s.
    pub command_timeout: Option<Duration>,
    /// Multiplexed connections to the server, used round-robin. Default 1: one connection
    /// already pipelines everything; more help only when one connection's socket or the
    /// server's thread for it is the bottleneck.
    pub pool_size: usize,
    /// Commands that may wait in each connection's queue before [`Config::on_full`]
    /// applies. Default 8192.
    pub queue_bound: usize,
    /// What a caller does when the queue is full. Default [`FullQueue::Wait`].
    pub on_full: FullQueue,
    /// Delays between reconnect attempts.
    pub backoff: Backoff,
    /// Parser limits applied to replies.
    pub limits: Limits,
    /// Receives RESP3 push frames (client-side caching invalidations, ...) that arrive
    /// on the multiplexed connections. Without a handler they are dropped.
    pub push_handler: Option<PushHandler>,
    /// How many times a read-only command (`readonly` in Redis's command table: GET,
    /// HGETALL, ZRANGE...) is sent again after its connection failed under it. Default 0:
    /// nothing is ever re-sent behind the caller's back. Writes are never retried, since
    /// the server may have run them. URL option `retries`.
    pub retries: u32,
    /// A connection whose oldest command already timed out, and that then receives
    /// nothing at all for this long, is closed: every command on it fails with a
    /// connection error and the next command reconnects. This catches a peer that stopped
    /// answering without closing (a frozen host, a dropped route) long before TCP
    /// keepalive does. `None` leaves it to keepalive. Default 10 s (two command timeouts);
    /// URL option `unresponsive_after`.
    pub unresponsive_after: Option<Duration>,
    /// While replies are due, how many times in a row a connection's task re-polls itself
    /// before parking until the socket is readable. Spinning saves the park/wake-up per
    /// batch (+15-25% at 64 callers in the client benchmark). With up to 64 commands in
    /// flight on a plain TCP connection, each spin also asks the kernel for the reply
    /// (one `recv`), and the budget is twice this: the round trip is the limit there,
    /// and catching the reply as it lands doubled GET at one caller. With several of a
    /// client's connections waiting (a cluster's nodes), each spins the budget divided by
    /// the square of their number: their spins share the worker, and a reply lands on
    /// one of them that much sooner (3 masters, 64 callers: +10-15%, p99 a third lower).
    /// A spin costs CPU on a worker other tasks may need: a service whose workers are
    /// busy with its own work (HTTP handlers) can do better with 0 (see bench/NOTES.md).
    /// Default 32; URL option `busy_polls`.
    pub busy_polls: u32,
    /// Whether a connection hands replies out in *waves* (from 8 commands in flight):
    /// about a quarter of them (4 to 32), then a write of what those callers sent, then
    /// the next wave, so the server works on one batch while the callers prepare the
    /// next, and is not left idle long enough to wake slowly. It pays when the server has
    /// a core of its own: GET through `Client` on one redis-server at 12 / 16 / 32
    /// callers went from 220-260k / 280-330k / 280-530k to 300-440k / 420-440k /
    /// 610-760k ops/s (bench/NOTES.md, "waves from 8 in flight"). Each wave is one more
    /// write for both sides, which cost throughput when three cluster nodes and the
    /// client shared two cores (bench/NOTES.md, "reply waves"). `None` (the default): on for
    /// [`Client`](crate::Client), off for [`ClusterClient`](crate::ClusterClient)'s node
    /// connections. URL option `reply_waves` (`yes`/`no`).
    pub reply_waves: Option<bool>,
    /// Find the master through Redis Sentinel instead of dialling `host:port` (which are
    /// then unused): see [`SentinelConfig`] and the `redis+sentinel://` URL form of
    /// [`Config::from_url`].
    pub sentinel: Option<SentinelConfig>,
    /// Server-assisted client-side caching for the `cached_*` reads; `None` (the default)
    /// disables it. Needs RESP3. See [`Config::cache`] and [`CacheConfig`]; URL options
    /// `cache_size`, `cache_entries`, `cache_ttl`, `cache_bcast`.
    pub cache: Option<CacheConfig>,
    /// The cache instance of the client this configuration was given to: set by
    /// `Client::from_config`/`ClusterClient::from_config`, read by every multiplexed
    /// connection (tracking, invalidations, flushes).
    pub(crate) tracker: Option<Arc<Cache>>,
    /// Shared by every connection of the client this configuration was given to (see
    /// `mux::Turns`): set by `Client::from_config`/`ClusterClient::from_config`.
    pub(crate) turns: Option<Arc<Turns>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            host: "127.0.0.1".to_owned(),
            port: 6379,
            username: None,
            password: None,
            db: 0,
            protocol: Protocol::Resp3,
            client_name: None,
            tls: None,
            connect_timeout: Duration::from_secs(5),
            command_timeout: Some(Duration::from_secs(5)),
            pool_size: 1,
            queue_bound: 8192,
            on_full: FullQueue::Wait,
            backoff: Backoff::default(),
            limits: Limits::default(),
            push_handler: None,
            retries: 0,
            unresponsive_after: Some(Duration::from_secs(10)),
            busy_polls: 32,
            reply_waves: None,
            sentinel: None,
            cache: None,
            tracker: None,
            turns: None,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("db", &self.db)
            .field("protocol", &self.protocol)
            .field("client_name", &self.client_name)
            .field("tls", &self.tls)
            .field("connect_timeout", &self.connect_timeout)
            .field("command_timeout", &self.command_timeout)
            .field("pool_size", &self.pool_size)
            .field("queue_bound", &self.queue_bound)
            .field("on_full", &self.on_full)
            .field("backoff", &self.backoff)
            .field("limits", &self.limits)
            .field("push_handler", &self.push_handler.is_some())
            .field("retries", &self.retries)
            .field("unresponsive_after", &self.unresponsive_after)
            .field("busy_polls", &self.busy_polls)
            .field("reply_waves", &self.reply_waves)
            .field("sentinel", &self.sentinel)
            .field("cache", &self.cache)
            .finish()
    }
}

/// What a caller does when a connection's command queue is full.
///
/// ```
/// use redline::{Config, FullQueue};
///
/// let mut cfg = Config::default();
/// cfg.queue_bound = 1024;
/// cfg.on_full = FullQueue::Error; // Error::Backpressure instead of waiting
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FullQueue {
    /// Wait for room (within the command timeout).
    #[default]
    Wait,
    /// Fail at once with [`Error::Backpressure`].
    Error,
}

/// Capped exponential backoff with full jitter between reconnect attempts.
///
/// The first reconnect after a loss is immediate; each failed attempt doubles the delay
/// before the next, up to `max`, and each delay is drawn uniformly from `[0, delay]`.
///
/// ```
/// use std::time::Duration;
/// use redline::Backoff;
///
/// let backoff = Backoff { base: Duration::from_millis(10), max: Duration::from_secs(1) };
/// assert_eq!(backoff.delay(0), Duration::ZERO);
/// assert!(backoff.delay(30) <= Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Delay after the first failed attempt.
    pub base: Duration,
    /// Largest delay.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(25),
            max: Duration::from_secs(2),
        }
    }
}

impl Backoff {
    /// The jittered delay before attempt `failures + 1`, after `failures` failed attempts.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let delay = redline::Backoff::default().delay(3);
    /// assert!(delay <= Duration::from_millis(100));
    /// ```
    pub fn delay(&self, failures: u32) -> Duration {
        if failures == 0 {
            return Duration::ZERO;
        }
        let exp = failures.saturating_sub(1).min(20);
        let ceiling = self.base.saturating_mul(1u32 << exp).min(self.max);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }
}

/// TLS settings.
///
/// ```
/// use redline::{CaCerts, Config, TlsConfig};
///
/// let mut cfg = Config::default();
/// let mut tls = TlsConfig::default();
/// tls.ca = Some(CaCerts::File("/etc/redis/ca.crt".into()));
/// tls.server_name = Some("redis.internal".to_owned()); // certificate name, dialled address stays host
/// cfg.tls = Some(tls);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsConfig {
    /// Trusted CAs; `None` trusts the public web PKI roots.
    pub ca: Option<CaCerts>,
    /// Client certificate for mutual TLS.
    pub client_cert: Option<ClientCert>,
    /// Name to send as SNI and to verify the certificate against; defaults to the host.
    /// Set it when dialling an IP address or a tunnel whose certificate names another host.
    pub server_name: Option<String>,
    /// Accept any certificate. For tests only: it removes the protection TLS gives.
    pub insecure: bool,
}

/// Where trusted CA certificates come from.
///
/// ```
/// use redline::{CaCerts, TlsConfig};
///
/// let mut tls = TlsConfig::default();
/// tls.ca = Some(CaCerts::Pem(b"-----BEGIN CERTIFICATE-----\n...".to_vec()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaCerts {
    /// A PEM file with one or more certificates.
    File(PathBuf),
    /// PEM text with one or more certificates.
    Pem(Vec<u8>),
}

/// A client certificate chain and its private key, both PEM.
///
/// ```
/// use redline::{ClientCert, TlsConfig};
///
/// let mut tls = TlsConfig::default();
/// tls.client_cert = Some(ClientCert {
///     cert_pem: std::fs::read("client.crt").unwrap_or_default(),
///     key_pem: std::fs::read("client.key").unwrap_or_default(),
/// });
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCert {
    /// Certificate chain, leaf first.
    pub cert_pem: Vec<u8>,
    /// PKCS#8, PKCS#1 or SEC1 private key.
    pub key_pem: Vec<u8>,
}

impl fmt::Debug for ClientCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCert")
            .field("cert_pem", &format_args!("{} bytes", self.cert_pem.len()))
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// A callback for RESP3 push frames, called on the connection task: keep it short
/// (e.g. send into a channel).
///
/// ```
/// use redline::{Config, PushHandler};
///
/// let (tx, _rx) = std::sync::mpsc::channel();
/// let mut cfg = Config::default();
/// cfg.push_handler = Some(PushHandler::new(move |frame| {
///     let _ = tx.send(frame);
/// }));
/// ```
#[derive(Clone)]
pub struct PushHandler(Arc<dyn Fn(Frame) + Send + Sync>);

impl PushHandler {
    /// Wraps a callback.
    ///
    /// ```
    /// use redline::{Config, PushHandler};
    ///
    /// let mut cfg = Config::default();
    /// cfg.push_handler = Some(PushHandler::new(|frame| println!("push: {frame:?}")));
    /// ```
    pub fn new(f: impl Fn(Frame) + Send + Sync + 'static) -> Self {
        PushHandler(Arc::new(f))
    }

    pub(crate) fn call(&self, frame: Frame) {
        (self.0)(frame)
    }
}

impl fmt::Debug for PushHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PushHandler")
    }
}

impl Config {
    /// Parses `redis://[user[:password]@]host[:port][/db][?option=value&...]`, or
    /// `rediss://` for TLS.
    ///
    /// Options: `protocol` (2 or 3), `client_name`, `db`, `connect_timeout`,
    /// `timeout` (command timeout; `0` or `none` disables it), `pool_size`,
    /// `queue_bound`, `on_full` (`wait` or `error`), `retries`, `unresponsive_after`
    /// (`none` disables it), `busy_polls`, `reply_waves` (`yes`/`no`), the client-side
    /// cache's `cache_size` (bytes, `kb`/`mb`/`gb` suffixes), `cache_entries`, `cache_ttl`
    /// and `cache_bcast` (BCAST mode; comma-separated prefixes, empty for every key): any
    /// of them turns the cache on, 64 MiB and 60 s unless given; and for TLS `ca_file`, `sni`
    /// (certificate name when it differs from the host) and `insecure` (`true` skips
    /// certificate checks; tests only). Durations take `ms`, `s` or `m` suffixes; a bare
    /// number is seconds. Unknown options are errors.
    ///
    /// ```
    /// use redline::Config;
    ///
    /// let cfg = Config::from_url("rediss://[::1]:6380?sni=redis.test&insecure=true")?;
    /// assert_eq!(cfg.host, "::1");
    /// assert_eq!(cfg.tls.unwrap().server_name.as_deref(), Some("redis.test"));
    /// # Ok::<(), redline::Error>(())
    /// ```
    ///
    /// `redis+sentinel://[user[:password]@]host[:port][,host2[:port2]...]/master-name[/db][?...]`
    /// asks the listed sentinels (port 26379 by default) for the master named
    /// `master-name` (see [`SentinelConfig`]). The credentials are the master's; the
    /// sentinels' own go in the options `sentinel_username` and `sentinel_password`.
    ///
    /// ```
    /// use redline::Config;
    ///
    /// let cfg = Config::from_url("redis+sentinel://:pw@10.0.0.1,10.0.0.2:26380/cache/2")?;
    /// let sentinel = cfg.sentinel.as_ref().unwrap();
    /// assert_eq!(sentinel.master_name, "cache");
    /// assert_eq!(sentinel.sentinels, [("10.0.0.1".to_string(), 26379), ("10.0.0.2".to_string(), 26380)]);
    /// assert_eq!((cfg.password.as_deref(), cfg.db), (Some("pw"), 2));
    /// # Ok::<(), redline::Error>(())
    /// ```
    pub fn from_url(url: &str) -> Result<Config, Error> {
        Ok(parse_url(url)?)
    }

    /// A configuration that finds the master named `master_name` through these
    /// sentinels; the other settings are the defaults, to be changed as with any
    /// configuration.
    ///
    /// ```
    /// use redline::Config;
    ///
    /// let mut cfg = Config::from_sentinels([("127.0.0.1", 26379), ("127.0.0.1", 26380)], "mymaster");
    /// cfg.password = Some("master-secret".into());
    /// assert_eq!(cfg.sentinel.as_ref().map(|s| s.sentinels.len()), Some(2));
    /// ```
    pub fn from_sentinels<I, H>(sentinels: I, master_name: impl Into<String>) -> Config
    where
        I: IntoIterator<Item = (H, u16)>,
        H: Into<String>,
    {
        let sentinel = SentinelConfig::new(sentinels, master_name);
        let mut cfg = Config::default();
        if let Some((host, port)) = sentinel.sentinels.first() {
            cfg.host = host.clone();
            cfg.port = *port;
        }
        cfg.sentinel = Some(sentinel);
        cfg
    }

    /// `host:port`, as used in error messages and for dialling.
    ///
    /// ```
    /// let cfg = redline::Config::from_url("redis://[::1]:6380")?;
    /// assert_eq!(cfg.addr(), "[::1]:6380");
    /// # Ok::<(), redline::Error>(())
    /// ```
    pub fn addr(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Turns on server-assisted client-side caching: at most `max_bytes` held, entries
    /// served at most `ttl` after they were stored (invalidations from the server drop
    /// them as soon as their keys change). Cached reads are the `cached_*` methods; see
    /// [`CacheConfig`] for the other settings (entry bound, BCAST mode).
    ///
    /// ```no_run
    /// # async fn demo() -> redline::Result<()> {
    /// use std::time::Duration;
    /// use redline::{Client, Config};
    ///
    /// let cfg = Config::from_url("redis://127.0.0.1:6379")?.cache(64 << 20, Duration::from_secs(60));
    /// let client = Client::from_config(cfg).await?;
    /// client.set("greeting", "hello").await?;
    /// assert_eq!(client.cached_get("greeting").await?.as_deref(), Some(&b"hello"[..])); // server
    /// assert_eq!(client.cached_get("greeting").await?.as_deref(), Some(&b"hello"[..])); // memory
    /// let stats = client.cache_stats().unwrap_or_default();
    /// assert_eq!((stats.hits, stats.misses), (1, 1));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn cache(mut self, max_bytes: usize, ttl: Duration) -> Config {
        self.cache = Some(CacheConfig::new(max_bytes, ttl));
        self
    }

    /// Makes this configuration's cache (if one is configured) and attaches it, so every
    /// multiplexed connection made from it tracks keys for it.
    pub(crate) fn attach_cache(&mut self) -> Option<Arc<Cache>> {
        self.tracker = self.cache.as_ref().map(Cache::new);
        self.tracker.clone()
    }

    /// Makes every connection opened from this configuration count its turns together
    /// (see `mux::Turns`): one client's connections, never two clients'.
    pub(crate) fn attach_turns(&mut self) {
        self.turns = Some(Arc::default());
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        if let Some(cache) = &self.cache {
            if self.protocol != Protocol::Resp3 {
                return Err(Error::Config("client-side caching needs protocol RESP3"));
            }
            if cache.max_bytes == 0 || cache.max_entries == 0 {
                return Err(Error::Config("cache bounds must be at least 1"));
            }
        }
        if self.pool_size == 0 {
            return Err(Error::Config("pool_size must be at least 1"));
        }
        if self.queue_bound == 0 {
            return Err(Error::Config("queue_bound must be at least 1"));
        }
        if self.host.is_empty() {
            return Err(Error::Config("host is empty"));
        }
        if self.backoff.base > self.backoff.max {
            return Err(Error::Config("backoff.base exceeds backoff.max"));
        }
        if let Some(sentinel) = &self.sentinel {
            sentinel.validate()?;
            if self.tls.is_some() {
                return Err(Error::Config("TLS with Sentinel is not supported"));
            }
        }
        Ok(())
    }
}

fn parse_url(url: &str) -> Result<Config, UrlError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| UrlError::Scheme(Arc::from("")))?;
    let mut cfg = Config::default();
    match scheme.to_ascii_lowercase().as_str() {
        "redis" => {}
        "rediss" => cfg.tls = Some(TlsConfig::default()),
        "redis+sentinel" => return parse_sentinel_url(rest),
        other => return Err(UrlError::Scheme(Arc::from(other))),
    }

    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    // The last '@' separates credentials: passwords may contain '@' unescaped.
    let host_port = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => {
            let (user, pass) = match userinfo.split_once(':') {
                Some((u, p)) => (u, Some(p)),
                None => (userinfo, None),
            };
            if !user.is_empty() {
                cfg.username = Some(percent_decode(user, "user name")?);
            }
            if let Some(p) = pass {
                cfg.password = Some(percent_decode(p, "password")?);
            }
            host_port
        }
        None => authority,
    };
    let (host, port) = split_host_port(host_port)?;
    if host.is_empty() {
        return Err(UrlError::MissingHost);
    }
    cfg.host = host.to_owned();
    if let Some(port) = port {
        cfg.port = port;
    }

    let db = path.trim_start_matches('/');
    if !db.is_empty() {
        cfg.db = db.parse().map_err(|_| UrlError::Database(Arc::from(db)))?;
    }

    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value, "query")?;
        apply_option(&mut cfg, key, &value)?;
    }
    Ok(cfg)
}

/// The part after `redis+sentinel://`: `[user[:pass]@]h1[:p1][,h2[:p2]...]/name[/db][?opts]`.
fn parse_sentinel_url(rest: &str) -> Result<Config, UrlError> {
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(userinfo), hosts),
        None => (None, authority),
    };
    let mut sentinels = Vec::new();
    for host_port in hosts.split(',') {
        let (host, port) = split_host_port(host_port)?;
        if host.is_empty() {
            return Err(UrlError::MissingHost);
        }
        sentinels.push((
            host.to_owned(),
            port.unwrap_or(crate::sentinel::DEFAULT_PORT),
        ));
    }
    let (name, db) = match path.split_once('/') {
        Some((name, db)) => (name, db),
        None => (path, ""),
    };
    let name = percent_decode(name, "master name")?;
    if name.is_empty() {
        return Err(UrlError::MasterName);
    }
    let mut cfg = Config::from_sentinels(sentinels, name);
    if let Some(userinfo) = userinfo {
        let (user, pass) = match userinfo.split_once(':') {
            Some((u, p)) => (u, Some(p)),
            None => (userinfo, None),
        };
        if !user.is_empty() {
            cfg.username = Some(percent_decode(user, "user name")?);
        }
        if let Some(p) = pass {
            cfg.password = Some(percent_decode(p, "password")?);
        }
    }
    let db = db.trim_end_matches('/');
    if !db.is_empty() {
        cfg.db = db.parse().map_err(|_| UrlError::Database(Arc::from(db)))?;
    }
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value, "query")?;
        apply_option(&mut cfg, key, &value)?;
    }
    Ok(cfg)
}

fn split_host_port(s: &str) -> Result<(&str, Option<u16>), UrlError> {
    let parse_port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&n| n != 0)
            .ok_or_else(|| UrlError::Port(Arc::from(p)))
    };
    if let Some(v6) = s.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or(UrlError::MissingHost)?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((host, Some(parse_port(p)?))),
            None if after.is_empty() => Ok((host, None)),
            None => Err(UrlError::Port(Arc::from(after))),
        };
    }
    match s.rsplit_once(':') {
        Some((host, p)) => Ok((host, Some(parse_port(p)?))),
        None => Ok((s, None)),
    }
}

fn apply_option(cfg: &mut Config, key: &str, value: &str) -> Result<(), UrlError> {
    let bad = |option: &'static str| UrlError::OptionValue {
        option,
        value: Arc::from(value),
    };
    match key {
        "protocol" | "resp" => {
            cfg.protocol = match value {
                "2" | "resp2" => Protocol::Resp2,
                "3" | "resp3" => Protocol::Resp3,
                _ => return Err(bad("protocol")),
            }
        }
        "client_name" | "name" => cfg.client_name = Some(value.to_owned()),
        "db" => cfg.db = value.parse().map_err(|_| bad("db"))?,
        "connect_timeout" | "dial_timeout" => {
            cfg.connect_timeout = parse_duration(value)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| bad("connect_timeout"))?
        }
        "timeout" | "command_timeout" => {
            cfg.command_timeout = match value {
                "none" | "off" => None,
                v => {
                    let d = parse_duration(v).ok_or_else(|| bad("timeout"))?;
                    (!d.is_zero()).then_some(d)
                }
            }
        }
        "retries" => cfg.retries = value.parse().map_err(|_| bad("retries"))?,
        "busy_polls" => cfg.busy_polls = value.parse().map_err(|_| bad("busy_polls"))?,
        "reply_waves" => {
            cfg.reply_waves = Some(parse_flag(value).ok_or_else(|| bad("reply_waves"))?)
        }
        "unresponsive_after" => {
            cfg.unresponsive_after = match value {
                "none" | "off" => None,
                v => {
                    let d = parse_duration(v).ok_or_else(|| bad("unresponsive_after"))?;
                    (!d.is_zero()).then_some(d)
                }
            }
        }
        "pool_size" => {
            cfg.pool_size = value
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad("pool_size"))?
        }
        "queue_bound" => {
            cfg.queue_bound = value
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad("queue_bound"))?
        }
        "on_full" => {
            cfg.on_full = match value {
                "wait" => FullQueue::Wait,
                "error" => FullQueue::Error,
                _ => return Err(bad("on_full")),
            }
        }
        "sentinel_username" | "sentinel_password" => {
            let sentinel = cfg
                .sentinel
                .as_mut()
                .ok_or_else(|| bad("sentinel options need redis+sentinel://"))?;
            if key == "sentinel_username" {
                sentinel.username = Some(value.to_owned());
            } else {
                sentinel.password = Some(value.to_owned());
            }
        }
        "cache_size" => {
            cache_of(cfg).max_bytes = parse_size(value)
                .filter(|&n| n > 0)
                .ok_or_else(|| bad("cache_size"))?
        }
        "cache_entries" => {
            cache_of(cfg).max_entries = value
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad("cache_entries"))?
        }
        "cache_ttl" => {
            cache_of(cfg).ttl = parse_duration(value)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| bad("cache_ttl"))?
        }
        "cache_bcast" => {
            cache_of(cfg).bcast_prefixes = Some(
                value
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned)
                    .collect(),
            )
        }
        "ca_file" | "sni" | "insecure" => {
            let tls = cfg
                .tls
                .as_mut()
                .ok_or_else(|| bad("TLS options need rediss://"))?;
            match key {
                "ca_file" => tls.ca = Some(CaCerts::File(PathBuf::from(value))),
                "sni" => tls.server_name = Some(value.to_owned()),
                _ => tls.insecure = parse_flag(value).ok_or_else(|| bad("insecure"))?,
            }
        }
        other => return Err(UrlError::UnknownOption(Arc::from(other))),
    }
    Ok(())
}

/// The cache settings, created with their defaults by the first `cache_*` URL option.
fn cache_of(cfg: &mut Config) -> &mut CacheConfig {
    cfg.cache.get_or_insert_with(CacheConfig::default)
}

/// `4096`, `512kb`, `64mb`, `1gb` (binary multiples; `k`, `m`, `g`, `kib`... also work).
fn parse_size(s: &str) -> Option<usize> {
    let lower = s.to_ascii_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let scale: usize = match &lower[digits.len()..] {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return None,
    };
    digits.parse::<usize>().ok()?.checked_mul(scale)
}

/// `true`/`1`/`yes` or `false`/`0`/`no`.
fn parse_flag(s: &str) -> Option<bool> {
    match s {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// `250ms`, `5s`, `1m`, or a bare number of seconds (fractions allowed).
fn parse_duration(s: &str) -> Option<Duration> {
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let secs = num.parse::<f64>().ok()? * scale;
    Duration::try_from_secs_f64(secs).ok()
}

fn percent_decode(s: &str, what: &'static str) -> Result<String, UrlError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or(UrlError::Encoding(what))?;
            let hex = std::str::from_utf8(hex).map_err(|_| UrlError::Encoding(what))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| UrlError::Encoding(what))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| UrlError::Encoding(what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_url() {
        let cfg = Config::from_url(
            "redis://alice:p%40ss:w@db.example:6390/3?protocol=2&client_name=api&timeout=250ms\
             &connect_timeout=2s&pool_size=4&queue_bound=100&on_full=error",
        )
        .unwrap();
        assert_eq!(cfg.host, "db.example");
        assert_eq!(cfg.port, 6390);
        assert_eq!(cfg.username.as_deref(), Some("alice"));
        assert_eq!(cfg.password.as_deref(), Some("p@ss:w"));
        assert_eq!(cfg.db, 3);
        assert_eq!(cfg.protocol, Protocol::Resp2);
        assert_eq!(cfg.client_name.as_deref(), Some("api"));
        assert_eq!(cfg.command_timeout, Some(Duration::from_millis(250)));
        assert_eq!(cfg.connect_timeout, Duration::from_secs(2));
        assert_eq!(cfg.pool_size, 4);
        assert_eq!(cfg.queue_bound, 100);
        assert_eq!(cfg.on_full, FullQueue::Error);
        assert!(cfg.tls.is_none());
        assert!(!format!("{cfg:?}").contains("p@ss"));
    }

    #[test]
    fn defaults_and_variants() {
        let cfg = Config::from_url("redis://localhost").unwrap();
        assert_eq!(
            (cfg.host.as_str(), cfg.port, cfg.db),
            ("localhost", 6379, 0)
        );
        assert_eq!(cfg.protocol, Protocol::Resp3);
        let cfg = Config::from_url("redis://:secret@h:1/").unwrap();
        assert_eq!(cfg.username, None);
        assert_eq!(cfg.password.as_deref(), Some("secret"));
        let cfg = Config::from_url("rediss://[::1]:7000/1?sni=x.test&insecure=1&ca_file=/ca.pem")
            .unwrap();
        assert_eq!(cfg.host, "::1");
        assert_eq!(cfg.addr(), "[::1]:7000");
        let tls = cfg.tls.unwrap();
        assert!(tls.insecure);
        assert_eq!(tls.server_name.as_deref(), Some("x.test"));
        assert_eq!(tls.ca, Some(CaCerts::File("/ca.pem".into())));
        let cfg = Config::from_url("redis://h?timeout=0").unwrap();
        assert_eq!(cfg.command_timeout, None);
        let cfg = Config::from_url("redis://h?timeout=1.5").unwrap();
        assert_eq!(cfg.command_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(Config::from_url("redis://h").unwrap().busy_polls, 32);
        let cfg = Config::from_url("redis://h?busy_polls=0").unwrap();
        assert_eq!(cfg.busy_polls, 0);
        assert_eq!(Config::from_url("redis://h").unwrap().reply_waves, None);
        let cfg = Config::from_url("redis://h?reply_waves=no").unwrap();
        assert_eq!(cfg.reply_waves, Some(false));
        assert_eq!(Config::from_url("redis://h").unwrap().cache, None);
        let cfg =
            Config::from_url("redis://h?cache_size=2mb&cache_ttl=5s&cache_bcast=a:,b:").unwrap();
        let cache = cfg.cache.unwrap();
        assert_eq!(cache.max_bytes, 2 << 20);
        assert_eq!(cache.ttl, Duration::from_secs(5));
        assert_eq!(
            cache.bcast_prefixes,
            Some(vec!["a:".to_owned(), "b:".to_owned()])
        );
        let cache = Config::from_url("redis://h?cache_entries=10")
            .unwrap()
            .cache
            .unwrap();
        assert_eq!((cache.max_entries, cache.max_bytes), (10, 64 << 20));
        assert_eq!(cache.bcast_prefixes, None);
    }

    #[test]
    fn rejects_bad_urls() {
        for (url, want) in [
            ("http://h", "scheme"),
            ("h:6379", "scheme"),
            ("redis://", "missing host"),
            ("redis://h:0", "port"),
            ("redis://h:99999", "port"),
            ("redis://h/x", "database"),
            ("redis://h?nope=1", "unknown option"),
            ("redis://h?protocol=4", "protocol"),
            ("redis://h?busy_polls=-1", "busy_polls"),
            ("redis://h?reply_waves=maybe", "reply_waves"),
            ("redis://h?cache_size=lots", "cache_size"),
            ("redis://h?cache_ttl=0", "cache_ttl"),
            ("redis://h?sni=x", "TLS options"),
            ("redis://%zz@h", "percent"),
        ] {
            let err = Config::from_url(url).unwrap_err().to_string();
            assert!(err.contains(want), "{url}: {err}");
        }
    }

    #[test]
    fn sentinel_urls() {
        let cfg = Config::from_url(
            "redis+sentinel://u:p%40@h1,[::1]:26380,h3:1/my%20master/3?timeout=1s&sentinel_password=s",
        )
        .unwrap();
        let sentinel = cfg.sentinel.clone().unwrap();
        assert_eq!(
            sentinel.sentinels,
            [
                ("h1".to_string(), 26379),
                ("::1".to_string(), 26380),
                ("h3".to_string(), 1)
            ]
        );
        assert_eq!(sentinel.master_name, "my master");
        assert_eq!(sentinel.password.as_deref(), Some("s"));
        assert_eq!(sentinel.username, None);
        assert_eq!(cfg.username.as_deref(), Some("u"));
        assert_eq!(cfg.password.as_deref(), Some("p@"));
        assert_eq!(cfg.db, 3);
        assert_eq!(cfg.command_timeout, Some(Duration::from_secs(1)));
        assert!(!format!("{cfg:?}").contains("\"s\""));
        let cfg = Config::from_url("redis+sentinel://127.0.0.1:26379/mymaster").unwrap();
        assert_eq!(cfg.db, 0);
        for (url, want) in [
            ("redis+sentinel://h1,h2", "master name"),
            ("redis+sentinel://h1/", "master name"),
            ("redis+sentinel://h1,/m", "missing host"),
            ("redis+sentinel://h1:0/m", "port"),
            ("redis+sentinel://h1/m/x", "database"),
            ("redis://h?sentinel_password=x", "sentinel options"),
        ] {
            let err = Config::from_url(url).unwrap_err().to_string();
            assert!(err.contains(want), "{url}: {err}");
        }
    }

    #[test]
    fn backoff_is_capped_and_jittered() {
        let b = Backoff {
            base: Duration::from_millis(10),
            max: Duration::from_millis(100),
        };
        assert_eq!(b.delay(0), Duration::ZERO);
        for failures in 1..40 {
            assert!(b.delay(failures) <= Duration::from_millis(100));
        }
        assert!(b.delay(1) <= Duration::from_millis(10));
    }
}
