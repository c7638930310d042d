#!/usr/bin/env python3
"""Regenerates bench/REPORT.md from the newest bench/results/*.json of every section:
medians of the alternating rounds, ratios, and a plain-language summary. Runs on its own
too: `python3 bench/scripts/report.py`."""

import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from procs import ROOT  # noqa: E402

RESULTS = os.path.join(ROOT, "bench", "results")
REPORT = os.path.join(ROOT, "bench", "REPORT.md")
RUST_PEERS = ["redis-rs", "redis-rs-manager", "fred"]
GO_PEERS = ["rueidis", "go-redis"]


def latest():
    newest = {}
    for path in glob.glob(os.path.join(RESULTS, "*.json")):
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError):
            continue
        s = data.get("section")
        if s and (s not in newest or data.get("started", "") > newest[s][1].get("started", "")):
            newest[s] = (os.path.relpath(path, ROOT), data)
    return newest


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt_n(x):
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}"


def fmt_r(x):
    return fmt_or_dash(x, "{:.2f}x")


def fmt_or_dash(x, spec):
    """`x` formatted with `spec` (a str.format pattern), or a dash when it is missing."""
    return "–" if x is None else spec.format(x)


def ratio(a, b):
    return a / b if a and b else None


def load_of(data):
    """(start, end, max of the two, cores) of a section's 1-minute load average."""
    m = data.get("machine", {})
    a, b = m.get("loadavg_start"), m.get("loadavg_end")
    seen = [x for x in (a, b) if x is not None]
    return a, b, (max(seen) if seen else None), m.get("cores")


# Others' CPU above this (cores, in any run of the section) means someone else competed.
OTHERS_CPU_LIMIT = 0.5


def others_cpu_of(data):
    """The most cores other processes used during one run of the section (None when the
    section does not record it)."""
    seen = [r["others_cpu"] for r in data.get("runs", []) if r.get("others_cpu") is not None]
    return max(seen) if seen else None


def refusal(data):
    """Why no goal may be judged from this section, or None.

    A section's own client and server keep up to three threads runnable on two cores, so
    the load average at its end counts the benchmark itself. The machine was not quiet
    when the load average at the start (others' work before the section) exceeded the
    core count, or when other processes used more than OTHERS_CPU_LIMIT cores during a
    run. Sections that did not record others' CPU are judged on the larger of the start
    and end load averages."""
    a, _, top, cores = load_of(data)
    if not cores:
        return None
    others = others_cpu_of(data)
    if others is None:
        if top is not None and top > cores:
            return f"not judged (load {top:.2f} > {cores} cores)"
        return None
    if a is not None and a > cores:
        return f"not judged (load {a:.2f} > {cores} cores at the start)"
    if others > OTHERS_CPU_LIMIT:
        return f"not judged (others used {others:.2f} cores during a run)"
    return None


def load_sentence(data):
    a, b, top, cores = load_of(data)
    if top is None:
        return "Load average: not recorded."
    s = (f"Load average (1 min) {fmt_load(a)} → {fmt_load(b)}, max {top:.2f} on "
         f"{cores or '?'} cores")
    refused = refusal(data)
    if refused:
        return (s + f": the machine was **not quiet** ({refused}), so no goal is judged "
                "from this section.")
    return s + "."


def fmt_load(x):
    return "?" if x is None else f"{x:.2f}"


class Goal:
    """One goal cell: `ratio` must reach `need`; `refused` (a reason) when the section it
    comes from was measured on an overloaded machine."""

    def __init__(self, group, what, ratio_, need, refused=None, cell=None):
        self.group, self.what, self.ratio, self.need = group, what, ratio_, need
        self.refused, self.cell = refused, cell

    def mark(self):
        if self.ratio is None:
            return "–"
        if self.refused:
            return self.refused
        return f"✓ ≥ {self.need:.1f}x" if self.ratio >= self.need else f"✗ < {self.need:.1f}x"


RUN_LOAD = ("*Run load*: the highest 1-minute load average seen as a run of the cell ended "
            "(it counts the run's own client and server too).")
OTHERS_CPU = ("*Others' CPU*: the most cores that processes other than the run's own client "
              "and servers kept busy during one run of the cell, on average over that run "
              "(about 0 on a quiet machine).")


def run_noise(runs):
    """The optional per-run noise columns present in `runs`: (header, rule, cell, legend)."""
    cols = []
    for key, name, legend in (("loadavg", "run load", RUN_LOAD),
                              ("others_cpu", "others' CPU", OTHERS_CPU)):
        if any(key in r for r in runs):
            cols.append((key, name, legend))
    header = "".join(f" {name} |" for _, name, _ in cols)
    rule = "---:|" * len(cols)
    legend = " ".join(lg for _, _, lg in cols)

    def cells(cell_runs):
        return [fmt_load(max((r[k] for r in cell_runs if k in r), default=None))
                for k, _, _ in cols]
    return header, rule, cells, legend
