//! Redis Sentinel end to end: a master with two replicas, three real `redis-sentinel`
//! processes, and the client following the master through a `redis+sentinel://` URL.
//!
//! Writers increment per-task counters through the client and, on a dedicated
//! connection, write a marker and `WAIT 1` for it: the stream is ordered, so once a
//! replica has the marker it has every counter value acknowledged before the marker was
//! sent. Then the master is SIGKILLed. Expected, as with redis-server: writes succeed
//! again within Sentinel's failover time + 1 s without the callers finding the new
//! master themselves; every value a replica was known to have is on the new master; the
//! other replica follows the new master (and Sentinel's CONFIG REWRITE recorded it in
//! its configuration file); the old master, restarted on its port, is turned into a
//! replica of the new one by Sentinel.
//!
//! The same scenario runs against redline-server and against redis-server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redline::{Client, Cmd};
use redline_testkit::{RedisSentinels, RedisServer, RedlineServer, Reply};

const WRITERS: usize = 4;
/// A marker and `WAIT` after this many counter writes.
const WAIT_EVERY: u64 = 20;
/// Generous bounds for what Sentinel does on its own schedule (its INFO period for
/// replicas is 10 s; converting a restarted old master waits 8 s more).
const SETTLE: Duration = Duration::from_secs(60);

/// One server of the test, redline-server or redis-server.
enum Node {
    Redline(RedlineServer),
    Redis(RedisServer),
}

impl Node {
    fn start(redline: bool, master: Option<SocketAddr>) -> Node {
        // Started from a configuration file, so Sentinel's CONFIG REWRITE has one to
        // write; a replica's `replicaof` comes from that file too.
        let replicaof = master.map(|m| format!("replicaof {} {}\n", m.ip(), m.port()));
        let text = format!("save \"\"\n{}", replicaof.unwrap_or_default());
        if redline {
            Node::Redline(RedlineServer::builder().config_file(text).start().unwrap())
        } else {
            Node::Redis(RedisServer::builder().config_file(text).start().unwrap())
        }
    }

    fn addr(&self) -> SocketAddr {
        match self {
            Node::Redline(s) => s.addr(),
            Node::Redis(s) => s.addr(),
        }
    }

    fn cmd(&self, args: &[&str]) -> redline_testkit::Result<Reply> {
        match self {
            Node::Redline(s) => s.cmd(args),
            Node::Redis(s) => s.cmd(args),
        }
    }

    fn kill(&mut self) {
        match self {
            Node::Redline(s) => s.kill(),
            Node::Redis(s) => s.kill(),
        }
    }

    fn restart(&mut self) {
        match self {
            Node::Redline(s) => s.restart().unwrap(),
            Node::Redis(s) => s.restart().unwrap(),
        }
    }

    /// The configuration file the node was started with, as it is now.
    fn config_text(&self) -> String {
        let path = match self {
            Node::Redline(s) => s.config_path(),
            Node::Redis(s) => s.config_path(),
        };
        std::fs::read_to_string(path).unwrap()
    }

    fn info_field(&self, section: &str, field: &str) -> Option<String> {
        let info = self.cmd(&["INFO", section]).ok()?.text()?;
        info.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k == field).then(|| v.trim_end().to_string())
        })
    }

    /// `ROLE` as (role, master port, link state) for a replica, (role, 0, "") otherwise.
    fn role(&self) -> Option<(String, u16, String)> {
        let reply = self.cmd(&["ROLE"]).ok()?;
        let items = reply.items()?;
        let role = items.first()?.text()?;
        if role == "slave" {
            let port = items.get(2)?.integer()?;
            let state = items.get(3)?.text()?;
            return Some((role, u16::try_from(port).ok()?, state));
        }
        Some((role, 0, String::new()))
    }
}

/// Polls `check` until it holds or `limit` passes (then fails with `what`).
fn wait_until(what: &str, limit: Duration, check: impl FnMut() -> bool) {
    wait_or_explain(what, limit, check, String::new);
}

