"""Replication figures, master -> replica, for each pair of servers (redis -> redis, redline
-> redline, and the mixed pairs), one fresh pair of processes per measurement, pairs in
rotation, medians over rounds:

- throughput: a replica attached to an empty master, then `redis-benchmark -P 16` SETs
  against the master. Reported: the master's requests/s, the replica's largest lag behind
  the master's offset (bytes, sampled every 50 ms), the time the replica needed after the
  benchmark ended to reach the master's offset, and the writes/s the replica kept up with
  (requests / (benchmark time + catch-up time)).
- light load: a replica attached, then `redis-benchmark -P 1 -c 10` INCRs against the
  master: a write's reply waits for the replica's link, and at this load every command
  costs the master wake-ups (bench/NOTES.md, stop 82). Reported: the master's requests/s
  and its CPU per command (user + system, from /proc).
- full sync: the master filled with DEBUG POPULATE to the dataset size (default 1 GB of
  values, 1,000-byte values), then REPLICAOF on an empty replica; reported: the seconds
  from REPLICAOF until the replica's link is up with nothing left to load, and MB of
  values per second.

redis-server masters sync disk-less (7.0's default) with `repl-diskless-sync-delay 0`, so
neither side waits for more replicas. Not run by the tests; `make bench` runs it with the
other sections, or alone:

    python3 bench/scripts/bench.py --only replication [--quick] [--no-build]
    python3 bench/scripts/replication.py --size-mb 1024 --rounds 3    # this section only

`REDLINE_SERVER_BIN` picks another redline-server binary (the release build by default).
"""

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Resp, cpu_seconds, log, rotation  # noqa: E402
from procs import Procs, cli, info_field  # noqa: E402

# (master, replica)
PAIRS = [("redis-server", "redis-server"), ("redline-server", "redline-server"),
         ("redline-server", "redis-server"), ("redis-server", "redline-server")]

VALUE_BYTES = 1000
COMMON = ["--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0",
          "--repl-backlog-size", "64mb"]


def plan(quick):
    if quick:
        return {"rounds": 2, "requests": 300_000, "clients": 50, "size_mb": 64,
                "light_requests": 50_000}
    return {"rounds": 3, "requests": 2_000_000, "clients": 50, "size_mb": 1024,
            "light_requests": 200_000}

LIGHT_CLIENTS = 10


def start(procs, kind):
    if kind == "redis-server":
        return procs.redis(COMMON)
    return procs.redline_server(COMMON)


class Info:
    """INFO over one kept-open connection: polling with redis-cli would spend a process
    start per look and blur the catch-up times."""

    def __init__(self, port):
        self.conn = Resp(port)

    def field(self, section, name):
        body = self.conn.cmd("INFO", section)
        if not isinstance(body, bytes):
            raise RuntimeError(f"INFO answered {body!r}")
        for line in body.decode().splitlines():
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
        return None

    def close(self):
        self.conn.close()


def offsets(master, replica):
    """(master_repl_offset, the replica's processed offset), from two `Info`s."""
    m = master.field("replication", "master_repl_offset")
    r = replica.field("replication", "slave_repl_offset")
    return int(m or 0), int(r or 0)


def link_ready(replica):
    return (info_field(replica, "replication", "master_link_status") == "up"
            and info_field(replica, "replication", "master_sync_in_progress") == "0")


def wait(what, check, timeout):
    deadline = time.time() + timeout
    while not check():
        if time.time() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.002)


def attach(replica, master):
    reply = cli(replica, "REPLICAOF", "127.0.0.1", master)
    if not reply.startswith("OK"):
        raise RuntimeError(f"REPLICAOF: {reply}")


def throughput(procs, pair, p):
    (_, master), (_, replica) = start(procs, pair[0]), start(procs, pair[1])
    attach(replica, master)
    wait("the initial sync", lambda: link_ready(replica), 60)
    watch_m, watch_r = Info(master), Info(replica)
    max_lag, stop = [0], threading.Event()

    def sample():
        m_info, r_info = Info(master), Info(replica)
        while not stop.is_set():
            m, r = offsets(m_info, r_info)
            max_lag[0] = max(max_lag[0], m - r)
            time.sleep(0.05)
        m_info.close()
        r_info.close()

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(master), "-n", str(p["requests"]),
            "-c", str(p["clients"]), "-P", "16", "-t", "set", "-r", "1000000", "-d", "16",
            "--csv"]
    t0 = time.time()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    bench_s = time.time() - t0
    t1 = time.time()

    def caught_up():
        m, r = offsets(watch_m, watch_r)
        return r >= m

    wait("the replica to catch up", caught_up, 600)
    catch_up_s = time.time() - t1
    stop.set()
    sampler.join()
    offset = offsets(watch_m, watch_r)[0]
    watch_m.close()
    watch_r.close()
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    if not rows:
        raise RuntimeError(f"redis-benchmark printed nothing: {out.stderr[-300:]}")
    return {"master_rps": float(rows[-1]["rps"]), "bench_s": round(bench_s, 3),
            "catch_up_s": round(catch_up_s, 3), "max_lag_bytes": max_lag[0],
            "kept_up_rps": round(p["requests"] / (bench_s + catch_up_s), 1),
            "offset": offset}


