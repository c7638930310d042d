//! Runs one test: `clients` workers (callers) issue commands (or pipelines of `-P`
//! commands), each through its share of the targets (one shared multiplexed client, or
//! one connection per caller in redis-benchmark mode), until
//! `-n` requests are done or `--duration` has passed, each keeping its own HDR histogram
//! (merged at the end, so workers never share a lock on the hot path).
//!
//! Errors never stop a run. A connection error marks the target *down* (the time is
//! noted and the worker pauses briefly instead of spinning); the next success marks it
//! *up* again. The run reports these outages so a restart or failover is visible.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use redline::{Error, Frame};

use super::target::Target;
use super::workload::{Keys, Test};

/// How a test is run.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Concurrent workers (`-c`).
    pub(crate) clients: usize,
    /// Total requests (`-n`), unless `duration` is set.
    pub(crate) requests: u64,
    /// Run for this long instead of a request count (`--duration`).
    pub(crate) duration: Option<Duration>,
    /// Commands per round trip (`-P`).
    pub(crate) pipeline: usize,
    /// The value written by SET and friends (`-d` bytes).
    pub(crate) data: Bytes,
    /// `-r`.
    pub(crate) keyspace: Option<u64>,
}

/// What happened during one test.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Requests completed (successful or not).
    pub(crate) requests: u64,
    /// Requests that failed: error replies, timeouts, lost connections.
    pub(crate) errors: u64,
    /// Wall time of the run.
    pub(crate) seconds: f64,
    /// Latency of successful round trips, in microseconds.
    pub(crate) latency: Histogram<u64>,
    /// Error messages by kind, with counts.
    pub(crate) error_kinds: BTreeMap<String, u64>,
    /// Periods without a working connection: (down at, up again at), seconds from start.
    pub(crate) outages: Vec<(f64, Option<f64>)>,
}

/// Counters the workers share with the progress display.
#[derive(Debug, Default)]
pub(crate) struct Live {
    /// Requests completed so far.
    pub(crate) done: AtomicU64,
    /// Requests failed so far.
    pub(crate) errors: AtomicU64,
}

struct Shared {
    plan: Plan,
    test: Test,
    /// Worker `i` sends through `targets[i % len]`.
    targets: Vec<Target>,
    live: Arc<Live>,
    issued: AtomicU64,
    start: Instant,
    deadline: Option<Instant>,
    down: AtomicBool,
    outages: Mutex<Vec<(f64, Option<f64>)>>,
    error_kinds: Mutex<BTreeMap<String, u64>>,
}

