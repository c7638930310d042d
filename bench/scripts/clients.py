"""Client comparison: redline vs redis-rs vs fred (bench/clients' harness) and rueidis vs
go-redis (bench/go), one workload, standalone and on a 3-master cluster. Each run is its
own process; clients alternate in rotation within every (mode, op, callers) cell."""

import os
import subprocess

from common import json_line, log, rotation, with_others_cpu
from procs import GO_BIN, RELEASE, ROOT, Procs, flushall

RUST_BIN = f"{RELEASE}/bench-clients"
GO_CLIENTS = ["rueidis", "go-redis"]
# Every client bench/go runs (rueidis-cached: the cache section's).
GO_BINARY_CLIENTS = {*GO_CLIENTS, "rueidis-cached"}


def rust_clients(cluster):
    """Names bench-clients registers for the mode (its --list)."""
    out = subprocess.run([RUST_BIN, "--list"], capture_output=True, text=True, timeout=30)
    want = "cluster" if cluster else "standalone"
    names = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] == want:
            names.append(parts[0])
    return names


def plan(quick):
    """The full plan is what issue 17's goal is judged on: standalone and cluster, every op,
    1/16/64/256 callers, 3 rounds. The quick plan is a smoke test (report.py says so)."""
    if quick:
        return {
            "rounds": 2, "duration_secs": 1.0, "warmup_secs": 0.5, "value_size": 64,
            "keys": 10000,
            "standalone": {"ops": ["get", "mixed"], "callers": [1, 16, 64, 256]},
            "cluster": {"ops": ["get"], "callers": [64, 256]},
            "extra_rust": [],
        }
    return {
        "rounds": 3, "duration_secs": 3.0, "warmup_secs": 1.0, "value_size": 64,
        "keys": 10000,
        "standalone": {"ops": ["get", "set", "mixed"], "callers": [1, 16, 64, 256]},
        "cluster": {"ops": ["get", "set", "mixed"], "callers": [1, 16, 64, 256]},
        "extra_rust": ["redis-rs-manager"],
    }


def one_run(client, url, cluster, op, callers, p):
    """One run of bench-clients or bench-go (by the client's name); its JSON line."""
    flags = ["--url", url, "--op", op, "--callers", str(callers),
             "--duration-secs", str(p["duration_secs"]), "--warmup-secs", str(p["warmup_secs"]),
             "--value-size", str(p["value_size"]), "--keys", str(p["keys"])]
    if cluster:
        flags.append("--cluster")
    binary = GO_BIN if client in GO_BINARY_CLIENTS else RUST_BIN
    timeout = 60 + 4 * (p["duration_secs"] + p["warmup_secs"])
    return json_line([binary, "--client", client, *flags], timeout)


def run(quick):
    p = plan(quick)
    # BENCH_CLIENTS=redline,redis-rs,fred limits the rotation (issue 17's goal needs only
    # these three: a third of the full plan's time).
    only = [c for c in os.environ.get("BENCH_CLIENTS", "").split(",") if c]
    runs, notes = [], []
    go_clients = GO_CLIENTS
    if not os.path.exists(GO_BIN):
        go_clients = []
        notes.append(f"rueidis and go-redis skipped: {os.path.relpath(GO_BIN, ROOT)} is not "
                     "built (bench.py builds it unless --no-build)")
    procs = Procs()
    try:
        for mode in ("standalone", "cluster"):
            cluster = mode == "cluster"
            rust = [c for c in ["redline", "redis-rs", "fred", *p["extra_rust"]]
                    if c in rust_clients(cluster)]
            if "redline" not in rust:
                notes.append(f"{mode}: bench-clients has no redline client for this mode; "
                             "redline is missing from this comparison")
            clients = rust + go_clients
            if only:
                clients = [c for c in clients if c in only]
            try:
                ports = procs.cluster(3) if cluster else None
            except Exception as e:
                log(f"{mode}: {e}")
                notes.append(f"{mode} skipped: the cluster did not start ({e})")
                continue
            if cluster:
                url = f"redis://127.0.0.1:{ports[0]}"
            else:
                _, port = procs.redis()
                ports = [port]
                url = f"redis://127.0.0.1:{port}"
            for op in p[mode]["ops"]:
                for callers in p[mode]["callers"]:
                    for r in range(p["rounds"]):
                        for client in rotation(clients, r):
                            flushall(ports)
                            try:
                                res = with_others_cpu(
                                    procs.pids(),
                                    lambda: one_run(client, url, cluster, op, callers, p))
                            except Exception as e:  # one failed run must not sink the section
                                log(f"clients: {client} {mode} {op} x{callers}: {e}")
                                notes.append(f"{client} {mode} {op} x{callers} round {r}: {e}")
                                continue
                            res.update({"mode": mode, "round": r})
                            runs.append(res)
                            log(f"clients {mode} {op} x{callers} r{r} {client}: "
                                f"{res['ops_per_sec']:.0f} ops/s p99 {res['p99_us']} us, "
                                f"others used {res.get('others_cpu', '?')} cores")
    finally:
        procs.close()
    flags = {k: v for k, v in p.items()}
    flags["server"] = "redis-server 7.0, no persistence, loopback"
    flags["cluster_nodes"] = "3 masters, no replicas (procs.cluster)"
    return {"flags": flags, "runs": runs, "notes": notes}
