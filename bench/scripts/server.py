"""Server comparison: redline-server vs redis-server 7.0 under redis-benchmark (SET, GET,
INCR, LPUSH, ZADD at -P 1 and -P 16; servers alternate in rotation), and bytes per key
(1M small keys loaded with redis-cli --pipe into a fresh server: INFO used_memory delta and
RSS delta, divided by the key count)."""

import os
import subprocess
import time

from common import keep_rows, log, redis_benchmark, rotation
from procs import Procs, cli, flushall, info_field, rss_bytes

TESTS = "set,get,incr,lpush,zadd"
SERVERS = ["redline-server", "redis-server"]


def plan(quick):
    if quick:
        return {"rounds": 2, "requests": {1: 50_000, 16: 500_000}, "clients": 50,
                "keyspace": 100_000, "memory_keys": 1_000_000}
    return {"rounds": 3, "requests": {1: 300_000, 16: 2_000_000}, "clients": 50,
            "keyspace": 100_000, "memory_keys": 1_000_000}


def protocol_file(path, n, key_fmt, value_fmt):
    """SET commands in RESP, for redis-cli --pipe."""
    with open(path, "wb", buffering=1 << 20) as f:
        for i in range(n):
            k = (key_fmt % i).encode()
            v = (value_fmt % i).encode()
            f.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))


def pipe(port, path):
    with open(path, "rb") as f:
        out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--pipe"],
                             stdin=f, capture_output=True, text=True, timeout=600)
    if out.returncode != 0 or "errors: 0" not in out.stdout:
        raise RuntimeError(f"redis-cli --pipe: {out.stdout[-300:]} {out.stderr[-300:]}")


def bytes_per_key(procs, name, path, n):
    proc, port = procs.redline_server() if name == "redline-server" else procs.redis()
    time.sleep(0.2)
    used0, rss0 = int(info_field(port, "memory", "used_memory") or 0), rss_bytes(proc.pid)
    pipe(port, path)
    keys = int(cli(port, "DBSIZE"))
    time.sleep(0.5)  # let background work (rehashing, allocator purges) settle a little
    used1, rss1 = int(info_field(port, "memory", "used_memory") or 0), rss_bytes(proc.pid)
    procs.stop(proc)
    return {"server": name, "keys": keys, "used_memory_delta": used1 - used0,
            "rss_delta": rss1 - rss0,
            "used_memory_per_key": round((used1 - used0) / max(keys, 1), 1),
            "rss_per_key": round((rss1 - rss0) / max(keys, 1), 1)}


def run(quick):
    p = plan(quick)
    runs, memory, notes = [], [], []
    procs = Procs()
    try:
        ports = {"redline-server": procs.redline_server()[1], "redis-server": procs.redis()[1]}
        for r in range(p["rounds"]):
            for server in rotation(SERVERS, r):
                for pipeline in (1, 16):
                    flushall([ports[server]])
                    target = ["-h", "127.0.0.1", "-p", str(ports[server])]
                    keep_rows(runs, notes, f"server r{r} {server} -P {pipeline}",
                              {"server": server, "pipeline": pipeline, "round": r},
                              lambda: redis_benchmark(target, TESTS, pipeline, p),
                              procs.pids())
        # Memory: fresh servers, same 1M keys.
        d = procs.tmpdir("memory")
        path = os.path.join(d, "small.resp")
        protocol_file(path, p["memory_keys"], "key:%07d", "value:%07d")
        for server in SERVERS:
            try:
                m = bytes_per_key(procs, server, path, p["memory_keys"])
            except Exception as e:
                notes.append(f"bytes per key, {server}: {e}")
                continue
            memory.append(m)
            log(f"memory {server}: {m['used_memory_per_key']} B/key (used_memory), "
                f"{m['rss_per_key']} B/key (RSS)")
    finally:
        procs.close()
    flags = {"redis-benchmark": f"-t {TESTS} -c {p['clients']} -r {p['keyspace']} "
                                f"-n {p['requests'][1]} (-P 1) / {p['requests'][16]} (-P 16) --csv",
             "rounds": p["rounds"],
             "servers": "both running side by side, no persistence; redline-server with its "
                        "defaults (workers = cores)",
             "memory": f"{p['memory_keys']} keys key:%07d -> value:%07d via redis-cli --pipe "
                       "into a fresh server; per key = delta / DBSIZE"}
    return {"flags": flags, "runs": runs, "memory": memory, "notes": notes}
