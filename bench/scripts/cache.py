"""Client-side caching: redline's `cached_get` (Config::cache, RESP3 tracking) against the
uncached redline client, on a read-mostly Zipf workload (bench-clients `--op zipf`: 95% GET
/ 5% SET, keys Zipf-distributed with s = 0.99), against redis-server 7.0 and redline-server.
The two clients alternate within every (server, callers) cell, one process per run."""

from clients import RUST_BIN
from common import json_line, log, rotation
from procs import Procs, flushall

CLIENTS = ["redline", "redline-cached"]


def plan(quick):
    if quick:
        return {"rounds": 2, "duration_secs": 1.0, "warmup_secs": 0.5, "value_size": 64,
                "keys": 10000, "callers": [64], "servers": ["redis-server", "redline-server"]}
    return {"rounds": 3, "duration_secs": 3.0, "warmup_secs": 1.0, "value_size": 64,
            "keys": 10000, "callers": [1, 16, 64], "servers": ["redis-server", "redline-server"]}


def one_run(client, url, callers, p):
    argv = [RUST_BIN, "--client", client, "--url", url, "--op", "zipf",
            "--callers", str(callers), "--duration-secs", str(p["duration_secs"]),
            "--warmup-secs", str(p["warmup_secs"]), "--value-size", str(p["value_size"]),
            "--keys", str(p["keys"])]
    return json_line(argv, 60 + 4 * (p["duration_secs"] + p["warmup_secs"]))


def run(quick):
    p = plan(quick)
    runs, notes = [], []
    procs = Procs()
    try:
        for server in p["servers"]:
            try:
                _, port = procs.redis() if server == "redis-server" else procs.redline_server()
            except Exception as e:
                notes.append(f"{server} skipped: it did not start ({e})")
                continue
            url = f"redis://127.0.0.1:{port}"
            for callers in p["callers"]:
                for r in range(p["rounds"]):
                    for client in rotation(CLIENTS, r):
                        flushall([port])
                        try:
                            res = one_run(client, url, callers, p)
                        except Exception as e:  # one failed run must not sink the section
                            notes.append(f"{client} {server} x{callers} round {r}: {e}")
                            continue
                        res.update({"server": server, "round": r})
                        runs.append(res)
                        log(f"cache {server} zipf x{callers} r{r} {client}: "
                            f"{res['ops_per_sec']:.0f} ops/s p99 {res['p99_us']} us")
    finally:
        procs.close()
    flags = dict(p)
    flags["workload"] = "bench-clients --op zipf: 95% GET / 5% SET, Zipf(0.99) keys"
    flags["cache"] = "Config::cache(64 MiB, 60 s), default tracking mode"
    return {"flags": flags, "runs": runs, "notes": notes}
