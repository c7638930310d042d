"""Persistence figures, redline-server vs redis-server 7.0 (issue 15):

- SET throughput with `appendonly yes` and `appendfsync always / everysec / no`, as
  `redis-benchmark -t set` at -P 1 and -P 16. Each measurement gets a fresh server on a
  fresh directory (so both start from an empty AOF); servers alternate A B A B across
  rounds; the ratio is redline-server's median over redis-server's with the same setting.
- Load time of one large RDB (`--rdb-size`, default 1 GB; BENCH_RDB_SIZE when run from
  bench.py): written once by redis-server (strings of random bytes through
  `redis-cli --pipe`, plus hashes, lists, sets and sorted sets through redis-benchmark),
  then loaded by each server in
  turn; the figure is the wall time from spawn until PING answers PONG, and each
  server's own "DB loaded from disk: N seconds" log line.

    python3 bench/scripts/persistence.py [--quick] [--rdb-size 64mb] [--rounds N]
        [--requests N]    (prints the result as JSON; bench.py runs it as a section)
"""

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import log, rotation  # noqa: E402
from procs import RELEASE, Procs, cli, free_port  # noqa: E402

SERVERS = ["redline-server", "redis-server"]
# The release build bench.py makes; REDLINE_SERVER_BIN for another (a smoke run).
REDLINE_BIN = os.environ.get("REDLINE_SERVER_BIN", os.path.join(RELEASE, "redline-server"))
FSYNCS = ["always", "everysec", "no"]
VALUE_BYTES = 512


def parse_size(text):
    m = re.fullmatch(r"\s*(\d+)\s*([kmg]?)b?\s*", text.lower())
    if not m:
        raise ValueError(f"not a size: {text!r} (e.g. 1gb, 64mb)")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2)]


def plan(quick):
    if quick:
        return {"rounds": 2, "requests": {1: 20_000, 16: 100_000}, "clients": 50,
                "rdb_rounds": 1}
    return {"rounds": 3, "requests": {1: 50_000, 16: 300_000}, "clients": 50,
            "rdb_rounds": 3}


def wait_pong(port, proc, timeout):
    """Seconds until PING answers PONG (a loading server answers -LOADING)."""
    started = time.time()
    while time.time() - started < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with {proc.returncode}")
        out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "PING"],
                             capture_output=True, text=True, timeout=30)
        if out.stdout.strip() == "PONG":
            return time.time() - started
        time.sleep(0.02)
    raise RuntimeError(f"port {port} not ready after {timeout}s")


def start(procs, server, directory, extra, timeout=60.0):
    """Starts `server` in `directory` (where it finds or writes its files); returns
    (proc, port, seconds until PONG)."""
    port = free_port()
    if server == "redis-server":
        argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--dir", directory, *extra]
    else:
        argv = [REDLINE_BIN, "--port", str(port), "--bind",
                "127.0.0.1", "--save", "", *extra]
    proc = procs.spawn(argv, os.path.join(directory, "server.log"), cwd=directory)
    return proc, port, wait_pong(port, proc, timeout)


def set_rps(port, pipeline, n, clients):
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-t", "set", "-n", str(n),
            "-c", str(clients), "-P", str(pipeline), "-r", "1000000", "-d", "64", "--csv"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    if not rows:
        raise RuntimeError(f"redis-benchmark printed nothing: {out.stderr[-300:]}")
    row = rows[-1]
    return {"rps": float(row["rps"]), "p50_ms": float(row.get("p50_latency_ms", 0) or 0),
            "p99_ms": float(row.get("p99_latency_ms", 0) or 0)}


def fsync_runs(procs, p, runs, notes):
    for r in range(p["rounds"]):
        for server in rotation(SERVERS, r):
            for fsync in FSYNCS:
                for pipeline in (1, 16):
                    d = procs.tmpdir(f"aof-{server}")
                    proc = None
                    try:
                        proc, port, _ = start(procs, server, d,
                                              ["--appendonly", "yes", "--appendfsync", fsync])
                        row = set_rps(port, pipeline, p["requests"][pipeline], p["clients"])
                    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
                        notes.append(f"{server} appendfsync {fsync} -P {pipeline} round {r}: {e}")
                        continue
                    finally:
                        if proc is not None:
                            procs.stop(proc)
                        shutil.rmtree(d, ignore_errors=True)
                    row.update({"server": server, "test": f"SET appendfsync {fsync}",
                                "fsync": fsync, "pipeline": pipeline, "round": r})
                    runs.append(row)
                    log(f"persistence r{r} {server} appendfsync {fsync} -P {pipeline}: "
                        f"{row['rps']:.0f} rps")


