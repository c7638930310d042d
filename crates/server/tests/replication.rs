//! Replication with real redis-server 7.0 processes, both ways:
//!
//! - the command stream redline-server sends (SYNC, as Redis's own test suite reads it)
//!   is the stream redis-server sends for the same commands, timestamps aside;
//! - redline → redline, redis → redline and redline → redis: 16 writers run while the
//!   replica attaches, syncs and streams, with a load that covers every rewrite rule;
//!   then both end with the same DEBUG DIGEST; a link dropped by either side continues
//!   with PSYNC (the master's `sync_partial_ok` rises, `sync_full` does not); a redline
//!   replica of redis-server is promoted with REPLICAOF NO ONE;
//! - a chain redis → redline → redis keeps one dataset and one history;
//! - a replica's full sync wakes blocked clients and tells tracking clients to drop
//!   every key, as Redis's does;
//! - WAIT counts the replicas that acknowledged, and min-replicas-to-write refuses
//!   writes with NOREPLICAS while a replica is stopped (SIGSTOP), with redline-server and
//!   redis-server masters alike; the sync counters of INFO stats count as Redis's do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use common::{conn, text, wait_until, AnyServer, Conn};
use redline_resp::Frame;
use redline_testkit::{ClosedPort, RedisServer, RedlineServer};

fn redline(args: &[&str]) -> RedlineServer {
    let mut all = vec!["--enable-debug-command", "yes", "--save", ""];
    all.extend_from_slice(args);
    RedlineServer::builder().args(all).start().unwrap()
}

fn redis(args: &[&str]) -> RedisServer {
    let mut all = vec![
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ];
    all.extend_from_slice(args);
    RedisServer::builder().args(all).start().unwrap()
}

/// Runs `check` with a fresh redline-server, then a fresh redis-server, as the master.
fn on_ours_then_theirs(check: impl Fn(u16)) {
    let ours = redline(&[]);
    check(ours.port());
    let theirs = redis(&[]);
    check(theirs.port());
}

/// CONFIG SET of each pair, each answered OK.
fn config_set(c: &mut Conn, settings: &[(&str, &str)]) {
    for (name, value) in settings {
        assert_eq!(
            c.cmd(&["CONFIG", "SET", name, value]),
            Frame::Simple("OK".into())
        );
    }
}

/// A raw SYNC link, read the way Redis's `attach_to_replication_stream` reads it.
struct StreamReader {
    socket: TcpStream,
    buf: BytesMut,
}

impl StreamReader {
    fn attach(port: u16) -> StreamReader {
        let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        socket.write_all(b"SYNC\r\n").unwrap();
        let mut reader = StreamReader {
            socket,
            buf: BytesMut::new(),
        };
        let header = loop {
            let line = reader.line();
            if !line.is_empty() {
                break line;
            }
        };
        let len: usize = header.strip_prefix('$').unwrap().parse().unwrap();
        while reader.buf.len() < len {
            reader.fill();
        }
        let _ = reader.buf.split_to(len);
        reader
    }

    fn fill(&mut self) {
        let mut chunk = [0u8; 16384];
        let n = self.socket.read(&mut chunk).unwrap();
        assert!(n > 0, "stream closed");
        self.buf.extend_from_slice(&chunk[..n]);
    }

    fn line(&mut self) -> String {
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let line = self.buf.split_to(end + 1);
                return String::from_utf8_lossy(&line).trim_end().to_string();
            }
            self.fill();
        }
    }

    /// The next command, PINGs skipped, as words.
    fn next(&mut self) -> String {
        loop {
            if let Some(frame) = redline_resp::parse(&mut self.buf).unwrap() {
                let words = text(&frame);
                if words != "PING" {
                    return words;
                }
                continue;
            }
            self.fill();
        }
    }
}

