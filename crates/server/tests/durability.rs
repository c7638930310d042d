//! What the AOF promises when the process dies without warning: 50 clients write
//! distinct keys (each client its own numbered sequence) into a redline-server with
//! `appendonly yes`, the server is SIGKILLed at a random moment, and a server restarted
//! on the same directory must hold every write that was acknowledged:
//!
//! - `appendfsync always`: every acknowledged write, checked key by key;
//! - `appendfsync everysec` and `no`: every acknowledged write too (Redis promises at
//!   most about one second lost to a power loss; a SIGKILL loses nothing the kernel
//!   already has, and a reply leaves only once its write is in the file);
//! - `appendfsync always` with BGREWRITEAOF running again and again during the writes,
//!   so the kill can fall before, during or after a rewrite.
//!
//! Nothing beyond the one write in flight per client may appear either (no phantom
//! writes), and every value must be the one written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use redline_resp::{encode, parse, Frame};
use redline_testkit::{RedlineServer, Reply};

const CLIENTS: usize = 50;
/// No test runs longer than this, whatever happens to the server.
const NO_HANG: Duration = Duration::from_secs(60);

/// A blocking RESP connection that reports a dead server as `None` instead of panicking
/// (the server is killed while the writers are mid-command).
struct Link {
    stream: TcpStream,
    buf: BytesMut,
}

impl Link {
    fn connect(addr: SocketAddr) -> Link {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(NO_HANG)).unwrap();
        stream.set_nodelay(true).unwrap();
        Link {
            stream,
            buf: BytesMut::new(),
        }
    }

    fn send(&mut self, args: &[&[u8]]) -> Option<()> {
        let mut out = BytesMut::new();
        encode::command(&mut out, args.iter().copied());
        self.stream.write_all(&out).ok()
    }

    fn read(&mut self) -> Option<Frame> {
        loop {
            if let Some(frame) = parse(&mut self.buf).ok()? {
                return Some(frame);
            }
            let mut chunk = [0u8; 16384];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    fn cmd(&mut self, args: &[&[u8]]) -> Option<Frame> {
        self.send(args)?;
        self.read()
    }
}

fn key(client: usize, seq: u64) -> String {
    format!("dur:{client}:{seq}")
}

/// The value of write `seq` of `client`: self-describing, about 100 bytes.
fn value(client: usize, seq: u64) -> String {
    format!("{client}:{seq}:{}", "v".repeat(90))
}

/// What one client saw acknowledged: (sequence number, when the +OK arrived).
type Acks = Vec<(u64, Instant)>;

/// Writes `dur:<client>:0`, `dur:<client>:1`... one at a time until the server dies.
fn writer(addr: SocketAddr, client: usize, stop: Arc<AtomicBool>) -> Acks {
    let mut link = Link::connect(addr);
    let mut acks = Vec::new();
    let started = Instant::now();
    for seq in 0.. {
        if stop.load(Ordering::Relaxed) || started.elapsed() > NO_HANG {
            break;
        }
        let (k, v) = (key(client, seq), value(client, seq));
        match link.cmd(&[b"SET", k.as_bytes(), v.as_bytes()]) {
            Some(Frame::Simple(ok)) if &ok[..] == b"OK" => acks.push((seq, Instant::now())),
            // The server died under the command: it may or may not have been applied.
            None => break,
            Some(other) => panic!("SET {k} answered {other:?}"),
        }
    }
    acks
}

/// Runs the writers (and `during`, on its own thread until the kill) against `server`,
/// SIGKILLs it between 1.5 and 3.5 s after the start, restarts it on the same
/// directory, and returns each client's acknowledgements and the moment of the kill.
fn write_then_kill(
    server: &mut RedlineServer,
    during: impl FnOnce(SocketAddr, Arc<AtomicBool>) + Send + 'static,
) -> (Vec<Acks>, Instant) {
    let addr = server.addr();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let stop = stop.clone();
            std::thread::spawn(move || writer(addr, client, stop))
        })
        .collect();
    let side = {
        let stop = stop.clone();
        std::thread::spawn(move || during(addr, stop))
    };
    let delay = Duration::from_millis(1500 + fastrand::u64(..2000));
    eprintln!("killing after {delay:?}");
    std::thread::sleep(delay);
    let killed_at = Instant::now();
    server.kill();
    stop.store(true, Ordering::Relaxed);
    let acks: Vec<Acks> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    side.join().unwrap();
    server.restart().unwrap();
    let total: usize = acks.iter().map(Vec::len).sum();
    eprintln!("{total} writes acknowledged before the kill");
    assert!(total > CLIENTS, "too few writes to mean anything: {total}");
    (acks, killed_at)
}

/// Reads back every key each client wrote (and the two after its last acknowledged
/// one); returns, per client, which of its sequence numbers are present. A value that
/// is there must be the one written.
fn present(server: &RedlineServer, acks: &[Acks]) -> Vec<Vec<bool>> {
    let mut link = Link::connect(server.addr());
    acks.iter()
        .enumerate()
        .map(|(client, acked)| {
            let next = acked.last().map_or(0, |&(seq, _)| seq + 1);
            let seqs: Vec<u64> = (0..next + 2).collect();
            for &seq in &seqs {
                link.send(&[b"GET", key(client, seq).as_bytes()]).unwrap();
            }
            seqs.iter()
                .map(|&seq| match link.read().expect("a reply") {
                    Frame::Bulk(v) => {
                        assert_eq!(
                            &v[..],
                            value(client, seq).as_bytes(),
                            "{}",
                            key(client, seq)
                        );
                        true
                    }
                    Frame::NullBulk => false,
                    other => panic!("GET {} answered {other:?}", key(client, seq)),
                })
                .collect()
        })
        .collect()
}