ISSUE17 = ("Issue 17 goal: redline ≥ 1.5x the best of redis-rs and fred from 16 callers up, "
           "≥ 1.0x at 1 caller")
ISSUE17_CELLS = [(mode, op, callers) for mode in ("standalone", "cluster")
                 for op in ("get", "set", "mixed") for callers in (1, 16, 64, 256)]


def issue17_need(callers):
    """The ratio issue 17 asks for at this caller count (None: not a goal cell)."""
    if callers >= 16:
        return 1.5
    if callers == 1:
        return 1.0
    return None


class Verdicts:
    """Collects every redline ratio for the summary (higher = better for redline), grouped
    by comparison."""

    def __init__(self):
        self.items = []

    def add(self, what, r, group="other"):
        if r is not None:
            self.items.append((group, what, r))

    def lines(self):
        out = []
        groups = []
        for g, _, _ in self.items:
            if g not in groups:
                groups.append(g)
        for g in groups:
            items = [(w, r) for gg, w, r in self.items if gg == g]
            lead = [f"{w} {r:.2f}x" for w, r in items if r >= 1.05]
            even = [f"{w} {r:.2f}x" for w, r in items if 0.95 <= r < 1.05]
            trail = [f"{w} {r:.2f}x" for w, r in items if r < 0.95]
            rs = sorted(r for _, r in items)
            line = (f"- **{g}**: median ratio {statistics.median(rs):.2f}x over {len(rs)} "
                    f"cells (range {rs[0]:.2f}x–{rs[-1]:.2f}x).")
            if lead:
                line += " Leads: " + ", ".join(lead) + "."
            if even:
                line += " About even (±5%): " + ", ".join(even) + "."
            if trail:
                line += " Trails: " + ", ".join(trail) + "."
            out.append(line)
        return out


# --- sections ---------------------------------------------------------------------------

def clients_section(src, data, v, goals):
    out = [f"## 1. Client comparison (`{src}`)", ""]
    f = data["flags"]
    out.append(f"Same workload through every client (bench/clients for Rust, bench/go for Go): "
               f"{f['keys']} preloaded keys, {f['value_size']} B values, mixed = 80% GET / 20% "
               f"SET, {f['duration_secs']} s measured after {f['warmup_secs']} s warm-up, "
               f"{f['rounds']} rounds in rotation, one process per run, server "
               f"{f.get('server', 'redis-server')}; cluster: {f.get('cluster_nodes', '3 masters')}. "
               "Cells: median ops/s (median p99 µs). "
               "Ratios: redline's median ops/s over the peer's. *Goal*: issue 17's bar for "
               "the cell (≥ 1.5x the best Rust peer from 16 callers up, ≥ 1.0x at 1 caller).")
    refused = refusal(data)
    runs = data["runs"]
    clients = []
    for r in runs:
        if r["client"] not in clients:
            clients.append(r["client"])
    order = [c for c in ["redline", *RUST_PEERS, *GO_PEERS] if c in clients]
    noise_head, noise_rule, noise_cells, legend = run_noise(runs)
    if legend:
        out[-1] += " " + legend
    out.append("")
    for mode in ("standalone", "cluster"):
        cells = sorted({(r["op"], r["callers"]) for r in runs if r["mode"] == mode},
                       key=lambda c: (["get", "set", "mixed"].index(c[0]), c[1]))
        if not cells:
            continue
        out.append(f"**{mode}**")
        out.append("")
        out.append("| op | callers | " + " | ".join(order) +
                   " | redline ÷ best Rust peer | goal | redline ÷ rueidis | redline ÷ go-redis |"
                   + noise_head)
        out.append("|---|---:|" + "---:|" * len(order) + "---:|---|---:|---:|" + noise_rule)
        for op, callers in cells:
            stats = {}
            cell_runs = [r for r in runs if r["mode"] == mode and r["op"] == op and
                         r["callers"] == callers]
            for c in order:
                rs = [r for r in cell_runs if r["client"] == c]
                if rs:
                    stats[c] = (med([r["ops_per_sec"] for r in rs]), med([r["p99_us"] for r in rs]))
            red = stats.get("redline", (None, None))[0]
            rust_best = max((stats[c][0] for c in RUST_PEERS if c in stats and stats[c][0]),
                            default=None)
            r_rust = ratio(red, rust_best)
            r_rue = ratio(red, stats.get("rueidis", (None,))[0])
            r_go = ratio(red, stats.get("go-redis", (None,))[0])
            need = issue17_need(callers)
            goal = None
            if need is not None:
                goal = Goal(ISSUE17, f"{mode} {op} ×{callers}", r_rust, need, refused,
                            (mode, op, callers))
                goals.append(goal)
            mark = goal.mark() if goal else ""
            if goal and goal.ratio is not None and not goal.refused:
                mark = f"**{mark}**"
            row = [op, str(callers)] + [
                f"{fmt_n(stats[c][0])} ({fmt_n(stats[c][1])})" if c in stats else "–"
                for c in order] + [fmt_r(r_rust), mark, fmt_r(r_rue), fmt_r(r_go)]
            row += noise_cells(cell_runs)
            out.append("| " + " | ".join(row) + " |")
            v.add(f"{mode} {op} ×{callers}", r_rust, "redline vs the best Rust client (redis-rs, fred)")
            if callers >= 64:
                v.add(f"{mode} {op} ×{callers}", r_rue, "redline vs rueidis (64+ callers)")
        out.append("")
    return out


