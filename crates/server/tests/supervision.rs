//! Starting as init systems and scripts start redis-server, on redis-server and
//! redline-server side by side: `-` reads configuration from standard input;
//! `daemonize yes` forks into the background (the command returns at once, the server
//! runs in a session of its own, writes its pid file and removes it on the way out);
//! `supervised systemd` (or `auto` with `$NOTIFY_SOCKET` set) tells systemd's notify
//! socket the same states in the same order, and keeps the server in the foreground
//! whatever `daemonize` says; SIGHUP is ignored; a log file rotated away by renaming is
//! followed by a new one at the configured path; a system call filter like Debian's
//! unit's (`SystemCallFilter=~@resources`) does not kill a background save; under a
//! low `ulimit -n`, `maxclients` is lowered to fit and the clients past it are refused;
//! `syslog-enabled yes` sends the same lines to the system log; `--version` prints
//! Redis's line.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The seccomp filter of the last test is installed with libc calls.
#![allow(unsafe_code)]

mod common;

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, loopback_args, wait_exit, wait_for_port, Conn};
use redline_resp::Frame;

/// The two servers under test, by binary.
fn servers() -> [(&'static str, PathBuf); 2] {
    [
        ("redis-server", PathBuf::from("redis-server")),
        (
            "redline-server",
            redline_testkit::redline_server_bin().unwrap(),
        ),
    ]
}

/// A scratch directory, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("redline-supervision-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kills a daemonized server (not our child) if the test ends before it exits.
struct Daemon(Option<i32>);

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
}

/// A server started as our child, killed if the test ends before it exits.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

impl std::ops::Deref for Running {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

/// Starts `bin` in the foreground in `dir` on a free loopback port with no save points,
/// then `args` (`adjust` may change the command first); returns once the port answers.
fn start(
    bin: &Path,
    dir: &Path,
    args: &[&str],
    adjust: impl FnOnce(&mut Command),
) -> (Running, Conn, u16) {
    let port = free_port();
    let mut command = Command::new(bin);
    command
        .current_dir(dir)
        .args(loopback_args(port))
        .args(args)
        .stdout(Stdio::null());
    adjust(&mut command);
    let child = command.spawn().map(Running).unwrap();
    (child, wait_for_port(port), port)
}

/// SHUTDOWN NOSAVE, then the exit status.
fn stop(mut child: Running, mut conn: Conn) -> std::process::ExitStatus {
    conn.send(&["SHUTDOWN", "NOSAVE"]);
    wait_exit(&mut child)
}

fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| stat.split(' ').nth(2) == Some("Z"))
}

fn config_get(conn: &mut Conn, name: &str) -> Frame {
    conn.cmd(&["CONFIG", "GET", name])
}

