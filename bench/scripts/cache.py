"""Client-side caching: redline's `cached_get` (Config::cache, RESP3 tracking) against the
uncached redline client and against rueidis with and without its own client-side cache
(bench/go, `DoCache`), on a read-mostly Zipf workload (`--op zipf`: 95% GET / 5% SET, keys
Zipf-distributed with s = 0.99, the same definition in both harnesses), against
redis-server 7.0 and redline-server. The clients alternate within every (server, callers)
cell, one process per run."""

import os

from clients import one_run
from common import log, rotation, with_others_cpu
from procs import GO_BIN, Procs, flushall

RUST_CLIENTS = ["redline", "redline-cached"]
GO_CLIENTS = ["rueidis", "rueidis-cached"]


def plan(quick):
    if quick:
        return {"rounds": 2, "duration_secs": 1.0, "warmup_secs": 0.5, "value_size": 64,
                "keys": 10000, "callers": [64], "servers": ["redis-server", "redline-server"]}
    return {"rounds": 3, "duration_secs": 3.0, "warmup_secs": 1.0, "value_size": 64,
            "keys": 10000, "callers": [1, 16, 64], "servers": ["redis-server", "redline-server"]}


def run(quick):
    p = plan(quick)
    runs, notes = [], []
    clients = list(RUST_CLIENTS)
    if os.path.exists(GO_BIN):
        clients += GO_CLIENTS
    else:
        notes.append(f"rueidis skipped: {os.path.relpath(GO_BIN)} is not built (bench.py builds it)")
    procs = Procs()
    try:
        for server in p["servers"]:
            try:
                proc, port = procs.redis() if server == "redis-server" else procs.redline_server()
            except Exception as e:
                notes.append(f"{server} skipped: it did not start ({e})")
                continue
            url = f"redis://127.0.0.1:{port}"
            for callers in p["callers"]:
                for r in range(p["rounds"]):
                    for client in rotation(clients, r):
                        flushall([port])
                        try:
                            res = with_others_cpu(
                                [proc.pid], lambda: one_run(client, url, False, "zipf", callers, p))
                        except Exception as e:  # one failed run must not sink the section
                            notes.append(f"{client} {server} x{callers} round {r}: {e}")
                            continue
                        res.update({"server": server, "round": r})
                        runs.append(res)
                        log(f"cache {server} zipf x{callers} r{r} {client}: "
                            f"{res['ops_per_sec']:.0f} ops/s p99 {res['p99_us']} us, "
                            f"others used {res.get('others_cpu', '?')} cores")
    finally:
        procs.close()
    flags = dict(p)
    flags["workload"] = "bench-clients --op zipf: 95% GET / 5% SET, Zipf(0.99) keys"
    flags["cache"] = "Config::cache(64 MiB, 60 s), default tracking mode"
    flags["rueidis cache"] = ("DoCache with a 60 s TTL, CacheSizeEachConn 64 MiB, "
                              "rueidis's default OPTIN tracking")
    return {"flags": flags, "runs": runs, "notes": notes}