def rest_section(src, data, v, goals):
    f = data["flags"]
    out = [f"## 2. REST cache-aside service (`{src}`)", ""]
    out.append(f"examples/rest-cache, identical app, three cache backends. Load: `{f['wrk']}`; "
               f"{f['rounds']} rounds, backends in rotation; before every run the database is "
               f"a fresh file seeded with the same 10,000 users and Redis is flushed. "
               f"Service: {f['service']}. Cells: median requests/s, then median latency "
               "p50 / p97.5 / p99 / p99.9 in ms. Ratio: redline over the best peer backend.")
    out.append("")
    runs = data["runs"]
    backends = [b for b in ["redline", "fred", "redis-rs"] if any(r["backend"] == b for r in runs)]
    for mode in ("standalone", "cluster"):
        scen = [s for s in ["get_single", "get_list", "post", "mixed"]
                if any(r["mode"] == mode and r["scenario"] == s for r in runs)]
        if not scen:
            continue
        out.append(f"**{mode}**")
        out.append("")
        out.append("| scenario | " + " | ".join(backends) +
                   " | redline ÷ best peer | run spread | non-2xx (all runs) |")
        out.append("|---|" + "---|" * len(backends) + "---:|---:|---:|")
        for s in scen:
            stats = {}
            non2xx = 0
            for b in backends:
                rs = [r for r in runs if r["mode"] == mode and r["scenario"] == s and r["backend"] == b]
                if not rs:
                    continue
                lat = {q: med([r["latency_us"][q] for r in rs]) / 1000
                       for q in ("p50", "p97_5", "p99", "p99_9")}
                stats[b] = (med([r["rps"] for r in rs]), lat)
                non2xx += sum(r["errors"]["status"] for r in rs)
            best_peer = max((stats[b][0] for b in backends if b != "redline" and b in stats),
                            default=None)
            r_peer = ratio(stats.get("redline", (None,))[0], best_peer)
            cells = []
            for b in backends:
                if b not in stats:
                    cells.append("–")
                    continue
                rps, lat = stats[b]
                cells.append(f"{fmt_n(rps)} ({lat['p50']:.2f} / {lat['p97_5']:.2f} / "
                             f"{lat['p99']:.2f} / {lat['p99_9']:.2f})")
            # Worst max/min of one backend's own runs: how far a single run can stray.
            spread = max((max(x) / min(x) for x in (
                [r["rps"] for r in runs if r["mode"] == mode and r["scenario"] == s and
                 r["backend"] == b and r["rps"] > 0] for b in backends) if x), default=None)
            out.append(f"| {s} | " + " | ".join(cells) +
                       f" | {fmt_r(r_peer)} | {fmt_r(spread)} | {non2xx} |")
            v.add(f"{mode} {s}", r_peer, "REST service: redline backend vs the best peer backend")
            goals.append(Goal("Issue 8 REST goal: redline backend ≥ 1.0x the best peer",
                              f"{mode} {s}", r_peer, 1.0, refusal(data)))
        out.append("")
    out.append("*Run spread* is the largest max/min requests/s among one backend's own "
               "runs of the row: when it is far above the ratio's distance from 1.0x, the "
               "ratio is noise. `get_list` never touches the cache, so its spread between "
               "backends is the noise floor of this run. Non-2xx in `mixed` are expected: random DELETEs make "
               "later GET/PUT/DELETE of those ids answer 404. In `get_list` and `post` they "
               "would be failures.")
    out.append("")
    return out


