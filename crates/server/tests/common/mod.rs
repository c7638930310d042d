//! Test helpers: an in-process redline-server on a free loopback port, a raw RESP
//! connection (our encoder and parser over a blocking socket) to talk to any server, and
//! a redline-server process writing an AOF.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use redline_resp::{encode, parse, Frame};
use redline_server::shared::Shared;
use redline_server::{Config, Server, ShutdownHandle};

/// A redline-server running on its own runtime thread; stopped when dropped.
pub struct Redline {
    pub addr: SocketAddr,
    pub shared: Arc<Shared>,
    stop: ShutdownHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Redline {
    pub fn start() -> Redline {
        Self::start_with(&[])
    }

    /// Starts with extra `--directive value` arguments.
    pub fn start_with(args: &[&str]) -> Redline {
        // In-process servers share the test's working directory: no dump file there.
        // DEBUG on, as Redis's own test suite has it (off by default since Redis 7).
        let mut all = vec![
            "--port",
            "0",
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--enable-debug-command",
            "yes",
        ];
        all.extend_from_slice(args);
        let config = Config::from_args(all).expect("config");
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = redline_server::runtime::build(2, "redline-server").unwrap();
            runtime.block_on(async move {
                let server = Server::bind(config).await.unwrap();
                tx.send((
                    server.local_addr(),
                    server.shared(),
                    server.shutdown_handle(),
                ))
                .unwrap();
                server.run().await.unwrap();
            });
        });
        let (addr, shared, stop) = rx.recv().unwrap();
        Redline {
            addr,
            shared,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Redline {
    fn drop(&mut self) {
        self.stop.shutdown();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A blocking RESP connection.
pub struct Conn {
    stream: TcpStream,
    buf: BytesMut,
}

impl Conn {
    pub fn connect(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            buf: BytesMut::new(),
        }
    }

    /// Bounds how long a write may block (none by default).
    pub fn set_write_timeout(&mut self, timeout: Duration) {
        self.stream.set_write_timeout(Some(timeout)).unwrap();
    }

    /// Sends raw bytes.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Sends raw bytes, reporting failures (a closed connection) instead of panicking.
    pub fn try_send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Sends one command (without reading).
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        let mut out = BytesMut::new();
        encode::command(&mut out, args.iter().map(|a| a.as_ref()));
        self.send_raw(&out);
    }

    /// Reads one reply; `None` when the server closed the connection.
    pub fn read(&mut self) -> Option<Frame> {
        loop {
            match parse(&mut self.buf) {
                Ok(Some(frame)) => return Some(frame),
                Ok(None) => {}
                Err(e) => panic!(
                    "invalid RESP from server ({e:?}): {:?}",
                    String::from_utf8_lossy(&self.buf[..self.buf.len().min(200)])
                ),
            }
            let mut chunk = [0u8; 16384];
            match self.stream.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                // A signal to the test process (seen once under load): read again.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    /// Sends a command and reads its reply.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Frame {
        self.send(args);
        self.read().expect("a reply")
    }

    /// Reads and drops whatever arrives until nothing has for `quiet`; returns how
    /// many bytes came.
    #[allow(dead_code)]
    pub fn drain_until_quiet(&mut self, quiet: Duration) -> usize {
        self.stream.set_read_timeout(Some(quiet)).unwrap();
        let mut total = std::mem::take(&mut self.buf).len();
        let mut chunk = [0u8; 16384];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => total += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break
                }
                Err(e) => panic!("read: {e}"),
            }
        }
        self.stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        total
    }

    /// Sends a command that must answer `+OK`.
    pub fn ok<A: AsRef<[u8]> + std::fmt::Debug>(&mut self, args: &[A]) {
        let reply = self.cmd(args);
        assert!(
            matches!(&reply, Frame::Simple(s) if s.as_ref() == b"OK"),
            "{args:?}: {reply:?}"
        );
    }

    /// True when the server has closed the connection (reads EOF).
    pub fn is_closed(&mut self) -> bool {
        self.read().is_none()
    }
}

/// `args` with each `@<n>` replaced by `ids[n]` (generated steps name clients by index;
/// each server gives them its own ids).
#[allow(dead_code)]
pub fn with_client_ids(args: &[String], ids: &[String]) -> Vec<String> {
    args.iter()
        .map(
            |a| match a.strip_prefix('@').and_then(|n| n.parse::<usize>().ok()) {
                Some(n) => ids[n].clone(),
                None => a.clone(),
            },
        )
        .collect()
}

/// The seeds a generated differential test runs: `DIFF_SEED=n` alone (then printed:
/// the second value is true), else `DIFF_SEQUENCES` of them (default `count`) from
/// `DIFF_FROM` (default 0), so a long run can go on past the seeds already tried.
#[allow(dead_code)]
pub fn seeds_to_run(count: u64) -> (Vec<u64>, bool) {
    let var = |name: &str| std::env::var(name).ok().and_then(|s| s.parse::<u64>().ok());
    match var("DIFF_SEED") {
        Some(seed) => (vec![seed], true),
        None => {
            let from = var("DIFF_FROM").unwrap_or(0);
            let n = var("DIFF_SEQUENCES").unwrap_or(count);
            ((from..from.saturating_add(n)).collect(), false)
        }
    }
}

