"""The side-by-side report of a client library's own test suite, run once against
redis-server and once against redline-server (redis_py.py, go_redis.py, hiredis.py,
jedis.py, lettuce.py, bullmq.py, node_redis.py, ioredis.py), and what those
runners share."""

import os
import shutil
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path


def free_port(cluster: bool = False) -> int:
    """A loopback port free now; for a cluster node, one whose bus port (+10000) is free
    and valid too."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not cluster:
            return port
        if port + 10000 < 65536:
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + 10000))
                return port
            except OSError:
                pass


def server_version(binary: str) -> str:
    """What `binary --version` prints, or "unknown"."""
    try:
        out = subprocess.run([binary, "--version"], stdout=subprocess.PIPE, timeout=10)
        return out.stdout.decode().strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


LAUNCHER = """#!/bin/sh
# Written by redline's compat runners: the server under test is $SERVER_UNDER_TEST;
# a Sentinel is always redis-server's.
for a in "$@"; do
  if [ "$a" = "--sentinel" ]; then exec "${SENTINEL_SERVER:-redis-server}" "$@"; fi
done
exec "$SERVER_UNDER_TEST" "$@"
"""


def install_launcher(path: Path) -> None:
    """A `redis-server` at `path` for suites that start servers by that name: it runs
    $SERVER_UNDER_TEST, or $SENTINEL_SERVER for a Sentinel (redline-server has no
    Sentinel mode, and the Sentinels are not what is tested)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(LAUNCHER)
    path.chmod(0o755)


def launcher_env(binary: str, sentinel: str) -> dict:
    """The environment that points the launcher at `binary`, and at `sentinel` for a
    Sentinel. Both are made absolute here: a suite may put the launcher itself first on
    PATH under the name `redis-server`."""
    def absolute(name: str) -> str:
        return os.path.abspath(name) if os.sep in name else shutil.which(name) or name
    return dict(os.environ, SERVER_UNDER_TEST=absolute(binary),
                SENTINEL_SERVER=absolute(sentinel))


def start_server(command: list, port: int, suite: str) -> subprocess.Popen:
    """Starts `command`, a server on loopback `port`, and waits until it answers PING;
    exits naming `suite` when it has not within 10 s."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit(f"{suite}: {command[0]} did not start on port {port}")


def port_in_use(port: int) -> bool:
    """Whether something listens on loopback `port` (suites with fixed ports need them
    free)."""
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def npm_install(src: Path) -> None:
    """`npm install` in a Node.js checkout, the first time only."""
    if not (src / "node_modules").exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=src, check=True,
                       stdout=subprocess.DEVNULL)


def npm_build(src: Path) -> None:
    """`npm install` (the first time) and `npm run build` in a Node.js checkout, as the
    suites' CI does before their tests."""
    npm_install(src)
    subprocess.run(["npm", "run", "build"], cwd=src, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def passed(outcomes: dict) -> set:
    return {test for test, outcome in outcomes.items() if outcome == "passed"}


def print_counts(suite: str, server: str, outcomes: dict) -> None:
    """One line: how many of the suite's tests passed, failed and were skipped."""
    counts = {kind: sum(v == kind for v in outcomes.values())
              for kind in ("passed", "failed", "skipped")}
    print(f"{suite}: {server}: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped")


def write_report(path: Path, title: str, how: str, versions: list, redis: dict,
                 redline: dict, reasons: dict = None) -> list:
    """Writes the report; returns the tests redis-server passes and redline-server does
    not. `reasons`: the first line of a failure's message, per test, shown beside it."""
    missing = sorted(passed(redis) - passed(redline))
    extra = sorted(passed(redline) - passed(redis))
    lines = [
        f"# {title}",
        "",
        how,
        "",
        *[f"- {v}" for v in versions],
        f"- run: {time.strftime('%Y-%m-%d %H:%M')}",
        "",
        f"**redline-server passes {len(passed(redis)) - len(missing)} of the "
        f"{len(passed(redis))} tests redis-server passes**, and {len(extra)} more.",
        "",
        "## Passed on redis-server, not on redline-server",
        "",
        *([f"- `{t}`" + (f": {reasons[t]}" if reasons and reasons.get(t) else "")
           for t in missing] or ["None."]),
        "",
        "## Passed on redline-server, not on redis-server",
        "",
        *([f"- `{t}`" for t in extra] or ["None."]),
        "",
    ]
    path.write_text("\n".join(lines))
    print(f"wrote {path}")
    return missing


def compare_with_launcher(run_tests, src: Path, redline_bin: str, redis_bin: str,
                          report: Path, title: str, how: str) -> int:
    """For the suites that start their servers through the launcher: `run_tests(src,
    name, binary, sentinel)` once with redis-server and once with redline-server (the
    Sentinels redis-server's both times), then the report. 1 when redline-server
    misses a test redis-server passes."""
    redis, _ = run_tests(src, "redis-server", redis_bin, redis_bin)
    redline, reasons = run_tests(src, "redline-server", redline_bin, redis_bin)
    missing = write_report(report, title, how, [f"redis-server: {server_version(redis_bin)}"],
                           redis, redline, reasons)
    return 1 if missing else 0


def run_maven_suite(suite: str, name: str, src: Path, env: dict, start: list, settle: float,
                    mvn: list, mvn_timeout: int, reports: Path, stop) -> tuple:
    """A Maven suite's run against one server: `stop()`, the suite's `start` command,
    `settle` seconds for its daemons' first syncs, `mvn`, `stop()` again; then the
    outcomes read from `reports` (exits when none ran)."""
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    stop()
    shutil.rmtree(reports, ignore_errors=True)
    try:
        subprocess.run(start, cwd=src, env=env, check=True, **quiet, timeout=300)
        time.sleep(settle)
        subprocess.run(mvn, cwd=src, env=env, **quiet, timeout=mvn_timeout)
    finally:
        stop()
    outcomes, reasons = surefire_outcomes(reports)
    if not outcomes:
        sys.exit(f"{suite}: no test ran against {name}")
    print_counts(suite, name, outcomes)
    return outcomes, reasons


def surefire_outcomes(reports: Path) -> tuple:
    """Outcome per test (`Class.method`) from Surefire's or Failsafe's XML reports (one
    format), and the first line of each failure's message."""
    outcomes, reasons = {}, {}
    for report in sorted(reports.glob("TEST-*.xml")):
        for case in ET.parse(report).getroot().iter("testcase"):
            test = f"{case.get('classname')}.{case.get('name')}"
            outcomes[test], reason = case_outcome(case)
            if reason:
                reasons[test] = reason
    return outcomes, reasons


def case_outcome(case: ET.Element) -> tuple:
    """A JUnit-format `<testcase>`'s outcome (passed, failed or skipped) and its failure's
    message on one line ("" when it did not fail)."""
    outcome, reason = "passed", ""
    for child in case:
        if child.tag in ("failure", "error"):
            outcome = "failed"
            reason = " ".join((child.get("message") or child.tag).split())[:200]
        elif child.tag == "skipped" and outcome == "passed":
            outcome = "skipped"
    return outcome, reason


def unique_name(outcomes: dict, test: str) -> str:
    """`test`, numbered when an earlier test of the run already has its name (suites
    that run a test once per client kind, or repeat a name within a file): the later
    ones become `name (2)`, `name (3)`, in run order, the same on both runs."""
    name, repeat = test, 2
    while name in outcomes:
        name = f"{test} ({repeat})"
        repeat += 1
    return name