def rps_table(runs, tests, v, group="redline-server vs redis-server 7.0 (requests/s)",
              side="server", sides=(("redline-server", "redline-server"),
                                    ("redis-server", "redis-server")), loads=False):
    """One side against another per test and pipeline depth: median requests/s (median
    p50 ms) and their ratio, the first side over the second. `sides`: (value of the runs'
    `side` field, column heading); `loads`: a column with the runs' load average range."""
    (a, a_head), (b, b_head) = sides
    out = [f"| test | -P | {a_head} | {b_head} | ratio |" + (" load average |" if loads else ""),
           "|---|---:|---:|---:|---:|" + ("---:|" if loads else "")]
    for pipeline in (1, 16):
        for t in tests:
            rows = [r for r in runs if r["pipeline"] == pipeline and r["test"] == t]
            st = {}
            for s in (a, b):
                rs = [r for r in rows if r[side] == s]
                if rs:
                    st[s] = (med([r["rps"] for r in rs]), med([r["p50_ms"] for r in rs]))
            if not st:
                continue
            rr = ratio(st.get(a, (None,))[0], st.get(b, (None,))[0])
            cell = lambda s: f"{fmt_n(st[s][0])} ({st[s][1]:.3f})" if s in st else "–"  # noqa: E731
            line = f"| {t} | {pipeline} | {cell(a)} | {cell(b)} | {fmt_r(rr)} |"
            if loads:
                ls = [r["loadavg"] for r in rows]
                line += f" {min(ls):.1f}–{max(ls):.1f} |"
            out.append(line)
            v.add(f"{t} -P {pipeline}", rr, group)
    out.append("")
    return out


def families_section(src, data, v):
    f = data["flags"]
    out = [f"## 5. Streams and geo (`{src}`)", ""]
    out.append(f"redline-server vs redis-server with `redis-benchmark {f['redis-benchmark']}`, "
               f"{f['rounds']} rounds, servers in rotation ({f['servers']}); {f['data']}. "
               "Cells: median requests/s (median p50 ms).")
    out.append("")
    for t, c in f["commands"].items():
        out.append(f"- {t}: `{c}`")
    if f.get("script"):
        out.append(f"- the script: `{f['script']}`")
    out.append("")
    out += rps_table(data["runs"], list(f["commands"]), v)
    return out


def tls_section(src, data, v):
    f = data["flags"]
    out = [f"## 8. TLS (`{src}`)", ""]
    out.append(f"redline-server vs redis-server over TLS with `redis-benchmark {f['redis-benchmark']}`, "
               f"{f['rounds']} rounds, servers in rotation ({f['servers']}). Cells: median "
               "requests/s (median p50 ms). Ratio: redline-server over redis-server.")
    out.append("")
    out += rps_table(data["runs"], ["SET", "GET"], v,
                     "redline-server vs redis-server 7.0 over TLS (requests/s)")
    return out


def tunnel_section(src, data, v):
    f = data["flags"]
    out = [f"## 11. Smart tunnel (`{src}`)", ""]
    out.append(f"`redis-benchmark {f['redis-benchmark']}`, {f['rounds']} rounds, sides in "
               f"rotation. {f['cluster']}; {f['tunnel']}. Cells: median requests/s (median "
               "p50 ms); load average: lowest–highest over the runs of the row. Ratio: smart "
               "tunnel over direct TLS (goal: 0.8x).")
    out.append("")
    out += rps_table(data["runs"], ["SET", "GET"], v, "smart tunnel vs direct TLS (requests/s)",
                     side="side", sides=(("smart", "smart tunnel"), ("direct", "direct TLS")),
                     loads=True)
    return out


def server_section(src, data, v):
    f = data["flags"]
    out = [f"## 3. Server comparison (`{src}`)", ""]
    out.append(f"redline-server vs redis-server with `redis-benchmark {f['redis-benchmark']}`, "
               f"{f['rounds']} rounds, servers in rotation ({f['servers']}). Cells: median "
               "requests/s (median p50 ms). Ratio: redline-server over redis-server.")
    out.append("")
    out += rps_table(data["runs"], ["SET", "GET", "INCR", "LPUSH", "ZADD"], v)
    mem = {m["server"]: m for m in data.get("memory", [])}
    if mem:
        out.append(f"Bytes per key ({f['memory']}):")
        out.append("")
        out.append("| server | keys | used_memory Δ / key | RSS Δ / key |")
        out.append("|---|---:|---:|---:|")
        for s in ("redline-server", "redis-server"):
            if s in mem:
                m = mem[s]
                out.append(f"| {s} | {m['keys']:,} | {m['used_memory_per_key']:.1f} B | {m['rss_per_key']:.1f} B |")
        if len(mem) == 2:
            r_used = ratio(mem["redline-server"]["used_memory_per_key"], mem["redis-server"]["used_memory_per_key"])
            r_rss = ratio(mem["redline-server"]["rss_per_key"], mem["redis-server"]["rss_per_key"])
            out.append("")
            out.append(f"redline-server ÷ redis-server bytes per key (lower is better): "
                       f"used_memory {fmt_r(r_used)}, RSS {fmt_r(r_rss)}. redline-server's "
                       "used_memory is its own estimate, not allocator statistics, so RSS is "
                       "the like-for-like figure.")
            if r_rss:
                v.add("RSS bytes per key, redis ÷ redline", 1 / r_rss, "memory")
        out.append("")
    return out


