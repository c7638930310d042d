//! The measuring loop, identical for every client.
//!
//! A backend only knows how to connect, GET and SET; everything that decides the numbers
//! (key choice, operation mix, concurrency, warmup, timing, histograms) lives here and is
//! monomorphised per backend, so no client pays for a boxed future the others skip.
//!
//! Each caller is one tokio task looping over operations on its own clone of the client
//! handle (the idiomatic way to share every one of these clients). Latency is recorded
//! into one histogram per worker thread (uncontended: a task runs on one thread at a
//! time), merged at the end. One histogram per caller was measured first: at 256 callers
//! their counters no longer fit in cache and recording took ~10% of the CPU the clients
//! compete for.

use std::cell::RefCell;
use std::error::Error as StdError;
use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;

/// Any error a backend reports; only counted, printed once.
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// What one client must provide to be measured.
///
/// Methods take `&mut self` because some clients (redis-rs) need it; every caller owns
/// its own clone, so nothing is locked.
pub trait Backend: Clone + Send + Sync + Sized + 'static {
    /// Connects to `url` (a standalone server, or one seed node of a cluster).
    fn connect(url: &str) -> impl Future<Output = Result<Self, BoxError>> + Send;

    /// `GET key`; returns the value's length (0 when missing) so nothing is optimised away.
    fn get(&mut self, key: &Bytes) -> impl Future<Output = Result<usize, BoxError>> + Send;

    /// `SET key value`.
    fn set(
        &mut self,
        key: &Bytes,
        value: &Bytes,
    ) -> impl Future<Output = Result<(), BoxError>> + Send;
}

/// The operation each caller repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Op {
    /// `GET` of a preloaded key.
    Get,
    /// `SET` of a key with `value_size` bytes.
    Set,
    /// 80% GET, 20% SET (a read-heavy cache).
    Mixed,
    /// 95% GET, 5% SET, keys drawn from a Zipf distribution (s = 0.99): a read-mostly
    /// workload with hot keys, where client-side caching pays.
    Zipf,
}

impl Op {
    /// The name printed in the JSON line.
    pub fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Set => "set",
            Op::Mixed => "mixed",
            Op::Zipf => "zipf",
        }
    }
}

/// One measured run's parameters.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Backend name as registered.
    pub client: String,
    /// Server URL or cluster seed URL.
    pub url: String,
    /// Whether `url` is a cluster seed (backends are picked accordingly).
    pub cluster: bool,
    /// What to repeat.
    pub op: Op,
    /// Concurrent caller tasks.
    pub callers: usize,
    /// Measured time.
    pub duration: Duration,
    /// Time run before measuring (connections warm, buffers grown).
    pub warmup: Duration,
    /// Bytes per value.
    pub value_size: usize,
    /// Distinct keys used (all preloaded before the run).
    pub keys: usize,
}

/// What one run measured.
#[derive(Debug)]
pub struct Report {
    /// Completed operations in the measured window.
    pub ops: u64,
    /// Failed operations in the measured window.
    pub errors: u64,
    /// Length of the measured window.
    pub seconds: f64,
    /// Latency histogram in nanoseconds (successful operations only).
    pub latency_ns: Histogram<u64>,
}

impl Report {
    /// The one JSON line the harness prints for a run.
    pub fn to_json(&self, cfg: &RunConfig) -> serde_json::Value {
        let q = |q: f64| self.latency_ns.value_at_quantile(q) as f64 / 1000.0;
        let ops_per_sec = if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        };
        serde_json::json!({
            "client": cfg.client,
            "op": cfg.op.name(),
            "callers": cfg.callers,
            "cluster": cfg.cluster,
            "value_size": cfg.value_size,
            "ops": self.ops,
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
            "ops_per_sec": round(ops_per_sec, 1),
            "p50_us": round(q(0.5), 1),
            "p90_us": round(q(0.9), 1),
            "p99_us": round(q(0.99), 1),
            "p999_us": round(q(0.999), 1),
        })
    }
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// Key `i` as every backend sends it: no hash tags, so a cluster spreads them over slots.
fn key(i: usize) -> Bytes {
    Bytes::from(format!("bench:key:{i:06}"))
}

/// Connects `B`, preloads the keys, runs the callers and returns what they measured.
pub async fn run<B: Backend>(cfg: &RunConfig) -> Result<Report, BoxError> {
    let backend = B::connect(&cfg.url).await?;
    let keys: Arc<[Bytes]> = (0..cfg.keys.max(1)).map(key).collect();
    let value = Bytes::from(vec![b'x'; cfg.value_size]);
    preload(&backend, &keys, &value).await?;

    // 1 ns .. 60 s at 3 significant digits; each worker thread records into its own copy.
    let histogram = Histogram::new_with_bounds(1, 60_000_000_000, 3)?;
    let _ = TEMPLATE.set(histogram.clone());
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let zipf = Zipf::new(keys.len(), 0.99);
    let mut tasks = Vec::with_capacity(cfg.callers);
    for id in 0..cfg.callers {
        tasks.push(tokio::spawn(caller(
            backend.clone(),
            keys.clone(),
            value.clone(),
            cfg.op,
            phase.clone(),
            id as u64,
            zipf.clone(),
        )));
    }
    tokio::time::sleep(cfg.warmup).await;
    phase.store(MEASURE, Ordering::Relaxed);
    let start = Instant::now();
    tokio::time::sleep(cfg.duration).await;
    phase.store(STOP, Ordering::Relaxed);
    let seconds = start.elapsed().as_secs_f64();

    for task in tasks {
        task.await?;
    }
    let mut total = Tally::new(histogram);
    let mut first_error = None;
    let tallies = TALLIES.lock().map_err(|_| "tally lock poisoned")?;
    for tally in tallies.iter() {
        let tally = tally.lock().map_err(|_| "tally lock poisoned")?;
        total.ops += tally.ops;
        total.errors += tally.errors;
        total.latency_ns.add(&tally.latency_ns)?;
        if first_error.is_none() {
            first_error.clone_from(&tally.first_error);
        }
    }
    if let Some(e) = first_error {
        eprintln!("{}: first error: {e}", cfg.client);
    }
    Ok(Report {
        ops: total.ops,
        errors: total.errors,
        seconds,
        latency_ns: total.latency_ns,
    })
}

