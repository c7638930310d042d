//! Compare mode: every run in its own child process (no client's leftover tasks or
//! allocator state can slow the next one), clients alternated round by round so drift on
//! a noisy machine hits them all alike, medians reported with ratios to the first client.

use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::harness::BoxError;
use crate::Args;

/// Runs every (op, callers) combination for `args.rounds` rounds of every client.
pub fn run(args: &Args) -> Result<(), BoxError> {
    let exe = std::env::current_exe()?;
    let mut table = Vec::new();
    for &op in &args.op {
        for &callers in &args.callers {
            let mut runs: Vec<Vec<Value>> = vec![Vec::new(); args.client.len()];
            for round in 0..args.rounds.max(1) {
                for (i, client) in args.client.iter().enumerate() {
                    let mut cmd = Command::new(&exe);
                    cmd.arg("--client")
                        .arg(client)
                        .arg("--url")
                        .arg(&args.url)
                        .arg("--op")
                        .arg(op.name())
                        .arg("--callers")
                        .arg(callers.to_string())
                        .arg("--duration-secs")
                        .arg(args.duration_secs.to_string())
                        .arg("--warmup-secs")
                        .arg(args.warmup_secs.to_string())
                        .arg("--value-size")
                        .arg(args.value_size.to_string())
                        .arg("--keys")
                        .arg(args.keys.to_string());
                    if args.cluster {
                        cmd.arg("--cluster");
                    }
                    if let Some(t) = args.threads {
                        cmd.arg("--threads").arg(t.to_string());
                    }
                    let out = cmd.stderr(Stdio::inherit()).output()?;
                    let text = String::from_utf8_lossy(&out.stdout);
                    let line = text.lines().last().unwrap_or_default();
                    let value: Value = match serde_json::from_str(line) {
                        Ok(v) if out.status.success() => v,
                        _ => {
                            return Err(format!(
                                "{client} {} callers={callers} round {round} failed ({})",
                                op.name(),
                                out.status
                            )
                            .into())
                        }
                    };
                    println!("{line}");
                    runs[i].push(value);
                }
            }
            let baseline = median(&runs[0], "ops_per_sec");
            for (client, runs_of_client) in args.client.iter().zip(&runs) {
                let ops = median(runs_of_client, "ops_per_sec");
                let ratio = if baseline > 0.0 { ops / baseline } else { 0.0 };
                // Each round's ratio to the baseline's run of the same round, then their
                // median: steadier than a ratio of medians when the load shifts.
                let per_round: Vec<Value> = runs_of_client
                    .iter()
                    .zip(&runs[0])
                    .map(|(r, b)| {
                        let (r, b) = (r["ops_per_sec"].as_f64(), b["ops_per_sec"].as_f64());
                        let x = match (r, b) {
                            (Some(r), Some(b)) if b > 0.0 => r / b,
                            _ => 0.0,
                        };
                        json!({ "ratio_of_round": x })
                    })
                    .collect();
                let round_ratios: Vec<f64> = per_round
                    .iter()
                    .filter_map(|v| v["ratio_of_round"].as_f64())
                    .map(|x| (x * 1000.0).round() / 1000.0)
                    .collect();
                let ratio_rounds = median(&per_round, "ratio_of_round");
                let runs = runs_of_client;
                let errors: u64 = runs.iter().filter_map(|r| r["errors"].as_u64()).sum();
                let summary = json!({
                    "kind": "summary",
                    "client": client,
                    "op": op.name(),
                    "callers": callers,
                    "cluster": args.cluster,
                    "value_size": args.value_size,
                    "rounds": runs.len(),
                    "median_ops_per_sec": ops.round(),
                    "median_p50_us": round1(median(runs, "p50_us")),
                    "median_p99_us": round1(median(runs, "p99_us")),
                    "median_p999_us": round1(median(runs, "p999_us")),
                    "errors": errors,
                    "baseline": args.client[0],
                    "ratio": (ratio * 1000.0).round() / 1000.0,
                    "ratio_rounds_median": (ratio_rounds * 1000.0).round() / 1000.0,
                    "round_ratios": round_ratios,
                });
                println!("{summary}");
                table.push(summary);
            }
        }
    }
    eprintln!();
    eprintln!(
        "{:<18} {:<6} {:>7} {:>12} {:>9} {:>9} {:>7} {:>9}",
        "client", "op", "callers", "ops/s(med)", "p50us", "p99us", "ratio", "rnd-ratio"
    );
    for s in &table {
        let num = |k: &str| s[k].as_f64().unwrap_or_default();
        eprintln!(
            "{:<18} {:<6} {:>7} {:>12.0} {:>9.1} {:>9.1} {:>7.3} {:>9.3}",
            s["client"].as_str().unwrap_or_default(),
            s["op"].as_str().unwrap_or_default(),
            num("callers"),
            num("median_ops_per_sec"),
            num("median_p50_us"),
            num("median_p99_us"),
            num("ratio"),
            num("ratio_rounds_median"),
        );
    }
    Ok(())
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Median of one numeric field over runs (mean of the middle two for an even count).
fn median(runs: &[Value], field: &str) -> f64 {
    let mut xs: Vec<f64> = runs.iter().filter_map(|r| r[field].as_f64()).collect();
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}