def fill_section(src, data, v):
    out = [f"## 4. Fill comparison (`{src}`)", ""]
    if data.get("skipped") or not data["runs"]:
        out.append("Skipped in this run: " + "; ".join(data.get("notes", [])) + ".")
        out.append("")
        return out
    f = data["flags"]
    out.append(f"{f['keys']:,} keys ({f['key_size']} B names, {f['value_size']} B values) into "
               f"{f['target']}; {f['rounds']} rounds alternating. `{f['redline fill']}` vs "
               f"`redis-cli --pipe` ({f['redis-cli --pipe']}). Wall time of each command.")
    out.append("")
    out.append("| tool | median s | median keys/s | ÷ redis-cli --pipe |")
    out.append("|---|---:|---:|---:|")
    st = {}
    for t in ("redline fill", "redline fill --mset 1", "redis-cli --pipe"):
        rs = [r for r in data["runs"] if r["tool"] == t]
        if rs:
            st[t] = (med([r["seconds"] for r in rs]), med([r["keys_per_sec"] for r in rs]))
    base = st.get("redis-cli --pipe", (None, None))[1]
    for t, (sec, kps) in st.items():
        rr = ratio(kps, base)
        out.append(f"| {t} | {sec:.2f} | {fmt_n(kps)} | {fmt_r(rr)} |")
        if t != "redis-cli --pipe":
            v.add(t + " keys/s", rr, "redline fill vs redis-cli --pipe")
    out.append("")
    return out


def persistence_section(src, data, v):
    f = data["flags"]
    out = [f"## 6. Persistence (`{src}`)", ""]
    out.append(f"SET with `appendonly yes` and each `appendfsync`: `redis-benchmark "
               f"{f['redis-benchmark']}`, {f['rounds']} rounds, servers alternating ({f['servers']}). "
               "Cells: median requests/s (median p50 ms).")
    out.append("")
    out += rps_table(data["runs"], [f"SET appendfsync {s}" for s in ("always", "everysec", "no")], v)
    rdb = f["rdb"]
    loads = data.get("loads", [])
    if loads:
        out.append(f"Loading one RDB of {rdb['bytes'] / 1e6:,.0f} MB ({rdb['keys']:,} keys; "
                   f"{rdb['contents']}) written by redis-server, {f['rdb_rounds']} rounds "
                   "alternating: seconds from spawn to the first PONG, and the server's own "
                   "`DB loaded from disk` figure.")
        out.append("")
        out.append("| server | median wall s | median logged s | RSS after load |")
        out.append("|---|---:|---:|---:|")
        st = {}
        for s in ("redline-server", "redis-server"):
            rs = [r for r in loads if r["server"] == s]
            if rs:
                st[s] = med([r["wall_s"] for r in rs])
                logged = med([r["logged_s"] for r in rs])
                rss = med([r["rss_bytes"] for r in rs])
                out.append(f"| {s} | {st[s]:.2f} | {'–' if logged is None else f'{logged:.2f}'} | "
                           f"{rss / 1e6:,.0f} MB |")
        if len(st) == 2:
            rr = ratio(st["redis-server"], st["redline-server"])
            out.append("")
            out.append(f"redis-server ÷ redline-server load time (higher is better for redline): {fmt_r(rr)}.")
            v.add("RDB load time, redis ÷ redline", rr, "persistence")
        out.append("")
    return out


