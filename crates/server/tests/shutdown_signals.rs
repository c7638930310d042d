//! Shutting down by signal and stopping a save, on redis-server and redline-server side
//! by side: a signal only schedules the shutdown (the cron starts it, so SHUTDOWN ABORT
//! can cancel it first); a second SIGINT during the final save exits at once and removes
//! the save's temporary file; FLUSHALL stops a BGSAVE slowed by `rdb-key-save-delay`;
//! a replica leaving stops the cut of its full sync.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use redline_testkit::{RedisServer, RedlineServer, Reply};

/// What these tests need of either server.
trait Server {
    fn cmd(&self, args: &[&str]) -> Reply;
    fn pid(&self) -> u32;
    fn dir(&self) -> &Path;
    fn is_running(&mut self) -> bool;
    fn log_tail(&self) -> String;
}

impl Server for RedisServer {
    fn cmd(&self, args: &[&str]) -> Reply {
        RedisServer::cmd(self, args).unwrap()
    }
    fn pid(&self) -> u32 {
        RedisServer::pid(self).unwrap()
    }
    fn dir(&self) -> &Path {
        RedisServer::dir(self)
    }
    fn is_running(&mut self) -> bool {
        RedisServer::is_running(self)
    }
    fn log_tail(&self) -> String {
        RedisServer::log_tail(self)
    }
}

impl Server for RedlineServer {
    fn cmd(&self, args: &[&str]) -> Reply {
        RedlineServer::cmd(self, args).unwrap()
    }
    fn pid(&self) -> u32 {
        RedlineServer::pid(self).unwrap()
    }
    fn dir(&self) -> &Path {
        RedlineServer::dir(self)
    }
    fn is_running(&mut self) -> bool {
        RedlineServer::is_running(self)
    }
    fn log_tail(&self) -> String {
        RedlineServer::log_tail(self)
    }
}

const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];

/// Runs `check` against a fresh redis-server, then a fresh redline-server.
fn on_both(check: impl Fn(&mut dyn Server)) {
    let mut redis = RedisServer::builder().args(DEBUG).start().unwrap();
    check(&mut redis);
    let mut redline = RedlineServer::builder().args(DEBUG).start().unwrap();
    check(&mut redline);
}

fn ok(server: &dyn Server, args: &[&str]) {
    assert_eq!(server.cmd(args), Reply::Simple("OK".into()), "{args:?}");
}

fn signal(server: &dyn Server, name: &str) {
    let status = std::process::Command::new("kill")
        .args([name, &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn persistence_field(server: &dyn Server, name: &str) -> String {
    let info = server.cmd(&["INFO", "persistence"]).text().unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Waits up to `secs` seconds for `cond`.
fn wait_for(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn set_keys(server: &dyn Server, n: usize) {
    for i in 0..n {
        ok(server, &["SET", &format!("k{i}"), "v"]);
    }
}

/// Files in the server's directory whose name starts with `prefix`.
fn files_starting(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect()
}

#[test]
fn shutdown_abort_cancels_a_signal_before_the_cron_starts_it() {
    on_both(|server| {
        ok(server, &["DEBUG", "PAUSE-CRON", "1"]);
        signal(server, "-TERM");
        std::thread::sleep(Duration::from_millis(100));
        ok(server, &["SHUTDOWN", "ABORT"]);
        ok(server, &["DEBUG", "PAUSE-CRON", "0"]);
        // Several cron turns later the server still runs.
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(server.cmd(&["PING"]), Reply::Simple("PONG".into()));
        assert!(server.is_running());
        assert_eq!(
            server.cmd(&["SHUTDOWN", "ABORT"]),
            Reply::Error("ERR No shutdown in progress.".into())
        );
    });
}

#[test]
fn a_second_sigint_during_the_final_save_exits_and_removes_its_file() {
    on_both(|server| {
        let temp = server.dir().join(format!("temp-{}.rdb", server.pid()));
        ok(server, &["CONFIG", "SET", "shutdown-on-sigint", "save"]);
        set_keys(server, 20);
        // 20 keys at 100 ms each: the final save takes 2 s.
        ok(server, &["CONFIG", "SET", "rdb-key-save-delay", "100000"]);
        signal(server, "-INT");
        wait_for(2, "the final save's temporary file", || temp.exists());
        signal(server, "-INT");
        wait_for(2, "the exit", || !server.is_running());
        assert!(!temp.exists(), "{} stayed", temp.display());
        assert!(!server.dir().join("dump.rdb").exists());
    });
}

#[test]
fn flushall_stops_a_slow_bgsave() {
    on_both(|server| {
        ok(server, &["CONFIG", "SET", "save", ""]);
        set_keys(server, 50);
        // 50 keys at 100 ms each: the save would take 5 s.
        ok(server, &["CONFIG", "SET", "rdb-key-save-delay", "100000"]);
        assert_eq!(
            server.cmd(&["BGSAVE"]),
            Reply::Simple("Background saving started".into())
        );
        assert_eq!(persistence_field(server, "rdb_bgsave_in_progress"), "1");
        ok(server, &["FLUSHALL"]);
        wait_for(2, "the BGSAVE to stop", || {
            persistence_field(server, "rdb_bgsave_in_progress") == "0"
        });
        // Stopped on purpose, not failed: writes go on, nothing was written.
        assert_eq!(persistence_field(server, "rdb_last_bgsave_status"), "ok");
        ok(server, &["SET", "after", "1"]);
        assert!(
            !server.dir().join("dump.rdb").exists(),
            "a dump was written: {}",
            server.log_tail()
        );
        // The next BGSAVE runs to the end.
        ok(server, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
        assert_eq!(
            server.cmd(&["BGSAVE"]),
            Reply::Simple("Background saving started".into())
        );
        wait_for(10, "the second BGSAVE", || {
            persistence_field(server, "rdb_bgsave_in_progress") == "0"
        });
        assert!(server.dir().join("dump.rdb").exists());
    });
}

/// redline-server only: each full sync writes a cut of its own (`temp-sync-*`), where
/// redis-server shares one child between replicas.
#[test]
fn a_replica_leaving_stops_the_cut_of_its_full_sync() {
    let master = RedlineServer::builder().args(DEBUG).start().unwrap();
    set_keys(&master, 10);
    // 10 keys at 1 s each: the sync's image would take 10 s.
    ok(&master, &["CONFIG", "SET", "rdb-key-save-delay", "1000000"]);
    let replica = RedlineServer::start().unwrap();
    ok(
        &replica,
        &["REPLICAOF", "127.0.0.1", &master.port().to_string()],
    );
    let waited = Instant::now();
    while files_starting(master.dir(), "temp-sync-").is_empty() {
        assert!(
            waited.elapsed() < Duration::from_secs(5),
            "no sync cut: {}",
            master.log_tail()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    ok(&replica, &["REPLICAOF", "NO", "ONE"]);
    wait_for(3, "the cut to stop", || {
        files_starting(master.dir(), "temp-sync-").is_empty()
    });
    assert_eq!(master.cmd(&["PING"]).unwrap(), Reply::Simple("PONG".into()));
}