def make_rdb(procs, size):
    """A dump.rdb of about `size` bytes written by redis-server; returns its path."""
    d = procs.tmpdir("rdb-source")
    proc, port, _ = start(procs, "redis-server", d, [])
    # Nine tenths in strings of random bytes (LZF cannot shrink them, so the file is
    # about the size asked for), the rest in collections of up to 100 small elements.
    strings = max(1, size * 9 // 10 // (VALUE_BYTES + 20))
    pipe = subprocess.Popen(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--pipe"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    batch = []
    for i in range(strings):
        key, value = b"key:%d" % i, os.urandom(VALUE_BYTES)
        batch.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                     % (len(key), key, len(value), value))
        if len(batch) == 10_000 or i == strings - 1:
            pipe.stdin.write(b"".join(batch))
            batch = []
    pipe.stdin.close()
    if pipe.wait(timeout=3600) != 0:
        raise RuntimeError("redis-cli --pipe failed while writing the RDB's strings")
    per_kind = max(1, size // 10 // 4 // 2500)
    for kind, command in (("hash", ["HSET", "h:__rand_int__", "f__rand_int__", "v" * 10]),
                          ("list", ["RPUSH", "l:__rand_int__", "v" * 10]),
                          ("set", ["SADD", "s:__rand_int__", "m__rand_int__"]),
                          ("zset", ["ZADD", "z:__rand_int__", "__rand_int__", "m__rand_int__"])):
        subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-n",
                        str(per_kind * 100), "-r", str(per_kind), "-c", "50", "-P", "64", "-q",
                        *command], capture_output=True, timeout=3600, check=True)
        log(f"persistence: rdb source {kind}s written")
    cli(port, "SAVE")
    keys = int(cli(port, "DBSIZE").strip())
    procs.stop(proc)
    path = os.path.join(d, "dump.rdb")
    log(f"persistence: dump.rdb of {os.path.getsize(path) / 1e6:.0f} MB, {keys} keys")
    return path, keys


LOADED = re.compile(r"DB loaded from disk: ([0-9.]+) seconds")


def load_runs(procs, p, size, runs, notes):
    source, keys = make_rdb(procs, size)
    info = {"bytes": os.path.getsize(source), "keys": keys}
    for r in range(p["rdb_rounds"]):
        for server in rotation(SERVERS, r):
            d = procs.tmpdir(f"load-{server}")
            os.link(source, os.path.join(d, "dump.rdb"))
            proc = None
            try:
                proc, port, wall = start(procs, server, d, [], timeout=3600)
                loaded = int(cli(port, "DBSIZE").strip())
                if loaded != keys:
                    raise RuntimeError(f"loaded {loaded} keys of {keys}")
                rss = 0
                with open(f"/proc/{proc.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            rss = int(line.split()[1]) * 1024
                logged = LOADED.findall(open(os.path.join(d, "server.log"), errors="replace").read())
            except Exception as e:  # noqa: BLE001 - recorded, the run goes on
                notes.append(f"{server} load round {r}: {e}")
                continue
            finally:
                if proc is not None:
                    procs.stop(proc)
                shutil.rmtree(d, ignore_errors=True)
            row = {"server": server, "round": r, "wall_s": round(wall, 3),
                   "logged_s": float(logged[-1]) if logged else None, "rss_bytes": rss}
            runs.append(row)
            log(f"persistence r{r} {server} load: {wall:.2f}s wall, {row['logged_s']}s logged")
    return info


def run(quick, size=None, rounds=None, requests=None):
    p = plan(quick)
    if rounds:
        p["rounds"] = p["rdb_rounds"] = rounds
    if requests:
        p["requests"] = {1: requests, 16: requests}
    size = size or parse_size(os.environ.get("BENCH_RDB_SIZE", "64mb" if quick else "1gb"))
    runs, loads, notes = [], [], []
    procs = Procs()
    try:
        fsync_runs(procs, p, runs, notes)
        rdb = load_runs(procs, p, size, loads, notes)
    finally:
        procs.close()
    flags = {"redis-benchmark": f"-t set -c {p['clients']} -n {p['requests'][1]} (-P 1) / "
                                f"{p['requests'][16]} (-P 16) -r 1000000 -d 64 --csv",
             "servers": "each measurement on a fresh server and directory with --appendonly yes "
                        "--appendfsync <setting>; redline-server with its defaults "
                        "(workers = cores)",
             "rounds": p["rounds"], "rdb_rounds": p["rdb_rounds"],
             "rdb": {**rdb, "requested_bytes": size,
                     "contents": f"strings of {VALUE_BYTES} random bytes (9/10), hashes, lists, "
                                 "sets, sorted sets of up to 100 elements (1/10)"}}
    return {"flags": flags, "runs": runs, "loads": loads, "notes": notes}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rdb-size", default=None, help="size of the RDB to load (default 1gb)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--requests", type=int, default=None, help="SETs per measurement")
    args = ap.parse_args()
    size = parse_size(args.rdb_size) if args.rdb_size else None
    print(json.dumps(run(args.quick, size, args.rounds, args.requests), indent=1))


if __name__ == "__main__":
    main()