def light_load(procs, pair, p):
    (master_proc, master), (_, replica) = start(procs, pair[0]), start(procs, pair[1])
    attach(replica, master)
    wait("the initial sync", lambda: link_ready(replica), 60)
    n = p["light_requests"]
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(master), "-n", str(n),
            "-c", str(LIGHT_CLIENTS), "-P", "1", "-t", "incr", "--csv"]
    cpu0 = cpu_seconds(master_proc.pid)
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    cpu = cpu_seconds(master_proc.pid) - cpu0
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    if not rows:
        raise RuntimeError(f"redis-benchmark printed nothing: {out.stderr[-300:]}")
    return {"master_rps": float(rows[-1]["rps"]), "master_cpu_us": round(cpu / n * 1e6, 2)}


def full_sync(procs, pair, p):
    (_, master), (_, replica) = start(procs, pair[0]), start(procs, pair[1])
    keys = p["size_mb"] * 1024 * 1024 // VALUE_BYTES
    cli(master, "DEBUG", "POPULATE", keys, "key", VALUE_BYTES)
    used = int(info_field(master, "memory", "used_memory") or 0)
    t0 = time.time()
    attach(replica, master)
    wait("the full sync", lambda: link_ready(replica), 3600)
    seconds = time.time() - t0
    got = int(cli(replica, "DBSIZE"))
    if got != keys:
        raise RuntimeError(f"replica holds {got} keys, master {keys}")
    return {"keys": keys, "values_mb": p["size_mb"], "master_used_memory": used,
            "sync_s": round(seconds, 3), "mb_per_s": round(p["size_mb"] / seconds, 1)}


def run(quick, **overrides):
    """The section (`bench.py` calls it with `quick` only); `overrides` replace entries of
    the plan (rounds, requests, clients, size_mb) when not None."""
    p = plan(quick)
    p.update({k: v for k, v in overrides.items() if v is not None})
    runs, notes = [], []
    for r in range(p["rounds"]):
        for pair in rotation(PAIRS, r):
            name = f"{pair[0]} -> {pair[1]}"
            for test, fn in (("throughput", throughput), ("light", light_load),
                             ("full-sync", full_sync)):
                procs = Procs()
                try:
                    row = fn(procs, pair, p)
                except Exception as e:  # one failed cell must not lose the others
                    notes.append(f"{name} {test} round {r}: {e}")
                    continue
                finally:
                    procs.close()
                row.update({"master": pair[0], "replica": pair[1], "test": test, "round": r})
                runs.append(row)
                log(f"replication r{r} {name} {test}: "
                    + ", ".join(f"{k}={v}" for k, v in row.items()
                                if k not in ("master", "replica", "test", "round")))
    flags = {"throughput": f"redis-benchmark -P 16 -c {p['clients']} -n {p['requests']} "
                           "-t set -r 1000000 -d 16 against the master, replica attached",
             "light": f"redis-benchmark -P 1 -c {LIGHT_CLIENTS} -n {p['light_requests']} "
                      "-t incr against the master, replica attached",
             "full-sync": f"DEBUG POPULATE {p['size_mb'] * 1024 * 1024 // VALUE_BYTES} key "
                          f"{VALUE_BYTES} ({p['size_mb']} MB of values) on the master, then "
                          "REPLICAOF on an empty replica",
             "servers": " ".join(COMMON) + "; no persistence; redline-server with its "
                        "defaults (workers = cores)",
             "rounds": p["rounds"]}
    return {"flags": flags, "runs": runs, "notes": notes}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--size-mb", type=int, help="full-sync dataset, MB of values")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--requests", type=int, help="throughput: SETs per run")
    args = ap.parse_args()
    result = run(args.quick, size_mb=args.size_mb, rounds=args.rounds, requests=args.requests)
    print(json.dumps(result, indent=1))

if __name__ == "__main__":
    main()
