"""redline-server's cluster mode beside redis-server's: two 3-master clusters (no
replicas), one of each server, in rotation, medians over rounds:

- throughput: `redis-benchmark --cluster` SET and GET at -P 1 and -P 16 (50 clients,
  100,000 keys);
- resharding: `redis-cli --cluster reshard` of 1,000 slots from one master to another
  and back, after 10,000 keys were written; reported in seconds.

Not run by the tests or `make bench`; by hand, on a quiet machine:

    python3 bench/scripts/cluster_server.py --rounds 3

`REDLINE_SERVER_BIN` picks another redline-server binary (the release build by default).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import log, redis_benchmark, rotation  # noqa: E402
from procs import Procs, cli  # noqa: E402

SERVERS = ["redis-server", "redline-server"]
PLAN = {"requests": {1: 200_000, 16: 1_000_000}, "clients": 50, "keyspace": 100_000}


def reshard_seconds(ports, slots=1000):
    ids = [cli(p, "CLUSTER", "MYID").strip() for p in ports]
    took = []
    for src, dst in ((0, 1), (1, 0)):
        started = time.time()
        out = subprocess.run(["redis-cli", "--cluster", "reshard", f"127.0.0.1:{ports[0]}",
                              "--cluster-from", ids[src], "--cluster-to", ids[dst],
                              "--cluster-slots", str(slots), "--cluster-yes"],
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"reshard failed: {out.stdout[-500:]}{out.stderr[-300:]}")
        took.append(time.time() - started)
        # The next reshard's check needs every node to agree on the new owners.
        deadline = time.time() + 30
        while time.time() < deadline:
            check = subprocess.run(["redis-cli", "--cluster", "check", f"127.0.0.1:{ports[0]}"],
                                   capture_output=True, text=True)
            if check.returncode == 0:
                break
            time.sleep(0.1)
    return took


def one_round(server):
    procs = Procs()
    try:
        ports = procs.cluster(3, server=server)
        rows = {}
        for pipeline in (1, 16):
            for row in redis_benchmark(["--cluster", "-p", str(ports[0])], "set,get",
                                       pipeline, PLAN):
                rows[f"{row['test']} -P {pipeline}"] = row["rps"]
        keys = "".join(f"SET key:{i} v{i}\n" for i in range(10_000))
        subprocess.run(["redis-cli", "-c", "-p", str(ports[0])], input=keys, text=True,
                       capture_output=True, check=True)
        rows["reshard 1000 slots (s)"], rows["reshard back (s)"] = reshard_seconds(ports)
        return rows
    finally:
        procs.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    results = {s: [] for s in SERVERS}
    for r in range(args.rounds):
        for server in rotation(SERVERS, r):
            log(f"round {r + 1}: {server}")
            results[server].append(one_round(server))
    print(json.dumps({"load": os.getloadavg(), "rounds": results}, indent=1))
    for metric in results[SERVERS[0]][0]:
        med = {s: statistics.median(row[metric] for row in results[s]) for s in SERVERS}
        print(f"{metric:24} redis {med['redis-server']:>12,.2f}  redline "
              f"{med['redline-server']:>12,.2f}  ratio {med['redline-server'] / med['redis-server']:.2f}")


if __name__ == "__main__":
    main()
