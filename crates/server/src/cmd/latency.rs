//! LATENCY LATEST / HISTORY / RESET / GRAPH / DOCTOR / HISTOGRAM / HELP over
//! [`crate::latency`] and the command statistics.

use std::fmt::Write as _;

use bytes::Bytes;
use redline_resp::encode;

use super::reply::{help, CmdResult};
use super::{Ctx, Handler};
use crate::latency::{histogram_report, Series, HISTOGRAM_BUCKETS};

/// This family's handlers.
pub const COMMANDS: &[(&str, Handler)] = &[
    ("latency|latest", latency_latest),
    ("latency|history", latency_history),
    ("latency|reset", latency_reset),
    ("latency|graph", latency_graph),
    ("latency|doctor", latency_doctor),
    ("latency|histogram", latency_histogram),
    ("latency|help", latency_help),
];

fn latency_latest(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let events = ctx.shared.latency.events();
    let out = &mut *ctx.out;
    encode::write_array_len(out, events.len());
    for (name, series) in events {
        let last = series
            .samples
            .back()
            .copied()
            .unwrap_or(crate::latency::Sample {
                time: 0,
                latency: 0,
            });
        encode::write_array_len(out, 4);
        encode::write_bulk(out, name.as_bytes());
        encode::write_integer(out, last.time as i64);
        encode::write_integer(out, last.latency as i64);
        encode::write_integer(out, series.max as i64);
    }
    Ok(())
}

fn latency_history(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let series = ctx.shared.latency.series(&args[2]).unwrap_or_default();
    let out = &mut *ctx.out;
    encode::write_array_len(out, series.samples.len());
    for sample in &series.samples {
        encode::write_array_len(out, 2);
        encode::write_integer(out, sample.time as i64);
        encode::write_integer(out, sample.latency as i64);
    }
    Ok(())
}

fn latency_reset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let names: Vec<&[u8]> = args[2..].iter().map(|a| &a[..]).collect();
    let n = ctx.shared.latency.reset(&names);
    encode::write_integer(ctx.out, n as i64);
    Ok(())
}

/// Rows of the LATENCY GRAPH chart.
const GRAPH_ROWS: u64 = 4;