/// Every acknowledged write acknowledged at or before `deadline` is there, and nothing
/// past the write in flight when the server died. Returns how many acknowledged writes
/// (after the deadline) are missing.
fn check(server: &RedlineServer, acks: &[Acks], deadline: Instant) -> usize {
    let found = present(server, acks);
    let mut missing_late = 0;
    for (client, (acked, found)) in acks.iter().zip(&found).enumerate() {
        for &(seq, at) in acked {
            if !found[seq as usize] {
                assert!(
                    at > deadline,
                    "{} was acknowledged {:?} before the deadline and is missing",
                    key(client, seq),
                    deadline.saturating_duration_since(at)
                );
                missing_late += 1;
            }
        }
        let in_flight = acked.len();
        assert!(
            !found[in_flight + 1],
            "{} appeared though never sent",
            key(client, in_flight as u64 + 1)
        );
    }
    missing_late
}

#[test]
fn appendfsync_always_keeps_every_acknowledged_write_across_sigkill() {
    let mut server = common::aof_server("always");
    let (acks, killed_at) = write_then_kill(&mut server, |_, _| {});
    assert_eq!(check(&server, &acks, killed_at), 0);
    assert!(server
        .log_tail()
        .contains("DB loaded from append only file"));
}

#[test]
fn appendfsync_everysec_loses_no_acknowledged_write_across_sigkill() {
    let mut server = common::aof_server("everysec");
    let (acks, killed_at) = write_then_kill(&mut server, |_, _| {});
    let missing = check(&server, &acks, killed_at - Duration::from_secs(2));
    // A reply leaves only once its write is in the file (the kernel's page cache,
    // which outlives the process): a SIGKILL, unlike a power loss, loses none.
    assert_eq!(
        missing, 0,
        "everysec: acknowledged writes missing after SIGKILL"
    );
}

/// With `appendfsync no` too, every acknowledged write is in the file before its reply
/// leaves (the AOF is buffered, and written before the replies of each batch, as
/// Redis writes its buffer before it sends replies): a SIGKILL loses none.
#[test]
fn appendfsync_no_writes_before_it_replies() {
    let mut server = common::aof_server("no");
    let (acks, killed_at) = write_then_kill(&mut server, |_, _| {});
    assert_eq!(check(&server, &acks, killed_at), 0);
}

#[test]
fn a_rewrite_overlapping_the_writes_loses_no_acknowledged_write() {
    let mut server = common::aof_server("always");
    let (acks, killed_at) = write_then_kill(&mut server, |addr, stop| {
        let mut link = Link::connect(addr);
        let mut rewrites = 0;
        while !stop.load(Ordering::Relaxed) {
            match link.cmd(&[b"BGREWRITEAOF"]) {
                Some(Frame::Simple(_)) => rewrites += 1,
                // Refused while one runs: try again shortly.
                Some(Frame::Error(_)) => {}
                None => break,
                Some(other) => panic!("BGREWRITEAOF answered {other:?}"),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        eprintln!("{rewrites} rewrites started before the kill");
        assert!(rewrites > 0, "no rewrite overlapped the writes");
    });
    assert_eq!(check(&server, &acks, killed_at), 0);
    // The directory is still one redis-server would load: a manifest and its files.
    let manifest =
        std::fs::read_to_string(server.dir().join("appendonlydir/appendonly.aof.manifest"))
            .unwrap();
    assert!(
        manifest.contains("type b") && manifest.contains("type i"),
        "{manifest}"
    );
    assert_eq!(server.cmd(&["PING"]).unwrap(), Reply::Simple("PONG".into()));
}

#[test]
fn appendfsync_changed_at_runtime_applies_at_once_and_keeps_the_writes() {
    let mut server = common::aof_server("everysec");
    let mut link = Link::connect(server.addr());
    for (round, fsync) in ["always", "no", "always", "everysec"].iter().enumerate() {
        let reply = link.cmd(&[b"CONFIG", b"SET", b"appendfsync", fsync.as_bytes()]);
        assert_eq!(reply, Some(Frame::Simple("OK".into())), "{fsync}");
        for seq in 0..200u64 {
            let (k, v) = (key(round, seq), value(round, seq));
            link.send(&[b"SET", k.as_bytes(), v.as_bytes()]).unwrap();
        }
        for _ in 0..200 {
            assert_eq!(link.read(), Some(Frame::Simple("OK".into())), "{fsync}");
        }
    }
    server.kill();
    server.restart().unwrap();
    let acks: Vec<Acks> = (0..4)
        .map(|_| (0..200).map(|seq| (seq, Instant::now())).collect())
        .collect();
    assert_eq!(check(&server, &acks, Instant::now()), 0);
}