/// Like [`wait_until`], with `explain()` in the failure message (logs, states).
fn wait_or_explain(
    what: &str,
    limit: Duration,
    mut check: impl FnMut() -> bool,
    explain: impl Fn() -> String,
) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "not within {limit:?}: {what}\n{}",
            explain()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What one writer task knows.
#[derive(Default)]
struct Progress {
    /// The last counter value acknowledged.
    acked: AtomicU64,
    /// The last counter value known to be on a replica (per WAIT).
    replicated: AtomicU64,
    /// When a write last succeeded, as milliseconds since the test's start.
    last_ok_ms: AtomicU64,
    /// Errors seen (they are expected only around the failover).
    errors: Mutex<Vec<String>>,
}

/// Writes `counter:<i>` = 1, 2, 3... through the multiplexed connection; every
/// `WAIT_EVERY` writes, `SET marker:<i>` and `WAIT 1 500` on a dedicated connection.
async fn writer(
    client: Client,
    i: usize,
    progress: Arc<Progress>,
    stop: Arc<AtomicBool>,
    t0: Instant,
) {
    let key = format!("counter:{i}");
    let marker = format!("marker:{i}");
    let mut n = 0u64;
    let mut dedicated = None;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        match client.set(&key, n).await {
            Ok(()) => {
                progress.acked.store(n, Ordering::Relaxed);
                let ms = u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
                progress.last_ok_ms.store(ms, Ordering::Relaxed);
            }
            Err(e) => {
                progress.errors.lock().unwrap().push(e.to_string());
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        }
        if n % WAIT_EVERY != 0 {
            continue;
        }
        // Everything acknowledged so far precedes the marker in the stream.
        let covered = n;
        if dedicated.is_none() {
            dedicated = client.dedicated().await.ok();
        }
        let Some(conn) = dedicated.as_mut() else {
            continue;
        };
        let waited: redline::Result<i64> = async {
            conn.query::<()>(Cmd::new("SET").arg(&marker).arg(covered))
                .await?;
            conn.query(Cmd::new("WAIT").arg(1).arg(500)).await
        }
        .await;
        match waited {
            Ok(replicas) if replicas >= 1 => {
                progress.replicated.fetch_max(covered, Ordering::Relaxed);
            }
            Ok(_) => {}
            Err(e) => {
                progress.errors.lock().unwrap().push(format!("WAIT: {e}"));
                dedicated = None;
            }
        }
    }
}

