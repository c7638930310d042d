#!/usr/bin/env python3
"""Runs redis-py's own test suite (a checkout of its repository, tag v5.0.9) against
redis-server and redline-server side by side and writes compat/REPORT-redis-py.md.

A second suite beside Redis's Tcl one: written by a client library's authors, it checks
what a client sees (replies, errors, connection handling) through a real client. The
tests run with redis-py's own conftest against one server at a time (`--redis-url`),
without the module and TLS tests (`-m "not onlycluster and not redismod and not ssl"`),
then its cluster tests against a cluster of three masters of each kind, in a virtual
environment with pinned test dependencies from PyPI.

    python3 compat/redis_py.py --redis-py-src /path/to/redis-py --redline-bin target/release/redline-server
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from suite_report import free_port, print_counts, server_version, start_server, write_report

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "target" / "redis-py-venv"
REPORT = ROOT / "compat" / "REPORT-redis-py.md"
# What redis-py 5.0.9's tests import, pinned so runs compare.
REQUIREMENTS = ["pytest==7.4.4", "pytest-asyncio==0.21.1", "pytest-timeout==2.3.1",
                "mock==4.0.3", "packaging", "async-timeout>=4.0.2", "ujson", "numpy"]
MARKERS = "not onlycluster and not redismod and not ssl"


def venv_python() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *REQUIREMENTS], check=True)
    return python


def cluster_ready(port: int) -> bool:
    out = subprocess.run(["redis-cli", "-p", str(port), "cluster", "info"],
                         capture_output=True, text=True).stdout
    return "cluster_state:ok" in out


def run_suite(python: Path, src: Path, name: str, binary: str, cluster: bool) -> dict:
    """Outcome per test id for one server, or for a cluster of three masters."""
    ports = [free_port(cluster) for _ in range(3 if cluster else 1)]
    with tempfile.TemporaryDirectory() as scratch:
        procs = []
        for port in ports:
            node_dir = Path(scratch) / str(port)
            node_dir.mkdir()
            extra = ["--cluster-enabled", "yes"] if cluster else []
            procs.append(start_server([binary, "--port", str(port), "--bind", "127.0.0.1",
                                       "--save", "", "--dir", str(node_dir),
                                       "--enable-debug-command", "yes", *extra], port,
                                      "redis_py"))
        xml = Path(scratch) / "results.xml"
        try:
            if cluster:
                subprocess.run(["redis-cli", "--cluster", "create",
                                *[f"127.0.0.1:{p}" for p in ports], "--cluster-yes"],
                               check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                deadline = time.time() + 30
                while not all(cluster_ready(p) for p in ports):
                    if time.time() > deadline:
                        sys.exit(f"redis_py: the {name} cluster did not come up")
                    time.sleep(0.2)
            selection = (["tests/test_cluster.py", "tests/test_asyncio/test_cluster.py",
                          "--redis-cluster-nodes", "3", "-m", "not redismod and not ssl"]
                         if cluster else ["tests", "-m", MARKERS])
            subprocess.run([str(python), "-m", "pytest", *selection, "-q",
                            "-p", "no:cacheprovider", "--timeout", "30",
                            f"--junitxml={xml}",
                            f"--redis-url=redis://127.0.0.1:{ports[0]}/{0 if cluster else 9}"],
                           cwd=src, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=1800)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait()
        outcomes = {}
        for case in ET.parse(xml).getroot().iter("testcase"):
            test = f"{case.get('classname')}::{case.get('name')}"
            kinds = {child.tag for child in case}
            if kinds & {"failure", "error"}:
                outcomes[test] = "failed"
            elif "skipped" in kinds:
                outcomes[test] = "skipped"
            else:
                outcomes[test] = "passed"
    name = f"{name} ({'cluster' if cluster else 'standalone'})"
    print_counts("redis_py", name, outcomes)
    return outcomes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redis-py-src", required=True, type=Path)
    ap.add_argument("--redline-bin", required=True)
    ap.add_argument("--redis-bin", default="redis-server")
    args = ap.parse_args()
    if not (args.redis_py_src / "tests" / "conftest.py").exists():
        sys.exit(f"redis_py: {args.redis_py_src} is not a redis-py checkout")
    python = venv_python()
    redis, redline = {}, {}
    for cluster in (False, True):
        redis.update(run_suite(python, args.redis_py_src, "redis-server", args.redis_bin,
                               cluster))
        redline.update(run_suite(python, args.redis_py_src, "redline-server",
                                 args.redline_bin, cluster))
    version = server_version(args.redis_bin)
    how = ("Generated by `make compat-redis-py REDIS_PY_SRC=<redis-py checkout>` "
           "(compat/redis_py.py): redis-py's own tests, run with its conftest against one "
           f"server at a time, `-m \"{MARKERS}\"`; then its cluster tests "
           "(`test_cluster.py`, sync and asyncio) against a cluster of three masters of "
           "each kind, made by `redis-cli --cluster create`.")
    missing = write_report(REPORT, "redis-py's test suite against redline-server", how,
                           [f"redis-server: {version}"], redis, redline)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