/// What each server shows of one daemonized run: the launching command's status, then
/// whether the pid file named the serving process (a session leader, not our child),
/// CONFIG GET daemonize and pidfile, and whether SHUTDOWN removed the file.
fn daemonized_run(name: &str, bin: &Path) -> Vec<String> {
    let scratch = Scratch::new(name);
    let pidfile = scratch.0.join("server.pid");
    let port = free_port();
    let status = Command::new(bin)
        .current_dir(&scratch.0)
        .args(loopback_args(port))
        .args(["--daemonize", "yes", "--pidfile", pidfile.to_str().unwrap()])
        .args(["--logfile", "server.log"])
        .stdin(Stdio::null())
        .status()
        .unwrap();
    let mut conn = wait_for_port(port);
    // The server is not our child: it is killed by the pid it reports if the test
    // fails before its SHUTDOWN.
    let info = common::text(&conn.cmd(&["INFO", "server"]));
    let pid: i32 = info
        .lines()
        .find_map(|line| line.strip_prefix("process_id:"))
        .and_then(|pid| pid.trim().parse().ok())
        .unwrap();
    let mut daemon = Daemon(Some(pid));
    // Redis writes the file just after its port opens.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pidfile.exists() {
        assert!(Instant::now() < deadline, "{name} wrote no pid file");
        std::thread::sleep(Duration::from_millis(5));
    }
    let text = std::fs::read_to_string(&pidfile).unwrap();
    assert_eq!(text.trim(), pid.to_string(), "{name}'s pid file");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit(") ").next().unwrap().split(' ').collect();
    let (parent, session) = (fields[1], fields[3]);
    let mut seen = vec![
        format!("launcher exit: {:?}", status.code()),
        format!("pid file ends in a newline: {}", text.ends_with('\n')),
        format!("session leader: {}", session == pid.to_string()),
        format!(
            "parent is not the test: {}",
            parent != std::process::id().to_string()
        ),
        format!("{:?}", config_get(&mut conn, "daemonize")),
        format!(
            "CONFIG GET pidfile is the file: {}",
            config_get(&mut conn, "pidfile")
                == Frame::Array(vec![
                    Frame::Bulk("pidfile".into()),
                    Frame::Bulk(pidfile.to_str().unwrap().to_string().into()),
                ])
        ),
    ];
    conn.send(&["SHUTDOWN", "NOSAVE"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(pid) {
        assert!(Instant::now() < deadline, "{name} did not exit");
        std::thread::sleep(Duration::from_millis(5));
    }
    daemon.0 = None;
    seen.push(format!("pid file left: {}", pidfile.exists()));
    seen
}

#[test]
fn daemonize_forks_writes_the_pid_file_and_removes_it_as_redis() {
    let [redis, redline] = servers();
    let expected = daemonized_run(redis.0, &redis.1);
    assert!(expected[0].ends_with("Some(0)"), "{expected:?}");
    assert_eq!(daemonized_run(redline.0, &redline.1), expected);
}

/// A foreground server with a `pidfile` writes it too, and removes it at SHUTDOWN.
#[test]
fn a_foreground_server_writes_its_pid_file_too() {
    let scratch = Scratch::new("foreground");
    let pidfile = scratch.0.join("fg.pid");
    let bin = redline_testkit::redline_server_bin().unwrap();
    let (child, conn, _) = start(
        &bin,
        &scratch.0,
        &["--pidfile", pidfile.to_str().unwrap()],
        |_| {},
    );
    let pid = child.id();
    let written = std::fs::read_to_string(&pidfile);
    let status = stop(child, conn);
    assert_eq!(written.unwrap(), format!("{pid}\n"));
    assert!(status.success());
    assert!(!pidfile.exists());
}

/// What systemd hears from one run under `supervised` (`mode`), with `daemonize yes`:
/// every datagram up to the exit, then INFO's `process_supervised` and CONFIG GET
/// supervised as the server answered them.
fn supervised_run(name: &str, bin: &Path, mode: &str, abstract_socket: bool) -> Vec<String> {
    let scratch = Scratch::new(&format!("{name}-{mode}"));
    let (socket, address) = if abstract_socket {
        use std::os::linux::net::SocketAddrExt;
        let label = format!("redline-notify-{name}-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(label.as_bytes()).unwrap();
        (UnixDatagram::bind_addr(&addr).unwrap(), format!("@{label}"))
    } else {
        let path = scratch.0.join("notify.sock");
        (
            UnixDatagram::bind(&path).unwrap(),
            path.to_str().unwrap().to_string(),
        )
    };
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let port = free_port();
    let mut child = Command::new(bin)
        .current_dir(&scratch.0)
        .env("NOTIFY_SOCKET", &address)
        .args(loopback_args(port))
        .args(["--supervised", mode, "--daemonize", "yes"])
        .stdout(Stdio::null())
        .spawn()
        .map(Running)
        .unwrap();
    let mut conn = wait_for_port(port);
    let mut heard = Vec::new();
    let mut buf = [0u8; 512];
    // The ready message comes once loading is over; wait for it before asking.
    while !heard.iter().any(|m: &String| m.contains("READY=1")) {
        let n = socket.recv(&mut buf).unwrap();
        heard.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    let info = conn.cmd(&["INFO", "server"]);
    let supervised = common::text(&info)
        .lines()
        .find(|l| l.starts_with("process_supervised:"))
        .unwrap_or("process_supervised missing")
        .to_string();
    let config = format!("{:?}", config_get(&mut conn, "supervised"));
    conn.send(&["SHUTDOWN", "NOSAVE"]);
    // Still our child: a supervised server stays in the foreground.
    let status = wait_exit(&mut child);
    while let Ok(n) = {
        socket
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        socket.recv(&mut buf)
    } {
        heard.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    heard.extend([supervised, config, format!("exit: {:?}", status.code())]);
    heard
}

#[test]
fn systemd_hears_the_same_states_as_from_redis() {
    let [redis, redline] = servers();
    for (mode, abstract_socket) in [("systemd", false), ("auto", true)] {
        let expected = supervised_run(redis.0, &redis.1, mode, abstract_socket);
        assert!(
            expected.iter().any(|m| m == "READY=1\n"),
            "{mode}: {expected:?}"
        );
        assert_eq!(
            supervised_run(redline.0, &redline.1, mode, abstract_socket),
            expected,
            "{mode}"
        );
    }
}

/// logrotate without `copytruncate` (Debian's rule for Redis) renames the log file: the
/// next line goes to a new file at the configured path, as Redis opens it per line.
#[test]
fn a_log_rotated_away_is_followed_by_a_new_file_as_redis() {
    for (name, bin) in servers() {
        let scratch = Scratch::new(&format!("{name}-rotate"));
        let (child, mut conn, _) = start(&bin, &scratch.0, &["--logfile", "server.log"], |_| {});
        let log = scratch.0.join("server.log");
        std::fs::rename(&log, scratch.0.join("server.log.1")).unwrap();
        assert_eq!(conn.cmd(&["SAVE"]), Frame::Simple("OK".into()), "{name}");
        stop(child, conn);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(text.contains("DB saved on disk"), "{name}: {text:?}");
        let old = std::fs::read_to_string(scratch.0.join("server.log.1")).unwrap();
        assert!(!old.contains("DB saved on disk"), "{name}: {old:?}");
    }
}

/// SIGHUP neither stops nor disturbs the server, as redis-server ignores it.
#[test]
fn a_hangup_is_ignored_as_by_redis() {
    for (name, bin) in servers() {
        let scratch = Scratch::new(&format!("{name}-hup"));
        let (mut child, mut conn, _) = start(&bin, &scratch.0, &[], |_| {});
        let sent = Command::new("kill")
            .args(["-HUP", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            child.try_wait().unwrap().is_none(),
            "{name} exited on SIGHUP"
        );
        assert_eq!(conn.cmd(&["PING"]), Frame::Simple("PONG".into()), "{name}");
        stop(child, conn);
    }
}

/// Installs, in the process about to exec, a seccomp filter that kills the process at
/// its first `setpriority`, as systemd's `SystemCallFilter=~@resources` does (Debian's
/// unit for redis-server has it).
#[cfg(target_arch = "x86_64")]
fn kill_on_setpriority(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const BPF_JEQ: u16 = 0x10;
    let ld = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    let jeq = (libc::BPF_JMP | libc::BPF_K) as u16 | BPF_JEQ;
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    let stmt = |code, k| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |k, jt, jf| libc::sock_filter {
        code: jeq,
        jt,
        jf,
        k,
    };
    // seccomp_data: nr at offset 0, arch at offset 4.
    let filter = [
        stmt(ld, 4),
        jump(AUDIT_ARCH_X86_64, 1, 0),
        stmt(ret, libc::SECCOMP_RET_ALLOW),
        stmt(ld, 0),
        jump(libc::SYS_setpriority as u32, 0, 1),
        stmt(ret, libc::SECCOMP_RET_KILL_PROCESS),
        stmt(ret, libc::SECCOMP_RET_ALLOW),
    ];
    // SAFETY: between fork and exec only prctl runs, on a filter that lives in this
    // (copied) stack frame until the call returns.
    unsafe {
        command.pre_exec(move || {
            let program = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                    &program as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Under a filter that kills on `setpriority` (systemd's `@resources`, in Debian's unit
/// for redis-server), BGSAVE completes and the server lives on, as redis-server does.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_background_save_under_debians_syscall_filter_lives_as_redis() {
    // The filter works: `nice` calls setpriority and dies of it.
    let mut nice = Command::new("nice");
    nice.args(["-n", "1", "true"]);
    kill_on_setpriority(&mut nice);
    let status = nice.status().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGSYS),
        "the filter did not stop nice: {status:?}"
    );
    for (name, bin) in servers() {
        let scratch = Scratch::new(&format!("{name}-seccomp"));
        let (mut child, mut conn, port) = start(&bin, &scratch.0, &[], kill_on_setpriority);
        conn.ok(&["SET", "k", "v"]);
        assert_eq!(
            conn.cmd(&["BGSAVE"]),
            Frame::Simple("Background saving started".into()),
            "{name}"
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while common::info_field(port, "rdb_bgsave_in_progress") != "0" {
            assert!(Instant::now() < deadline, "{name}: BGSAVE never ended");
            assert!(
                child.try_wait().unwrap().is_none(),
                "{name} died during BGSAVE"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(common::info_field(port, "rdb_last_bgsave_status"), "ok");
        assert!(child.try_wait().unwrap().is_none(), "{name} died");
        stop(child, conn);
    }
}

/// `-` first or last on the command line reads configuration from standard input, after
/// the file and before the options (the last one set wins), as redis-server does.
#[test]
fn configuration_from_standard_input_as_redis() {
    use std::io::Write;
    let run = |bin: &Path, scratch: &Path, with_file: bool| -> Vec<String> {
        let port = free_port();
        std::fs::write(
            scratch.join("base.conf"),
            "hz 11\nmaxmemory 2mb\nslowlog-max-len 7\n",
        )
        .unwrap();
        let port_text = port.to_string();
        let options = [
            "--port",
            &port_text,
            "--bind",
            "127.0.0.1",
            "--maxmemory",
            "3mb",
            "--save",
            "",
        ];
        let mut command = Command::new(bin);
        command.current_dir(scratch);
        if with_file {
            command.arg("base.conf").args(options).arg("-");
        } else {
            command.arg("-").args(options);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .map(Running)
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"hz 12\nmaxmemory 1mb\nlatency-monitor-threshold 5\n")
            .unwrap();
        drop(stdin);
        let mut conn = wait_for_port(port);
        let seen = [
            "hz",
            "maxmemory",
            "slowlog-max-len",
            "latency-monitor-threshold",
        ]
        .iter()
        .map(|name| format!("{:?}", config_get(&mut conn, name)))
        .collect();
        conn.send(&["SHUTDOWN", "NOSAVE"]);
        wait_exit(&mut child);
        seen
    };
    let [redis, redline] = servers();
    for with_file in [false, true] {
        let scratch = Scratch::new(&format!("stdin-{with_file}"));
        let expected = run(&redis.1, &scratch.0, with_file);
        assert_eq!(
            run(&redline.1, &scratch.0, with_file),
            expected,
            "with file: {with_file}"
        );
    }
}

/// Under `ulimit -n 64`, `maxclients 10000` is lowered to what fits (64 less Redis's 32
/// reserved descriptors): of 100 clients, the first 32 are served and the rest refused
/// at once, and CONFIG SET of a `maxclients` past the limit names the most that fits.
#[test]
fn a_low_open_files_limit_lowers_maxclients_as_redis() {
    use std::io::{Read, Write};
    let run = |bin: &Path| -> Vec<String> {
        let scratch = Scratch::new("ulimit");
        let port = free_port();
        let script = format!(
            "ulimit -n 64 && exec {} --port {port} --bind 127.0.0.1 --save '' --maxclients 10000",
            bin.display()
        );
        let mut child = Command::new("sh")
            .current_dir(&scratch.0)
            .args(["-c", &script])
            .stdout(Stdio::null())
            .spawn()
            .map(Running)
            .unwrap();
        let mut conn = wait_for_port(port);
        // The probes of the port gone: `conn` is the only client before the 100.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !common::text(&conn.cmd(&["INFO", "clients"])).contains("connected_clients:1\r\n") {
            assert!(Instant::now() < deadline, "the port's probes never left");
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut clients = Vec::new();
        for _ in 0..100 {
            let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            stream.write_all(b"PING\r\n").unwrap();
            clients.push(stream);
        }
        // Every client stays connected until all have their replies: one leaving early
        // would free a place for a later one the server has not admitted yet.
        let mut replies = std::collections::BTreeMap::new();
        for stream in &mut clients {
            let mut buf = [0u8; 64];
            let reply = match stream.read(&mut buf) {
                Ok(n) => String::from_utf8_lossy(&buf[..n]).into_owned(),
                Err(e) => format!("no reply: {:?}", e.kind()),
            };
            *replies.entry(reply).or_insert(0) += 1;
        }
        drop(clients);
        let seen = vec![
            format!("{replies:?}"),
            format!("{:?}", config_get(&mut conn, "maxclients")),
            format!("{:?}", conn.cmd(&["CONFIG", "SET", "maxclients", "40"])),
            format!("{:?}", conn.cmd(&["CONFIG", "SET", "maxclients", "20"])),
            format!("{:?}", config_get(&mut conn, "maxclients")),
        ];
        conn.send(&["SHUTDOWN", "NOSAVE"]);
        wait_exit(&mut child);
        seen
    };
    let [redis, redline] = servers();
    let expected = run(&redis.1);
    assert!(
        expected[0].contains("max number of clients reached"),
        "{expected:?}"
    );
    assert_eq!(run(&redline.1), expected);
}

/// `syslog-enabled yes` sends each log line to the system log as redis-server does:
/// `<priority>` of the facility and level, `ident[pid]: ` and the message alone. The
/// servers run in a user and mount namespace of their own (`unshare`), whose `/dev/log`
/// is this test's socket, so the machine's own system log, if any, is left alone.
#[test]
fn syslog_lines_as_redis() {
    let run = |name: &str, bin: &Path| -> Vec<String> {
        let scratch = Scratch::new(&format!("{name}-syslog"));
        let socket_path = scratch.0.join("log.sock");
        let socket = UnixDatagram::bind(&socket_path).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        // Read as the lines come: a datagram queue holds 10, and a sender waits past that.
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let listener = {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut heard = Vec::new();
                let mut buf = [0u8; 2048];
                loop {
                    match socket.recv(&mut buf) {
                        Ok(n) => heard.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
                        Err(_) if done.load(std::sync::atomic::Ordering::Acquire) => return heard,
                        Err(_) => {}
                    }
                }
            })
        };
        let dev = scratch.0.join("dev");
        std::fs::create_dir(&dev).unwrap();
        for file in ["null", "urandom", "log"] {
            std::fs::write(dev.join(file), "").unwrap();
        }
        let port = free_port();
        let script = format!(
            "mount --bind /dev/null {d}/null && mount --bind /dev/urandom {d}/urandom \
             && mount --bind {s} {d}/log && mount --rbind {d} /dev \
             && exec {bin} --port {port} --bind 127.0.0.1 --save '' \
             --syslog-enabled yes --syslog-ident rtest --syslog-facility local3",
            d = dev.display(),
            s = socket_path.display(),
            bin = bin.display(),
        );
        let child = Command::new("unshare")
            .current_dir(&scratch.0)
            .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
            .stdout(Stdio::null())
            .spawn()
            .map(Running)
            .unwrap();
        let mut conn = wait_for_port(port);
        assert_eq!(conn.cmd(&["SAVE"]), Frame::Simple("OK".into()), "{name}");
        let pid = child.id();
        stop(child, conn);
        done.store(true, std::sync::atomic::Ordering::Release);
        let heard = listener.join().unwrap();
        // `<PRI>Mmm dd hh:mm:ss ident[pid]: message`: the priority, ident and message,
        // for the lines both servers log.
        heard
            .iter()
            .filter(|line| {
                ["DB saved on disk", "User requested shutdown..."]
                    .iter()
                    .any(|m| line.ends_with(m))
            })
            .map(|line| {
                let priority = line.split('>').next().unwrap_or_default().to_string();
                let rest = line.split_once(": ").map_or("", |(_, m)| m).to_string();
                let ident = line.contains(&format!(" rtest[{pid}]: "));
                format!("{priority}> ident and pid: {ident}: {rest}")
            })
            .collect()
    };
    let [redis, redline] = servers();
    let expected = run(redis.0, &redis.1);
    assert_eq!(expected.len(), 2, "{expected:?}");
    assert_eq!(run(redline.0, &redline.1), expected);
}

/// `--version` and `-v` print one line in Redis's shape, whose `v=` is the Redis version
/// the server answers as: scripts that check the installed server read it on both.
#[test]
fn the_version_line_reads_as_redis() {
    for (name, bin) in servers() {
        for flag in ["--version", "-v"] {
            let out = Command::new(&bin).arg(flag).output().unwrap();
            assert!(out.status.success(), "{name} {flag}: {out:?}");
            let line = String::from_utf8(out.stdout).unwrap();
            let fields: Vec<&str> = line.trim_end().split(' ').collect();
            assert_eq!(fields[..2], ["Redis", "server"], "{name}: {line}");
            let version = fields[2].strip_prefix("v=").unwrap();
            assert!(version.starts_with("7.0."), "{name}: {line}");
            for (i, key) in ["sha=", "malloc=", "bits=64", "build="].iter().enumerate() {
                assert!(fields[3 + i].starts_with(key), "{name}: {line}");
            }
        }
    }
}