/// Each command of `script` on `c` with its reply, one line each, for comparing two
/// servers' transcripts.
pub fn transcript(c: &mut Conn, script: &[&[&str]]) -> Vec<String> {
    script
        .iter()
        .map(|args| format!("{args:?} -> {:?}", c.cmd(args)))
        .collect()
}

/// The bytes a fresh connection gets for `script` pipelined, up to the reply of a
/// closing `PING end` (so what blocks or replies late is in), byte for byte; a HELLO's
/// reply (which holds the client's id) is left out.
pub fn raw_replies(addr: SocketAddr, script: &[&[&str]]) -> Vec<u8> {
    const END: &[u8] = b"$3\r\nend\r\n";
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = BytesMut::new();
    for args in script.iter().chain([&["PING", "end"][..]].iter()) {
        encode::command(&mut request, args.iter().map(|a| a.as_bytes()));
    }
    stream.write_all(&request).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(END) {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    // HELLO's map ends with its empty `modules` array.
    if got.starts_with(b"%7") {
        if let Some(end) = got.windows(4).position(|w| w == b"*0\r\n") {
            got.drain(..end + 4);
        }
    }
    got
}

/// A reply as comparable text.
pub fn show(frame: &Frame) -> String {
    format!("{frame:?}")
}

/// A fresh connection to a server on this host.
pub fn conn(port: u16) -> Conn {
    Conn::connect(([127, 0, 0, 1], port).into())
}

/// A reply as text: strings and errors as they are, integers in decimal, arrays
/// joined by spaces, anything else debug-printed.
pub fn text(frame: &Frame) -> String {
    match frame {
        Frame::Bulk(b) | Frame::Simple(b) | Frame::Error(b) => String::from_utf8_lossy(b).into(),
        Frame::Integer(n) => n.to_string(),
        Frame::Array(items) => items.iter().map(text).collect::<Vec<_>>().join(" "),
        other => format!("{other:?}"),
    }
}

/// A loopback port for a server a test starts itself (or gives an extra port): the
/// kit's, below the ephemeral range and drawn once per test binary. A port that the
/// kernel also hands out to outgoing connections can be taken by one before the server
/// binds, even by `wait_for_port`'s own probe connecting to itself, and the test then
/// talks to a stranger (one CI run waited for an exit that never came).
pub fn free_port() -> u16 {
    redline_testkit::reserve_port().unwrap()
}

/// A server process's arguments for loopback `port`, with no save points.
pub fn loopback_args(port: u16) -> [String; 6] {
    [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
    ]
    .map(String::from)
}

/// Waits up to 20 s for a server process to open loopback `port` (polled every 200 µs,
/// so a test can connect the moment it opens), then connects.
pub fn wait_for_port(port: u16) -> Conn {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "port {port} never opened"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    Conn::connect(([127, 0, 0, 1], port).into())
}

/// Waits up to 30 s for a server process to exit (after a SHUTDOWN, say), then its exit
/// status; a server that stays up fails the test instead of hanging it.
pub fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("process {} did not exit within 30 s", child.id());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Polls `check` until it holds, for 30 s at most.
pub fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `block` on `waiter`, waits until the server on `port` counts it blocked, runs
/// `write` on `writer`, and returns the reply the blocked command was served with.
pub fn serve_blocked(
    port: u16,
    (waiter, writer): (&mut Conn, &mut Conn),
    block: &[&str],
    write: &[&str],
) -> Frame {
    waiter.send(block);
    wait_until("the client blocks", || {
        info(&mut conn(port), "blocked_clients") == 1
    });
    writer.cmd(write);
    waiter
        .read()
        .unwrap_or_else(|| panic!("{block:?} is served"))
}

/// Field `name` of an INFO text, trimmed (`None` when absent).
pub fn field_of<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// INFO field `field` as a number (0 when absent).
pub fn info(c: &mut Conn, field: &str) -> u64 {
    let all = text(&c.cmd(&["INFO"]));
    field_of(&all, field)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The whole INFO text of the server on `port`.
pub fn info_text(port: u16) -> String {
    match conn(port).cmd(&["INFO"]) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("INFO: {other:?}"),
    }
}

/// INFO field `name` of the server on `port`, as text (empty when absent).
pub fn info_field(port: u16, name: &str) -> String {
    field_of(&info_text(port), name)
        .unwrap_or_default()
        .to_string()
}

/// A started server of either kind, kept running while this lives: its port and a way
/// to read its log, for checks that run the same on redline-server and redis-server.
pub struct AnyServer {
    pub port: u16,
    pub log: Box<dyn Fn() -> String>,
    _server: Box<dyn std::any::Any>,
}

impl AnyServer {
    /// A redline-server started with `args`.
    pub fn redline(args: &[&str]) -> AnyServer {
        let server = redline_testkit::RedlineServer::builder()
            .args(args.iter().copied())
            .start()
            .unwrap();
        AnyServer::of(
            server,
            redline_testkit::RedlineServer::port,
            redline_testkit::RedlineServer::log_tail,
        )
    }

    /// A redis-server started with `args`.
    pub fn redis(args: &[&str]) -> AnyServer {
        let server = redline_testkit::RedisServer::builder()
            .args(args.iter().copied())
            .start()
            .unwrap();
        AnyServer::of(
            server,
            redline_testkit::RedisServer::port,
            redline_testkit::RedisServer::log_tail,
        )
    }

    fn of<S: 'static>(server: S, port: impl Fn(&S) -> u16, log: fn(&S) -> String) -> AnyServer {
        let server = std::rc::Rc::new(server);
        let logs = server.clone();
        AnyServer {
            port: port(&server),
            log: Box::new(move || log(&logs)),
            _server: Box::new(server),
        }
    }
}