fn failover_scenario(redline: bool) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut master = Node::start(redline, None);
    let old_addr = master.addr();
    let replicas = [
        Node::start(redline, Some(old_addr)),
        Node::start(redline, Some(old_addr)),
    ];
    wait_until("both replicas online", SETTLE, || {
        master
            .info_field("replication", "connected_slaves")
            .as_deref()
            == Some("2")
            && replicas
                .iter()
                .all(|r| r.info_field("replication", "master_link_status").as_deref() == Some("up"))
    });
    // 2 s, as Redis's own Sentinel tests, rather than the kit's 1 s: on a loaded test
    // machine a server starved of CPU for a second is taken for dead and failed over
    // once more.
    let mut sentinels = RedisSentinels::builder()
        .replicas(2)
        .down_after(Duration::from_secs(2))
        .start(old_addr)
        .unwrap();
    assert_eq!(sentinels.master_addr().unwrap(), old_addr);

    let t0 = Instant::now();
    // The defaults: reconnect backoff up to 2 s, lifted when Sentinel announces the move.
    let client = runtime.block_on(Client::connect(&sentinels.url())).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let progress: Vec<Arc<Progress>> = (0..WRITERS).map(|_| Arc::default()).collect();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|i| {
            runtime.spawn(writer(
                client.clone(),
                i,
                progress[i].clone(),
                stop.clone(),
                t0,
            ))
        })
        .collect();

    wait_until("writes confirmed on a replica by WAIT", SETTLE, || {
        progress
            .iter()
            .all(|p| p.replicated.load(Ordering::Relaxed) >= 3 * WAIT_EVERY)
    });

    master.kill();
    let killed_ms = u64::try_from(t0.elapsed().as_millis()).unwrap();
    let killed_at = Instant::now();
    let replicated_at_kill: Vec<u64> = progress
        .iter()
        .map(|p| p.replicated.load(Ordering::Relaxed))
        .collect();

    // Writes succeed again, through the client alone, within the failover time + 1 s.
    let bound = sentinels.failover_time() + Duration::from_secs(1);
    wait_until("writes succeed again after the failover", bound, || {
        progress
            .iter()
            .all(|p| p.last_ok_ms.load(Ordering::Relaxed) > killed_ms + 50)
    });
    let recovered_in = killed_at.elapsed();
    let new_addr = sentinels.wait_for_new_master(old_addr, SETTLE).unwrap();
    let (promoted, other) = match replicas.iter().position(|r| r.addr() == new_addr) {
        Some(0) => (&replicas[0], &replicas[1]),
        Some(_) => (&replicas[1], &replicas[0]),
        None => panic!("new master {new_addr} is not one of the replicas"),
    };
    // A few more writes on the new master, then stop.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        runtime.block_on(task).unwrap();
    }

    // Every value a replica was known to have, and every write acknowledged since, is on
    // the new master.
    for (i, p) in progress.iter().enumerate() {
        let value: u64 = promoted
            .cmd(&["GET", &format!("counter:{i}")])
            .unwrap()
            .text()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let acked = p.acked.load(Ordering::Relaxed);
        assert!(
            value >= replicated_at_kill[i] && value >= acked,
            "counter:{i} is {value} on the new master; replicated before the kill {}, acked {acked}",
            replicated_at_kill[i]
        );
        let errors = p.errors.lock().unwrap();
        assert!(
            errors
                .iter()
                .all(|e| !e.contains("WRONGTYPE") && !e.contains("READONLY")),
            "writer {i}: {errors:?}"
        );
    }
    assert_eq!(promoted.role().unwrap().0, "master");

    // The other replica follows the new master; Sentinel's CONFIG REWRITE wrote it down.
    wait_until("the other replica follows the new master", SETTLE, || {
        other.role() == Some(("slave".into(), new_addr.port(), "connected".into()))
    });
    let text = other.config_text();
    let want = format!("replicaof 127.0.0.1 {}", new_addr.port());
    assert!(text.lines().any(|l| l == want), "{text}");
    let text = promoted.config_text();
    assert!(!text.contains("replicaof"), "{text}");
    // PSYNC2: the promoted replica kept the old master's id as its second id, so the
    // other one continues from its offset instead of a full resync.
    assert_eq!(
        promoted.info_field("stats", "sync_full").as_deref(),
        Some("0"),
        "the other replica needed a full resync from the promoted one"
    );

    // The old master, restarted on its port, is made a replica of the new one.
    // Of the master Sentinel names now: the new one, unless Sentinel had to move it
    // again meanwhile.
    master.restart();
    wait_or_explain(
        "the old master rejoins as a replica",
        SETTLE,
        || {
            sentinels.master_addr().ok().is_some_and(|current| {
                current != old_addr
                    && master.role() == Some(("slave".into(), current.port(), "connected".into()))
            })
        },
        || {
            format!(
                "old master: ROLE {:?}\n{}\n{}",
                master.role(),
                master.config_text(),
                sentinels.log_tails()
            )
        },
    );
    wait_until("the old master has the new master's data", SETTLE, || {
        let on_new = promoted.cmd(&["GET", "counter:0"]).ok();
        on_new.is_some() && master.cmd(&["GET", "counter:0"]).ok() == on_new
    });

    // The client still works, on the new master.
    runtime.block_on(async {
        client.set("after", "failover").await.unwrap();
        assert_eq!(
            client.get("after").await.unwrap().as_deref(),
            Some(&b"failover"[..])
        );
    });
    assert_eq!(
        promoted.cmd(&["GET", "after"]).unwrap().text().as_deref(),
        Some("failover")
    );
    eprintln!(
        "{}: writes succeeded again {recovered_in:?} after the kill (bound {bound:?})",
        if redline {
            "redline-server"
        } else {
            "redis-server"
        }
    );
    drop(client);
    drop(runtime);
}

