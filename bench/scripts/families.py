"""Stream, geo and scripting throughput, redline-server vs redis-server 7.0, with
redis-benchmark custom commands at -P 1 and -P 16 (servers alternate in rotation, medians
over rounds):

- XADD s * f v                                   (appends)
- XREADGROUP GROUP g c COUNT 1 STREAMS s >       (each call delivers one new entry into
                                                  the group's PEL; the stream is filled
                                                  beforehand with more entries than reads)
- GEOSEARCH g FROMLONLAT 15 37 BYRADIUS 10 km ASC COUNT 10
                                                 (on 20,000 points around Sicily: about 60
                                                  within 10 km)
- EVALSHA <sha> 1 k                              (a 3-command script: INCR, GET, PEXPIRE)
- GET k                                          (to read EVALSHA against)
"""

import csv
import io
import random
import subprocess

from common import log, rotation
from procs import Procs, cli

SERVERS = ["redline-server", "redis-server"]

GEO_POINTS = 20_000


def plan(quick):
    if quick:
        return {"rounds": 2, "requests": {1: 20_000, 16: 100_000}, "clients": 50}
    return {"rounds": 3, "requests": {1: 50_000, 16: 300_000}, "clients": 50}


def bench(port, pipeline, n, clients, command):
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-n", str(n),
            "-c", str(clients), "-P", str(pipeline), "--csv", *command]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    if not rows:
        raise RuntimeError(f"redis-benchmark printed nothing: {out.stderr[-300:]}")
    row = rows[-1]
    return {"rps": float(row["rps"]),
            "p50_ms": float(row.get("p50_latency_ms", 0) or 0),
            "p99_ms": float(row.get("p99_latency_ms", 0) or 0)}


def load_geo(port):
    rng = random.Random(7)
    args = ["GEOADD", "g"]
    for i in range(GEO_POINTS):
        args += [f"{12.5 + rng.random() * 4:.6f}", f"{36.6 + rng.random() * 2:.6f}", f"m{i}"]
    cli(port, *args)


SCRIPT = ("redis.call('incr', KEYS[1]) redis.call('get', KEYS[1]) "
          "return redis.call('pexpire', KEYS[1], 100000)")


def prepare(port, test, p, pipeline):
    """A fresh dataset for one measurement; returns the command to run."""
    cli(port, "FLUSHALL")
    command = list(TESTS[test])
    if test == "xreadgroup":
        # More entries than reads, so every XREADGROUP delivers one.
        n = p["requests"][pipeline] + 1000
        subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-n", str(n),
                        "-c", "50", "-P", "64", "-q", "XADD", "s", "*", "f", "v"],
                       capture_output=True, timeout=900, check=True)
        cli(port, "XGROUP", "CREATE", "s", "g", "0")
    elif test == "geosearch":
        load_geo(port)
    elif test == "evalsha":
        sha = cli(port, "SCRIPT", "LOAD", SCRIPT).strip()
        command = ["EVALSHA", sha, "1", "k"]
    elif test == "get":
        cli(port, "SET", "k", "v")
    return command


TESTS = {
    "xadd": ["XADD", "s", "*", "f", "v"],
    "xreadgroup": ["XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">"],
    "geosearch": ["GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "10", "km",
                  "ASC", "COUNT", "10"],
    "evalsha": ["EVALSHA", "<sha of SCRIPT>", "1", "k"],
    "get": ["GET", "k"],
}


def run(quick):
    p = plan(quick)
    runs, notes = [], []
    procs = Procs()
    try:
        ports = {"redline-server": procs.redline_server()[1], "redis-server": procs.redis()[1]}
        for r in range(p["rounds"]):
            for server in rotation(SERVERS, r):
                for test in TESTS:
                    for pipeline in (1, 16):
                        try:
                            command = prepare(ports[server], test, p, pipeline)
                            row = bench(ports[server], pipeline, p["requests"][pipeline],
                                        p["clients"], command)
                        except Exception as e:
                            notes.append(f"{server} {test} -P {pipeline} round {r}: {e}")
                            continue
                        row.update({"server": server, "test": test, "pipeline": pipeline,
                                    "round": r})
                        runs.append(row)
                        log(f"families r{r} {server} {test} -P {pipeline}: {row['rps']:.0f} rps")
    finally:
        procs.close()
    flags = {"redis-benchmark": f"-c {p['clients']} -n {p['requests'][1]} (-P 1) / "
                                f"{p['requests'][16]} (-P 16) --csv <command>",
             "commands": {t: " ".join(c) for t, c in TESTS.items()},
             "script": SCRIPT,
             "rounds": p["rounds"],
             "data": f"XREADGROUP: the stream pre-filled with more entries than reads; "
                     f"GEOSEARCH: {GEO_POINTS} points in a 4 x 2 degree box around Sicily",
             "servers": "both running side by side, no persistence; redline-server with its "
                        "defaults (workers = cores)"}
    return {"flags": flags, "runs": runs, "notes": notes}