def replication_section(src, data, v):
    f = data["flags"]
    out = [f"## 7. Replication (`{src}`)", ""]
    out.append(f"Master → replica, each measurement on a fresh pair, pairs in rotation, "
               f"{f['rounds']} rounds, medians ({f['servers']}).")
    out.append("")
    out.append(f"- throughput: `{f['throughput']}`; *kept up*: requests ÷ (benchmark time + "
               "the replica's catch-up to the master's offset afterwards).")
    if "light" in f:
        out.append(f"- light load: `{f['light']}`; the master's requests/s and its CPU per "
                   "command (µs, user + system).")
    out.append(f"- full sync: {f['full-sync']}; time from REPLICAOF until the link is up.")
    out.append("")
    out.append("| master → replica | master SET/s | kept up, writes/s | catch-up s | max lag | "
               "light INCR/s | light µs/cmd | full sync s | MB/s |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    cells = {}
    pairs = []
    for r in data["runs"]:
        pair = (r["master"], r["replica"])
        if pair not in pairs:
            pairs.append(pair)
    for pair in pairs:
        rs = [r for r in data["runs"] if (r["master"], r["replica"]) == pair]
        tp = [r for r in rs if r["test"] == "throughput"]
        fs = [r for r in rs if r["test"] == "full-sync"]
        ll = [r for r in rs if r["test"] == "light"]
        c = {"rps": med([r["master_rps"] for r in tp]),
             "kept": med([r["kept_up_rps"] for r in tp]),
             "catch": med([r["catch_up_s"] for r in tp]),
             "lag": med([r["max_lag_bytes"] for r in tp]),
             "light": med([r["master_rps"] for r in ll]),
             "light_cpu": med([r["master_cpu_us"] for r in ll]),
             "sync": med([r["sync_s"] for r in fs]),
             "mbs": med([r["mb_per_s"] for r in fs])}
        cells[pair] = c
        lag = fmt_or_dash(None if c["lag"] is None else c["lag"] / 1024, "{:,.0f} KB")
        catch = fmt_or_dash(c["catch"], "{:.3f}")
        sync = fmt_or_dash(c["sync"], "{:.2f}")
        light_cpu = fmt_or_dash(c["light_cpu"], "{:.1f}")
        out.append(f"| {pair[0]} → {pair[1]} | {fmt_n(c['rps'])} | {fmt_n(c['kept'])} | "
                   f"{catch} | {lag} | {fmt_n(c['light'])} | {light_cpu} | {sync} | "
                   f"{fmt_n(c['mbs'])} |")
    ours, theirs = ("redline-server",) * 2, ("redis-server",) * 2
    if ours in cells and theirs in cells:
        g = "replication, redline → redline vs redis → redis"
        v.add("writes/s kept up", ratio(cells[ours]["kept"], cells[theirs]["kept"]), g)
        if cells[ours]["light"] is not None and cells[theirs]["light"] is not None:
            v.add("light-load INCR/s", ratio(cells[ours]["light"], cells[theirs]["light"]), g)
        s_ours, s_theirs = cells[ours]["sync"], cells[theirs]["sync"]
        v.add("full sync speed", ratio(s_theirs, s_ours), g)
    out.append("")
    return out


def bgsave_section(src, data, v):
    f = data["flags"]
    out = [f"## 9. BGSAVE under writes (`{src}`)", ""]
    out.append(f"Dataset `{f['dataset']}`; load `{f['load']}`; memory: {f['memory']}; "
               f"{f['rounds']} rounds, servers in rotation. redline-server saves a copy-on-write "
               "cut of its keyspace; redis-server forks. Medians over rounds.")
    out.append("")
    out.append("| server | used_memory | peak ÷ PSS before | growth ÷ used_memory | save idle / loaded | "
               "writers p99 without / with save | writers ops/s without / with |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    cells = {}
    for server in ("redline-server", "redis-server"):
        rs = [r for r in data["runs"] if r["server"] == server]
        if not rs:
            continue
        c = {k: med([r[k] for r in rs]) for k in ("dataset_bytes", "peak_over_before",
                                                 "growth_over_dataset", "idle_save_s",
                                                 "loaded_save_s")}
        c["p99_base"] = med([r["baseline"]["p99_ms"] for r in rs])
        c["p99_during"] = med([r["during"]["p99_ms"] for r in rs])
        c["ops_base"] = med([r["baseline"]["ops_per_sec"] for r in rs])
        c["ops_during"] = med([r["during"]["ops_per_sec"] for r in rs])
        cells[server] = c
        out.append(f"| {server} | {c['dataset_bytes'] / 2**20:,.0f} MiB | "
                   f"{c['peak_over_before']:.2f}x | {c['growth_over_dataset']:.2f}x | "
                   f"{c['idle_save_s']:.1f} s / {c['loaded_save_s']:.1f} s | "
                   f"{c['p99_base']:.2f} / {c['p99_during']:.2f} ms | "
                   f"{c['ops_base']:,.0f} / {c['ops_during']:,.0f} |")
    sampled = {server: med([r["during_sampled"]["p99_ms"] for r in data["runs"]
                            if r["server"] == server and "during_sampled" in r])
               for server in cells
               if any(r["server"] == server and "during_sampled" in r for r in data["runs"])}
    if sampled:
        out.append("")
        out.append("Writers' p99 in the memory run, whose sampling slows the server: "
                   + ", ".join(f"{server} {p99:.2f} ms" for server, p99 in sampled.items())
                   + ".")
    if len(cells) == 2:
        ours, theirs = cells["redline-server"], cells["redis-server"]
        v.add("peak memory during BGSAVE, redis ÷ redline",
              ratio(theirs["peak_over_before"], ours["peak_over_before"]), "bgsave")
        v.add("writers' p99 during BGSAVE, redis ÷ redline",
              ratio(theirs["p99_during"], ours["p99_during"]), "bgsave")
    for note in data.get("notes", []):
        out.append(f"- {note}")
    out.append("")
    return out


CACHE_CLIENTS = ["redline", "redline-cached", "rueidis", "rueidis-cached"]


def cache_section(src, data, v):
    f = data["flags"]
    out = [f"## 10. Client-side caching (`{src}`)", ""]
    rue = f.get("rueidis cache")
    out.append(f"redline `cached_get` ({f['cache']}) vs the uncached redline client"
               + (f" and rueidis with its cache ({rue}) and without" if rue else "") +
               f", `{f['workload']}`, {f['keys']:,} keys of {f['value_size']} B, "
               f"{f['rounds']} rounds alternating, {f['duration_secs']} s each. Cells: median "
               "ops/s (median p99 µs).")
    runs = data["runs"]
    clients = [c for c in CACHE_CLIENTS if any(r["client"] == c for r in runs)]
    noise_head, noise_rule, noise_cells, legend = run_noise(runs)
    if legend:
        out[-1] += " " + legend
    out.append("")
    head = "| server | callers | " + " | ".join(clients) + " | redline-cached ÷ redline |"
    rule = "|---|---:|" + "---:|" * len(clients) + "---:|"
    with_rue = "rueidis-cached" in clients
    if with_rue:
        head += " redline-cached ÷ rueidis-cached |"
        rule += "---:|"
    out += [head + noise_head, rule + noise_rule]
    for server, callers in sorted({(r["server"], r["callers"]) for r in runs}):
        cell_runs = [r for r in runs if r["server"] == server and r["callers"] == callers]
        st = {}
        for c in clients:
            rs = [r for r in cell_runs if r["client"] == c]
            st[c] = (med([r["ops_per_sec"] for r in rs]), med([r["p99_us"] for r in rs]))
        cached = st.get("redline-cached", (None,))[0]
        rr = ratio(cached, st.get("redline", (None,))[0])
        row = [server, str(callers)] + [f"{fmt_n(st[c][0])} ({fmt_n(st[c][1])})"
                                         for c in clients] + [fmt_r(rr)]
        v.add(f"{server} zipf ×{callers}", rr, "cached vs uncached redline (ops/s)")
        if with_rue:
            rq = ratio(cached, st["rueidis-cached"][0])
            row.append(fmt_r(rq))
            v.add(f"{server} zipf ×{callers}", rq, "redline-cached vs rueidis-cached (ops/s)")
        row += noise_cells(cell_runs)
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    return out


def goal_lines(goals, clients):
    """The Summary's goal check: per goal, cells met / missed / not judged, and whether the
    clients result covers every cell issue 17 names (a quick run does not)."""
    out = []
    groups = []
    for g in goals:
        if g.group not in groups:
            groups.append(g.group)
    for group in groups:
        gs = [g for g in goals if g.group == group and g.ratio is not None]
        met = [g for g in gs if not g.refused and g.ratio >= g.need]
        missed = [g for g in gs if not g.refused and g.ratio < g.need]
        unjudged = [g for g in gs if g.refused]
        out.append("")
        line = f"**{group}**: {len(met)} of {len(gs)} cells met, {len(missed)} missed"
        if unjudged:
            above = sum(1 for g in unjudged if g.ratio >= g.need)
            line += (f", {len(unjudged)} {unjudged[0].refused}; indicative only: {above} of "
                     "those at or above the bar")
        out.append(line + ".")
        if missed:
            out.append("Missed: " + "; ".join(f"{g.what} ({g.ratio:.2f}x < {g.need:.1f}x)"
                                              for g in missed) + ".")
        if group == ISSUE17 and clients:
            out += issue17_coverage(gs, clients[1])
    if clients and not any(g.group == ISSUE17 for g in goals):
        out += ["", f"**{ISSUE17}**: no clients cells to judge."]
    return out


def issue17_coverage(gs, data):
    """Issue 17 is met only by a full run (3+ rounds) with every cell judged and met."""
    have = {g.cell for g in gs}
    absent = [c for c in ISSUE17_CELLS if c not in have]
    rounds = data.get("flags", {}).get("rounds", 0)
    why = []
    if data.get("quick"):
        why.append("the clients result is a quick run")
    if rounds < 3:
        why.append(f"it has {rounds} rounds, not 3+")
    if absent:
        why.append(f"{len(absent)} of the {len(ISSUE17_CELLS)} goal cells are absent ("
                   + ", ".join(f"{m} {o} ×{c}" for m, o, c in absent) + ")")
    if any(g.refused for g in gs):
        why.append("the machine was not quiet (load above the core count at the start, or others using the CPU)")
    if any(g.ratio < g.need for g in gs if not g.refused):
        why.append("cells are missed")
    if why:
        return ["Issue 17's goal is **not** shown met: " + "; ".join(why) + "."]
    return ["Issue 17's goal is met in every cell of a full run on a machine under its core "
            "count."]


def write():
    newest = latest()
    v, goals = Verdicts(), []
    body = []
    machine, quick, started = None, None, []
    for name, fn in (("clients", clients_section), ("rest", rest_section),
                     ("server", server_section), ("fill", fill_section),
                     ("families", families_section), ("persistence", persistence_section),
                     ("replication", replication_section), ("tls", tls_section),
                     ("bgsave", bgsave_section), ("cache", cache_section),
                     ("tunnel", tunnel_section)):
        if name in newest:
            src, data = newest[name]
            part = fn(src, data, v, goals) if name in ("clients", "rest") else fn(src, data, v)
            # Every section opens with [heading, "", paragraph]: its load average belongs
            # in that paragraph, next to what was measured.
            part[2] += " " + load_sentence(data)
            body += part
    notes = []
    for name, (src, data) in newest.items():
        machine = machine or data.get("machine")
        quick = data.get("quick") if quick is None else quick
        started.append((name, data.get("started"), data.get("seconds"),
                        data["machine"].get("loadavg_start"), data["machine"].get("loadavg_end")))
        notes += [f"{name}: {n}" for n in data.get("notes", [])]

    head = ["# redline benchmark report", "",
            "Generated by `make bench` (`bench/scripts/bench.py`, then `report.py`) from the "
            "newest `bench/results/*.json` of each section. Do not edit by hand.", ""]
    if not newest:
        head.append("No results yet: run `make bench` (or `make bench QUICK=1`).")
        open(REPORT, "w").write("\n".join(head) + "\n")
        return
    m = machine or {}
    vers = m.get("versions", {})
    head += ["## Machine and versions", "",
             f"- {m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('memory', '?')}, "
             f"Linux {m.get('kernel', '?')}. **Shared and noisy**: other builds and tests may run "
             "on these cores at the same time (the load averages below say how busy it was), "
             "and client, server and load generator share them too. Single runs are noise; "
             "read medians of alternating runs, and treat differences under ~10% as a tie.",
             f"- Mode: {'QUICK=1 (1–3 s runs, 2 rounds for clients and server, 3 for REST: indicative only)' if quick else 'full'}.",
             "- Sections: " + "; ".join(
                 f"{n} started {s} ({sec} s, load average {a:.1f} → {b:.1f})"
                 for n, s, sec, a, b in started if a is not None and b is not None) + ".",
             f"- Build: {m.get('profile', '')}; git {vers.get('git', '?')}.",
             "- Versions: " + ", ".join(f"{k} {val}" for k, val in vers.items()
                                        if k != "git" and val) + ".",
             ""]
    summary = ["## Summary", "",
               "Ratios are redline's median over the other side's (above 1.0x: redline "
               "ahead). Groups in the order of the sections below.", ""]
    summary += v.lines() or ["- No comparisons in these results."]
    summary += goal_lines(goals, newest.get("clients"))
    summary.append("")
    tail = []
    if notes:
        tail = ["## Notes from the run", ""] + [f"- {n}" for n in notes] + [""]
    tail += ["## Reproduce", "",
             "```sh", "make bench-deps          # wrk, redis tools, Go modules",
             "make bench QUICK=1       # ~11 min of runs on 2 cores, plus the release build",
             "make bench               # full plan: longer runs, 3 rounds, every op and cell",
             "python3 bench/scripts/bench.py --quick --only rest --no-build   # one section",
             "```", "",
             "The last QUICK=1 run here took 633 s for the four sections; the release build "
             "before it (fat LTO, from a tree others had just changed, on a loaded machine) "
             "took another 15 min. An up-to-date build adds under a minute.", ""]
    with open(REPORT, "w") as f:
        f.write("\n".join(head + summary + body + tail))


if __name__ == "__main__":
    write()
    print(os.path.relpath(REPORT, ROOT))