/// Latency histogram bounds: 1 µs to 1 hour, 3 significant digits.
#[allow(clippy::expect_used)] // constant bounds, valid by construction
pub(crate) fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// Runs `test` against `targets` as `plan` says (worker `i` uses `targets[i % len]`).
pub(crate) async fn run(test: &Test, targets: &[Target], plan: &Plan, live: Arc<Live>) -> Outcome {
    // Untimed setup (e.g. LRANGE's list); failures show up in the timed part anyway.
    if let Some(target) = targets.first() {
        for cmd in test.setup(&plan.data) {
            let _ = target.one(cmd).await;
        }
    }
    let start = Instant::now();
    let shared = Arc::new(Shared {
        plan: plan.clone(),
        test: test.clone(),
        targets: targets.to_vec(),
        live,
        issued: AtomicU64::new(0),
        start,
        deadline: plan.duration.map(|d| start + d),
        down: AtomicBool::new(false),
        outages: Mutex::new(Vec::new()),
        error_kinds: Mutex::new(BTreeMap::new()),
    });
    let workers: Vec<_> = (0..plan.clients.max(1))
        .map(|i| tokio::spawn(worker(shared.clone(), i)))
        .collect();
    let mut latency = new_histogram();
    // A worker stuck on a dead server is given the command timeout to come back after
    // the deadline, then abandoned: the run ends on time.
    let give_up = shared.deadline.map(|d| d + Duration::from_secs(3));
    for handle in workers {
        let abort = handle.abort_handle();
        let joined = match give_up {
            Some(limit) => tokio::time::timeout_at(limit.into(), handle).await.ok(),
            None => Some(handle.await),
        };
        match joined {
            Some(Ok(hist)) => {
                let _ = latency.add(&hist);
            }
            _ => abort.abort(),
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let outages = shared.outages.lock().map(|o| o.clone()).unwrap_or_default();
    let error_kinds = shared
        .error_kinds
        .lock()
        .map(|k| k.clone())
        .unwrap_or_default();
    Outcome {
        requests: shared.live.done.load(Ordering::Relaxed),
        errors: shared.live.errors.load(Ordering::Relaxed),
        seconds,
        latency,
        error_kinds,
        outages,
    }
}

/// One benchmark client: claims work, sends, records.
async fn worker(shared: Arc<Shared>, index: usize) -> Histogram<u64> {
    let Some(target) = shared.targets.get(index % shared.targets.len().max(1)) else {
        return new_histogram();
    };
    let target = target.clone();
    let mut hist = new_histogram();
    let mut keys = Keys::new(shared.plan.keyspace);
    let pipeline = shared.plan.pipeline.max(1) as u64;
    loop {
        let batch = match shared.deadline {
            Some(deadline) => {
                if Instant::now() >= deadline {
                    break;
                }
                pipeline
            }
            None => {
                let first = shared.issued.fetch_add(pipeline, Ordering::Relaxed);
                if first >= shared.plan.requests {
                    break;
                }
                pipeline.min(shared.plan.requests - first)
            }
        };
        let sent = Instant::now();
        let result = if batch == 1 {
            let cmd = shared.test.command(&mut keys, &shared.plan.data);
            target.one(cmd).await.map(|_| 0)
        } else {
            let cmds = (0..batch)
                .map(|_| shared.test.command(&mut keys, &shared.plan.data))
                .collect();
            target.many(cmds).await.map(|frames| {
                let failed: Vec<&Frame> = frames
                    .iter()
                    .filter(|f| matches!(f, Frame::Error(_) | Frame::BulkError(_)))
                    .collect();
                for frame in &failed {
                    if let Frame::Error(e) | Frame::BulkError(e) = frame {
                        shared.note_error(&String::from_utf8_lossy(e));
                    }
                }
                failed.len() as u64
            })
        };
        let micros = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
        shared.live.done.fetch_add(batch, Ordering::Relaxed);
        match result {
            Ok(failed) => {
                hist.saturating_record_n(micros.max(1), batch - failed);
                if failed > 0 {
                    shared.live.errors.fetch_add(failed, Ordering::Relaxed);
                }
                if shared.down.load(Ordering::Relaxed) {
                    shared.mark_up();
                }
            }
            Err(e) => {
                shared.live.errors.fetch_add(batch, Ordering::Relaxed);
                shared.note_error(&kind_of(&e));
                if e.is_connection_error() || e.is_timeout() {
                    shared.mark_down();
                    // Do not spin on a dead server: the client fails fast while it
                    // reconnects with backoff.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
    hist
}

/// A short, stable description of an error for the error table.
fn kind_of(e: &Error) -> String {
    match e {
        Error::Server { kind, .. } | Error::Auth { kind, .. } => format!("{kind} reply"),
        Error::Io { op, addr, source } => {
            let text = source.to_string();
            let reason = text.split(" (os error").next().unwrap_or(&text);
            format!("{op} {addr}: {reason}")
        }
        Error::ConnectionClosed { .. } => "connection closed".to_owned(),
        Error::ConnectTimeout { .. } => "connect timeout".to_owned(),
        Error::Timeout(_) => "command timeout".to_owned(),
        other => other.to_string(),
    }
}

impl Shared {
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn note_error(&self, kind: &str) {
        let kind = kind.split_whitespace().next().map_or(kind, |w| {
            if w.chars().all(|c| c.is_ascii_uppercase()) {
                w
            } else {
                kind
            }
        });
        if let Ok(mut kinds) = self.error_kinds.lock() {
            *kinds.entry(kind.to_owned()).or_insert(0) += 1;
        }
    }

    fn mark_down(&self) {
        if !self.down.swap(true, Ordering::AcqRel) {
            if let Ok(mut outages) = self.outages.lock() {
                outages.push((self.now(), None));
            }
        }
    }

    fn mark_up(&self) {
        if self.down.swap(false, Ordering::AcqRel) {
            let now = self.now();
            if let Ok(mut outages) = self.outages.lock() {
                if let Some(last) = outages.last_mut() {
                    last.1 = Some(now);
                }
            }
        }
    }
}
