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
            data = json.load(open(path))
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
    return "–" if x is None else f"{x:.2f}x"


def ratio(a, b):
    return a / b if a and b else None


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
               f"{f.get('server', 'redis-server')}. Cells: median ops/s (median p99 µs). "
               "Ratios: redline's median ops/s over the peer's.")
    out.append("")
    runs = data["runs"]
    clients = []
    for r in runs:
        if r["client"] not in clients:
            clients.append(r["client"])
    order = [c for c in ["redline", *RUST_PEERS, *GO_PEERS] if c in clients]
    for mode in ("standalone", "cluster"):
        cells = sorted({(r["op"], r["callers"]) for r in runs if r["mode"] == mode},
                       key=lambda c: (["get", "set", "mixed"].index(c[0]), c[1]))
        if not cells:
            continue
        out.append(f"**{mode}**")
        out.append("")
        out.append("| op | callers | " + " | ".join(order) +
                   " | redline ÷ best Rust peer | redline ÷ rueidis | redline ÷ go-redis |")
        out.append("|---|---:|" + "---:|" * len(order) + "---:|---:|---:|")
        for op, callers in cells:
            stats = {}
            for c in order:
                rs = [r for r in runs if r["mode"] == mode and r["op"] == op and
                      r["callers"] == callers and r["client"] == c]
                if rs:
                    stats[c] = (med([r["ops_per_sec"] for r in rs]), med([r["p99_us"] for r in rs]))
            red = stats.get("redline", (None, None))[0]
            rust_best = max((stats[c][0] for c in RUST_PEERS if c in stats and stats[c][0]),
                            default=None)
            r_rust = ratio(red, rust_best)
            r_rue = ratio(red, stats.get("rueidis", (None,))[0])
            r_go = ratio(red, stats.get("go-redis", (None,))[0])
            row = [op, str(callers)] + [
                f"{fmt_n(stats[c][0])} ({fmt_n(stats[c][1])})" if c in stats else "–"
                for c in order] + [fmt_r(r_rust), fmt_r(r_rue), fmt_r(r_go)]
            out.append("| " + " | ".join(row) + " |")
            v.add(f"{mode} {op} ×{callers}", r_rust, "redline vs the best Rust client (redis-rs, fred)")
            if callers >= 64:
                goals.append((f"client {mode} {op} ×{callers}: redline ≥ 1.5x best Rust peer",
                              r_rust, 1.5))
                goals.append((f"client {mode} {op} ×{callers}: redline within 10% of rueidis",
                              r_rue, 0.9))
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
            goals.append((f"REST {mode} {s}: redline ≥ 1.0x best peer", r_peer, 1.0))
        out.append("")
    out.append("*Run spread* is the largest max/min requests/s among one backend's own "
               "runs of the row: when it is far above the ratio's distance from 1.0x, the "
               "ratio is noise. `get_list` never touches the cache, so its spread between "
               "backends is the noise floor of this run. Non-2xx in `mixed` are expected: random DELETEs make "
               "later GET/PUT/DELETE of those ids answer 404. In `get_list` and `post` they "
               "would be failures.")
    out.append("")
    return out


