"""BGSAVE under a write load, redline-server (copy-on-write cut, no fork) vs redis-server
7.0 (fork): peak memory during the save as a multiple of the dataset, and the latency of
50 writing clients while it runs.

Per server and round (servers alternate in rotation):
1. a fresh server, `DEBUG POPULATE <keys> key <size>` (the dataset: used_memory after it);
2. an idle BGSAVE, timed (how long the save window is);
3. a write load of its own: `redline bench --mode redis-benchmark -c 50 -t set -r <keys>
   -d <size>` for a window a bit longer than the idle save, once without a save (the
   baseline p99) and once with a BGSAVE started 0.5 s in (the p99 during the save);
4. the same loaded BGSAVE once more, with the proportional set size (PSS, so pages a
   fork child shares with its parent are not counted twice) of the server and its
   children sampled every 20 ms: the peak as a multiple of the PSS just before it (the
   server's real size; used_memory counts differently in the two servers), and as
   growth over used_memory.

The memory is sampled in a run of its own because reading `smaps_rollup` walks the
process's page tables under its mmap lock: every 20 ms it stalls the server's memory
mappings (glibc grows a thread arena with `mprotect`), which alone doubled redline's
p99 without any save (4.5 -> 8.3-8.8 ms; redis-server 4.7-4.9 -> 6.1-7.6 ms). The
latencies are measured unobserved.

    python3 bench/scripts/bgsave.py [--quick] [--keys N]
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import log, rotation  # noqa: E402
from procs import RELEASE, Procs, cli, info_field  # noqa: E402

SERVERS = ["redline-server", "redis-server"]


def plan(quick, keys=None):
    if quick:
        return {"rounds": 1, "keys": keys or 1_000_000, "size": 64, "clients": 50}
    return {"rounds": 2, "keys": keys or 8_000_000, "size": 64, "clients": 50}


def pss_tree(pid):
    """PSS in bytes of `pid` and every descendant (a fork child shares pages with it)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total


def wait_saved(port, timeout=600):
    deadline = time.time() + timeout
    while info_field(port, "persistence", "rdb_bgsave_in_progress") != "0":
        if time.time() > deadline:
            raise RuntimeError("BGSAVE did not finish")
        time.sleep(0.02)
    if info_field(port, "persistence", "rdb_last_bgsave_status") != "ok":
        raise RuntimeError("BGSAVE failed")


def load(port, p, seconds):
    argv = [os.path.join(RELEASE, "redline"), "bench", "-p", str(port), "--mode",
            "redis-benchmark", "-c", str(p["clients"]), "-t", "set", "-r", str(p["keys"]),
            "-d", str(p["size"]), "-P", "1", "--duration", f"{seconds:.2f}", "--json"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def load_result(proc):
    out, _ = proc.communicate(timeout=900)
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            row = json.loads(line)
            return {"ops_per_sec": row["ops_per_sec"], "p99_ms": row["latency_ms"]["p99"],
                    "max_ms": row["latency_ms"]["max"], "errors": row["errors"]}
    raise RuntimeError("redline bench printed no JSON")


def measure(procs, server, p):
    if server == "redline-server":
        proc, port = procs.redline_server(["--enable-debug-command", "yes"])
    else:
        proc, port = procs.redis(["--enable-debug-command", "yes"])
    try:
        cli(port, "DEBUG", "POPULATE", p["keys"], "key", p["size"])
        dataset = int(info_field(port, "memory", "used_memory"))
        started = time.time()
        cli(port, "BGSAVE")
        wait_saved(port)
        idle_save = time.time() - started
        window = max(2.0, idle_save * 1.5 + 1.0)

        baseline = load_result(load(port, p, window))

        bench = load(port, p, window)
        time.sleep(0.5)
        started = time.time()
        cli(port, "BGSAVE")
        wait_saved(port)
        loaded_save = time.time() - started
        during = load_result(bench)

        # The memory, in a run of its own: sampling it slows the server (see above).
        bench = load(port, p, window)
        time.sleep(0.5)
        before = pss_tree(proc.pid)
        peak, stop = [before], threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], pss_tree(proc.pid))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        cli(port, "BGSAVE")
        wait_saved(port)
        stop.set()
        sampler.join()
        sampled = load_result(bench)
        return {"server": server, "dataset_bytes": dataset, "pss_before": before,
                "pss_peak": peak[0], "peak_over_dataset": peak[0] / dataset,
                "peak_over_before": peak[0] / before,
                "growth_over_dataset": (peak[0] - before) / dataset,
                "idle_save_s": idle_save, "loaded_save_s": loaded_save, "window_s": window,
                "baseline": baseline, "during": during, "during_sampled": sampled}
    finally:
        procs.stop(proc)


def run(quick, keys=None, servers=SERVERS):
    p = plan(quick, keys)
    runs, notes = [], []
    procs = Procs()
    try:
        for r in range(p["rounds"]):
            for server in rotation(list(servers), r):
                try:
                    row = measure(procs, server, p)
                except Exception as e:  # a failed round is reported, not fatal
                    notes.append(f"{server} round {r}: {e}")
                    continue
                row["round"] = r
                runs.append(row)
                log(f"bgsave r{r} {server}: dataset {row['dataset_bytes'] / 2**20:.0f} MiB, "
                    f"peak {row['peak_over_before']:.2f}x of the PSS before, save {row['loaded_save_s']:.1f} s, "
                    f"p99 {row['baseline']['p99_ms']:.2f} -> {row['during']['p99_ms']:.2f} ms")
    finally:
        procs.close()
    flags = {"dataset": f"DEBUG POPULATE {p['keys']} key {p['size']}",
             "load": f"redline bench --mode redis-benchmark -c {p['clients']} -t set "
                     f"-r {p['keys']} -d {p['size']} -P 1 --duration <window>",
             "memory": "PSS of the server and its children, every 20 ms, in a loaded "
                       "BGSAVE of its own (the latencies are measured unsampled)",
             "rounds": p["rounds"]}
    return {"flags": flags, "runs": runs, "notes": notes}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--keys", type=int, default=None)
    ap.add_argument("--servers", default=",".join(SERVERS), help="comma list")
    args = ap.parse_args()
    print(json.dumps(run(args.quick, args.keys, args.servers.split(",")), indent=1))
