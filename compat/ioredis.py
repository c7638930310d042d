#!/usr/bin/env python3
"""Runs ioredis's own tests (a checkout of its repository, tag v5.11.1) against
redis-server and redline-server side by side and writes compat/REPORT-ioredis.md.

ioredis is the most used Node.js client (BullMQ and many job queues run on it). Its
`test:js` mocha run (unit tests, and functional tests against one server on
localhost:6379; mock servers stand in for the failure cases) and its `test:cluster` run
(a cluster of three masters with one replica each on ports 3000-3005, which its CI
starts in a container; here `redis-cli --cluster create` builds it from six local
servers) go once per server. Tests of commands newer than Redis 7.0 fail on both.
Ports 6379 and 3000-3005 must be free.

    python3 compat/ioredis.py --ioredis-src /path/to/ioredis --redline-bin target/release/redline-server
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from suite_report import (npm_install, port_in_use, print_counts, server_version, start_server,
                          unique_name, write_report)

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "compat" / "REPORT-ioredis.md"
PORT = 6379
CLUSTER_PORTS = [3000, 3001, 3002, 3003, 3004, 3005]
MOCHA_ENV = {"TS_NODE_TRANSPILE_ONLY": "true", "NODE_ENV": "test"}


def mocha(src: Path, files: list, results: Path) -> dict:
    """Runs mocha on `files` with its JSON reporter; the report, or exits."""
    subprocess.run(["npx", "mocha", *files, "--reporter", "json",
                    "--reporter-option", f"output={results}"],
                   cwd=src, env=dict(os.environ, **MOCHA_ENV), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=1800)
    if not results.exists():
        sys.exit(f"ioredis: mocha wrote no results for {files}")
    return json.loads(results.read_text())


def record(report: dict, part: str, outcomes: dict, reasons: dict) -> None:
    """Adds a mocha JSON report's tests to `outcomes` as `part > full title`."""
    kinds = (("passes", "passed"), ("failures", "failed"), ("pending", "skipped"))
    for key, outcome in kinds:
        for case in report.get(key, []):
            test = unique_name(outcomes, f"{part} > {case['fullTitle']}")
            outcomes[test] = outcome
            message = (case.get("err") or {}).get("message") or ""
            if outcome == "failed":
                reasons[test] = (message.splitlines() or [""])[0][:200]


def server_command(binary: str, port: int, directory: Path, *extra: str) -> list:
    return [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", str(directory), *extra]


def start_cluster(binary: str, scratch: Path) -> list:
    """Six cluster-enabled servers on CLUSTER_PORTS joined as three masters with a
    replica each; returns their processes once every node has settled."""
    procs = []
    for port in CLUSTER_PORTS:
        directory = scratch / f"node-{port}"
        directory.mkdir()
        procs.append(start_server(server_command(
            binary, port, directory, "--cluster-enabled", "yes",
            "--cluster-config-file", str(directory / "nodes.conf")), port, "ioredis"))
    subprocess.run(["redis-cli", "--cluster", "create",
                    *[f"127.0.0.1:{p}" for p in CLUSTER_PORTS], "--cluster-replicas", "1",
                    "--cluster-yes"], check=True, stdout=subprocess.DEVNULL, timeout=120)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(settled(port) for port in CLUSTER_PORTS):
            return procs
        time.sleep(0.5)
    stop(procs)
    sys.exit(f"ioredis: the cluster of {binary} did not settle")


def settled(port: int) -> bool:
    """Whether the node on `port` reports the cluster ok and lists all three replicas in
    CLUSTER SLOTS, which the tests read as soon as they start (a replica is listed once
    its gossiped replication offset is past 0, on both servers)."""
    def ask(*command: str) -> str:
        return subprocess.run(["redis-cli", "-p", str(port), "--json", *command],
                              stdout=subprocess.PIPE, timeout=10).stdout.decode()
    try:
        ranges = json.loads(ask("cluster", "slots"))
    except ValueError:
        return False
    # Each range: start, end, its master, then its replicas.
    replicas = sum(len(r) - 3 for r in ranges if isinstance(r, list))
    return "cluster_state:ok" in ask("cluster", "info") and replicas == 3


def stop(procs: list) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait()


def run_suite(src: Path, name: str, binary: str) -> tuple:
    """Outcome per test for one server, and the first line of each failure's message."""
    outcomes, reasons = {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        (scratch / "single").mkdir()
        procs = [start_server(server_command(binary, PORT, scratch / "single",
                                             "--enable-debug-command", "yes"), PORT, "ioredis")]
        try:
            report = mocha(src, ["test/helpers/*.ts", "test/unit/**/*.ts",
                                 "test/functional/**/*.ts"], scratch / "js.json")
        finally:
            stop(procs)
        record(report, "test:js", outcomes, reasons)
        procs = start_cluster(binary, scratch)
        try:
            report = mocha(src, ["test/cluster/**/*.ts"], scratch / "cluster.json")
        finally:
            stop(procs)
        record(report, "test:cluster", outcomes, reasons)
    print_counts("ioredis", name, outcomes)
    return outcomes, reasons


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ioredis-src", required=True, type=Path)
    ap.add_argument("--redline-bin", required=True)
    ap.add_argument("--redis-bin", default="redis-server")
    args = ap.parse_args()
    src = args.ioredis_src.resolve()
    package = src / "package.json"
    if not package.exists() or json.loads(package.read_text()).get("name") != "ioredis":
        sys.exit(f"ioredis: {src} is not an ioredis checkout")
    busy = [p for p in (PORT, *CLUSTER_PORTS) if port_in_use(p)]
    if busy:
        sys.exit(f"ioredis: ports {busy} are in use; ioredis's tests need them")
    npm_install(src)
    redis_bin = shutil.which(args.redis_bin) or args.redis_bin
    redline_bin = str(Path(args.redline_bin).resolve())
    redis, _ = run_suite(src, "redis-server", redis_bin)
    redline, reasons = run_suite(src, "redline-server", redline_bin)
    how = ("Generated by `make compat-ioredis IOREDIS_SRC=<ioredis checkout>` "
           "(compat/ioredis.py): ioredis's `test:js` mocha run (unit and functional "
           "tests, one server on port 6379) and its `test:cluster` run (three masters "
           "with a replica each on ports 3000-3005, built with `redis-cli --cluster "
           "create`), once with redis-server and once with redline-server. Tests of "
           "commands newer than Redis 7.0 (the hash-field expiry commands, HSCAN "
           "NOVALUES) fail on redis-server 7.0 too.")
    version = json.loads(package.read_text()).get("version", "unknown")
    missing = write_report(REPORT, "ioredis's tests against redline-server", how,
                           [f"ioredis: {version} (package.json)",
                            f"redis-server: {server_version(redis_bin)}"],
                           redis, redline, reasons)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
