#!/usr/bin/env python3
"""`make bench` driver: builds the release binaries and the Go harness, runs the sections
(clients, rest, server, fill, families, persistence, replication, tls, bgsave, cache,
tunnel), writes bench/results/<date>-<section>[-quick][-N].json (-N for a later run of the
same day), and regenerates bench/REPORT.md from the newest result of every section.

    python3 bench/scripts/bench.py [--quick]
        [--only clients,rest,server,fill,families,persistence,replication,tls,bgsave,cache,tunnel]
        [--no-build] [--rdb-size 1gb]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bgsave  # noqa: E402
import cache  # noqa: E402
import clients  # noqa: E402
import families  # noqa: E402
import fill  # noqa: E402
import machine  # noqa: E402
import persistence  # noqa: E402
import replication  # noqa: E402
import report  # noqa: E402
import rest  # noqa: E402
import server  # noqa: E402
import tls  # noqa: E402
import tunnel  # noqa: E402
from common import log  # noqa: E402
from procs import ROOT  # noqa: E402

SECTIONS = {"clients": clients.run, "rest": rest.run, "server": server.run, "fill": fill.run,
            "families": families.run, "persistence": persistence.run,
            "replication": replication.run, "tls": tls.run, "bgsave": bgsave.run,
            "cache": cache.run, "tunnel": tunnel.run}
RESULTS = os.path.join(ROOT, "bench", "results")
# Tools a section cannot run without (`make bench-deps` installs them): checked before any
# section runs, so a missing one stops the run instead of writing a result of failed runs
# over the last good one.
TOOLS = {"rest": ["wrk"], "server": ["redis-benchmark"], "families": ["redis-benchmark"],
         "persistence": ["redis-benchmark"], "replication": ["redis-benchmark"],
         "tls": ["redis-benchmark"], "bgsave": ["redis-benchmark"],
         "tunnel": ["redis-benchmark"]}


def build():
    log("build: cargo build --release (rest-cache, redline-server, bench-clients, redline)")
    cargo = os.environ.get("CARGO", "cargo")
    for pkgs in (["-p", "rest-cache", "-p", "redline-server", "-p", "redline-bench-clients"],
                 ["-p", "redline-cli"]):
        out = subprocess.run([cargo, "build", "--release", *pkgs], cwd=ROOT)
        if out.returncode != 0 and "redline-cli" not in pkgs:
            sys.exit("build failed")
        if out.returncode != 0:
            # An older target/release/redline may still be there; do not measure it.
            os.environ["BENCH_NO_REDLINE_CLI"] = "1"
            log("build: redline-cli failed to build; the fill comparison will be skipped")
    log("build: go build bench/go")
    os.makedirs(os.path.join(ROOT, "target", "bench-go"), exist_ok=True)
    out = subprocess.run(["go", "build", "-o", os.path.join(ROOT, "target", "bench-go", "bench-go"),
                          "."], cwd=os.path.join(ROOT, "bench", "go"))
    if out.returncode != 0:
        sys.exit("go build failed")


def result_path(date, name, quick):
    """results/<date>-<section>[-quick].json, or -2, -3... after it when a run of the same
    day is already there (notes and commits cite those files)."""
    stem = os.path.join(RESULTS, f"{date}-{name}{'-quick' if quick else ''}")
    path, n = stem + ".json", 1
    while os.path.exists(path):
        n += 1
        path = f"{stem}-{n}.json"
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the QUICK=1 plan (< 15 min)")
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma list of sections")
    ap.add_argument("--no-build", action="store_true", help="use the binaries already built")
    ap.add_argument("--rdb-size", default=None,
                    help="persistence: size of the RDB whose load time is measured (default 1gb, "
                         "64mb with --quick)")
    args = ap.parse_args()
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    for s in only:
        if s not in SECTIONS:
            sys.exit(f"unknown section {s!r} (choose from {', '.join(SECTIONS)})")
    missing = sorted({t for s in only for t in TOOLS.get(s, []) if not shutil.which(t)})
    if missing:
        sys.exit(f"missing {', '.join(missing)}: run `make bench-deps` first")
    if args.rdb_size:
        os.environ["BENCH_RDB_SIZE"] = args.rdb_size
    if not args.no_build:
        build()
    os.makedirs(RESULTS, exist_ok=True)
    date = time.strftime("%Y-%m-%d")
    started = time.time()
    for name in only:
        log(f"section {name}{' (quick)' if args.quick else ''}")
        t0 = time.time()
        info = machine.describe()
        result = SECTIONS[name](args.quick)
        result.update({"section": name, "quick": args.quick,
                       "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)),
                       "seconds": round(time.time() - t0, 1), "machine": info})
        result["machine"]["loadavg_end"] = os.getloadavg()[0]
        path = result_path(date, name, args.quick)
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        log(f"section {name}: {result['seconds']}s -> {os.path.relpath(path, ROOT)}")
    report.write()
    log(f"done in {time.time() - started:.0f}s; bench/REPORT.md regenerated")


if __name__ == "__main__":
    main()
