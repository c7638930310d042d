//! The multiplexer under concurrency and failure, against a real redis-server: replies
//! reach their own callers, a dead server fails every pending call with a connection
//! error and the same client recovers after a restart, timeouts keep the pipe in step,
//! RESP3 pushes never consume a reply, and a full queue is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use redline::{Client, Cmd, Config, Error, FullQueue, Protocol, PushHandler};
use redline_testkit::RedisServer;

fn debug_server() -> RedisServer {
    RedisServer::builder()
        .arg("--enable-debug-command", "yes")
        .start()
        .unwrap()
}

/// Stalls the server for `secs` from a separate connection (returns at once).
fn stall(server: &RedisServer, secs: &str) -> std::thread::JoinHandle<()> {
    let mut cli = server.cli();
    let secs = secs.to_owned();
    std::thread::spawn(move || {
        let _ = cli.args(["DEBUG", "SLEEP", &secs]).output();
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_tasks_share_one_connection() {
    let server = RedisServer::start().unwrap();
    let mut cfg = Config::from_url(&server.url()).unwrap();
    cfg.command_timeout = Some(Duration::from_secs(60));
    cfg.client_name = Some("mux-test".into());
    let client = Client::from_config(cfg).await.unwrap();
    const TASKS: usize = 10_000;
    const COMMANDS: usize = 100;
    let started = Instant::now();
    let mut handles = Vec::with_capacity(TASKS);
    for task in 0..TASKS {
        let client = client.clone();
        handles.push(tokio::spawn(async move {
            let key = format!("task:{task}");
            // 50 SET/GET pairs; every value names its task and sequence number.
            for seq in 0..COMMANDS / 2 {
                let value = format!("{task}:{seq}");
                client.set(&key, &value).await.unwrap();
                let got = client.get(&key).await.unwrap();
                assert_eq!(got, Some(Bytes::from(value)), "task {task} seq {seq}");
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let elapsed = started.elapsed();
    eprintln!(
        "{} commands from {TASKS} tasks in {elapsed:?} ({:.0} ops/s, debug build)",
        TASKS * COMMANDS,
        (TASKS * COMMANDS) as f64 / elapsed.as_secs_f64()
    );
    // One connection carried all of it.
    let clients = server.cmd(&["CLIENT", "LIST"]).unwrap().text().unwrap();
    let ours = clients
        .lines()
        .filter(|l| l.contains("name=mux-test"))
        .count();
    assert_eq!(ours, 1, "{clients}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_server_fails_every_pending_call_and_client_recovers() {
    let mut server = debug_server();
    let mut cfg = Config::from_url(&server.url()).unwrap();
    // Far above any expected delay: a call that hung would end as Timeout, not as a
    // connection error, and fail the assertions below.
    cfg.command_timeout = Some(Duration::from_secs(60));
    let client = Client::from_config(cfg).await.unwrap();
    client.set("k", "before").await.unwrap();

    // Stall the server so every call below is surely pending when it dies.
    let sleeper = stall(&server, "30");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut pending = Vec::new();
    for i in 0..1000 {
        let client = client.clone();
        pending.push(tokio::spawn(async move {
            let result = if i % 2 == 0 {
                client.get("k").await.map(drop)
            } else {
                client.incr("n").await.map(drop)
            };
            (result, Instant::now())
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed_at = Instant::now();
    server.kill();
    let mut slowest = Duration::ZERO;
    for p in pending {
        let (result, at) = p.await.unwrap();
        let err = result.expect_err("the server died before replying");
        assert!(err.is_connection_error(), "not a connection error: {err:?}");
        slowest = slowest.max(at.saturating_duration_since(killed_at));
    }
    eprintln!("slowest pending call failed {slowest:?} after the kill");
    // The acceptance bound: a dead connection fails its callers at once (EOF or reset
    // from the kernel), not after a timeout; a second is far above the few milliseconds
    // that takes, so this only trips on a real hang.
    assert!(
        slowest < Duration::from_secs(1),
        "pending calls took {slowest:?} to fail after the kill"
    );
    let _ = sleeper.join();

    // While the server is down, calls fail fast with connection errors (no hang).
    let err = client.get("k").await.unwrap_err();
    assert!(err.is_connection_error(), "{err:?}");

    // Same client, after restart: new calls succeed (the data is gone: no persistence).
    server.restart().unwrap();
    let mut last = None;
    for _ in 0..50 {
        match client.set("k", "after").await {
            Ok(()) => {
                last = None;
                break;
            }
            // Connection errors only while backoff from attempts made during the
            // downtime runs out.
            Err(e) if e.is_connection_error() => {
                last = Some(e);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(last.is_none(), "{last:?}");
    assert_eq!(
        client.get("k").await.unwrap().as_deref(),
        Some(&b"after"[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loss_while_idle_reconnects_on_next_command() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    client.set("k", "v").await.unwrap();
    client.cmd(["CLIENT", "SETNAME", "victim"]).await.unwrap();
    // Kill our connection from the server side.
    server.cmd(&["CLIENT", "KILL", "TYPE", "normal"]).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(client.get("k").await.unwrap().as_deref(), Some(&b"v"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_replies_are_consumed_in_order() {
    let server = debug_server();
    let mut cfg = Config::from_url(&server.url()).unwrap();
    cfg.command_timeout = Some(Duration::from_millis(300));
    let client = Client::from_config(cfg).await.unwrap();
    for i in 0..10 {
        client.set(format!("k{i}"), i).await.unwrap();
    }
    let sleeper = stall(&server, "1");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut waiting = Vec::new();
    for i in 0..10 {
        let client = client.clone();
        waiting.push(tokio::spawn(
            async move { client.get(format!("k{i}")).await },
        ));
    }
    for w in waiting {
        let err = w.await.unwrap().unwrap_err();
        assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    }
    sleeper.join().unwrap();
    // The late replies were discarded in order: every new call gets its own value.
    for round in 0..3 {
        for i in 0..10 {
            let got: i64 = client
                .query(Cmd::new("GET").arg(format!("k{i}")))
                .await
                .unwrap();
            assert_eq!(got, i, "round {round}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_queue_errors_or_waits_as_configured() {
    let server = debug_server();
    let value = Bytes::from(vec![b'x'; 1 << 20]);
    for on_full in [FullQueue::Error, FullQueue::Wait] {
        let mut cfg = Config::from_url(&server.url()).unwrap();
        cfg.queue_bound = 4;
        cfg.on_full = on_full;
        cfg.command_timeout = Some(Duration::from_secs(60));
        let client = Client::from_config(cfg).await.unwrap();
        let sleeper = stall(&server, "2");
        tokio::time::sleep(Duration::from_millis(100)).await;
        // 64 MiB of SETs against a stalled server: socket buffers and the output buffer
        // fill up, then the 4-slot queue.
        let mut calls = Vec::new();
        for i in 0..64 {
            let client = client.clone();
            let value = value.clone();
            calls.push(tokio::spawn(async move {
                client.set(format!("big{i}"), &value).await
            }));
        }
        let mut backpressure = 0;
        let mut ok = 0;
        for c in calls {
            match c.await.unwrap() {
                Ok(()) => ok += 1,
                Err(Error::Backpressure { bound: 4 }) => backpressure += 1,
                Err(e) => panic!("{e:?}"),
            }
        }
        sleeper.join().unwrap();
        match on_full {
            FullQueue::Error => assert!(backpressure > 0, "ok={ok}"),
            FullQueue::Wait => assert_eq!(ok, 64),
        }
        assert_eq!(client.ping().await.unwrap(), "PONG");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracking_pushes_do_not_desynchronise_replies() {
    let server = RedisServer::start().unwrap();
    tracking_pushes_interleave_with_replies(&server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracking_pushes_do_not_desynchronise_replies_on_redline_server() {
    let server = redline_testkit::RedlineServer::start().unwrap();
    tracking_pushes_interleave_with_replies(&server.url()).await;
}

async fn tracking_pushes_interleave_with_replies(url: &str) {
    let pushes = Arc::new(AtomicUsize::new(0));
    let mut cfg = Config::from_url(url).unwrap();
    cfg.protocol = Protocol::Resp3;
    let counter = pushes.clone();
    cfg.push_handler = Some(PushHandler::new(move |frame| {
        if let redline::Frame::Push(items) = &frame {
            if matches!(items.first(), Some(redline::Frame::Bulk(k)) if &k[..] == b"invalidate") {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }
    }));
    let client = Client::from_config(cfg).await.unwrap();
    client.cmd(["CLIENT", "TRACKING", "on"]).await.unwrap();

    let mut tasks = Vec::new();
    for t in 0..8 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let key = format!("tracked:{t}");
            for i in 0..500 {
                // GET makes the key tracked; the SET that follows triggers an
                // invalidation push on this same connection, between replies.
                client.set(&key, i).await.unwrap();
                let got: i64 = client.query(Cmd::new("GET").arg(&key)).await.unwrap();
                assert_eq!(got, i);
                assert_eq!(
                    client.echo(format!("{t}:{i}")).await.unwrap(),
                    Bytes::from(format!("{t}:{i}"))
                );
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let seen = pushes.load(Ordering::Relaxed);
    assert!(seen > 0, "no invalidation pushes were received");
    eprintln!("{seen} invalidation pushes interleaved with replies");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_server_times_out_sent_and_queued_commands() {
    let server = debug_server();
    let mut cfg = Config::from_url(&server.url()).unwrap();
    cfg.command_timeout = Some(Duration::from_millis(500));
    cfg.queue_bound = 8;
    let client = Client::from_config(cfg).await.unwrap();
    let sleeper = stall(&server, "20");
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Enough bytes to fill the socket and the output buffer, so later commands are still
    // in the queue (or waiting for room in it) when their deadline passes.
    let value = Bytes::from(vec![b'x'; 1 << 20]);
    let started = Instant::now();
    let mut calls = Vec::new();
    for i in 0..48 {
        let client = client.clone();
        let value = value.clone();
        calls.push(tokio::spawn(async move {
            if i % 2 == 0 {
                client.set(format!("big{i}"), &value).await
            } else {
                client.get("k").await.map(drop)
            }
        }));
    }
    for c in calls {
        // A generous guard against a hang; the expected time is the 500 ms timeout.
        let result = tokio::time::timeout(Duration::from_secs(15), c)
            .await
            .expect("a call outlived its deadline by far")
            .unwrap();
        assert!(matches!(result, Err(Error::Timeout(_))), "{result:?}");
    }
    eprintln!(
        "48 calls behind a stalled server all timed out after {:?}",
        started.elapsed()
    );
    drop(sleeper);
}

/// With `busy_polls = 0` the connection task parks as soon as it has nothing to do:
/// replies still reach every caller (the spin is only an optimisation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_busy_polls_every_reply_arrives() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&format!("{}?busy_polls=0", server.url()))
        .await
        .unwrap();
    each_caller_reads_its_own_writes(&client, 200, 50).await;
}

/// With few commands in flight the spin reads the socket itself, past tokio's readiness
/// flag. Replies much larger than one read arrive in pieces, some read by the spin and
/// some by tokio: each caller still gets its own value, whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_larger_than_a_read_arrive_whole_through_the_spin() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    let mut tasks = Vec::new();
    for t in 0..4u8 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..20u8 {
                // 300 KB, several times the 64 KB read chunk, its bytes naming the caller
                // and round so a reply spliced from two would not compare equal.
                let value: Vec<u8> = (0..300_000u32)
                    .map(|n| (n as u8) ^ t.wrapping_mul(31) ^ i)
                    .collect();
                let key = format!("large:{t}");
                client.set(&key[..], value.clone()).await.unwrap();
                let got = client.get(&key[..]).await.unwrap();
                assert!(got.as_deref() == Some(&value[..]), "caller {t} round {i}");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// On a single-threaded runtime the connection task hands replies out in waves and
/// writes between them (see the driver's `wave_size`): every caller still gets its own
/// replies, in order.
#[tokio::test(flavor = "current_thread")]
async fn replies_handed_out_in_waves_reach_their_callers() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    each_caller_reads_its_own_writes(&client, 256, 40).await;
}

/// With up to 64 commands in flight the connection task reads the socket itself while it
/// waits; a read that brings a wave's worth of replies must still let those callers run
/// before the next wave, and every caller gets its own replies.
#[tokio::test(flavor = "current_thread")]
async fn waves_after_direct_reads_reach_their_callers() {
    let server = RedisServer::start().unwrap();
    let client = Client::connect(&server.url()).await.unwrap();
    each_caller_reads_its_own_writes(&client, 16, 200).await;
    each_caller_reads_its_own_writes(&client, 9, 200).await;
}

/// `callers` tasks each SET then GET a value naming the task and round, `rounds` times,
/// over the client's one connection, and check that every GET returns their own value.
async fn each_caller_reads_its_own_writes(client: &Client, callers: usize, rounds: usize) {
    let mut tasks = Vec::new();
    for t in 0..callers {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..rounds {
                let key = format!("own:{t}:{i}");
                client.set(&key[..], format!("{t}/{i}")).await.unwrap();
                let got = client.get(&key[..]).await.unwrap();
                assert_eq!(got.as_deref(), Some(format!("{t}/{i}").as_bytes()));
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}