/// `SENTINEL FAILOVER` with every server up: the old master stays up (Sentinel turns it
/// into a replica only seconds later), so only `+switch-master` tells the client to move.
/// The first sentinel of the URL is down: the client asks the next.
#[test]
fn client_follows_a_manual_failover_announced_by_sentinel() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let master = Node::start(true, None);
    let old_addr = master.addr();
    let replicas = [
        Node::start(true, Some(old_addr)),
        Node::start(true, Some(old_addr)),
    ];
    wait_until("both replicas online", SETTLE, || {
        master
            .info_field("replication", "connected_slaves")
            .as_deref()
            == Some("2")
    });
    let mut sentinels = RedisSentinels::builder()
        .replicas(2)
        .down_after(Duration::from_secs(2))
        .start(old_addr)
        .unwrap();
    sentinels.kill(0).unwrap();

    let client = runtime.block_on(Client::connect(&sentinels.url())).unwrap();
    runtime.block_on(client.set("before", 1)).unwrap();
    assert_eq!(
        master.cmd(&["GET", "before"]).unwrap().text().as_deref(),
        Some("1")
    );

    let reply = sentinels
        .cmd(1, &["SENTINEL", "FAILOVER", sentinels.master_name()])
        .unwrap();
    assert_eq!(reply, Reply::Simple("OK".into()));
    let new_addr = sentinels.wait_for_new_master(old_addr, SETTLE).unwrap();
    let promoted = replicas.iter().find(|r| r.addr() == new_addr).unwrap();
    let switched_at = Instant::now();

    // The client's writes go to the new master well before Sentinel demotes the old one
    // (it waits 8 s after the switch before converting it), and without errors other
    // than connection errors for commands caught on the old connection.
    let mut n = 0u64;
    loop {
        n += 1;
        match runtime.block_on(client.set("probe", n)) {
            Ok(()) => {}
            Err(e) => assert!(e.is_connection_error(), "{e}"),
        }
        if promoted.cmd(&["GET", "probe"]).unwrap().text() == Some(n.to_string()) {
            break;
        }
        assert!(
            switched_at.elapsed() < Duration::from_secs(7),
            "writes still do not reach the new master {new_addr}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(client);
    drop(runtime);
}

#[test]
fn redline_servers_fail_over_under_sentinel() {
    failover_scenario(true);
}

#[test]
fn redis_servers_fail_over_under_sentinel() {
    failover_scenario(false);
}

/// What a caller sees when Sentinel cannot give a master: a typed error, at once.
#[test]
fn unknown_master_or_unreachable_sentinels_are_typed_errors() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let master = RedlineServer::start().unwrap();
    let sentinels = RedisSentinels::builder()
        .count(1)
        .quorum(1)
        .start(master.addr())
        .unwrap();
    let sentinel = sentinels.addrs()[0];
    runtime.block_on(async {
        let err = Client::connect(&format!("redis+sentinel://{sentinel}/nope"))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, redline::Error::MasterNotFound { name, reason }
                if &**name == "nope" && reason.contains("does not know it")),
            "{err}"
        );
        // A dead sentinel first in the list, then the live one.
        let url = format!("redis+sentinel://127.0.0.1:1,{sentinel}/mymaster");
        let client = Client::connect(&url).await.unwrap();
        client.set("k", "v").await.unwrap();
        let err = Client::connect("redis+sentinel://127.0.0.1:1/mymaster")
            .await
            .unwrap_err();
        assert!(
            matches!(err, redline::Error::MasterNotFound { .. }),
            "{err}"
        );
    });
    assert_eq!(
        master.cmd(&["GET", "k"]).unwrap().text().as_deref(),
        Some("v")
    );
}