def rps_table(runs, tests, v, group="redline-server vs redis-server 7.0 (requests/s)"):
    """redline-server vs redis-server per test and pipeline depth: median requests/s
    (median p50 ms) and their ratio."""
    out = ["| test | -P | redline-server | redis-server | ratio |", "|---|---:|---:|---:|---:|"]
    for pipeline in (1, 16):
        for t in tests:
            st = {}
            for s in ("redline-server", "redis-server"):
                rs = [r for r in runs if r["pipeline"] == pipeline and r["test"] == t and r["server"] == s]
                if rs:
                    st[s] = (med([r["rps"] for r in rs]), med([r["p50_ms"] for r in rs]))
            if not st:
                continue
            rr = ratio(st.get("redline-server", (None,))[0], st.get("redis-server", (None,))[0])
            cell = lambda s: f"{fmt_n(st[s][0])} ({st[s][1]:.3f})" if s in st else "–"  # noqa: E731
            out.append(f"| {t} | {pipeline} | {cell('redline-server')} | {cell('redis-server')} | {fmt_r(rr)} |")
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
    out += ["| test | -P | direct TLS | smart tunnel | ratio | load average |",
            "|---|---:|---:|---:|---:|---:|"]
    runs = data["runs"]
    for pipeline in (1, 16):
        for t in ("SET", "GET"):
            rows = [r for r in runs if r["pipeline"] == pipeline and r["test"] == t]
            st = {}
            for side in ("direct", "smart"):
                rs = [r for r in rows if r["side"] == side]
                if rs:
                    st[side] = (med([r["rps"] for r in rs]), med([r["p50_ms"] for r in rs]))
            if not st:
                continue
            rr = ratio(st.get("smart", (None,))[0], st.get("direct", (None,))[0])
            cell = lambda s: f"{fmt_n(st[s][0])} ({st[s][1]:.3f})" if s in st else "–"  # noqa: E731
            loads = [r["loadavg"] for r in rows]
            out.append(f"| {t} | {pipeline} | {cell('direct')} | {cell('smart')} | {fmt_r(rr)} | "
                       f"{min(loads):.1f}–{max(loads):.1f} |")
            v.add(f"{t} -P {pipeline}", rr, "smart tunnel vs direct TLS (requests/s)")
    out.append("")
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
    out.append(f"- full sync: {f['full-sync']}; time from REPLICAOF until the link is up.")
    out.append("")
    out.append("| master → replica | master SET/s | kept up, writes/s | catch-up s | max lag | "
               "full sync s | MB/s |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
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
        c = {"rps": med([r["master_rps"] for r in tp]),
             "kept": med([r["kept_up_rps"] for r in tp]),
             "catch": med([r["catch_up_s"] for r in tp]),
             "lag": med([r["max_lag_bytes"] for r in tp]),
             "sync": med([r["sync_s"] for r in fs]),
             "mbs": med([r["mb_per_s"] for r in fs])}
        cells[pair] = c
        lag = "–" if c["lag"] is None else f"{c['lag'] / 1024:,.0f} KB"
        catch = "–" if c["catch"] is None else f"{c['catch']:.3f}"
        sync = "–" if c["sync"] is None else f"{c['sync']:.2f}"
        out.append(f"| {pair[0]} → {pair[1]} | {fmt_n(c['rps'])} | {fmt_n(c['kept'])} | "
                   f"{catch} | {lag} | {sync} | {fmt_n(c['mbs'])} |")
    ours, theirs = ("redline-server",) * 2, ("redis-server",) * 2
    if ours in cells and theirs in cells:
        g = "replication, redline → redline vs redis → redis"
        v.add("writes/s kept up", ratio(cells[ours]["kept"], cells[theirs]["kept"]), g)
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


def cache_section(src, data, v):
    f = data["flags"]
    out = [f"## 10. Client-side caching (`{src}`)", ""]
    out.append(f"redline `cached_get` ({f['cache']}) vs the uncached redline client, "
               f"`{f['workload']}`, {f['keys']:,} keys of {f['value_size']} B, "
               f"{f['rounds']} rounds alternating, {f['duration_secs']} s each. Cells: median "
               "ops/s (median p99 us).")
    out.append("")
    out.append("| server | callers | redline | redline-cached | cached ÷ uncached |")
    out.append("|---|---:|---:|---:|---:|")
    cells = sorted({(r["server"], r["callers"]) for r in data["runs"]})
    for server, callers in cells:
        st = {}
        for c in ("redline", "redline-cached"):
            rs = [r for r in data["runs"]
                  if r["server"] == server and r["callers"] == callers and r["client"] == c]
            st[c] = (med([r["ops_per_sec"] for r in rs]), med([r["p99_us"] for r in rs]))
        rr = ratio(st["redline-cached"][0], st["redline"][0])
        cell = lambda c: f"{fmt_n(st[c][0])} ({fmt_n(st[c][1])})"
        out.append(f"| {server} | {callers} | {cell('redline')} | {cell('redline-cached')} | "
                   f"{fmt_r(rr)} |")
        v.add(f"{server} zipf x{callers}", rr, "cached vs uncached redline (ops/s)")
    out.append("")
    return out


def write():
    newest = latest()
    v, goals = Verdicts(), []
    body = []
    machine, quick, started = None, None, []
    for name, fn in (("clients", clients_section), ("rest", rest_section)):
        if name in newest:
            src, data = newest[name]
            body += fn(src, data, v, goals)
    for name, fn in (("server", server_section), ("fill", fill_section),
                     ("families", families_section), ("persistence", persistence_section),
                     ("replication", replication_section), ("tls", tls_section),
                     ("bgsave", bgsave_section), ("cache", cache_section),
                     ("tunnel", tunnel_section)):
        if name in newest:
            src, data = newest[name]
            body += fn(src, data, v)
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
    if goals:
        met = [g for g in goals if g[1] is not None and g[1] >= g[2]]
        missed = [g for g in goals if g[1] is not None and g[1] < g[2]]
        summary.append("")
        summary.append(f"Issue 8 goals: {len(met)} of {len(met) + len(missed)} cells met.")
        if missed:
            summary.append("Missed: " + "; ".join(f"{g[0]} ({g[1]:.2f}x)" for g in missed) + ".")
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