/// A redline-server process with `appendonly yes` and `appendfsync <fsync>`, no save
/// points and no automatic rewrite (tests that want one run it themselves).
pub fn aof_server(fsync: &str) -> redline_testkit::RedlineServer {
    redline_testkit::RedlineServer::builder()
        .args([
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            fsync,
            "--auto-aof-rewrite-percentage",
            "0",
        ])
        .start()
        .unwrap()
}

/// A redis-server that takes DEBUG (off by default since Redis 7), as redline's test
/// servers do.
#[allow(dead_code)]
pub fn redis_with_debug() -> redline_testkit::RedisServer {
    redline_testkit::RedisServer::builder()
        .arg("--enable-debug-command", "yes")
        .start()
        .expect("redis-server")
}

/// A redis-server and a redline-server (DEBUG on both), each a one-node cluster that
/// serves every slot: generators run there check which commands a node refuses in
/// cluster mode (SELECT, MOVE, SWAPDB, ...) and with what words, and which keys of each
/// command, transaction and script must share a slot (CROSSSLOT).
#[allow(dead_code)]
pub fn one_node_clusters() -> (redline_testkit::RedisServer, redline_testkit::RedlineServer) {
    one_node_clusters_serving("16383", &[])
}

/// [`one_node_clusters`] that serve slots 0 to `last` only, started with `args` too
/// (`cluster-require-full-coverage no` keeps such a cluster up).
#[allow(dead_code)]
pub fn one_node_clusters_serving(
    last: &str,
    args: &[&str],
) -> (redline_testkit::RedisServer, redline_testkit::RedlineServer) {
    let mut all = vec!["--cluster-enabled", "yes", "--enable-debug-command", "yes"];
    all.extend_from_slice(args);
    let redis = redline_testkit::RedisServer::builder()
        .args(all.iter().copied())
        .start()
        .expect("redis-server");
    let redline = redline_testkit::RedlineServer::builder()
        .args(all.iter().copied())
        .start()
        .expect("redline-server");
    let partial_is_up = all
        .windows(2)
        .any(|w| w == ["--cluster-require-full-coverage", "no"]);
    let state = if last == "16383" || partial_is_up {
        "ok"
    } else {
        "fail"
    };
    for addr in [redis.addr(), redline.addr()] {
        let mut c = Conn::connect(addr);
        let assigned = c.cmd(&["CLUSTER", "ADDSLOTSRANGE", "0", last]);
        assert_eq!(text(&assigned), "OK");
        wait_until("the one-node cluster's state", || {
            text(&c.cmd(&["CLUSTER", "INFO"])).contains(&format!("cluster_state:{state}"))
        });
    }
    (redis, redline)
}

/// A master on a port of its own that answers a replica's handshake, then sends
/// `+FULLRESYNC`, the line `announce` (`$<len>` or `$EOF:<mark>`), the first `sent`
/// bytes of an image (`REDIS0010`, then zeros), and closes once `release` is dropped
/// (or after 500 ms more).
pub fn fake_master(
    announce: &'static [u8],
    sent: usize,
) -> (
    u16,
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let master = std::thread::spawn(move || {
        let (mut link, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        loop {
            let n = link.read(&mut buf).unwrap();
            assert!(n > 0, "the replica left before PSYNC");
            // The command names are bulk strings of their own between CRLFs.
            for word in String::from_utf8_lossy(&buf[..n]).split("\r\n") {
                match word.to_ascii_uppercase().as_str() {
                    "PING" => link.write_all(b"+PONG\r\n").unwrap(),
                    "REPLCONF" | "AUTH" => link.write_all(b"+OK\r\n").unwrap(),
                    "PSYNC" => {
                        let id = "a".repeat(40);
                        link.write_all(format!("+FULLRESYNC {id} 0\r\n").as_bytes())
                            .unwrap();
                        link.write_all(announce).unwrap();
                        let mut image = b"REDIS0010".to_vec();
                        image.resize(sent.max(image.len()), 0);
                        link.write_all(b"\r\n").unwrap();
                        link.write_all(&image[..sent]).unwrap();
                        let _ = released.recv();
                        std::thread::sleep(Duration::from_millis(500));
                        return;
                    }
                    _ => {}
                }
            }
        }
    });
    (port, release, master)
}