/// Commands whose stream form is a rewrite, and what each server sends for them.
const STREAM_SCRIPT: &[&[&str]] = &[
    &["SET", "plain", "v"],
    &["SET", "ex", "v", "EX", "100"],
    &["SET", "get", "w", "GET"],
    &["SETEX", "setex", "100", "v"],
    &["EXPIRE", "plain", "100"],
    &["EXPIRE", "ex", "-1"],
    &["GETEX", "setex", "PERSIST"],
    &["GETDEL", "get"],
    &["INCRBYFLOAT", "f", "1.5"],
    &["HINCRBYFLOAT", "h", "x", "2.5"],
    &["SADD", "s", "only"],
    &["SPOP", "s"],
    &["DEL", "missing"],
    &["RPUSH", "l", "a", "b"],
    &["BLPOP", "l", "0"],
    &["MULTI"],
    &["INCR", "n"],
    &["INCR", "n"],
    &["EXEC"],
    &[
        "EVAL",
        "redis.call('set','e1','1') redis.call('set','e2','2')",
        "0",
    ],
    &["XADD", "x", "1-1", "f", "v"],
    &["XADD", "x", "2-1", "f", "v"],
    &["XADD", "x", "3-1", "f", "v"],
    &["XGROUP", "CREATE", "x", "g", "0"],
    &[
        "XREADGROUP",
        "GROUP",
        "g",
        "c1",
        "COUNT",
        "1",
        "STREAMS",
        "x",
        ">",
    ],
    &[
        "XREADGROUP",
        "GROUP",
        "g",
        "c2",
        "NOACK",
        "COUNT",
        "1",
        "STREAMS",
        "x",
        ">",
    ],
    &["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "x", "0"],
    &["XCLAIM", "x", "g", "c3", "0", "1-1"],
    &["XAUTOCLAIM", "x", "g", "c4", "0", "0"],
    &["XCLAIM", "x", "g", "c3", "0", "9-9", "LASTID", "5-0"],
    &["RPUSH", "ml", "a", "b", "c"],
    &["LMPOP", "2", "nothing", "ml", "RIGHT", "COUNT", "2"],
    &["ZADD", "z", "1", "a", "2", "b"],
    &["ZMPOP", "1", "z", "MAX", "COUNT", "5"],
    &["GEOADD", "geo", "13.361389", "38.115556", "Palermo"],
    &["SWAPDB", "0", "1"],
    &["SELECT", "3"],
    &["SET", "db3", "v"],
];

/// Timestamps differ between the two runs: compare their shape.
fn normalise(command: &str) -> String {
    command
        .split(' ')
        .map(|w| {
            if w.len() >= 12 && w.bytes().all(|b| b.is_ascii_digit()) {
                "<ms>"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn stream_for(port: u16) -> Vec<String> {
    let mut reader = StreamReader::attach(port);
    let mut client = conn(port);
    for command in STREAM_SCRIPT {
        client.cmd(command);
    }
    client.cmd(&["SET", "last", "1"]);
    let mut seen = Vec::new();
    loop {
        let command = normalise(&reader.next());
        if command == "SET last 1" {
            return seen;
        }
        seen.push(command);
    }
}

#[test]
fn the_stream_is_the_one_redis_sends() {
    let theirs = redis(&[]);
    let ours = redline(&[]);
    let expected = stream_for(theirs.port());
    let got = stream_for(ours.port());
    assert_eq!(got, expected);
}

/// One round of a writer's load: commands touching every rewrite rule. `t` is the
/// writer (its own keys), `i` the round.
fn round_commands(t: usize, i: usize) -> Vec<Vec<String>> {
    let k = format!("k{}", i % 50);
    let n = i.to_string();
    vec![
        vec![
            "SET".into(),
            k.clone(),
            n.clone(),
            "EX".into(),
            "1000".into(),
        ],
        vec!["INCRBYFLOAT".into(), format!("f{t}"), "0.5".into()],
        vec!["RPUSH".into(), format!("l{}", i % 7), n.clone()],
        vec!["LPUSH".into(), format!("l{}", i % 7), n.clone()],
        vec!["BLPOP".into(), format!("l{}", (i + 3) % 7), "0.01".into()],
        vec!["SADD".into(), "s".into(), n.clone()],
        vec!["SPOP".into(), "s".into()],
        vec!["HINCRBYFLOAT".into(), "h".into(), k.clone(), "1.25".into()],
        vec!["ZADD".into(), "z".into(), n.clone(), k.clone()],
        vec![
            "XADD".into(),
            "x".into(),
            "MAXLEN".into(),
            "~".into(),
            "20".into(),
            "*".into(),
            "f".into(),
            n.clone(),
        ],
        vec!["EXPIRE".into(), k.clone(), "500".into()],
        vec![
            "EVAL".into(),
            "redis.call('incr', KEYS[1]) return redis.call('set', KEYS[2], ARGV[1])".into(),
            "2".into(),
            format!("c{t}"),
            format!("e{t}"),
            n.clone(),
        ],
        vec!["MULTI".into()],
        vec!["INCR".into(), "counter".into()],
        vec!["APPEND".into(), format!("a{t}"), "x".into()],
        vec!["EXEC".into()],
        vec![
            "SET".into(),
            format!("gone{t}"),
            "v".into(),
            "PX".into(),
            "1".into(),
        ],
        vec!["GETDEL".into(), format!("k{}", (i + 25) % 50)],
    ]
}

fn run_round(c: &mut Conn, t: usize, i: usize) {
    for command in &round_commands(t, i) {
        let reply = c.cmd(command);
        assert!(!matches!(reply, Frame::Error(_)), "{command:?}: {reply:?}");
    }
}

/// Most writers a load in these tests uses (`assert_same_data` expires their keys).
const MAX_WRITERS: usize = 16;

/// A write load from 4 connections at once, `rounds` rounds each.
fn write_load(port: u16, rounds: usize) {
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = conn(port);
                for i in 0..rounds {
                    run_round(&mut c, t, i);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// Writers that keep going, round after round, until [`Load::finish`]: a replica
/// attached meanwhile syncs while they write.
struct Load {
    stop: Arc<AtomicBool>,
    rounds: Arc<AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    /// Starts `writers` connections writing to `port`.
    fn start(port: u16, writers: usize) -> Load {
        assert!(writers <= MAX_WRITERS);
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicUsize::new(0));
        let threads = (0..writers)
            .map(|t| {
                let (stop, rounds) = (stop.clone(), rounds.clone());
                std::thread::spawn(move || {
                    let mut c = conn(port);
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        run_round(&mut c, t, i);
                        rounds.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                    }
                })
            })
            .collect();
        Load {
            stop,
            rounds,
            threads,
        }
    }

    /// Waits until the writers completed `more` rounds (all writers together) from now.
    fn run_for(&self, more: usize) {
        let target = self.rounds.load(Ordering::Relaxed) + more;
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.rounds.load(Ordering::Relaxed) < target {
            assert!(Instant::now() < deadline, "the write load stalled");
            assert!(
                !self.threads.iter().any(|t| t.is_finished()),
                "a writer failed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the writers and waits for them (a writer's failure fails the test).
    fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().unwrap();
        }
    }
}

fn info_field(port: u16, name: &str) -> String {
    section_field(port, "replication", name)
}

fn section_field(port: u16, section: &str, name: &str) -> String {
    let info = text(&conn(port).cmd(&["INFO", section]));
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Waits until the replica has processed everything the master sent.
fn wait_caught_up(master: u16, replica: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = info_field(master, "master_repl_offset");
        let r = info_field(replica, "slave_repl_offset");
        if !m.is_empty() && m == r && info_field(replica, "master_link_status") == "up" {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "replica stuck at {r}, master at {m}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn digest(port: u16) -> String {
    text(&conn(port).cmd(&["DEBUG", "DIGEST"]))
}

/// Asserts both servers hold the same dataset; on a difference, names the keys.
fn assert_same_data(master: u16, replica: u16) {
    // Keys whose TTL ran out but that nobody touched yet are still in a digest: expire
    // them on the master (which sends the DELs) first. The last one may have been set
    // less than its millisecond ago: wait for it rather than race its active expiry.
    let mut m = conn(master);
    for t in 0..MAX_WRITERS {
        let key = format!("gone{t}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while m.cmd(&["EXISTS", &key]) != Frame::Integer(0) {
            assert!(Instant::now() < deadline, "{key} does not expire");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    wait_caught_up(master, replica);
    let (a, b) = (digest(master), digest(replica));
    if a == b {
        return;
    }
    let mut r = conn(replica);
    let mut report = Vec::new();
    if let Frame::Array(keys) = m.cmd(&["KEYS", "*"]) {
        for key in keys {
            let key = text(&key);
            let x = text(&m.cmd(&["DEBUG", "DIGEST-VALUE", &key]));
            let y = text(&r.cmd(&["DEBUG", "DIGEST-VALUE", &key]));
            if x != y {
                report.push(format!("{key} differs"));
            }
            let x = text(&m.cmd(&["PEXPIRETIME", &key]));
            let y = text(&r.cmd(&["PEXPIRETIME", &key]));
            if x != y {
                report.push(format!("{key} expires at {x} vs {y}"));
            }
        }
    }
    let master_keys = text(&m.cmd(&["KEYS", "*"]));
    if let Frame::Array(keys) = r.cmd(&["KEYS", "*"]) {
        for key in keys {
            let key = text(&key);
            if !master_keys.split(' ').any(|k| k == key) {
                report.push(format!("only on the replica: {key}"));
            }
        }
    }
    let sizes = (text(&m.cmd(&["DBSIZE"])), text(&r.cmd(&["DBSIZE"])));
    panic!("datasets differ ({a} vs {b}), sizes {sizes:?}: {report:?}");
}

fn wait_for_log(log: impl Fn() -> String, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !log().contains(needle) {
        assert!(Instant::now() < deadline, "no '{needle}' in:\n{}", log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// INFO stats `name` (sync_full, sync_partial_ok) as a number.
fn stat(port: u16, name: &str) -> u64 {
    let value = section_field(port, "stats", name);
    value
        .parse()
        .unwrap_or_else(|_| panic!("INFO stats {name}: {value:?}"))
}

/// Waits up to 30 s for the server's process to exit.
fn wait_exited(server: &mut RedlineServer) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.is_running() {
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_link_up(replica: u16) {
    wait_until("the link to the master", || {
        info_field(replica, "master_link_status") == "up"
    });
}

/// A link that has just come up counts as fresh contact with the master, as Redis's
/// master client is created with its last interaction set: `master_last_io_seconds_ago`
/// reads 0, not -1 ("never"), until the master's first ping. A cluster replica judges
/// its data's age by it, so a master lost before that ping used to leave its replica
/// refusing to take over ("data too old"): found by redis-rb's cluster failover test.
#[test]
fn a_link_just_up_had_its_io_now() {
    on_ours_then_theirs(|master| {
        let (ours, theirs) = (redline(&[]), redis(&[]));
        for replica in [ours.port(), theirs.port()] {
            let reply = conn(replica).cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
            assert_eq!(reply, Frame::Simple("OK".into()));
            wait_link_up(replica);
            let io: i64 = info_field(replica, "master_last_io_seconds_ago")
                .parse()
                .unwrap();
            assert!((0..=1).contains(&io), "replica {replica} of {master}: {io}");
        }
    });
}

/// Writers while the replica syncs, during a cut, after both.
const WRITERS: usize = 16;

/// The acceptance scenario of replication, whoever the master and the replica are:
/// 16 writers run while `replica` attaches to `master` with REPLICAOF (so they write
/// before, during and after its initial sync), then stop: both hold the same data. The
/// master then drops the link while the writers run again: the replica continues with
/// PSYNC (the master's `sync_partial_ok` rises, its `sync_full` stays), and once the
/// writers stop the data is the same again.
fn sync_under_load_then_partial_resync(master: u16, replica: u16) {
    let mut m = conn(master);
    // A backlog that outlasts the replica's reconnection under this load, and a dataset
    // that makes the sync last a moment.
    assert_eq!(
        m.cmd(&["CONFIG", "SET", "repl-backlog-size", "16mb"]),
        Frame::Simple("OK".into())
    );
    m.cmd(&["DEBUG", "POPULATE", "20000", "pop", "64"]);
    let (full_before, partial_before) =
        (stat(master, "sync_full"), stat(master, "sync_partial_ok"));

    let load = Load::start(master, WRITERS);
    load.run_for(2 * WRITERS);
    let reply = conn(replica).cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
    assert_eq!(reply, Frame::Simple("OK".into()));
    wait_link_up(replica);
    load.run_for(4 * WRITERS);
    load.finish();
    assert_same_data(master, replica);
    assert_eq!(stat(master, "sync_full"), full_before + 1);
    assert_eq!(stat(master, "sync_partial_ok"), partial_before);

    // The master drops the link under load: the replica continues from the backlog.
    let load = Load::start(master, WRITERS);
    load.run_for(2 * WRITERS);
    assert_eq!(
        m.cmd(&["CLIENT", "KILL", "TYPE", "replica"]),
        Frame::Integer(1)
    );
    wait_until("a partial resynchronization", || {
        stat(master, "sync_partial_ok") > partial_before
    });
    wait_link_up(replica);
    load.run_for(2 * WRITERS);
    load.finish();
    assert_same_data(master, replica);
    assert_eq!(
        stat(master, "sync_full"),
        full_before + 1,
        "a full sync again"
    );
    assert_eq!(stat(master, "sync_partial_ok"), partial_before + 1);
}

/// Sends a raw SYNC/PSYNC and keeps the connection (the master counts the request).
fn sync_request(port: u16, command: &[u8]) -> TcpStream {
    let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
    socket.write_all(command).unwrap();
    socket
}

/// `sync_full`, `sync_partial_ok`, `sync_partial_err` of INFO stats.
fn sync_counters(port: u16) -> [u64; 3] {
    ["sync_full", "sync_partial_ok", "sync_partial_err"].map(|name| stat(port, name))
}

/// What each kind of sync request counts, on `master`.
fn sync_counters_count(master: u16) {
    assert_eq!(sync_counters(master), [0, 0, 0]);
    let mut links = vec![sync_request(master, b"SYNC\r\n")];
    wait_until("SYNC counted", || sync_counters(master) == [1, 0, 0]);
    // `?` asks for a full sync on purpose: not a failed PSYNC.
    links.push(sync_request(master, b"PSYNC ? -1\r\n"));
    wait_until("PSYNC ? counted", || sync_counters(master) == [2, 0, 0]);
    // An unknown history is a failed PSYNC, then a full sync.
    let unknown = "PSYNC 0123456789012345678901234567890123456789 1\r\n";
    links.push(sync_request(master, unknown.as_bytes()));
    wait_until("a failed PSYNC counted", || {
        sync_counters(master) == [3, 0, 1]
    });
    drop(links);
    assert_eq!(
        conn(master).cmd(&["CONFIG", "RESETSTAT"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(sync_counters(master), [0, 0, 0]);
}

#[test]
fn sync_counters_count_like_redis() {
    on_ours_then_theirs(sync_counters_count);
}

/// The replica drops its link to the master (CLIENT KILL TYPE master): it reconnects
/// and continues with PSYNC, nothing is lost.
fn replica_drops_its_link(master: u16, replica: u16) {
    let [full, partial, _] = sync_counters(master);
    assert_eq!(
        conn(replica).cmd(&["CLIENT", "KILL", "TYPE", "master"]),
        Frame::Integer(1)
    );
    write_load(master, 20);
    wait_until("a partial resynchronization", || {
        stat(master, "sync_partial_ok") > partial
    });
    wait_link_up(replica);
    assert_same_data(master, replica);
    assert_eq!(stat(master, "sync_full"), full);
}

/// A master's CLIENT KILL TYPE replica closes the link before its reply leaves, and the
/// replica handles that close before a command that came after it: its INFO, asked
/// once the kill was answered, reads the link down (Redis's replication unit relies on
/// it: "Diskless load swapdb (async_loading): new database is exposed after swapping"
/// failed when redline's replica still read `up` from before the kill, from the third
/// round on). Neither server guarantees it on a loaded machine: redis-server's replica
/// may take the INFO before the close when both are ready in one event-loop turn (round
/// 11 of 50 once), and may have reconnected before the INFO after that; redline's when
/// the link's task waits for a busy worker. So the rounds that read down at once are
/// counted, and redline's must be nearly all of them.
fn rounds_read_down_at_once(master: u16, replica: u16) -> usize {
    let mut m = conn(master);
    let mut r = conn(replica);
    let mut at_once = 0;
    for _ in 0..50 {
        wait_link_up(replica);
        assert_eq!(
            m.cmd(&["CLIENT", "KILL", "TYPE", "replica"]),
            Frame::Integer(1)
        );
        let info = text(&r.cmd(&["INFO", "replication"]));
        at_once += usize::from(info.contains("master_link_status:down"));
    }
    at_once
}

#[test]
fn a_killed_link_reads_down_at_once_like_redis() {
    let ours = redline(&[]);
    let our_replica = redline(&["--replicaof", "127.0.0.1", &ours.port().to_string()]);
    let at_once = rounds_read_down_at_once(ours.port(), our_replica.port());
    assert!(at_once >= 40, "{at_once} of 50 rounds read down at once");
    let theirs = redis(&[]);
    let their_replica = redis(&["--replicaof", "127.0.0.1", &theirs.port().to_string()]);
    let theirs_at_once = rounds_read_down_at_once(theirs.port(), their_replica.port());
    eprintln!("rounds read down at once: redline {at_once}, redis-server {theirs_at_once}");
}

/// A redline replica of `master` restarted from its own dump continues with PSYNC from
/// the offset the dump recorded (Redis's `repl-id`/`repl-offset` aux fields), although
/// the master went on writing after the save: no full sync, the same data.
fn a_restarted_replica_continues(master: u16) {
    let mut m = conn(master);
    assert_eq!(
        m.cmd(&["CONFIG", "SET", "repl-backlog-size", "16mb"]),
        Frame::Simple("OK".into())
    );
    let mut replica = redline(&["--replicaof", "127.0.0.1", &master.to_string()]);
    wait_link_up(replica.port());
    write_load(master, 5);
    wait_caught_up(master, replica.port());
    assert_eq!(
        conn(replica.port()).cmd(&["SAVE"]),
        Frame::Simple("OK".into())
    );
    write_load(master, 5);
    let [full, partial, _] = sync_counters(master);
    replica.kill();
    replica.restart().unwrap();
    wait_until("a partial resynchronization", || {
        stat(master, "sync_partial_ok") > partial
    });
    wait_link_up(replica.port());
    assert_same_data(master, replica.port());
    assert_eq!(stat(master, "sync_full"), full);
}

/// A redline master restarted from its dump continues its history: its replica
/// continues with PSYNC, and the keys that expired while it was down reach the replica
/// as DELs after the restored offset, as Redis feeds them to its backlog.
#[test]
fn a_restarted_master_continues_and_sends_the_dels_of_keys_expired_meanwhile() {
    let mut master = redline(&[]);
    let port = master.port();
    let mut m = conn(port);
    assert_eq!(
        m.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
        Frame::Simple("OK".into())
    );
    let replica = redline(&["--replicaof", "127.0.0.1", &port.to_string()]);
    wait_link_up(replica.port());
    for i in 0..100 {
        m.cmd(&["SET", &format!("short{i}"), "v", "PX", "10"]);
    }
    m.cmd(&["SET", "kept", "v"]);
    wait_caught_up(port, replica.port());
    assert_eq!(text(&conn(replica.port()).cmd(&["DBSIZE"])), "101");
    let offset: u64 = info_field(port, "master_repl_offset").parse().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    m.send(&["SHUTDOWN", "SAVE"]);
    wait_exited(&mut master);
    master.restart().unwrap();
    wait_until("a partial resynchronization", || {
        stat(port, "sync_partial_ok") == 1
    });
    assert_eq!(stat(port, "sync_full"), 0);
    assert_eq!(
        section_field(port, "persistence", "rdb_last_load_keys_expired"),
        "100"
    );
    // One DEL (and a SELECT) a key, after the offset the dump recorded.
    let now: u64 = info_field(port, "master_repl_offset").parse().unwrap();
    assert!(now > offset + 100 * 20, "offset {offset} -> {now}");
    wait_caught_up(port, replica.port());
    assert_eq!(text(&conn(replica.port()).cmd(&["DBSIZE"])), "1");
    assert_eq!(digest(port), digest(replica.port()));
}

/// A replica with the AOF on starts it again from its master's data after a full sync
/// (a new base and increment, as Redis restarts its AOF): its files then load into the
/// master's dataset, writes after the sync included.
#[test]
fn a_replica_s_aof_holds_the_master_s_data_after_a_full_sync() {
    let master = redline(&[]);
    let port = master.port();
    write_load(port, 5);
    let replica = redline(&["--appendonly", "yes"]);
    let r = replica.port();
    let mut c = conn(r);
    c.cmd(&["SET", "old", "only here"]);
    assert_eq!(
        c.cmd(&["REPLICAOF", "127.0.0.1", &port.to_string()]),
        Frame::Simple("OK".into())
    );
    wait_link_up(r);
    write_load(port, 5);
    wait_caught_up(port, r);
    wait_until("the replica's AOF rewrite", || {
        section_field(r, "persistence", "aof_rewrite_in_progress") == "0"
            && section_field(r, "persistence", "aof_rewrite_scheduled") == "0"
    });
    assert_same_data(port, r);
    let before = digest(r);
    assert_eq!(c.cmd(&["DEBUG", "LOADAOF"]), Frame::Simple("OK".into()));
    assert_eq!(digest(r), before);
    assert_eq!(c.cmd(&["EXISTS", "old"]), Frame::Integer(0));
}

#[test]
fn a_restarted_replica_continues_from_its_dump_with_psync() {
    on_ours_then_theirs(a_restarted_replica_continues);
}

/// A replica killed after its full sync, before any save of its own (`save ""`),
/// restarts from the image the sync wrote as its dump file (`repl-diskless-load
/// disabled`, the default) and continues with PSYNC: no second full sync, same data.
fn a_replica_killed_after_its_sync_continues(
    master: u16,
    replica: u16,
    dir: &std::path::Path,
    kill_and_restart: &mut dyn FnMut(),
) {
    wait_link_up(replica);
    write_load(master, 5);
    wait_caught_up(master, replica);
    assert!(
        dir.join("dump.rdb").is_file(),
        "the synced image is the dump file"
    );
    let [full, partial, _] = sync_counters(master);
    kill_and_restart();
    wait_until("a partial resynchronization", || {
        stat(master, "sync_partial_ok") > partial
    });
    wait_link_up(replica);
    assert_same_data(master, replica);
    assert_eq!(stat(master, "sync_full"), full);
}

#[test]
fn a_replica_killed_after_its_full_sync_continues_from_the_synced_file_like_redis() {
    let master = redline(&["--repl-backlog-size", "16mb"]);
    let port = master.port().to_string();
    write_load(master.port(), 5);
    let mut ours = redline(&["--replicaof", "127.0.0.1", &port]);
    let (replica, dir) = (ours.port(), ours.dir().to_path_buf());
    a_replica_killed_after_its_sync_continues(master.port(), replica, &dir, &mut || {
        ours.kill();
        ours.restart().unwrap();
    });
    let mut theirs = redis(&["--save", "", "--replicaof", "127.0.0.1", &port]);
    let (replica, dir) = (theirs.port(), theirs.dir().to_path_buf());
    a_replica_killed_after_its_sync_continues(master.port(), replica, &dir, &mut || {
        theirs.kill();
        theirs.restart().unwrap();
    });
}

/// The image a full sync read is freed once loaded, whether it came disk-less (an
/// `EOF:` mark) or as a sized bulk: the link's read buffer kept its allocation, about
/// twice the image, for as long as the link lived.
#[test]
fn a_full_sync_leaves_no_buffer_of_the_image_behind() {
    let used = |port: u16| -> i64 {
        section_field(port, "memory", "used_memory")
            .parse()
            .unwrap()
    };
    for disk_less in ["yes", "no"] {
        let master = redline(&[
            "--repl-diskless-sync",
            disk_less,
            "--repl-diskless-sync-delay",
            "0",
            "--rdbcompression",
            "no",
        ]);
        let port = master.port();
        conn(port).ok(&["DEBUG", "POPULATE", "30000", "key", "1000"]);
        let replica = redline(&["--replicaof", "127.0.0.1", &port.to_string()]);
        wait_link_up(replica.port());
        wait_caught_up(port, replica.port());
        let (theirs, ours) = (used(port), used(replica.port()));
        assert!(
            ours < theirs + (12 << 20),
            "disk-less {disk_less}: the replica uses {ours} bytes, its master {theirs}"
        );
    }
}

/// A replica that cannot create the file its disk-based load writes (`dir` is gone)
/// fails the sync before it touches its dataset, and tries again each second; once
/// `dir` is usable again, the next sync goes through. redline-server loaded the image
/// from memory and wrote the file beside the load, so it replaced its data and only
/// warned about the file.
fn a_sync_without_a_file_keeps_the_old_data(master: u16, replica: u16, log: &dyn Fn() -> String) {
    let scratch = tempfile::tempdir().unwrap();
    let gone = scratch.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let mut r = conn(replica);
    config_set(&mut r, &[("dir", gone.to_str().unwrap())]);
    std::fs::remove_dir(&gone).unwrap();
    r.ok(&["SET", "own", "1"]);
    r.ok(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
    wait_for_log(
        log,
        "Opening the temp file needed for MASTER <-> REPLICA synchronization",
    );
    let full = stat(master, "sync_full");
    wait_until("a second try", || stat(master, "sync_full") > full);
    assert_eq!(r.cmd(&["GET", "own"]), Frame::Bulk("1".into()));
    assert_eq!(info_field(replica, "master_link_status"), "down");
    config_set(&mut r, &[("dir", scratch.path().to_str().unwrap())]);
    wait_link_up(replica);
    assert_same_data(master, replica);
    assert!(scratch.path().join("dump.rdb").is_file());
    r.ok(&["REPLICAOF", "NO", "ONE"]);
}

#[test]
fn a_replica_that_cannot_write_its_sync_file_keeps_its_data_like_redis() {
    let master = redline(&["--repl-diskless-sync-delay", "0"]);
    write_load(master.port(), 2);
    let ours = redline(&["--enable-protected-configs", "yes"]);
    a_sync_without_a_file_keeps_the_old_data(master.port(), ours.port(), &|| ours.log_tail());
    let theirs = redis(&["--save", "", "--enable-protected-configs", "yes"]);
    a_sync_without_a_file_keeps_the_old_data(master.port(), theirs.port(), &|| theirs.log_tail());
}

/// INFO's `master_sync_*` lines while an image arrives, from a master that sent part of
/// it and waits: the same figures as redis-server's for a sized image and for one a
/// mark ends.
#[test]
fn info_shows_a_full_sync_s_progress_like_redis() {
    let mark = format!("$EOF:{}", "m".repeat(40)).leak().as_bytes();
    let progress = |replica: u16, announce: &'static [u8]| {
        let (port, release, master) = common::fake_master(announce, 1000);
        let mut r = conn(replica);
        r.ok(&["REPLICAOF", "127.0.0.1", &port.to_string()]);
        wait_until("the first bytes of the image", || {
            info_field(replica, "master_sync_read_bytes") == "1000"
        });
        let info = text(&r.cmd(&["INFO", "replication"]));
        drop(release);
        master.join().unwrap();
        r.ok(&["REPLICAOF", "NO", "ONE"]);
        let lines: Vec<String> = info
            .lines()
            .filter(|l| l.starts_with("master_sync_"))
            .filter(|l| !l.starts_with("master_sync_last_io_seconds_ago:"))
            .map(str::to_string)
            .collect();
        assert!(info.contains("master_sync_in_progress:1"), "{info}");
        assert!(info.contains("master_sync_last_io_seconds_ago:"), "{info}");
        lines
    };
    let ours = redline(&[]);
    let theirs = redis(&["--save", ""]);
    for (announce, expected) in [
        (&b"$2000"[..], ["2000", "1000", "1000", "50.00"]),
        (mark, ["0", "1000", "-1000", "0.00"]),
    ] {
        let want: Vec<String> = ["total_bytes", "read_bytes", "left_bytes", "perc"]
            .iter()
            .zip(expected)
            .map(|(name, value)| format!("master_sync_{name}:{value}"))
            .collect();
        let mut expect_in_progress = want.clone();
        expect_in_progress.insert(0, "master_sync_in_progress:1".into());
        assert_eq!(
            progress(theirs.port(), announce),
            expect_in_progress,
            "redis-server"
        );
        assert_eq!(
            progress(ours.port(), announce),
            expect_in_progress,
            "redline-server"
        );
    }
}

/// With `rdb-del-sync-files yes` and no persistence, neither end keeps the file of a
/// disk-based full sync: the replica deletes what it received once loaded, the master
/// the dump file its BGSAVE wrote for the sync once the replica has it. With a save
/// point, both keep theirs.
fn sync_files_go_without_persistence(
    master: u16,
    master_dir: &std::path::Path,
    replica: u16,
    replica_dir: &std::path::Path,
    persistent: bool,
) {
    let mut r = conn(replica);
    assert_eq!(
        r.cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]),
        Frame::Simple("OK".into())
    );
    wait_link_up(replica);
    assert_same_data(master, replica);
    let (kept_by_master, kept_by_replica) =
        (master_dir.join("dump.rdb"), replica_dir.join("dump.rdb"));
    if persistent {
        assert!(kept_by_replica.is_file());
        std::thread::sleep(Duration::from_millis(1500));
        assert!(kept_by_master.is_file());
    } else {
        assert!(
            !kept_by_replica.exists(),
            "the replica kept {kept_by_replica:?}"
        );
        wait_until("the master's cron to remove its sync file", || {
            !kept_by_master.exists()
        });
    }
    r.ok(&["REPLICAOF", "NO", "ONE"]);
}

#[test]
fn rdb_del_sync_files_leaves_no_file_without_persistence_like_redis() {
    for persistent in [false, true] {
        let save = if persistent { "3600 1" } else { "" };
        let args = [
            "--repl-diskless-sync",
            "no",
            "--rdb-del-sync-files",
            "yes",
            "--save",
            save,
        ];
        let (ours, our_replica) = (redline(&args), redline(&args));
        let (theirs, their_replica) = (redis(&args), redis(&args));
        for (master, master_dir, replica, replica_dir) in [
            (
                ours.port(),
                ours.dir(),
                our_replica.port(),
                our_replica.dir(),
            ),
            (
                theirs.port(),
                theirs.dir(),
                their_replica.port(),
                their_replica.dir(),
            ),
        ] {
            write_load(master, 2);
            sync_files_go_without_persistence(master, master_dir, replica, replica_dir, persistent);
        }
    }
}

#[test]
fn redline_replicates_from_redline_under_load_and_continues_after_a_cut() {
    let master = redline(&[]);
    let replica = redline(&[]);
    sync_under_load_then_partial_resync(master.port(), replica.port());
    replica_drops_its_link(master.port(), replica.port());
    let role = text(&conn(replica.port()).cmd(&["ROLE"]));
    assert!(role.starts_with("slave 127.0.0.1"), "{role}");
}

#[test]
fn redis_replicates_from_redline_under_load_and_continues_after_a_cut() {
    let master = redline(&[]);
    let replica = redis(&[]);
    sync_under_load_then_partial_resync(master.port(), replica.port());

    // WAIT and ROLE see the replica.
    let mut c = conn(master.port());
    c.cmd(&["SET", "w", "2"]);
    assert_eq!(c.cmd(&["WAIT", "1", "5000"]), Frame::Integer(1));
    let role = text(&conn(master.port()).cmd(&["ROLE"]));
    assert!(role.starts_with("master "), "{role}");
    assert!(role.contains(&replica.port().to_string()), "{role}");

    // The replica drops its link: it continues with PSYNC too, nothing is lost.
    replica_drops_its_link(master.port(), replica.port());
}

#[test]
fn redline_replicates_from_redis_under_load_continues_and_is_promoted() {
    let master = redis(&[]);
    let replica = redline(&[]);
    sync_under_load_then_partial_resync(master.port(), replica.port());
    wait_for_log(
        || replica.log_tail(),
        "Successful partial resynchronization with master",
    );
    replica_drops_its_link(master.port(), replica.port());
    let mut c = conn(replica.port());
    let refused = c.cmd(&["SET", "x", "1"]);
    assert_eq!(
        text(&refused),
        "READONLY You can't write against a read only replica."
    );
    let role = text(&c.cmd(&["ROLE"]));
    assert!(role.starts_with("slave 127.0.0.1"), "{role}");

    // Promotion: writes are accepted, and the data is all there.
    let before = digest(replica.port());
    assert_eq!(
        c.cmd(&["REPLICAOF", "NO", "ONE"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(digest(replica.port()), before);
    assert_eq!(c.cmd(&["SET", "x", "1"]), Frame::Simple("OK".into()));
    assert!(text(&c.cmd(&["ROLE"])).starts_with("master"));

    // A transaction queued as a master and run as a read-only replica: EXEC refuses it
    // whole when a queued script declares it may write (Redis sums the queued
    // commands' flags, a script's as it declares them).
    let mut t = conn(replica.port());
    t.cmd(&["MULTI"]);
    t.cmd(&[
        "EVAL",
        "#!lua
return 1",
        "0",
    ]);
    let port = master.port().to_string();
    c.cmd(&["REPLICAOF", "127.0.0.1", &port]);
    assert_eq!(
        text(&t.cmd(&["EXEC"])),
        "EXECABORT Transaction discarded because of: READONLY You can't write against a read only replica."
    );
}

/// Sends `signal` (STOP, CONT) to a server process.
fn signal(pid: Option<u32>, signal: &str) {
    let pid = pid.expect("a running server").to_string();
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

/// The state letter and name of a process (`T (stopped)`, `S (sleeping)`...), Linux's.
fn process_state(pid: Option<u32>) -> String {
    let pid = pid.expect("a running server");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("State:"))
        .unwrap_or("gone")
        .trim()
        .to_string()
}

/// WAIT and min-replicas-to-write on `master` with two attached replicas, the second
/// of which (process `stopped`) is stopped with SIGSTOP for a while.
fn wait_and_min_replicas(master: u16, replicas: [u16; 2], stopped: Option<u32>) {
    for replica in replicas {
        let reply = conn(replica).cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
        assert_eq!(reply, Frame::Simple("OK".into()));
    }
    for replica in replicas {
        wait_link_up(replica);
        wait_caught_up(master, replica);
    }
    let mut c = conn(master);
    c.cmd(&["SET", "w", "1"]);
    assert_eq!(c.cmd(&["WAIT", "2", "5000"]), Frame::Integer(2));

    // One replica stops: WAIT counts the other one once its timeout passes.
    signal(stopped, "STOP");
    wait_until("the replica to stop", || {
        process_state(stopped).starts_with('T')
    });
    assert_eq!(c.cmd(&["SET", "w", "2"]), Frame::Simple("OK".into()));
    let waited = c.cmd(&["WAIT", "2", "500"]);
    assert_eq!(
        waited,
        Frame::Integer(1),
        "the stopped replica is {}; {}",
        process_state(stopped),
        text(&conn(master).cmd(&["INFO", "replication"]))
    );

    // Two good replicas required: once the stopped one's last ACK is older than the
    // lag allowed, writes are refused, scripts' writes too; reads still work.
    config_set(
        &mut c,
        &[
            ("min-replicas-to-write", "2"),
            ("min-replicas-max-lag", "2"),
        ],
    );
    wait_until("NOREPLICAS", || {
        matches!(conn(master).cmd(&["SET", "w", "3"]), Frame::Error(_))
    });
    assert_eq!(
        text(&c.cmd(&["SET", "w", "4"])),
        "NOREPLICAS Not enough good replicas to write."
    );
    let script = text(&c.cmd(&["EVAL", "return redis.call('set', 'w', '5')", "0"]));
    assert!(
        script.starts_with("NOREPLICAS Not enough good replicas to write."),
        "{script}"
    );
    let read = text(&c.cmd(&["GET", "w"]));
    assert!(read == "2" || read == "3", "{read}");

    // The replica is back: writes are accepted again, both replicas acknowledge.
    signal(stopped, "CONT");
    wait_until("writes accepted again", || {
        conn(master).cmd(&["SET", "w", "7"]) == Frame::Simple("OK".into())
    });
    assert_eq!(c.cmd(&["SET", "w", "7"]), Frame::Simple("OK".into()));
    assert_eq!(c.cmd(&["WAIT", "2", "5000"]), Frame::Integer(2));
    for replica in replicas {
        assert_eq!(conn(replica).cmd(&["GET", "w"]), Frame::Bulk("7".into()));
    }
    c.cmd(&["CONFIG", "SET", "min-replicas-to-write", "0"]);
}

/// Both replica kinds on `master`, each in turn the one stopped.
fn wait_and_min_replicas_with_each_replica_stopped(master: u16) {
    {
        let (ours, theirs) = (redline(&[]), redis(&[]));
        wait_and_min_replicas(master, [theirs.port(), ours.port()], ours.pid());
    }
    {
        let (ours, theirs) = (redline(&[]), redis(&[]));
        wait_and_min_replicas(master, [ours.port(), theirs.port()], theirs.pid());
    }
}

#[test]
fn wait_and_min_replicas_to_write_count_stopped_replicas_like_redis() {
    // redis-server as the master, with the same replicas, behaves alike.
    on_ours_then_theirs(wait_and_min_replicas_with_each_replica_stopped);
}

#[test]
fn a_chain_redis_to_redline_to_redis_keeps_one_dataset() {
    let top = redis(&[]);
    let middle = redline(&[]);
    conn(middle.port()).cmd(&["REPLICAOF", "127.0.0.1", &top.port().to_string()]);
    write_load(top.port(), 20);
    let bottom = redis(&["--replicaof", "127.0.0.1", &middle.port().to_string()]);
    write_load(top.port(), 20);
    assert_same_data(top.port(), middle.port());
    assert_same_data(middle.port(), bottom.port());
    // The chain shares the top's history: one replication id, one offset.
    assert_eq!(
        info_field(bottom.port(), "master_replid"),
        info_field(top.port(), "master_replid")
    );
}

/// What clients blocked on a replica get when the replica's master moves to another
/// master's history, which the replica then takes by a full sync (a REPLICAOF of its
/// own would have ended their waits). Loaded from the file (`repl-diskless-load
/// disabled`), the emptying signals the stream and nothing else: the XREAD is served
/// the entry the new image holds past its ID at once, and the BLPOP waits on while its
/// list exists. Loaded beside the dataset and swapped in (`swapdb`), as SWAPDB, a
/// stream the swap keeps is not signalled (the XREAD waits for the next XADD), and a
/// key swapped in is (the BLPOP is served from the loaded list). Either way a client
/// tracking a key it read is told to drop every key.
fn readers_across_a_full_sync(replica: u16, load: &str) -> [String; 3] {
    let (other, master) = (redis(&[]), redis(&[]));
    for (port, last) in [(other.port(), 3), (master.port(), 2)] {
        for id in 1..=last {
            conn(port).cmd(&["XADD", "s", &format!("{id}-0"), "f", "v"]);
        }
    }
    conn(other.port()).cmd(&["RPUSH", "l", "loaded"]);
    let mut r = conn(replica);
    // BLPOP is a write: allowed on a writable replica only.
    config_set(
        &mut r,
        &[("repl-diskless-load", load), ("replica-read-only", "no")],
    );
    r.cmd(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
    wait_caught_up(master.port(), replica);
    let mut tracking = conn(replica);
    tracking.cmd(&["HELLO", "3"]);
    tracking.cmd(&["CLIENT", "TRACKING", "ON"]);
    tracking.cmd(&["XLEN", "s"]);
    let (mut xread, mut blpop) = (conn(replica), conn(replica));
    xread.send(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    blpop.send(&["BLPOP", "l", "0"]);
    wait_until("both readers to block", || {
        section_field(replica, "clients", "blocked_clients") == "2"
    });
    let syncs = stat(master.port(), "sync_full");
    conn(master.port()).cmd(&["REPLICAOF", "127.0.0.1", &other.port().to_string()]);
    wait_caught_up(other.port(), master.port());
    wait_until("the replica's full sync", || {
        stat(master.port(), "sync_full") > syncs
    });
    wait_caught_up(master.port(), replica);
    let mut o = conn(other.port());
    o.cmd(&["XADD", "s", "4-0", "f", "v"]);
    o.cmd(&["DEL", "l"]);
    o.cmd(&["RPUSH", "l", "pushed"]);
    [xread, blpop, tracking].map(|mut c| common::show(&c.read().expect("a reply or a push")))
}

#[test]
fn a_full_sync_tells_blocked_and_tracking_clients_what_redis_tells_them() {
    for load in ["disabled", "swapdb"] {
        let (ours, theirs) = (redline(&[]), redis(&[]));
        assert_eq!(
            readers_across_a_full_sync(ours.port(), load),
            readers_across_a_full_sync(theirs.port(), load),
            "repl-diskless-load {load}"
        );
    }
}

/// A replica of ours attached while our own master keeps writing: our master's stream is
/// applied, then appended, a batch at a time, and a full sync taken between the two
/// would put a batch in the image and send it again after it (lists grew twice). Several
/// replicas attach one after another under a steady load, so some sync lands mid-batch,
/// while a client blocked on the replica is served from inside those batches.
#[test]
fn replicas_of_a_replica_attached_under_load_get_each_command_once() {
    let top = redis(&[]);
    let middle = redline(&[]);
    conn(middle.port()).cmd(&["REPLICAOF", "127.0.0.1", &top.port().to_string()]);
    wait_caught_up(top.port(), middle.port());
    // A reader blocked on the middle is woken by the stream's XADDs while syncs run.
    let stop_reading = Arc::new(AtomicBool::new(false));
    let reader = {
        let (port, stop) = (middle.port(), stop_reading.clone());
        std::thread::spawn(move || {
            let mut c = conn(port);
            while !stop.load(Ordering::Relaxed) {
                c.cmd(&["XREAD", "BLOCK", "100", "STREAMS", "x", "$"]);
            }
        })
    };
    let load = Load::start(top.port(), 4);
    let mut bottoms = Vec::new();
    for _ in 0..4 {
        load.run_for(20);
        bottoms.push(redis(&[
            "--replicaof",
            "127.0.0.1",
            &middle.port().to_string(),
        ]));
    }
    load.run_for(20);
    load.finish();
    stop_reading.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    assert_same_data(top.port(), middle.port());
    for bottom in &bottoms {
        assert_same_data(middle.port(), bottom.port());
    }
}

#[test]
fn wait_without_replicas_times_out_with_zero() {
    let server = redline(&[]);
    let mut c = conn(server.port());
    c.cmd(&["SET", "k", "v"]);
    let started = Instant::now();
    assert_eq!(c.cmd(&["WAIT", "1", "200"]), Frame::Integer(0));
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(c.cmd(&["WAIT", "0", "0"]), Frame::Integer(0));
}

/// CLIENT PAUSE WRITE on a replica holds its master's commands, as Redis does: they are
/// read (`slave_read_repl_offset` reaches the master's offset) but not applied
/// (`slave_repl_offset` stays) until the pause ends.
#[test]
fn a_paused_replica_reads_but_does_not_apply_its_master_s_stream() {
    let master = redis(&["--repl-ping-replica-period", "3600"]);
    let replica = redline(&[]);
    let (m, r) = (master.port(), replica.port());
    conn(r).cmd(&["REPLICAOF", "127.0.0.1", &m.to_string()]);
    wait_link_up(r);
    conn(m).cmd(&["SET", "foo", "bar"]);
    wait_caught_up(m, r);
    let applied = info_field(r, "slave_repl_offset");
    conn(r).cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]);
    conn(m).cmd(&["SET", "foo2", "bar2"]);
    wait_until("the replica to read the write", || {
        info_field(r, "slave_read_repl_offset") == info_field(m, "master_repl_offset")
    });
    assert_eq!(info_field(r, "slave_repl_offset"), applied);
    assert_eq!(conn(r).cmd(&["EXISTS", "foo2"]), Frame::Integer(0));
    conn(r).cmd(&["CLIENT", "UNPAUSE"]);
    wait_caught_up(m, r);
    assert_eq!(text(&conn(r).cmd(&["GET", "foo2"])), "bar2");
}

/// `redis.set_repl` sends a script's next changes to the AOF, the replicas, both or
/// neither: the replica gets only what went to it, the AOF (read back with DEBUG
/// LOADAOF) only what went there; the master keeps everything. Same on redis-server.
#[test]
fn script_set_repl_picks_where_changes_go_like_redis() {
    let script = "redis.call('set','a','1')\n\
                  redis.set_repl(redis.REPL_NONE)\n\
                  redis.call('set','b','2')\n\
                  redis.set_repl(redis.REPL_AOF)\n\
                  redis.call('set','c','3')\n\
                  redis.set_repl(redis.REPL_REPLICA)\n\
                  redis.call('set','e','5')\n\
                  redis.set_repl(redis.REPL_ALL)\n\
                  redis.call('set','d','4')\n";
    let run = |m: u16, r: u16| {
        conn(r).cmd(&["REPLICAOF", "127.0.0.1", &m.to_string()]);
        wait_link_up(r);
        let mut c = conn(m);
        c.cmd(&["EVAL", script, "0"]);
        // One more write after a switch back, in another database.
        c.cmd(&["SELECT", "1"]);
        c.cmd(&["SET", "f", "6"]);
        wait_caught_up(m, r);
        let keys = ["MGET", "a", "b", "c", "d", "e"];
        let mut seen = vec![text(&conn(m).cmd(&keys)), text(&conn(r).cmd(&keys))];
        let mut r1 = conn(r);
        r1.cmd(&["SELECT", "1"]);
        seen.push(text(&r1.cmd(&["GET", "f"])));
        let mut m0 = conn(m);
        m0.cmd(&["DEBUG", "LOADAOF"]);
        seen.push(text(&m0.cmd(&keys)));
        m0.cmd(&["SELECT", "1"]);
        seen.push(text(&m0.cmd(&["GET", "f"])));
        seen
    };
    let (rm, rr) = (redis(&["--appendonly", "yes"]), redis(&[]));
    let (om, or) = (redline(&["--appendonly", "yes"]), redline(&[]));
    assert_eq!(run(om.port(), or.port()), run(rm.port(), rr.port()));
}

/// `bind-source-addr`: a replica connects to its master from that address (the
/// master sees it in INFO), as Redis's does.
#[test]
fn replica_connects_from_bind_source_addr() {
    for master in [redis(&["--protected-mode", "no"]).port(), 0] {
        let ours;
        let m = if master == 0 {
            ours = redline(&["--protected-mode", "no"]);
            ours.port()
        } else {
            master
        };
        let replica = redline(&["--bind-source-addr", "127.0.0.2"]);
        let r = replica.port();
        conn(r).cmd(&["REPLICAOF", "127.0.0.1", &m.to_string()]);
        wait_link_up(r);
        let slave0 = info_field(m, "slave0");
        assert!(slave0.contains("ip=127.0.0.2"), "{slave0}");
    }
}

/// A command of the master's stream that fails on the replica (a diverged writable
/// replica, or DEBUG REPLICATE of something the replica cannot run) is logged as
/// CRITICAL and counted in INFO `unexpected_error_replies`, as redis-server does, and
/// replication goes on.
#[test]
fn errors_from_the_masters_stream_are_logged_and_counted_like_redis() {
    for redline_master in [true, false] {
        let (_ours, _theirs);
        let master = if redline_master {
            _ours = redline(&[]);
            _ours.port()
        } else {
            _theirs = redis(&[]);
            _theirs.port()
        };
        let replica = redline(&["--propagation-error-behavior", "ignore"]);
        conn(replica.port()).cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
        wait_link_up(replica.port());
        let mut m = conn(master);
        m.cmd(&["DEBUG", "REPLICATE", "fake-command-1"]);
        let mut r = conn(replica.port());
        r.cmd(&["CONFIG", "SET", "replica-read-only", "no"]);
        r.cmd(&["SET", "number2", "foo"]);
        m.cmd(&["INCRBY", "number2", "1"]);
        m.cmd(&["SET", "after", "1"]);
        wait_until("the stream after the errors", || {
            conn(replica.port()).cmd(&["GET", "after"]) == Frame::Bulk("1".into())
        });
        let log = replica.log_tail();
        assert!(log.contains("== CRITICAL == This replica is sending an error to its master: 'ERR unknown command 'fake-command-1'"), "{log}");
        assert!(
            log.contains("after processing the command 'incrby'"),
            "{log}"
        );
        assert_eq!(stat(replica.port(), "unexpected_error_replies"), 2);
        assert_eq!(r.cmd(&["GET", "number2"]), Frame::Bulk("foo".into()));
    }
}

/// SHUTDOWN waits for a replica that lags (writes paused, INFO shutdown_in_milliseconds,
/// the caller blocked); SHUTDOWN ABORT cancels it and the caller gets Redis's error;
/// once the replica runs again, a new SHUTDOWN exits after it caught up, with the last
/// write on the replica.
#[test]
fn shutdown_waits_for_a_lagging_replica_and_can_be_aborted() {
    let mut master = redline(&["--shutdown-timeout", "30"]);
    let replica = redline(&[]);
    conn(replica.port()).cmd(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
    wait_link_up(replica.port());
    let replica_pid = replica.pid();
    signal(replica_pid, "STOP");
    let mut m = conn(master.port());
    m.cmd(&["INCR", "k"]);
    let mut waiting = conn(master.port());
    waiting.send(&["SHUTDOWN"]);
    wait_until("the shutdown to wait", || {
        section_field(master.port(), "server", "shutdown_in_milliseconds")
            .parse::<u64>()
            .is_ok_and(|ms| ms > 0)
    });
    assert_eq!(
        section_field(master.port(), "clients", "blocked_clients"),
        "1"
    );
    assert_eq!(m.cmd(&["SHUTDOWN", "ABORT"]), Frame::Simple("OK".into()));
    assert_eq!(
        waiting.read(),
        Some(Frame::Error(
            "ERR Errors trying to SHUTDOWN. Check logs.".into()
        ))
    );
    assert_eq!(
        m.cmd(&["SHUTDOWN", "ABORT"]),
        Frame::Error("ERR No shutdown in progress.".into())
    );
    // Writes run again once aborted.
    assert_eq!(m.cmd(&["INCR", "k"]), Frame::Integer(2));
    waiting.send(&["SHUTDOWN", "NOSAVE"]);
    wait_until("the second shutdown to wait", || {
        !section_field(master.port(), "server", "shutdown_in_milliseconds").is_empty()
    });
    signal(replica_pid, "CONT");
    wait_exited(&mut master);
    assert_eq!(
        conn(replica.port()).cmd(&["GET", "k"]),
        Frame::Bulk("2".into())
    );
    let log = master.log_tail();
    assert!(
        log.contains("Waiting for replicas before shutting down."),
        "{log}"
    );
    assert!(
        log.contains("1 of 1 replicas are in sync when shutting down."),
        "{log}"
    );
    assert!(log.contains("Shutdown manually aborted."), "{log}");
}

/// Clients write the stream to a plain TCP replica's socket themselves when they can
/// (`repl::direct`), and its link's task writes when they cannot. A replica that stops
/// reading (SIGSTOP) makes their writes partial, and the link takes over from where
/// they stopped. Four writers at once, values larger than the socket buffers, the
/// replica stopped for part of it: it ends with the master's data, each writer's
/// appends in its order.
#[test]
fn a_replica_that_stops_reading_gets_every_write_in_order() {
    let master = redline(&[]);
    let replica = redline(&["--replicaof", "127.0.0.1", &master.port().to_string()]);
    wait_link_up(replica.port());
    let big = "x".repeat(64 * 1024);
    let port = master.port();
    let writers = |from: usize, to: usize| {
        std::thread::scope(|scope| {
            for t in 0..4 {
                let big = &big;
                scope.spawn(move || {
                    let mut c = conn(port);
                    for i in from..to {
                        c.cmd(&["SET", &format!("big:{t}:{i}"), big]);
                        c.cmd(&["INCR", &format!("count:{t}")]);
                        c.cmd(&["APPEND", &format!("log:{t}"), &format!("{i},")]);
                    }
                });
            }
        });
    };
    writers(0, 50);
    signal(replica.pid(), "STOP");
    // 4 × 50 × 64 KB while it reads nothing.
    writers(50, 100);
    signal(replica.pid(), "CONT");
    writers(100, 120);
    assert_same_data(master.port(), replica.port());
    let expected: String = (0..120).map(|i| format!("{i},")).collect();
    let mut r = conn(replica.port());
    for t in 0..4 {
        let log = text(&r.cmd(&["GET", &format!("log:{t}")]));
        assert_eq!(log, expected, "writer {t}");
    }
    assert_eq!(stat(master.port(), "sync_full"), 1);
}

/// As in Redis: a replica counts its master's commands in INFO commandstats; CLIENT KILL
/// by the master's address (or TYPE master) drops the link, which continues with PSYNC;
/// a client blocked on a server that becomes a replica gets an UNBLOCKED error instead
/// of being served by the new master's writes.
#[test]
fn a_replica_counts_kills_and_unblocks_like_redis() {
    let master = redline(&[]);
    let replica = redline(&[]);
    let mut blocked = conn(replica.port());
    blocked.send(&["BLPOP", "foo", "0"]);
    wait_until("the client to block", || {
        section_field(replica.port(), "clients", "blocked_clients") == "1"
    });
    conn(replica.port()).cmd(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
    assert_eq!(
        blocked.read(),
        Some(Frame::Error(
            "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
                .into()
        ))
    );
    wait_link_up(replica.port());
    let mut m = conn(master.port());
    m.cmd(&["RPUSH", "foo", "a", "b", "c"]);
    for i in 0..3 {
        m.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    wait_caught_up(master.port(), replica.port());
    assert_eq!(
        conn(replica.port()).cmd(&["LRANGE", "foo", "0", "-1"]),
        Frame::Array(vec![
            Frame::Bulk("a".into()),
            Frame::Bulk("b".into()),
            Frame::Bulk("c".into())
        ])
    );
    let stats = text(&conn(replica.port()).cmd(&["INFO", "commandstats"]));
    assert!(stats.contains("cmdstat_set:calls=3,"), "{stats}");
    let partial = stat(master.port(), "sync_partial_ok");
    let peer = format!("127.0.0.1:{}", master.port());
    assert_eq!(
        conn(replica.port()).cmd(&["CLIENT", "KILL", &peer]),
        Frame::Simple("OK".into())
    );
    wait_until("a partial resync", || {
        stat(master.port(), "sync_partial_ok") == partial + 1
    });
    wait_link_up(replica.port());
}

/// A peer that stops answering without closing (a frozen host, a partition) is noticed
/// after `repl-timeout`, as in Redis: the replica marks its link down and reconnects,
/// the master drops the replica.
#[test]
fn a_silent_master_or_replica_is_dropped_after_repl_timeout() {
    let master = redline(&["--repl-timeout", "2"]);
    let replica = redline(&["--repl-timeout", "2"]);
    conn(replica.port()).cmd(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
    wait_link_up(replica.port());
    // The master freezes: the replica gives up on it.
    signal(master.pid(), "STOP");
    wait_until("the replica to notice", || {
        info_field(replica.port(), "master_link_status") == "down"
    });
    wait_for_log(
        || replica.log_tail(),
        "MASTER timeout: no data nor PING received...",
    );
    signal(master.pid(), "CONT");
    wait_link_up(replica.port());
    // The replica freezes: the master drops it.
    signal(replica.pid(), "STOP");
    wait_until("the master to drop the replica", || {
        info_field(master.port(), "connected_slaves") == "0"
    });
    signal(replica.pid(), "CONT");
    wait_for_log(
        || master.log_tail(),
        "Disconnecting timedout replica (streaming sync)",
    );
    wait_link_up(replica.port());
}

/// A chain master → replica → sub-replica stays on one history, as with redis-server:
/// the middle server adds nothing to the stream it passes on (its sub-replica's offset
/// is its master's), and once it is promoted its sub-replica learns the new id by a
/// partial resync, not a full one.
#[test]
fn a_chain_keeps_one_history_through_a_promotion() {
    let master = redline(&["--repl-ping-replica-period", "1"]);
    let middle = redline(&["--repl-ping-replica-period", "1"]);
    let sub = redline(&[]);
    conn(middle.port()).cmd(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
    wait_link_up(middle.port());
    conn(sub.port()).cmd(&["REPLICAOF", "127.0.0.1", &middle.port().to_string()]);
    wait_link_up(sub.port());
    conn(master.port()).cmd(&["SET", "k", "v"]);
    // Several ping periods pass: every offset stays the master's.
    std::thread::sleep(Duration::from_millis(2500));
    let offset = |port| info_field(port, "master_repl_offset");
    wait_until("one offset along the chain", || {
        offset(master.port()) == offset(middle.port())
            && offset(middle.port()) == offset(sub.port())
    });
    let full_before = stat(middle.port(), "sync_full");
    conn(middle.port()).cmd(&["REPLICAOF", "NO", "ONE"]);
    wait_until("the sub-replica to learn the new id", || {
        info_field(sub.port(), "master_replid") == info_field(middle.port(), "master_replid")
    });
    wait_link_up(sub.port());
    conn(middle.port()).cmd(&["SET", "after", "1"]);
    wait_until("the write to arrive", || {
        conn(sub.port()).cmd(&["GET", "after"]) == Frame::Bulk("1".into())
    });
    assert_eq!(stat(middle.port(), "sync_full"), full_before);
    assert!(stat(middle.port(), "sync_partial_ok") >= 1);
}

/// A master restarted from its dump keeps its replication history (saved in the dump's
/// aux fields, as Redis 7.0 does): its replica continues with PSYNC, no full sync; the
/// offset goes on from where it was, under a new id with the old one as the second.
#[test]
fn a_restarted_master_lets_its_replica_continue() {
    let mut master = RedlineServer::builder()
        .args(["--enable-debug-command", "yes", "--save", "3600 1"])
        .start()
        .unwrap();
    let replica = redline(&[]);
    conn(replica.port()).cmd(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
    wait_link_up(replica.port());
    let mut m = conn(master.port());
    for i in 0..100 {
        m.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    wait_caught_up(master.port(), replica.port());
    let (id, offset) = (
        info_field(master.port(), "master_replid"),
        info_field(master.port(), "master_repl_offset"),
    );
    // SHUTDOWN saves (a save point is set), then the same server starts again.
    conn(master.port()).send(&["SHUTDOWN"]);
    wait_exited(&mut master);
    master.restart().unwrap();
    assert_eq!(info_field(master.port(), "master_replid2"), id);
    // On from there (the shutdown may have asked the replica for an ACK meanwhile).
    let after: u64 = info_field(master.port(), "master_repl_offset")
        .parse()
        .unwrap();
    assert!(
        after >= offset.parse::<u64>().unwrap(),
        "{after} < {offset}"
    );
    wait_until("the replica to continue", || {
        stat(master.port(), "sync_partial_ok") == 1
    });
    assert_eq!(stat(master.port(), "sync_full"), 0);
    conn(master.port()).cmd(&["SET", "after", "1"]);
    wait_caught_up(master.port(), replica.port());
    assert_same_data(master.port(), replica.port());
}

/// On a writable replica, keys a client gives a TTL expire there (the master will never
/// send their DEL), as in Redis; keys from the master still wait for its DEL, and the
/// replica adds nothing to the stream it passes on.
#[test]
fn a_writable_replica_expires_the_keys_written_on_it() {
    let master = redline(&[]);
    let replica = redline(&["--replica-read-only", "no"]);
    conn(replica.port()).cmd(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
    wait_link_up(replica.port());
    let mut r = conn(replica.port());
    r.cmd(&["SELECT", "5"]);
    for key in ["key1", "key2", "key3"] {
        r.cmd(&["SET", key, "1", "PX", "300"]);
    }
    assert_eq!(
        section_field(replica.port(), "stats", "slave_expires_tracked_keys"),
        "3"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.cmd(&["DBSIZE"]) != Frame::Integer(0) {
        assert!(Instant::now() < deadline, "the keys did not expire");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        section_field(replica.port(), "stats", "slave_expires_tracked_keys"),
        "0"
    );
    assert_eq!(
        info_field(master.port(), "master_repl_offset"),
        info_field(replica.port(), "master_repl_offset")
    );
}

/// A deadline already passed deletes a key at once on a master, but not on a replica
/// (Redis's `checkAlreadyExpired`): EXPIRE, GETEX ... PXAT and RESTORE with a past
/// deadline leave the key there, hidden and counted, until the replica's own sweep (or
/// its master's DEL) takes it, on a writable redis-server and redline-server replica of
/// one master alike.
#[test]
fn a_replica_keeps_keys_whose_deadline_passed_until_they_are_swept_like_redis() {
    let master = redis(&[]);
    let mut transcripts = Vec::new();
    for replica in [
        AnyServer::redis(&["--replica-read-only", "no"]),
        AnyServer::redline(&["--replica-read-only", "no", "--save", ""]),
    ] {
        let port = replica.port;
        conn(port).cmd(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
        wait_link_up(port);
        let mut r = conn(port);
        r.cmd(&["SET", "src", "v"]);
        let Frame::Bulk(payload) = r.cmd(&["DUMP", "src"]) else {
            panic!("DUMP of a string");
        };
        let past = "1000";
        let script: Vec<Vec<&[u8]>> = vec![
            vec![b"SET", b"a", b"1"],
            // A second ago: a deadline of now would hide the key only from the next
            // millisecond.
            vec![b"EXPIRE", b"a", b"-1"],
            vec![b"SET", b"b", b"1"],
            vec![b"GETEX", b"b", b"PXAT", past.as_bytes()],
            vec![b"RESTORE", b"c", past.as_bytes(), &payload, b"ABSTTL"],
            vec![b"DBSIZE"],
            vec![b"EXISTS", b"a", b"b", b"c"],
            vec![b"DBSIZE"],
        ];
        let mut transcript: Vec<String> = script
            .iter()
            .map(|args| {
                let shown: Vec<_> = args.iter().map(|a| String::from_utf8_lossy(a)).collect();
                format!("{shown:?} -> {}", text(&r.cmd(args)))
            })
            .collect();
        wait_until("the replica's sweep", || {
            r.cmd(&["DBSIZE"]) == Frame::Integer(1)
        });
        transcript.push(format!("swept: {}", text(&r.cmd(&["KEYS", "*"]))));
        transcripts.push(transcript);
        conn(port).cmd(&["REPLICAOF", "NO", "ONE"]);
    }
    assert_eq!(transcripts[0], transcripts[1]);
}

/// FAILOVER TO hands the master's role to a replica without a full sync, as Redis 6.2+:
/// the old master ends a replica of the target, a second replica follows with PSYNC, the
/// data is the same on all three; wrong uses get Redis's errors, and ABORT undoes one.
#[test]
fn failover_hands_the_role_to_a_replica() {
    let a = redline(&[]);
    let b = redline(&[]);
    let c = redline(&[]);
    assert!(matches!(
        conn(a.port()).cmd(&["FAILOVER"]),
        Frame::Error(e) if e == "ERR FAILOVER requires connected replicas."
    ));
    for r in [&b, &c] {
        conn(r.port()).cmd(&["REPLICAOF", "127.0.0.1", &a.port().to_string()]);
        wait_link_up(r.port());
    }
    let mut m = conn(a.port());
    for i in 0..200 {
        m.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    assert!(matches!(
        m.cmd(&["FAILOVER", "TO", "127.0.0.1", &b.port().to_string(), "FORCE"]),
        Frame::Error(e) if e == "ERR FAILOVER with force option requires both a timeout and target HOST and IP."
    ));
    assert!(matches!(
        conn(b.port()).cmd(&["FAILOVER"]),
        Frame::Error(e) if e == "ERR FAILOVER is not valid when server is a replica."
    ));
    let full_before = stat(a.port(), "sync_full");
    assert_eq!(
        m.cmd(&["FAILOVER", "TO", "127.0.0.1", &b.port().to_string()]),
        Frame::Simple("OK".into())
    );
    wait_until("the failover to finish", || {
        info_field(a.port(), "master_failover_state") == "no-failover"
    });
    assert_eq!(info_field(a.port(), "role"), "slave");
    assert_eq!(info_field(b.port(), "role"), "master");
    conn(c.port()).cmd(&["REPLICAOF", "127.0.0.1", &b.port().to_string()]);
    wait_link_up(a.port());
    wait_link_up(c.port());
    assert_eq!(stat(b.port(), "sync_full"), 0);
    assert_eq!(stat(a.port(), "sync_full"), full_before);
    conn(b.port()).cmd(&["SET", "after", "1"]);
    wait_caught_up(b.port(), a.port());
    wait_caught_up(b.port(), c.port());
    assert_same_data(b.port(), a.port());
    assert_same_data(b.port(), c.port());
    // Started, then aborted: B stays the master, writes go on.
    let mut m = conn(b.port());
    signal(a.pid(), "STOP");
    signal(c.pid(), "STOP");
    m.cmd(&["SET", "lagging", "1"]);
    assert_eq!(m.cmd(&["FAILOVER"]), Frame::Simple("OK".into()));
    assert_eq!(
        info_field(b.port(), "master_failover_state"),
        "waiting-for-sync"
    );
    assert_eq!(m.cmd(&["FAILOVER", "ABORT"]), Frame::Simple("OK".into()));
    assert_eq!(info_field(b.port(), "master_failover_state"), "no-failover");
    assert_eq!(
        m.cmd(&["SET", "still", "master"]),
        Frame::Simple("OK".into())
    );
    signal(a.pid(), "CONT");
    signal(c.pid(), "CONT");
}

/// FAILOVER and WAIT check their arguments in Redis's order: FAILOVER's state before its
/// FORCE rule, a port that names no replica as such, ABORT only on its own.
#[test]
fn failover_and_wait_check_their_arguments_like_redis() {
    let script: [&[&str]; 14] = [
        &["FAILOVER", "FORCE"],
        &["FAILOVER", "ABORT", "FORCE"],
        &["FAILOVER", "FORCE", "ABORT"],
        &["FAILOVER", "ABORT"],
        &["FAILOVER", "TO", "127.0.0.1", "99999"],
        &[
            "FAILOVER",
            "TO",
            "127.0.0.1",
            "-5",
            "TIMEOUT",
            "10",
            "FORCE",
        ],
        &["FAILOVER", "TO", "127.0.0.1", "x"],
        &["FAILOVER", "TIMEOUT", "0"],
        &["FAILOVER", "TIMEOUT", "5", "TIMEOUT", "6"],
        &["FAILOVER", "FORCE", "FORCE"],
        &["WAIT", "0", "abc"],
        &["WAIT", "0", "-1"],
        &["WAIT", "abc", "0"],
        &["WAIT", "0", "0"],
    ];
    let transcript = |port: u16| -> Vec<String> { common::transcript(&mut conn(port), &script) };
    let ours = transcript(redline(&[]).port());
    let theirs = transcript(redis(&[]).port());
    assert_eq!(ours, theirs);
}

/// A replica whose link is down, with `replica-serve-stale-data no`, decides on scripts
/// as Redis: a script's own flags when it declared them (FCALL of a function without
/// `allow-stale` is MASTERDOWN, with it runs), and otherwise after the lookup and the
/// compilation (an unknown SHA is NOSCRIPT, an unknown function "not found", a bad
/// shebang its error), a script without a shebang then MASTERDOWN, even inside EXEC.
/// HELLO calls it a replica.
#[test]
fn a_stale_replica_runs_scripts_as_their_flags_say_like_redis() {
    let library = "#!lua name=lib\n\
                   redis.register_function('f', function() return 1 end)\n\
                   redis.register_function{function_name='g', callback=function() return 2 end, flags={'allow-stale', 'no-writes'}}\n\
                   redis.register_function{function_name='h', callback=function() return 7 end, flags={'no-writes'}}";
    let script: [&[&str]; 16] = [
        &["EVAL", "return 1", "0"],
        &["EVAL", "return +", "0"],
        &["EVAL", "return 1", "-1"],
        &["EVALSHA", "0000000000000000000000000000000000000000", "0"],
        &["EVALSHA", "abc", "0"],
        &["FCALL", "nosuch", "0"],
        &["FCALL", "f", "0"],
        &["FCALL", "g", "0"],
        &["FCALL", "h", "0"],
        &["EVAL", "#!lua flags=allow-stale,no-writes\nreturn 3", "0"],
        &["EVAL", "#!lua flags=no-writes\nreturn 4", "0"],
        &["EVAL", "#!lua flags=bogus\nreturn 5", "0"],
        &[
            "EVAL",
            "#!lua flags=allow-stale,no-writes\nreturn redis.pcall('get', 'k')",
            "0",
        ],
        &["MULTI"],
        &["EVAL", "return 6", "0"],
        &["EXEC"],
    ];
    let dead = ClosedPort::new().unwrap();
    let transcript = |port: u16| -> Vec<String> {
        let mut c = conn(port);
        c.cmd(&["FUNCTION", "LOAD", library]);
        config_set(&mut c, &[("replica-serve-stale-data", "no")]);
        c.cmd(&["REPLICAOF", "127.0.0.1", &dead.port().to_string()]);
        let mut lines = common::transcript(&mut c, &script);
        let hello = c.cmd(&["HELLO", "3"]);
        let Frame::Map(fields) = hello else {
            panic!("HELLO: {hello:?}");
        };
        let role = fields.iter().find(|(k, _)| text(k) == "role");
        lines.push(format!("HELLO role: {role:?}"));
        lines
    };
    let ours = transcript(redline(&[]).port());
    let theirs = transcript(redis(&[]).port());
    assert_eq!(ours, theirs);
}

/// Reads from `socket` until the peer closes it (the server dropped the link).
fn read_until_closed(socket: &mut TcpStream) {
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match socket.read(&mut chunk) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("the replica link stayed open: {e}"),
        }
    }
}

/// A command on a replica link gets no reply: the master logs it and drops the link
/// (an error reply logged as a critical one first); a PSYNC offset that is not a number
/// is refused.
fn commands_on_a_replica_link(port: u16, log: &dyn Fn() -> String) {
    let mut link = sync_request(port, b"SYNC\r\nPING\r\n");
    read_until_closed(&mut link);
    wait_for_log(
        log,
        "Replica generated a reply to command 'ping', disconnecting it: id=",
    );

    let mut link = sync_request(port, b"PSYNC ? -1\r\n");
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        link.read_exact(&mut byte).unwrap();
        line.push(byte[0]);
    }
    assert!(line.starts_with(b"+FULLRESYNC "), "{line:?}");
    link.write_all(b"GET foo\r\n").unwrap();
    read_until_closed(&mut link);
    wait_for_log(
        log,
        "Replica generated a reply to command 'get', disconnecting it",
    );
    wait_for_log(
        log,
        "== CRITICAL == This master is sending an error to its replica: 'Replica can't interact with the keyspace' after processing the command 'get'",
    );

    let mut c = conn(port);
    assert_eq!(
        c.cmd(&["PSYNC", "replicationid", "offset_str"]),
        Frame::Error("ERR value is not an integer or out of range".into())
    );
    wait_for_log(log, "asks for synchronization but with a wrong offset");
    assert_eq!(c.cmd(&["PING"]), Frame::Simple("PONG".into()));
}

#[test]
fn commands_on_a_replica_link_drop_it_like_redis() {
    let ours = redline(&[]);
    commands_on_a_replica_link(ours.port(), &|| ours.log_tail());
    let theirs = redis(&[]);
    commands_on_a_replica_link(theirs.port(), &|| theirs.log_tail());
}

/// Reads `socket` until `expected` bytes came (or it closes) and returns them.
fn read_exactly(socket: &mut TcpStream, expected: usize) -> String {
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut got = vec![0u8; expected];
    socket.read_exact(&mut got).unwrap();
    String::from_utf8_lossy(&got).into_owned()
}

/// A SYNC or PSYNC behind a command whose reply is not written yet is refused, and so
/// is a filtered image asked for without the EOF form, with Redis's errors; the
/// connection stays a client.
fn sync_refusals(port: u16) {
    let mut socket = sync_request(port, b"PING\r\nPSYNC ? -1\r\nPING\r\n");
    let expected = "+PONG\r\n-ERR SYNC and PSYNC are invalid with pending output\r\n+PONG\r\n";
    assert_eq!(read_exactly(&mut socket, expected.len()), expected);
    let mut socket = sync_request(
        port,
        b"*3\r\n$8\r\nREPLCONF\r\n$15\r\nrdb-filter-only\r\n$0\r\n\r\n",
    );
    assert_eq!(read_exactly(&mut socket, 5), "+OK\r\n");
    socket.write_all(b"SYNC\r\nPING\r\n").unwrap();
    let expected = "-ERR Filtered replica requires EOF capability\r\n+PONG\r\n";
    assert_eq!(read_exactly(&mut socket, expected.len()), expected);
}

#[test]
fn sync_requests_refused_like_redis() {
    let ours = redline(&[]);
    sync_refusals(ours.port());
    let theirs = redis(&[]);
    sync_refusals(theirs.port());
}

/// `used_memory` of INFO memory.
fn used_memory(port: u16) -> i64 {
    section_field(port, "memory", "used_memory")
        .parse()
        .unwrap()
}

/// An 8 MB value from the master costs the replica about 8 MB, and nothing once
/// deleted: the read that brought it is sized for it (not doubled past it) and not kept
/// afterwards, and the backlog keeps only its configured size of it.
fn a_large_value_costs_the_replica_its_size(master: u16, replica: u16) {
    const SIZE: i64 = 8 << 20;
    conn(replica).cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    let base = used_memory(replica);
    let mut m = conn(master);
    let value = "v".repeat(SIZE as usize);
    assert_eq!(m.cmd(&["SET", "big", &value]), Frame::Simple("OK".into()));
    wait_caught_up(master, replica);
    // The read that brought the value is given back just after the value is applied
    // (the offset counts it): on a loaded machine INFO can come in between.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut with_value = used_memory(replica) - base;
    while with_value >= SIZE + (2 << 20) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        with_value = used_memory(replica) - base;
    }
    assert!(
        with_value < SIZE + (2 << 20),
        "the replica holds {with_value} bytes more for an {SIZE}-byte value"
    );
    assert_eq!(m.cmd(&["DEL", "big"]), Frame::Integer(1));
    wait_caught_up(master, replica);
    let after = used_memory(replica) - base;
    assert!(after < 2 << 20, "{after} bytes more after the DEL");
}

#[test]
fn a_large_value_costs_a_replica_its_size() {
    let theirs = redis(&[]);
    let ours = redline(&[]);
    conn(ours.port()).cmd(&["REPLICAOF", "127.0.0.1", &theirs.port().to_string()]);
    wait_link_up(ours.port());
    a_large_value_costs_the_replica_its_size(theirs.port(), ours.port());

    let master = redline(&[]);
    let replica = redline(&[]);
    conn(replica.port()).cmd(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
    wait_link_up(replica.port());
    a_large_value_costs_the_replica_its_size(master.port(), replica.port());
}

fn memory_field(port: u16, name: &str) -> u64 {
    section_field(port, "memory", name).parse().unwrap()
}

/// Two stopped replicas tens of MB behind cost the master one copy of that (one
/// replication buffer, as Redis 7.0's), which keeps what they need beyond
/// `repl-backlog-size`; a third replica that leaves while 1 MB more is written
/// continues with PSYNC from it; once the stopped ones catch up it shrinks back to the
/// backlog's size.
fn replicas_share_one_buffer(master: u16) {
    let mut m = conn(master);
    config_set(
        &mut m,
        &[
            ("repl-backlog-size", "16kb"),
            ("client-output-buffer-limit", "replica 0 0 0"),
        ],
    );
    let replicas: Vec<RedisServer> = (0..3)
        .map(|_| redis(&["--replicaof", "127.0.0.1", &master.to_string()]))
        .collect();
    for r in &replicas {
        wait_link_up(r.port());
    }
    let (stopped, leaving) = (&replicas[..2], &replicas[2]);
    for r in stopped {
        signal(r.pid(), "STOP");
    }
    // 40 MB: more than the stopped replicas' sockets take in.
    let value = "v".repeat(1 << 20);
    for i in 0..40 {
        m.cmd(&["SET", &format!("k{i}"), &value]);
    }
    wait_caught_up(master, leaving.port());
    // Away to a stopped server (it keeps its master's history: no promotion), while
    // 1 MB more is written: far more than `repl-backlog-size`.
    conn(leaving.port()).cmd(&["REPLICAOF", "127.0.0.1", &stopped[0].port().to_string()]);
    let partial_before = stat(master, "sync_partial_ok");
    m.cmd(&["SET", "while-away", &value]);
    let histlen: u64 = info_field(master, "repl_backlog_histlen").parse().unwrap();
    assert!(
        histlen > 16 << 20,
        "port {master}: repl_backlog_histlen {histlen}"
    );
    let total = memory_field(master, "mem_total_replication_buffers");
    assert!(
        total < histlen + histlen / 2 + (1 << 20),
        "port {master}: mem_total_replication_buffers {total}, {histlen} held: one copy"
    );
    conn(leaving.port()).cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while stat(master, "sync_partial_ok") == partial_before {
        assert!(
            Instant::now() < deadline,
            "port {master}: no partial resynchronization; the replica's log:\n{}",
            leaving.log_tail()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_caught_up(master, leaving.port());
    assert_same_data(master, leaving.port());
    for r in stopped {
        signal(r.pid(), "CONT");
    }
    for r in stopped {
        wait_caught_up(master, r.port());
    }
    m.cmd(&["SET", "last", "1"]);
    wait_until("the buffer back to the backlog size", || {
        info_field(master, "repl_backlog_histlen")
            .parse::<u64>()
            .is_ok_and(|h| h < 100_000)
    });
}

#[test]
fn replicas_share_one_buffer_like_redis() {
    on_ours_then_theirs(replicas_share_one_buffer);
}

/// A replica output limit below `repl-backlog-size` counts as that size, as in Redis:
/// a replica continuing with PSYNC is sent what it missed (20 MB here, against a 512 KB
/// hard limit) and stays.
fn a_replica_continues_past_a_limit_below_the_backlog(master: u16) {
    let mut m = conn(master);
    config_set(
        &mut m,
        &[
            ("repl-backlog-size", "100mb"),
            ("client-output-buffer-limit", "replica 512k 0 0"),
        ],
    );
    let replica = redis(&[]);
    assert_eq!(
        conn(replica.port()).cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]),
        Frame::Simple("OK".into())
    );
    wait_link_up(replica.port());
    let (full, partial) = (stat(master, "sync_full"), stat(master, "sync_partial_ok"));
    let big = "A".repeat(10 << 20);
    m.cmd(&["MULTI"]);
    m.cmd(&["CLIENT", "KILL", "TYPE", "replica"]);
    m.cmd(&["SET", "key", &big]);
    m.cmd(&["SET", "key", &big]);
    assert!(matches!(m.cmd(&["EXEC"]), Frame::Array(_)));
    wait_until("a partial resynchronization", || {
        stat(master, "sync_partial_ok") == partial + 1
    });
    wait_caught_up(master, replica.port());
    assert_eq!(stat(master, "sync_full"), full);
    assert_eq!(stat(master, "sync_partial_ok"), partial + 1);
}

/// A redline replica pointed elsewhere for a while, then back at `master`, continues
/// with PSYNC in the database the master's stream had selected (the continued bytes
/// name none): Redis's cached master keeps its database across REPLICAOF. Meanwhile,
/// with no master link, it refuses SYNC and PSYNC as Redis does.
fn a_replica_back_from_elsewhere_continues_in_its_database(master: u16) {
    let replica = redline(&[]);
    let mut m = conn(master);
    m.cmd(&["SELECT", "9"]);
    m.cmd(&["SET", "a", "1"]);
    let mut r = conn(replica.port());
    r.cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
    wait_caught_up(master, replica.port());
    // The stream's SELECT after the full sync goes with this write: what follows
    // names no database.
    m.cmd(&["SET", "a2", "1"]);
    wait_caught_up(master, replica.port());
    let partial = stat(master, "sync_partial_ok");
    let dead = ClosedPort::new().unwrap();
    r.cmd(&["REPLICAOF", "127.0.0.1", &dead.port().to_string()]);
    let refused = text(&conn(replica.port()).cmd(&["PSYNC", "?", "-1"]));
    assert_eq!(
        refused,
        "NOMASTERLINK Can't SYNC while not connected with my master"
    );
    m.cmd(&["SET", "b", "2"]);
    r.cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
    wait_caught_up(master, replica.port());
    assert_eq!(stat(master, "sync_partial_ok"), partial + 1);
    r.cmd(&["SELECT", "9"]);
    assert_eq!(text(&r.cmd(&["GET", "b"])), "2");
    r.cmd(&["SELECT", "0"]);
    assert_eq!(r.cmd(&["DBSIZE"]), Frame::Integer(0));
}

#[test]
fn a_replica_back_from_elsewhere_continues_in_its_database_like_redis() {
    on_ours_then_theirs(a_replica_back_from_elsewhere_continues_in_its_database);
}

#[test]
fn a_replica_without_its_master_refuses_sync_like_redis() {
    let closed = ClosedPort::new().unwrap();
    let dead = closed.port().to_string();
    let ours = redline(&["--replicaof", "127.0.0.1", &dead]);
    let theirs = redis(&["--replicaof", "127.0.0.1", &dead]);
    for port in [ours.port(), theirs.port()] {
        for command in [&["SYNC"][..], &["PSYNC", "?", "-1"]] {
            assert_eq!(
                text(&conn(port).cmd(command)),
                "NOMASTERLINK Can't SYNC while not connected with my master",
                "{command:?} on {port}"
            );
        }
    }
}

#[test]
fn a_replica_output_limit_below_the_backlog_counts_as_the_backlog_like_redis() {
    on_ours_then_theirs(a_replica_continues_past_a_limit_below_the_backlog);
}

/// Hands the master's role from `from` to `to` with FAILOVER and waits until done.
fn fail_over(from: u16, to: u16) {
    assert_eq!(
        conn(from).cmd(&["FAILOVER", "TO", "127.0.0.1", &to.to_string()]),
        Frame::Simple("OK".into())
    );
    wait_until("the failover to finish", || {
        info_field(from, "master_failover_state") == "no-failover"
            && info_field(to, "role") == "master"
    });
    wait_link_up(from);
}

/// A master that was a replica for a while passed its master's SELECTs on without
/// tracking them; once master again, its first write names its database, so a replica
/// that stayed attached all along applies it where it ran.
#[test]
fn a_master_again_after_a_failover_names_its_database() {
    let a = redline(&[]);
    let b = redline(&[]);
    let c = redline(&[]);
    for replica in [&b, &c] {
        conn(replica.port()).cmd(&["REPLICAOF", "127.0.0.1", &a.port().to_string()]);
        wait_link_up(replica.port());
    }
    let write = |port: u16, db: &str, key: &str| {
        let mut w = conn(port);
        w.cmd(&["SELECT", db]);
        assert_eq!(w.cmd(&["SET", key, "1"]), Frame::Simple("OK".into()));
    };
    write(a.port(), "9", "x");
    wait_caught_up(a.port(), c.port());
    // A becomes B's replica; C stays A's, and gets B's writes through A.
    fail_over(a.port(), b.port());
    write(b.port(), "0", "y");
    wait_caught_up(b.port(), a.port());
    wait_caught_up(a.port(), c.port());
    assert_eq!(
        conn(a.port()).cmd(&["REPLICAOF", "NO", "ONE"]),
        Frame::Simple("OK".into())
    );
    write(a.port(), "9", "z");
    wait_caught_up(a.port(), c.port());
    let mut r = conn(c.port());
    r.cmd(&["SELECT", "9"]);
    assert_eq!(r.cmd(&["EXISTS", "z"]), Frame::Integer(1));
    assert_same_data(a.port(), c.port());
}

/// A replica promoted with REPLICAOF NO ONE, written to at once, then followed by its
/// old master: the old master continues with PSYNC and gets that write, as from
/// redis-server (every write of a server that has a backlog goes into it, replicas
/// attached or not). A link then killed is tried again at once ("Reconnecting to
/// MASTER"), not at the next second. redline-server pairs, then redis-server pairs.
#[test]
fn a_write_right_after_a_promotion_reaches_the_replicas_that_follow() {
    let check = |old_master: u16, promoted: u16, old_master_log: &dyn Fn() -> String| {
        let mut m = conn(old_master);
        let mut p = conn(promoted);
        m.cmd(&["SET", "x", "1"]);
        p.ok(&["REPLICAOF", "127.0.0.1", &old_master.to_string()]);
        wait_link_up(promoted);
        wait_until("the first write", || {
            text(&conn(promoted).cmd(&["GET", "x"])) == "1"
        });
        p.ok(&["REPLICAOF", "NO", "ONE"]);
        assert_eq!(text(&p.cmd(&["INCR", "x"])), "2");
        m.ok(&["REPLICAOF", "127.0.0.1", &promoted.to_string()]);
        wait_link_up(old_master);
        wait_until("the write after the promotion", || {
            text(&conn(old_master).cmd(&["GET", "x"])) == "2"
        });
        // Continued, not sent again.
        assert_eq!(stat(promoted, "sync_full"), 0, "port {promoted}");
        assert_eq!(stat(promoted, "sync_partial_ok"), 1, "port {promoted}");
        assert_eq!(
            m.cmd(&["CLIENT", "KILL", "TYPE", "master"]),
            Frame::Integer(1)
        );
        wait_for_log(
            old_master_log,
            &format!("Reconnecting to MASTER 127.0.0.1:{promoted}"),
        );
        wait_link_up(old_master);
    };
    let (a, b) = (redline(&[]), redline(&[]));
    check(a.port(), b.port(), &|| a.log_tail());
    let (a, b) = (redis(&[]), redis(&[]));
    check(a.port(), b.port(), &|| a.log_tail());
}

/// The replica's CLIENT LIST line for its master (`addr=` the master, `flags=M`), or
/// `None` when CLIENT LIST TYPE master lists nothing.
fn master_client_line(replica: u16) -> Option<String> {
    let list = text(&conn(replica).cmd(&["CLIENT", "LIST", "TYPE", "master"]));
    let mut lines = list.lines().map(str::to_string);
    let line = lines.next();
    assert!(lines.next().is_none(), "{list}");
    line
}

fn client_field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

/// As Redis lists its master client: one CLIENT LIST entry with flags M, the master's
/// address, the database and last command of the stream, no user (`(superuser)`, out
/// of reach of CLIENT KILL USER), counted in `connected_clients`; CLIENT KILL ID drops
/// the link, which continues with PSYNC under the same id (Redis resurrects its cached
/// master client).
fn the_master_link_is_listed(master: u16, replica: u16) {
    let mut r = conn(replica);
    r.cmd(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
    wait_link_up(replica);
    let mut m = conn(master);
    m.cmd(&["SELECT", "3"]);
    m.cmd(&["SET", "k", "v"]);
    wait_caught_up(master, replica);
    let line = master_client_line(replica).expect("a master client");
    assert_eq!(client_field(&line, "flags"), "M", "{line}");
    assert_eq!(
        client_field(&line, "addr"),
        format!("127.0.0.1:{master}"),
        "{line}"
    );
    assert_eq!(client_field(&line, "db"), "3", "{line}");
    assert_eq!(client_field(&line, "cmd"), "set", "{line}");
    assert_eq!(client_field(&line, "user"), "(superuser)", "{line}");
    // This connection and the master's, once the others used above have closed.
    let r = std::cell::RefCell::new(r);
    wait_until("two clients", || {
        common::info(&mut r.borrow_mut(), "connected_clients") == 2
    });
    let mut r = r.into_inner();
    assert_eq!(
        r.cmd(&["CLIENT", "KILL", "USER", "default"]),
        Frame::Integer(0)
    );
    let id = client_field(&line, "id").to_string();
    let partial = stat(master, "sync_partial_ok");
    assert_eq!(
        r.cmd(&["CLIENT", "KILL", "ID", &id]),
        Frame::Integer(1),
        "replica {replica}"
    );
    wait_until("a partial resync", || {
        stat(master, "sync_partial_ok") == partial + 1
    });
    wait_link_up(replica);
    let line = master_client_line(replica).expect("a master client again");
    assert_eq!(client_field(&line, "id"), id, "{line}");
}

#[test]
fn the_master_link_is_a_client_like_redis() {
    let (master, replica) = (redis(&[]), redis(&[]));
    the_master_link_is_listed(master.port(), replica.port());
    let (master, replica) = (redline(&["--repl-diskless-sync-delay", "0"]), redline(&[]));
    the_master_link_is_listed(master.port(), replica.port());
}

/// A replica promoted while it loads a full sync's image (here made slow with
/// `key-load-delay`) ends with the master's data and a new history that names the
/// master's as its second id, as redis-server does (it answers REPLICAOF NO ONE only
/// once the load is over); it never goes on under the master's own id.
#[test]
fn a_replica_promoted_during_its_load_starts_a_new_history() {
    let master = redis(&[]);
    let mut m = conn(master.port());
    for i in 0..200 {
        m.ok(&["SET", &format!("k{i}"), "v"]);
    }
    let replica_args = [
        "--repl-diskless-load",
        "disabled",
        "--key-load-delay",
        "5000",
    ];
    for kind in ["redline", "redis"] {
        let (_keep_a, _keep_b, port) = if kind == "redline" {
            let s = redline(&replica_args);
            let port = s.port();
            (Some(s), None, port)
        } else {
            let s = redis(&replica_args);
            let port = s.port();
            (None, Some(s), port)
        };
        let mut r = conn(port);
        r.ok(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
        // The image arrives at once; loading its 200 keys takes about a second.
        // INFO replication only: the keyspace section waits for the load.
        let replication = |name: &str| {
            let info = text(&conn(port).cmd(&["INFO", "replication"]));
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::to_string))
                .unwrap_or_default()
        };
        wait_until("the full sync to start", || {
            replication("master_sync_in_progress") == "1"
                || replication("master_link_status") == "up"
        });
        std::thread::sleep(Duration::from_millis(150));
        r.ok(&["REPLICAOF", "NO", "ONE"]);
        wait_until("the image to be loaded", || {
            matches!(conn(port).cmd(&["DBSIZE"]), Frame::Integer(200))
        });
        // Read now: a master takes a new id when its first replica attaches.
        let master_id = common::info_field(master.port(), "master_replid");
        let field = |name: &str| common::info_field(port, name);
        assert_eq!(field("role"), "master", "{kind}");
        assert_ne!(field("master_replid"), master_id, "{kind}");
        assert_eq!(field("master_replid2"), master_id, "{kind}");
    }
}

/// `replica-announce-ip` and `-port` reach the master (REPLCONF ip-address and
/// listening-port), which lists the replica by them (INFO's `slave0`, ROLE), whichever
/// server is which.
#[test]
fn a_replica_is_listed_by_the_address_it_announces() {
    let announce = [
        "--replica-announce-ip",
        "10.1.2.3",
        "--replica-announce-port",
        "1234",
    ];
    let check = |master: u16, replica: u16| {
        conn(replica).ok(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
        wait_until("the replica to be listed", || {
            common::info_field(master, "slave0").starts_with("ip=10.1.2.3,port=1234,state=online")
        });
        let role = text(&conn(master).cmd(&["ROLE"]));
        assert!(role.contains("10.1.2.3 1234"), "{role}");
    };
    let (master, replica) = (
        redline(&["--repl-diskless-sync-delay", "0"]),
        redis(&announce),
    );
    check(master.port(), replica.port());
    let (master, replica) = (redis(&[]), redline(&announce));
    check(master.port(), replica.port());
}

/// A replica's log lines carry Redis's `S` role mark, a master's `M` (from REPLICAOF NO
/// ONE on), on both servers: log scrapers tell the two apart by it.
#[test]
fn log_lines_mark_the_role_as_redis() {
    // Lines after the last one that names `needle`, by role mark.
    fn marks_after(log: &str, needle: &str) -> Vec<char> {
        let tail = &log[log.rfind(needle).unwrap_or(0)..];
        tail.lines()
            .skip(1)
            .filter_map(|line| {
                line.split_once(':')
                    .and_then(|(_, rest)| rest.chars().next())
            })
            .collect()
    }
    let check = |master: u16, replica: u16, log: &dyn Fn() -> String, name: &str| {
        let mut r = conn(replica);
        r.ok(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
        wait_link_up(replica);
        wait_for_log(log, "MASTER <-> REPLICA sync: Finished with success");
        let as_replica = marks_after(&log(), "REPLICAOF 127.0.0.1");
        assert!(
            !as_replica.is_empty() && as_replica.iter().all(|&c| c == 'S'),
            "{name} as a replica: {as_replica:?}\n{}",
            log()
        );
        r.ok(&["REPLICAOF", "NO", "ONE"]);
        wait_for_log(log, "MASTER MODE enabled");
        r.ok(&["SAVE"]);
        wait_for_log(log, "DB saved on disk");
        let as_master = marks_after(&log(), "MASTER MODE enabled");
        assert!(
            !as_master.is_empty() && as_master.iter().all(|&c| c == 'M'),
            "{name} as a master again: {as_master:?}\n{}",
            log()
        );
    };
    let (master, replica) = (redline(&[]), redline(&[]));
    check(
        master.port(),
        replica.port(),
        &|| replica.log_tail(),
        "redline-server",
    );
    let (master, replica) = (redis(&[]), redis(&[]));
    check(
        master.port(),
        replica.port(),
        &|| replica.log_tail(),
        "redis-server",
    );
}

/// What a master reads to rewrite a write for its replicas (a RESTORE's deadline, an
/// INCRBYFLOAT's result) is not a use of the key: RESTORE IDLETIME and FREQ still read
/// back as given with a replica attached, on both servers.
#[test]
fn the_stream_s_rewrites_leave_a_key_s_idle_time_and_frequency() {
    let check = |master: u16, replica: u16| {
        let mut r = conn(replica);
        r.ok(&["REPLICAOF", "127.0.0.1", &master.to_string()]);
        wait_link_up(replica);
        let mut m = conn(master);
        m.ok(&["SET", "from", "a"]);
        let Frame::Bulk(payload) = m.cmd(&["DUMP", "from"]) else {
            panic!("DUMP gave no payload");
        };
        let restore = |m: &mut Conn, key: &str, tail: &[&str]| {
            let mut args: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), b"100000", &payload];
            args.push(b"REPLACE");
            args.extend(tail.iter().map(|a| a.as_bytes()));
            assert_eq!(m.cmd(&args), Frame::Simple("OK".into()), "{key} {tail:?}");
        };
        restore(&mut m, "idle", &["IDLETIME", "1000"]);
        assert_eq!(m.cmd(&["OBJECT", "IDLETIME", "idle"]), Frame::Integer(1000));
        m.ok(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]);
        restore(&mut m, "hot", &["FREQ", "100"]);
        assert_eq!(m.cmd(&["OBJECT", "FREQ", "hot"]), Frame::Integer(100));
        m.ok(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    };
    let (master, replica) = (redline(&[]), redline(&[]));
    check(master.port(), replica.port());
    let (master, replica) = (redis(&[]), redis(&[]));
    check(master.port(), replica.port());
}

/// A master's offset counts what went to its replicas: before the first one asks to
/// sync it stays 0, whatever the AOF or a rewrite records (node-redis's ROLE test
/// expects 0 on a server that ran BGREWRITEAOF); the first sync starts a new history,
/// and writes then move the offset.
#[test]
fn a_master_s_offset_stays_zero_until_a_replica_syncs() {
    on_ours_then_theirs(|port| {
        let mut c = conn(port);
        c.cmd(&["BGREWRITEAOF"]);
        config_set(&mut c, &[("appendonly", "yes")]);
        for i in 0..50 {
            c.cmd(&["SET", &format!("k{i}"), "v"]);
        }
        c.cmd(&["FUNCTION", "FLUSH"]);
        assert_eq!(info_field(port, "master_repl_offset"), "0", "port {port}");
        let role = c.cmd(&["ROLE"]);
        assert_eq!(
            role,
            Frame::Array(vec![
                Frame::Bulk("master".into()),
                Frame::Integer(0),
                Frame::Array(vec![])
            ]),
            "port {port}"
        );
        let history = info_field(port, "master_replid");
        let replica = redline(&["--replicaof", "127.0.0.1", &port.to_string()]);
        wait_link_up(replica.port());
        c.cmd(&["SET", "after", "v"]);
        wait_caught_up(port, replica.port());
        let offset: u64 = info_field(port, "master_repl_offset").parse().unwrap();
        assert!(offset > 0, "port {port}");
        // The backlog made from scratch started a new history, which the replica took.
        assert_ne!(info_field(port, "master_replid"), history, "port {port}");
        assert_eq!(info_field(port, "master_replid2"), "0".repeat(40));
        assert_eq!(
            info_field(replica.port(), "master_replid"),
            info_field(port, "master_replid")
        );
    });
}

/// A master left without replicas for `repl-backlog-ttl` seconds frees its backlog, as
/// Redis's replication cron does, under a new history with no second id: without a
/// backlog its offset stops moving, so no one may continue the old history. A replica
/// connected keeps it.
#[test]
fn a_master_frees_its_backlog_after_repl_backlog_ttl_without_replicas() {
    on_ours_then_theirs(|port| {
        let mut c = conn(port);
        config_set(&mut c, &[("repl-backlog-ttl", "1")]);
        let replica = redline(&["--replicaof", "127.0.0.1", &port.to_string()]);
        wait_link_up(replica.port());
        c.cmd(&["SET", "k", "v"]);
        wait_caught_up(port, replica.port());
        // Longer than the time to live, with the replica attached.
        std::thread::sleep(Duration::from_millis(2500));
        assert_eq!(info_field(port, "repl_backlog_active"), "1", "port {port}");
        let history = info_field(port, "master_replid");
        drop(replica);
        let deadline = Instant::now() + Duration::from_secs(10);
        while info_field(port, "repl_backlog_active") != "0" {
            assert!(Instant::now() < deadline, "port {port}: backlog kept");
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_ne!(info_field(port, "master_replid"), history, "port {port}");
        assert_eq!(info_field(port, "master_replid2"), "0".repeat(40));
        let offset = info_field(port, "master_repl_offset");
        c.cmd(&["SET", "k", "w"]);
        assert_eq!(
            info_field(port, "master_repl_offset"),
            offset,
            "port {port}"
        );
    });
}