/// An ASCII chart of an event's samples, oldest on the left: one column per sample,
/// `#` up to its share of the worst one, then how many seconds ago it was taken.
fn graph(name: &str, series: &Series) -> String {
    let high = series.samples.iter().map(|s| s.latency).max().unwrap_or(0);
    let low = series.samples.iter().map(|s| s.latency).min().unwrap_or(0);
    let mut text = format!(
        "{name} - high {high} ms, low {low} ms (all time high {} ms)\n",
        series.max
    );
    text.push_str(&"-".repeat(80));
    text.push('\n');
    for row in (1..=GRAPH_ROWS).rev() {
        let line: String = series
            .samples
            .iter()
            .map(|s| {
                if high > 0 && s.latency * GRAPH_ROWS >= row * high {
                    '#'
                } else {
                    ' '
                }
            })
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let ages: Vec<String> = series
        .samples
        .iter()
        .map(|s| format!("{}s", now.saturating_sub(s.time)))
        .collect();
    let width = ages.iter().map(String::len).max().unwrap_or(0);
    // The ages read top to bottom, one column per sample.
    for i in 0..width {
        let line: String = ages
            .iter()
            .map(|a| a.as_bytes().get(i).map_or(' ', |&b| char::from(b)))
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

fn latency_graph(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let name = String::from_utf8_lossy(&args[2]).into_owned();
    let Some(series) = ctx.shared.latency.series(&args[2]) else {
        return Err(super::reply::quoting(
            "ERR No samples available for event '",
            &args[2],
            usize::MAX,
            "'",
        ));
    };
    let text = graph(&name, &series);
    encode::write_verbatim(ctx.out, ctx.client.protocol, b"txt", text.as_bytes());
    Ok(())
}

/// LATENCY DOCTOR's report: each event's spikes, then what usually causes them.
fn doctor_report(events: &[(&'static str, Series)], threshold_off: bool) -> String {
    if events.is_empty() {
        if threshold_off {
            return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this \
                    server. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" \
                    in order to enable it.\n"
                .to_string();
        }
        return "Dave, no latency spike was observed during the lifetime of this server, not \
                in the slightest bit. I honestly think you ought to sleep better tonight.\n"
            .to_string();
    }
    let mut text = String::from(
        "Dave, I have observed latency spikes in this server. You don't mind talking \
         about it, do you Dave?\n\n",
    );
    let mut slow_commands = false;
    let mut expiry = false;
    for (i, (name, series)) in events.iter().enumerate() {
        let n = series.samples.len().max(1) as u64;
        let sum: u64 = series.samples.iter().map(|s| s.latency).sum();
        let average = sum / n;
        let deviation = series
            .samples
            .iter()
            .map(|s| s.latency.abs_diff(average))
            .sum::<u64>()
            / n;
        let period = match (series.samples.front(), series.samples.back()) {
            (Some(first), Some(last)) if n > 1 => (last.time - first.time) as f64 / (n - 1) as f64,
            _ => 0.0,
        };
        let _ = writeln!(
            text,
            "{}. {name}: {} latency spikes (average {average}ms, mean deviation {deviation}ms, \
             period {period:.2} sec). Worst all time event {}ms.",
            i + 1,
            series.samples.len(),
            series.max
        );
        slow_commands |= name.contains("command");
        expiry |= name.starts_with("expire");
    }
    text.push_str("\nI have a few advices for you:\n\n");
    if slow_commands {
        text.push_str(
            "- Check your slow log (SLOWLOG GET) for the commands that take long: avoid \
             O(N) commands on big values (KEYS, SMEMBERS, LRANGE 0 -1, HGETALL...) and \
             break big deletions up with UNLINK or SCAN.\n",
        );
    }
    if expiry {
        text.push_str(
            "- Big keys expiring together take time to free: spread their TTLs, or let \
             lazyfree-lazy-expire free them in the background.\n",
        );
    }
    text.push_str(
        "- Make sure the machine is not swapping and that no other process competes for \
         its cores.\n",
    );
    text
}

fn latency_doctor(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let events = ctx.shared.latency.events();
    let off = ctx
        .shared
        .config
        .read()
        .param_int("latency-monitor-threshold")
        == 0;
    let text = doctor_report(&events, off);
    encode::write_verbatim(ctx.out, ctx.client.protocol, b"txt", text.as_bytes());
    Ok(())
}

/// The commands LATENCY HISTOGRAM reports on: those named by `args` (a container
/// command stands for its subcommands; unknown names are skipped), or every command
/// with recorded latencies since the last reset.
fn histogram_targets(
    all: &[(&'static str, [u64; HISTOGRAM_BUCKETS])],
    args: &[Bytes],
) -> Vec<(&'static str, [u64; HISTOGRAM_BUCKETS])> {
    if args.is_empty() {
        return all.to_vec();
    }
    let mut out = Vec::new();
    for arg in args {
        let name = String::from_utf8_lossy(arg).to_ascii_lowercase();
        let prefix = format!("{name}|");
        for (n, buckets) in all {
            if *n == name || n.starts_with(&prefix) {
                out.push((*n, *buckets));
            }
        }
    }
    out
}

fn latency_histogram(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ctx.shared.cmdstats.absorb(&mut ctx.client.cmdstats);
    let all = ctx.shared.cmdstats.latency_buckets();
    let targets = histogram_targets(&all, &args[2..]);
    let proto = ctx.proto();
    let out = &mut *ctx.out;
    encode::write_map_len(out, proto, targets.len());
    for (name, buckets) in targets {
        encode::write_bulk(out, name.as_bytes());
        let report = histogram_report(&buckets);
        let calls: u64 = buckets.iter().sum();
        encode::write_map_len(out, proto, 2);
        encode::write_bulk(out, b"calls");
        encode::write_integer(out, calls as i64);
        encode::write_bulk(out, b"histogram_usec");
        encode::write_map_len(out, proto, report.len());
        for (usec, cumulative) in report {
            encode::write_integer(out, usec as i64);
            encode::write_integer(out, cumulative as i64);
        }
    }
    Ok(())
}

fn latency_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    help(
        ctx.out,
        &[
            "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
            "HELP",
            "    Prints this help.",
        ],
    );
    Ok(())
}
