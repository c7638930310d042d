//! Shared by the tunnel tests: runs the built `redline tunnel`, talks raw RESP to it, and
//! runs `redis-cli` / `redis-benchmark` against it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bytes::BytesMut;
use redline_resp::{encode, Frame};

/// How long the tunnel may take to print `ready`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `redline tunnel`, stopped with SIGTERM when dropped.
pub struct Tunnel {
    child: Option<Child>,
    /// `listening <local> -> <upstream>` (standalone, smart).
    pub listen: Option<SocketAddr>,
    /// `pinned <local> -> <upstream>`, in the order printed.
    pub pinned: Vec<(SocketAddr, String)>,
    /// Lines printed after `ready` (new pinned listeners), as they come.
    pub later: mpsc::Receiver<String>,
}

impl Tunnel {
    /// Starts `redline tunnel <args> --listen 127.0.0.1:0` and waits for `ready`.
    pub fn start(args: &[String]) -> Tunnel {
        let mut child = Command::new(env!("CARGO_BIN_EXE_redline"))
            .arg("tunnel")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn redline tunnel");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || forward_lines(stdout, tx));
        let mut tunnel = Tunnel {
            child: Some(child),
            listen: None,
            pinned: Vec::new(),
            later: rx,
        };
        loop {
            let line = match tunnel.later.recv_timeout(START_TIMEOUT) {
                Ok(line) => line,
                Err(_) => {
                    let status = tunnel.child.as_mut().unwrap().try_wait();
                    panic!("tunnel did not print `ready` (status {status:?})");
                }
            };
            if line == "ready" {
                return tunnel;
            }
            let (local, _) = parse_mapping(&line);
            if line.starts_with("listening ") {
                tunnel.listen = Some(local);
            } else if line.starts_with("pinned ") {
                tunnel.pinned.push(parse_mapping(&line));
            }
        }
    }

    /// The standalone/smart listener.
    pub fn addr(&self) -> SocketAddr {
        self.listen.expect("tunnel has a single listener")
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Sends `signal` (`TERM`, `INT`) and waits for the exit status.
    pub fn stop_with(&mut self, signal: &str) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        let _ = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status();
        for _ in 0..100 {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        panic!("tunnel did not exit within 10 s of SIG{signal}");
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            for _ in 0..50 {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn forward_lines(stdout: ChildStdout, tx: mpsc::Sender<String>) {
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { return };
        if tx.send(line).is_err() {
            return;
        }
    }
}

/// `<word> <local> -> <upstream>`.
pub fn parse_mapping(line: &str) -> (SocketAddr, String) {
    let mut parts = line.split_whitespace();
    let _word = parts.next();
    let local = parts
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| "0.0.0.0:0".parse().unwrap());
    let upstream = parts.nth(1).unwrap_or_default().to_owned();
    (local, upstream)
}

/// Upstream flags for a testkit TLS server: `-h 127.0.0.1 -p PORT --tls --cacert CA`.
pub fn tls_flags(port: u16, ca: &std::path::Path) -> Vec<String> {
    vec![
        "-h".into(),
        "127.0.0.1".into(),
        "-p".into(),
        port.to_string(),
        "--tls".into(),
        "--cacert".into(),
        ca.display().to_string(),
    ]
}

/// `redis-cli -h 127.0.0.1 -p PORT args...`, plain text (the tunnel's side).
pub fn redis_cli(addr: SocketAddr, extra: &[&str], args: &[&str]) -> Output {
    Command::new("redis-cli")
        .args(["-h", &addr.ip().to_string(), "-p", &addr.port().to_string()])
        .args(extra)
        .args(args)
        .output()
        .expect("run redis-cli (make deps)")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A raw RESP connection: pipelines whole batches and reads the replies as frames and as
/// the exact bytes that arrived.
pub struct Raw {
    stream: TcpStream,
    buf: BytesMut,
}

impl Raw {
    pub fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).expect("connect to the tunnel");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Raw {
            stream,
            buf: BytesMut::new(),
        }
    }

    /// The client side's address (the tunnel logs it as the peer).
    pub fn local_addr(&self) -> SocketAddr {
        self.stream.local_addr().unwrap()
    }

    /// Writes bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Sends one command and returns its reply.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Frame {
        let mut out = BytesMut::new();
        encode::command(&mut out, args.iter());
        self.stream.write_all(&out).unwrap();
        self.read_frame()
    }

    /// Writes `commands` (already encoded) from a second thread while reading `count`
    /// replies here, so large pipelines cannot deadlock on full socket buffers.
    pub fn pipeline(&mut self, commands: Vec<u8>, count: usize) -> Vec<Frame> {
        let mut writer = self.stream.try_clone().unwrap();
        let handle = std::thread::spawn(move || writer.write_all(&commands));
        let replies = (0..count).map(|_| self.read_frame()).collect();
        handle.join().unwrap().unwrap();
        replies
    }

    pub fn read_frame(&mut self) -> Frame {
        loop {
            if let Some(frame) = redline_resp::parse(&mut self.buf).unwrap() {
                return frame;
            }
            let mut chunk = [0u8; 64 * 1024];
            let n = self.stream.read(&mut chunk).expect("read reply");
            assert!(n > 0, "tunnel closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Deterministic bytes of length `len` (every byte value appears, CR/LF included).
pub fn value(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// FNV-1a, to report mismatches compactly.
pub fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Sizes from 1 byte to 8 MB, around the 16 KiB TLS record and 64 KiB read chunk.
pub const SIZES: &[usize] = &[
    1,
    2,
    100,
    16 * 1024 - 1,
    16 * 1024 + 1,
    64 * 1024,
    64 * 1024 + 7,
    1024 * 1024,
    8 * 1024 * 1024,
];

/// Pipelines SET for every size, then GET for every size, on `conn`; checks each value
/// comes back byte-identical (checksummed). `key` makes the key for a size.
pub fn roundtrip_values(conn: &mut Raw, key: impl Fn(usize) -> String) {
    let mut batch = BytesMut::new();
    let values: Vec<Vec<u8>> = SIZES
        .iter()
        .enumerate()
        .map(|(i, &size)| value(size, i as u64 + 1))
        .collect();
    for (&size, v) in SIZES.iter().zip(&values) {
        let k = key(size);
        encode::command(&mut batch, [b"SET".as_slice(), k.as_bytes(), v]);
    }
    for &size in SIZES {
        let k = key(size);
        encode::command(&mut batch, [b"GET".as_slice(), k.as_bytes()]);
    }
    let replies = conn.pipeline(batch.to_vec(), 2 * SIZES.len());
    for (i, reply) in replies[..SIZES.len()].iter().enumerate() {
        assert_eq!(
            reply,
            &Frame::Simple("OK".into()),
            "SET of {} bytes",
            SIZES[i]
        );
    }
    for ((reply, want), size) in replies[SIZES.len()..].iter().zip(&values).zip(SIZES) {
        let Frame::Bulk(got) = reply else {
            panic!("GET of {size} bytes: {reply:?}");
        };
        assert_eq!(
            (got.len(), checksum(got)),
            (want.len(), checksum(want)),
            "value of {size} bytes changed"
        );
    }
}
