#!/usr/bin/env python3
"""EVALSHA A/B: servers given on the command line (redline-server builds, redis-server)
measured in rotation with redis-benchmark, `EVALSHA <sha> 1 k` of the families script
(INCR, GET, PEXPIRE), each measurement on a fresh server run under `perf stat`. Besides
requests per second it gives the server's CPU time and context switches per request
(every thread, including the ones that ended; startup and the script load included):
figures that stay meaningful when the machine is loaded and throughput is not. Needs
`perf` (Debian: linux-perf) and redis-benchmark. `--script loop` runs a Lua loop
without calls instead (the interpreter, and how scripts queue for their turn).

    python3 bench/scripts/evalsha_ab.py --rounds 3 \\
        base=/path/redline-server.base new=target/release/redline-server redis=redis-server
"""

import argparse
import csv
import io
import os
import socket
import subprocess
import tempfile
import time

SCRIPTS = {
    # Three calls of short commands: the script path's fixed costs.
    "families": ("redis.call('incr', KEYS[1]) redis.call('get', KEYS[1]) "
                 "return redis.call('pexpire', KEYS[1], 100000)"),
    # Lua work and no calls: the interpreter, and how scripts queue for their turn.
    "loop": "local t = {} for i=1,200 do t[#t+1] = i end return #t",
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True,
                          text=True, timeout=60, check=True).stdout.strip()


def measure(binary, workdir, pipeline, requests, clients, script):
    """One measurement on a fresh server started under `perf stat` (which counts every
    thread the server ever had): requests/s, CPU us and context switches per request."""
    port = free_port()
    counts = os.path.join(workdir, "perf.csv")
    argv = ["perf", "stat", "-x", ",", "-e", "task-clock,context-switches", "-o", counts,
            binary, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", workdir]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                if cli(port, "PING") == "PONG":
                    break
            except subprocess.CalledProcessError:
                pass
            time.sleep(0.05)
        sha = cli(port, "SCRIPT", "LOAD", script)
        argv = ["redis-benchmark", "-p", str(port), "-n", str(requests), "-c", str(clients),
                "-P", str(pipeline), "--csv", "EVALSHA", sha, "1", "k"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=900).stdout
        subprocess.run(["redis-cli", "-p", str(port), "SHUTDOWN", "NOSAVE"],
                       capture_output=True, timeout=60)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rows = list(csv.DictReader(io.StringIO(out)))
    rps = float(rows[-1]["rps"]) if rows else 0.0
    stats = {}
    with open(counts) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) > 2 and fields[0].replace(".", "").isdigit():
                stats[fields[2]] = float(fields[0])
    cpu_us = stats.get("task-clock", 0.0) * 1000 / requests  # task-clock is in ms
    switches = stats.get("context-switches", 0.0) / requests
    return rps, cpu_us, switches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("servers", nargs="+", help="name=binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--requests", type=int, default=50_000, help="at -P 1 (x6 at -P 16)")
    ap.add_argument("--script", choices=sorted(SCRIPTS), default="families")
    args = ap.parse_args()
    servers = [s.split("=", 1) for s in args.servers]
    with tempfile.TemporaryDirectory() as workdir:
        for r in range(args.rounds):
            order = servers[r % len(servers):] + servers[:r % len(servers)]
            for pipeline in (1, 16):
                n = args.requests * (6 if pipeline == 16 else 1)
                for name, binary in order:
                    rps, cpu_us, sw = measure(binary, workdir, pipeline, n, args.clients,
                                             SCRIPTS[args.script])
                    load = os.getloadavg()[0]
                    print(f"round {r} P={pipeline:<2} {name:<8} {rps:>10.0f} rps  "
                          f"{cpu_us:6.1f} us CPU/req  {sw:5.2f} switches/req  load {load:.1f}",
                          flush=True)


if __name__ == "__main__":
    main()