/// Writes every key once, 64 at a time, so GETs hit values of the configured size.
async fn preload<B: Backend>(
    backend: &B,
    keys: &Arc<[Bytes]>,
    value: &Bytes,
) -> Result<(), BoxError> {
    const WRITERS: usize = 64;
    let mut tasks = Vec::with_capacity(WRITERS);
    for w in 0..WRITERS {
        let mut b = backend.clone();
        let keys = keys.clone();
        let value = value.clone();
        tasks.push(tokio::spawn(async move {
            for k in keys.iter().skip(w).step_by(WRITERS) {
                b.set(k, &value).await?;
            }
            Ok::<(), BoxError>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

struct Tally {
    ops: u64,
    errors: u64,
    latency_ns: Histogram<u64>,
    first_error: Option<String>,
}

/// The empty histogram every thread's tally starts from.
static TEMPLATE: OnceLock<Histogram<u64>> = OnceLock::new();
/// Every thread's tally, for the merge at the end.
static TALLIES: Mutex<Vec<Arc<Mutex<Tally>>>> = Mutex::new(Vec::new());

thread_local! {
    static LOCAL: RefCell<Option<Arc<Mutex<Tally>>>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's tally (created and registered on first use).
fn with_tally(f: impl FnOnce(&mut Tally)) {
    LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        let tally = local.get_or_insert_with(|| {
            let Some(template) = TEMPLATE.get() else {
                unreachable_template()
            };
            let tally = Arc::new(Mutex::new(Tally::new(template.clone())));
            if let Ok(mut all) = TALLIES.lock() {
                all.push(tally.clone());
            }
            tally
        });
        if let Ok(mut tally) = tally.lock() {
            f(&mut tally);
        };
    });
}

#[cold]
fn unreachable_template() -> ! {
    // `run` sets the template before spawning any caller.
    std::process::abort()
}

impl Tally {
    fn new(latency_ns: Histogram<u64>) -> Tally {
        Tally {
            ops: 0,
            errors: 0,
            latency_ns,
            first_error: None,
        }
    }
}

async fn caller<B: Backend>(
    mut backend: B,
    keys: Arc<[Bytes]>,
    value: Bytes,
    op: Op,
    phase: Arc<AtomicU8>,
    id: u64,
    zipf: Zipf,
) {
    let mut rng = fastrand::Rng::with_seed(0x5eed ^ id);
    loop {
        let before = phase.load(Ordering::Relaxed);
        if before == STOP {
            return;
        }
        let index = match op {
            Op::Zipf => zipf.sample(&mut rng),
            _ => rng.usize(..keys.len()),
        };
        let key = &keys[index.min(keys.len() - 1)];
        let is_set = match op {
            Op::Get => false,
            Op::Set => true,
            Op::Mixed => rng.u8(..10) < 2,
            Op::Zipf => rng.u8(..100) < 5,
        };
        let t0 = Instant::now();
        let result = if is_set {
            backend.set(key, &value).await
        } else {
            backend.get(key).await.map(|n| {
                std::hint::black_box(n);
            })
        };
        let elapsed = t0.elapsed();
        // Only operations that started and ended inside the measured window count.
        if before != MEASURE || phase.load(Ordering::Relaxed) != MEASURE {
            continue;
        }
        with_tally(|tally| match result {
            Ok(()) => {
                tally.ops += 1;
                tally
                    .latency_ns
                    .saturating_record(elapsed.as_nanos().min(u64::MAX as u128) as u64);
            }
            Err(e) => {
                tally.errors += 1;
                if tally.first_error.is_none() {
                    tally.first_error = Some(e.to_string());
                }
            }
        });
    }
}

/// Zipf-distributed key indexes: rank `i` (0-based) has weight `1 / (i + 1)^s`. Sampled by
/// binary search in the cumulative weights (computed once per run, shared by callers).
#[derive(Clone)]
struct Zipf {
    cdf: Arc<[f64]>,
}

impl Zipf {
    fn new(n: usize, s: f64) -> Zipf {
        let mut total = 0.0;
        let mut cdf: Vec<f64> = (0..n.max(1))
            .map(|i| {
                total += 1.0 / ((i + 1) as f64).powf(s);
                total
            })
            .collect();
        for c in &mut cdf {
            *c /= total;
        }
        Zipf { cdf: cdf.into() }
    }

    fn sample(&self, rng: &mut fastrand::Rng) -> usize {
        let u = rng.f64();
        self.cdf.partition_point(|&c| c < u)
    }
}
