"""Smart tunnel throughput: `redis-benchmark --cluster --tls` straight to a 3-master TLS
cluster (cluster-aware, OpenSSL in the benchmark: the fastest honest TLS way it has) vs
plain-text `redis-benchmark` through `redline tunnel --cluster` (smart mode, one local
endpoint, rustls upstream). SET and GET at -P 1 and -P 16, -c 50; the two sides alternate
(rotation), medians over rounds; the load average is recorded with every run.

    python3 bench/scripts/tunnel.py [--quick] [--rounds N]   # prints the JSON result

`REDLINE_BIN` picks the redline binary (default target/release/redline)."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import keep_rows, redis_benchmark, rotation  # noqa: E402
from procs import RELEASE, Procs, free_port, tls_cluster, wait_port  # noqa: E402
from tls import certificates  # noqa: E402

TESTS = "set,get"
SIDES = ["direct", "smart"]


def plan(quick, rounds=None):
    p = {"rounds": 3, "requests": {1: 100_000, 16: 400_000}, "clients": 50,
         "keyspace": 100_000}
    if quick:
        p.update(rounds=2, requests={1: 50_000, 16: 200_000})
    if rounds:
        p["rounds"] = rounds
    return p


def run(quick, rounds=None):
    p = plan(quick, rounds)
    runs, notes = [], []
    procs = Procs()
    try:
        certs = certificates(procs.tmpdir("tunnel-certs"))
        nodes = tls_cluster(procs, certs)
        seed = nodes[0][0]
        local = free_port()
        binary = os.environ.get("REDLINE_BIN", os.path.join(RELEASE, "redline"))
        d = procs.tmpdir("tunnel")
        tunnel = procs.spawn([binary, "tunnel", "-h", "127.0.0.1", "-p", str(seed), "--tls",
                              "--cacert", certs["ca.crt"], "--cluster", "--listen",
                              f"127.0.0.1:{local}", "--log", "warn"],
                             os.path.join(d, "log"))
        wait_port(local, proc=tunnel)
        target = {"direct": ["--cluster", "-h", "127.0.0.1", "-p", str(seed),
                             "--tls", "--cacert", certs["ca.crt"]],
                  "smart": ["-h", "127.0.0.1", "-p", str(local)]}
        for r in range(p["rounds"]):
            for pipeline in (1, 16):
                for side in rotation(SIDES, r):
                    for _, node_cli in nodes:
                        subprocess.run([*node_cli, "FLUSHALL"], capture_output=True)
                    keep_rows(runs, notes, f"tunnel r{r} {side} -P {pipeline}",
                              {"side": side, "pipeline": pipeline, "round": r},
                              lambda: redis_benchmark(target[side], TESTS, pipeline, p),
                              procs.pids())
    finally:
        procs.close()
    flags = {"redis-benchmark": f"-t {TESTS} -c {p['clients']} -r {p['keyspace']} "
                                f"-n {p['requests'][1]} (-P 1) / {p['requests'][16]} (-P 16) "
                                "--csv; direct: --cluster --tls --cacert ca.crt to a node; "
                                "smart: plain text to the tunnel",
             "rounds": p["rounds"],
             "cluster": "3 redis-server 7.0 masters, no replicas, tls-port only, "
                        "tls-cluster yes, tls-auth-clients no, RSA-2048, no persistence",
             "tunnel": "redline tunnel --cluster (smart mode), release build, --log warn, "
                       "default --threads (1)"}
    return {"flags": flags, "runs": runs, "notes": notes}


def summary(result):
    """Median rps per side and the smart/direct ratio, per test and pipeline."""
    out = {}
    for pipeline in (1, 16):
        for test in ("SET", "GET"):
            med = {}
            for side in SIDES:
                xs = sorted(x["rps"] for x in result["runs"]
                            if x["side"] == side and x["pipeline"] == pipeline
                            and x["test"] == test)
                med[side] = xs[len(xs) // 2] if xs else None
            loads = [x["loadavg"] for x in result["runs"]
                     if x["pipeline"] == pipeline and x["test"] == test]
            ratio = med["smart"] / med["direct"] if med["direct"] and med["smart"] else None
            out[f"{test} P={pipeline}"] = {**med, "ratio": ratio,
                                           "loadavg": [min(loads, default=0),
                                                       max(loads, default=0)]}
    return out


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    args = ap.parse_args()
    res = run(args.quick, args.rounds)
    res["summary"] = summary(res)
    print(json.dumps(res))
