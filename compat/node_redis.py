#!/usr/bin/env python3
"""Runs node-redis's own client tests (a checkout of its repository, tag redis@5.12.1)
against redis-server and redline-server side by side and writes
compat/REPORT-node-redis.md.

node-redis's test utilities start every server they need with `docker run` (one per
set of server arguments, clusters of two or three masters, replicas, Sentinels) and
remove them with `docker rm -f`. Here a stand-in named `docker`, first on PATH, starts
the server under test as a local process instead, with the same arguments, on the port
the utilities picked (Sentinels are always redis-server's, as in the other runners).
Commands the stand-in has no local meaning for (`docker exec` into a container, used by
the TLS tests to read certificates) fail on both servers alike. The suite runs with
`--redis-version=7.0`, so tests of later Redis versions are skipped on both.

    python3 compat/node_redis.py --node-redis-src /path/to/node-redis --redline-bin target/release/redline-server
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from suite_report import (case_outcome, npm_build, print_counts, server_version, unique_name,
                          write_report)

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "compat" / "REPORT-node-redis.md"

# `docker` as node-redis 5's test utilities call it: `run --init -e PORT=<port> [-v
# <conf>:<path>] -d --network host <image> <server arguments>`, and `rm -f <id>`. The
# id is the process id of the server started.
DOCKER_STANDIN = r"""#!/bin/bash
# Written by redline's compat/node_redis.py: runs $SERVER_UNDER_TEST where node-redis's
# tests would run a container.
state=$STANDIN_STATE
case "$1" in
  run)
    shift
    port="" conf=""
    while [ $# -gt 0 ]; do
      case "$1" in
        --init|-d) shift;;
        -e) case "$2" in PORT=*) port="${2#PORT=}";; esac; shift 2;;
        -v) conf="${2%%:*}"; shift 2;;
        --network) shift 2;;
        *) shift; break;;
      esac
    done
    dir=$(mktemp -d "$state/server.XXXXXX")
    cd "$dir" || exit 1
    if [ -n "$conf" ]; then
      # A Sentinel: its file is written without waiting, so wait for it here.
      for _ in $(seq 1 100); do [ -s "$conf" ] && break; sleep 0.02; done
      cp "$conf" sentinel.conf
      "$SENTINEL_SERVER" sentinel.conf --sentinel --dir "$dir" > server.log 2>&1 < /dev/null &
    else
      "$SERVER_UNDER_TEST" --port "$port" --save '' "$@" --dir "$dir" > server.log 2>&1 < /dev/null &
    fi
    echo $! > "$dir/pid"
    echo $!;;
  rm)
    pid="${@: -1}"
    kill "$pid" 2>/dev/null
    exit 0;;
  *)
    echo "the docker stand-in has no '$1'" >&2
    exit 1;;
esac
"""


def stop_all(state: Path) -> None:
    """Stops every server the stand-in started that is still running."""
    for pid_file in state.glob("server.*/pid"):
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except (ValueError, OSError):
            pass


def run_suite(src: Path, name: str, binary: str, sentinel: str) -> tuple:
    """Outcome per test (`describe > test`) for one server, and the first line of each
    failure's message."""
    client = src / "packages" / "client"
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        standin = scratch / "bin" / "docker"
        standin.parent.mkdir()
        standin.write_text(DOCKER_STANDIN)
        standin.chmod(0o755)
        state = scratch / "servers"
        state.mkdir()
        results = scratch / "results.xml"
        env = dict(os.environ, PATH=f"{standin.parent}{os.pathsep}{os.environ['PATH']}",
                   SERVER_UNDER_TEST=binary, SENTINEL_SERVER=sentinel,
                   STANDIN_STATE=str(state))
        try:
            subprocess.run(["npx", "mocha", "-r", "tsx", "--exit", "./lib/**/*.spec.ts",
                            "--redis-version=7.0", "--reporter", "xunit",
                            "--reporter-options", f"output={results}"],
                           cwd=client, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=3600)
        finally:
            stop_all(state)
        if not results.exists():
            sys.exit(f"node-redis: mocha wrote no results against {name}")
        root = ET.parse(results).getroot()
    outcomes, reasons = {}, {}
    for case in root.iter("testcase"):
        test = unique_name(outcomes, f"{case.get('classname')} > {case.get('name')}")
        outcomes[test], reason = case_outcome(case)
        if reason:
            reasons[test] = reason
    print_counts("node-redis", name, outcomes)
    return outcomes, reasons


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--node-redis-src", required=True, type=Path)
    ap.add_argument("--redline-bin", required=True)
    ap.add_argument("--redis-bin", default="redis-server")
    args = ap.parse_args()
    src = args.node_redis_src.resolve()
    package = src / "packages" / "client" / "package.json"
    if not package.exists() or json.loads(package.read_text()).get("name") != "@redis/client":
        sys.exit(f"node-redis: {src} is not a node-redis checkout")
    npm_build(src)
    redis_bin = shutil.which(args.redis_bin) or args.redis_bin
    redline_bin = str(Path(args.redline_bin).resolve())
    redis, _ = run_suite(src, "redis-server", redis_bin, redis_bin)
    redline, reasons = run_suite(src, "redline-server", redline_bin, redis_bin)
    how = ("Generated by `make compat-node-redis NODE_REDIS_SRC=<node-redis checkout>` "
           "(compat/node_redis.py): the mocha tests of node-redis's client package "
           "(`packages/client`) with `--redis-version=7.0`, every server they start "
           "with `docker run` started as a local process instead (redis-server's "
           "Sentinels both times), once with redis-server and once with "
           "redline-server. The TLS tests read certificates out of a container and "
           "fail on both; the tests of Redis 7.2 and later are skipped on both. "
           "Timing-based tests can fail on either server on a loaded machine.")
    version = json.loads(package.read_text()).get("version", "unknown")
    missing = write_report(REPORT, "node-redis's tests against redline-server", how,
                           [f"@redis/client: {version} (packages/client/package.json)",
                            f"redis-server: {server_version(redis_bin)}"],
                           redis, redline, reasons)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
