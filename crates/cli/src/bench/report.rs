//! Printing results: redis-benchmark's per-test block (or its `-q` line), a summary
//! table at the end, or one JSON object per test with `--json`.

use std::fmt::Write as _;

use serde_json::json;

use super::runner::Outcome;
use super::workload::Test;

/// redis-benchmark's `--csv` header.
pub(crate) const CSV_HEADER: &str = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"";

/// One finished test with the settings it ran with.
pub(crate) struct Row {
    /// The test.
    pub(crate) test: Test,
    /// `-c`: callers, each with one request (or pipeline) in flight.
    pub(crate) clients: usize,
    /// How the callers reach the server.
    pub(crate) mode: super::Mode,
    /// Connections the callers share (per node with `--cluster`).
    pub(crate) connections: usize,
    /// `-P`.
    pub(crate) pipeline: usize,
    /// `-d`.
    pub(crate) data_size: usize,
    /// Results.
    pub(crate) outcome: Outcome,
}

impl Row {
    /// Successful requests per second.
    pub(crate) fn ops_per_sec(&self) -> f64 {
        let ok = self.outcome.requests.saturating_sub(self.outcome.errors);
        if self.outcome.seconds > 0.0 {
            ok as f64 / self.outcome.seconds
        } else {
            0.0
        }
    }

    /// Latency at quantile `q`, in milliseconds.
    fn ms(&self, q: f64) -> f64 {
        if self.outcome.latency.is_empty() {
            return 0.0;
        }
        self.outcome.latency.value_at_quantile(q) as f64 / 1000.0
    }

    fn max_ms(&self) -> f64 {
        self.outcome.latency.max() as f64 / 1000.0
    }

    /// The `--json` object.
    pub(crate) fn json(&self) -> serde_json::Value {
        let outages: Vec<_> = self
            .outcome
            .outages
            .iter()
            .map(|(down, up)| json!({ "down_at_s": down, "up_at_s": up }))
            .collect();
        json!({
            "test": self.test.id,
            "requests": self.outcome.requests,
            "errors": self.outcome.errors,
            "seconds": self.outcome.seconds,
            "ops_per_sec": self.ops_per_sec(),
            "clients": self.clients,
            "callers": self.clients,
            "connections": self.connections,
            "mode": self.mode.name(),
            "pipeline": self.pipeline,
            "data_size": self.data_size,
            "latency_ms": {
                "p50": self.ms(0.5),
                "p90": self.ms(0.9),
                "p99": self.ms(0.99),
                "p999": self.ms(0.999),
                "max": self.max_ms(),
            },
            "error_kinds": self.outcome.error_kinds,
            "outages": outages,
        })
    }

    /// redis-benchmark's `--csv` line (after [`CSV_HEADER`]).
    pub(crate) fn csv_line(&self) -> String {
        let o = &self.outcome;
        let (avg, min) = if o.latency.is_empty() {
            (0.0, 0.0)
        } else {
            (o.latency.mean() / 1000.0, o.latency.min() as f64 / 1000.0)
        };
        format!(
            "\"{}\",\"{:.2}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"",
            self.title().replace('"', "\"\""),
            self.ops_per_sec(),
            avg,
            min,
            self.ms(0.5),
            self.ms(0.95),
            self.ms(0.99),
            self.max_ms()
        )
    }

    /// redis-benchmark's `-q` line.
    pub(crate) fn quiet_line(&self) -> String {
        format!(
            "{}: {:.2} requests per second, p50={:.3} msec",
            self.title(),
            self.ops_per_sec(),
            self.ms(0.5)
        )
    }

    fn title(&self) -> String {
        let mut title = self.test.title.clone();
        if self.pipeline > 1 {
            title = format!("{title} (P={})", self.pipeline);
        }
        if self.mode == super::Mode::RedisBenchmark {
            title.push_str(" [redis-benchmark mode]");
        }
        title
    }

    /// redis-benchmark's block for one test, plus errors and outages when there were any.
    pub(crate) fn block(&self) -> String {
        let mut s = String::new();
        let o = &self.outcome;
        let _ = writeln!(s, "====== {} ======", self.title());
        let _ = writeln!(
            s,
            "  {} requests completed in {:.2} seconds",
            o.requests, o.seconds
        );
        let _ = writeln!(s, "  {} parallel callers", self.clients);
        let _ = writeln!(s, "  {} bytes payload", self.data_size);
        let _ = writeln!(s, "  keep alive: 1");
        let _ = writeln!(
            s,
            "  connections: {} ({})",
            self.connections,
            self.mode.connections_note()
        );
        if self.pipeline > 1 {
            let _ = writeln!(s, "  pipeline: {}", self.pipeline);
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "Summary:");
        let _ = writeln!(
            s,
            "  throughput summary: {:.2} requests per second",
            self.ops_per_sec()
        );
        let _ = writeln!(s, "  latency summary (msec):");
        let _ = writeln!(
            s,
            "{:>13} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "avg", "p50", "p90", "p99", "p99.9", "max"
        );
        let avg = if o.latency.is_empty() {
            0.0
        } else {
            o.latency.mean() / 1000.0
        };
        let _ = writeln!(
            s,
            "{:>13.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            avg,
            self.ms(0.5),
            self.ms(0.9),
            self.ms(0.99),
            self.ms(0.999),
            self.max_ms()
        );
        s.push_str(&self.problems());
        s
    }

    /// Errors by kind and outages, or nothing.
    pub(crate) fn problems(&self) -> String {
        let o = &self.outcome;
        let mut s = String::new();
        if o.errors > 0 {
            let _ = writeln!(s, "  errors: {}", o.errors);
            for (kind, n) in &o.error_kinds {
                let _ = writeln!(s, "    {n:>10}  {kind}");
            }
        }
        for (down, up) in &o.outages {
            match up {
                Some(up) => {
                    let _ = writeln!(
                        s,
                        "  server unreachable from {down:.2}s to {up:.2}s ({:.2}s), then recovered",
                        up - down
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "  server unreachable from {down:.2}s until the end of the run"
                    );
                }
            }
        }
        s
    }
}

/// The summary table printed after the last test.
pub(crate) fn table(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<28} {:<15} {:>3} {:>7} {:>5} {:>10} {:>8} {:>8} {:>12} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "test",
        "mode",
        "P",
        "callers",
        "conns",
        "requests",
        "errors",
        "seconds",
        "ops/sec",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max"
    );
    for row in rows {
        let mut name = row.test.id.clone();
        if name.len() > 28 {
            name.truncate(25);
            name.push_str("...");
        }
        let _ = writeln!(
            s,
            "{:<28} {:<15} {:>3} {:>7} {:>5} {:>10} {:>8} {:>8.2} {:>12.0} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
            name,
            row.mode.name(),
            row.pipeline,
            row.clients,
            row.connections,
            row.outcome.requests,
            row.outcome.errors,
            row.outcome.seconds,
            row.ops_per_sec(),
            row.ms(0.5),
            row.ms(0.9),
            row.ms(0.99),
            row.ms(0.999),
            row.max_ms()
        );
    }
    let _ = writeln!(s, "(latencies in ms, per round trip of P commands)");
    s
}
