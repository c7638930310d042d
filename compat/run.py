#!/usr/bin/env python3
"""Runs Redis's own Tcl test suite (external-server mode) against redis-server and
redline-server side by side, unit by unit, and writes compat/REPORT.md.

With `--mode spawned` the suite runs in its own default mode instead: it starts its servers
itself from `src/redis-server` of a scratch copy of its tree (the server under test linked
there), with its own configuration files, restarts, replicas and DEBUG commands. That mode
reaches units and tests external mode skips; it writes compat/REPORT-spawned.md and
compat/results/summary-spawned.json. Adding `--tls` runs it as Redis's `./runtest --tls`
does (clients, replication and the cluster bus over TLS, certificates made by Redis's
utils/gen-test-certs.sh; Tcl's `tls` package is needed): compat/REPORT-spawned-tls.md and
summary-spawned-tls.json.

Each unit gets a fresh server of each kind, on a free loopback port, in a private temporary
directory. External mode runs the suite unmodified as each job of Redis's own
external-server CI does (`--tags -slow`; `--mode external-cluster`: `--cluster-mode`
against a one-node cluster; `--mode external-nodebug`: a server with the default
configuration, tests needing DEBUG skipped), REPORT-<mode>.md for the latter two.
Spawned mode runs it as Redis's daily CI does, slow tests included. Spawned mode also runs Redis's separate cluster
and Sentinel suites (real Sentinels, `redis-sentinel`, watching the servers under test). Raw output goes to compat/results/<server>/<unit>.log and the parsed
results to compat/results/summary.json; REPORT.md is generated from the summary.

    python3 compat/run.py --redis-src /path/to/redis-7.0.15 --redline-bin target/release/redline-server
    python3 compat/run.py ... --units type/stream,geo --servers redline   # a subset

Only units and servers that ran are replaced in summary.json, so a partial run refreshes
part of the report.
"""

import argparse
from collections import Counter
from dataclasses import dataclass
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from suite_report import free_port, server_version as version

# The units the compatibility issue measures (Redis 7.0.15 passes 1,924 tests in them
# here). Order: quick core types first, so a partial run is still useful.
UNITS = [
    "type/string", "type/incr", "type/list", "type/list-3", "type/hash", "type/set",
    "type/zset", "type/stream", "type/stream-cgroups", "expire", "keyspace", "multi",
    "pubsub", "protocol", "info-command", "other", "bitops", "bitfield", "hyperloglog",
    "geo", "sort", "scan", "dump", "introspection", "introspection-2", "tracking",
    "latency-monitor", "lazyfree", "slowlog", "pause", "quit", "scripting", "functions",
]

# The configuration Redis's own external-server CI starts its server with
# (.github/workflows/external.yml), besides the port, the address and the directory.
DEBUG_ARGS = ["--enable-protected-configs", "yes", "--enable-debug-command", "yes",
              "--enable-module-command", "yes"]


@dataclass(frozen=True)
class ExternalJob:
    """One job of Redis's external-server CI: the server's arguments, whether it is made a
    one-node cluster owning every slot first, and the suite's options."""

    server_args: list[str]
    cluster: bool
    options: list[str]


# Redis's external-server CI runs three jobs, each a mode here. All skip slow tests (one
# of them needs a forked child, which an external server's test cannot find, and aborts
# its unit on redis-server too; its daily CI runs them in spawned mode) and check object
# encodings.
EXTERNAL_JOBS = {
    "external": ExternalJob(DEBUG_ARGS, False, ["--tags", "-slow"]),
    # The suite in its cluster-protocol mode (one database, no tests tagged
    # cluster:skip) against a cluster-enabled server.
    "external-cluster": ExternalJob(["--cluster-enabled", "yes"] + DEBUG_ARGS, True,
                                    ["--cluster-mode", "--tags", "-slow"]),
    # A server with the default configuration: DEBUG, protected configurations and
    # MODULE refused, and the tests that need them skipped.
    "external-nodebug": ExternalJob([], False, ["--tags", "-slow -needs:debug"]),
}

# The units of the suite's own list (test_helper.tcl `all_tests`) run in spawned mode:
# all but printver and tls (it runs only with --tls); then its integration/ units
# (replication, persistence, the tools).
SPAWNED_UNITS = [
    "dump", "auth", "protocol", "keyspace", "scan", "info", "info-command",
    "type/string", "type/incr", "type/list", "type/list-3", "type/set", "type/zset",
    "type/hash", "type/stream", "type/stream-cgroups", "sort", "expire", "other", "multi",
    "quit", "aofrw", "acl", "acl-v2", "latency-monitor", "pubsub", "pubsubshard", "slowlog",
    "scripting", "functions", "maxmemory", "introspection", "introspection-2", "limits",
    "obuf-limits", "bitops", "bitfield", "geo", "memefficiency", "hyperloglog", "lazyfree",
    "wait", "pause", "querybuf", "pendingquerybuf", "tracking", "oom-score-adj", "shutdown",
    "networking", "cluster", "client-eviction", "violations", "replybufsize", "cluster-scripting",
    "cluster/misc", "cluster/links", "type/list-2",
    "integration/block-repl", "integration/replication", "integration/replication-2",
    "integration/replication-3", "integration/replication-4", "integration/replication-psync",
    "integration/replication-buffer", "integration/shutdown", "integration/aof",
    "integration/aof-multi-part", "integration/rdb", "integration/corrupt-dump",
    "integration/corrupt-dump-fuzzer", "integration/convert-zipmap-hash-on-load",
    "integration/convert-ziplist-hash-on-load", "integration/convert-ziplist-zset-on-load",
    "integration/logging", "integration/psync2", "integration/psync2-reg",
    "integration/psync2-pingoff", "integration/psync2-master-restart", "integration/failover",
    "integration/redis-cli", "integration/redis-benchmark", "integration/dismiss-mem",
    "cluster-suite", "sentinel-suite",
]

# The suite's unit that runs only in its --tls mode, first in that mode.
TLS_UNITS = ["tls"]

# Redis's separate suites, last in SPAWNED_UNITS, each run once per server, each of
# their files reported as a unit `<suite>/<file>`: the cluster suite (`runtest-cluster`:
# tests/cluster/tests/*.tcl on up to 20 nodes it starts itself) and the Sentinel suite
# (`runtest-sentinel`: five real Sentinels, src/redis-sentinel, failing over five
# servers under test).
CLUSTER_SUITE = "cluster-suite"
SENTINEL_SUITE = "sentinel-suite"
SEPARATE_SUITES = {CLUSTER_SUITE: "tests/cluster/run.tcl",
                   SENTINEL_SUITE: "tests/sentinel/run.tcl"}

# Tools the suite runs from its `src/` besides the server.
SUITE_TOOLS = ["redis-cli", "redis-benchmark", "redis-check-aof", "redis-check-rdb"]

OK = re.compile(r"^\[ok\]: (.*) \(\d+ ms\)$")
# The cluster suite prints "HH:MM:SS> <test>: " then OK or "FAILED: <why>", sometimes
# with progress output between them.
CLUSTER_TEST = re.compile(r"^\d\d:\d\d:\d\d> (.*)$")
CLUSTER_UNIT = re.compile(r"^Testing unit: (\S+)\.tcl$")
ERR = re.compile(r"^\[err\]: (.*) in (tests/\S+)$")
# An error the suite reports outside a test's assertions ("Can't start the Redis
# server"): the test around it still prints [ok] since its body never ran.
OTHER_ERR = re.compile(r"^\[err\]: (.*)$")
SKIP = re.compile(r"^\[(?:skip|ignore)\]: (.*)$")
EXCEPTION = re.compile(r"^\[exception\]: (.*)$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def wait_ready(port: int, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(64).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"server on port {port} not ready after {timeout}s")


def start_server(binary: str, workdir: Path, job: ExternalJob) -> tuple[subprocess.Popen, int]:
    """Starts a server as `job`'s CI does, on a loopback port, in a private directory."""
    port = free_port(cluster=job.cluster)
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--logfile", str(workdir / "server.log")] + job.server_args
    proc = subprocess.Popen(args, cwd=workdir, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, start_new_session=True)
    wait_ready(port, proc)
    if job.cluster:
        own_every_slot(port)
    return proc, port


def own_every_slot(port: int, timeout: float = 30.0) -> None:
    """Makes the server on `port` a one-node cluster owning all 16,384 slots, as the CI's
    `redis-cli cluster addslots $(seq 0 16383)`, and waits until it says so."""
    cli = ["redis-cli", "-h", "127.0.0.1", "-p", str(port)]
    added = subprocess.run(cli + ["cluster", "addslots"] + [str(s) for s in range(16384)],
                           capture_output=True, text=True, timeout=timeout)
    if added.stdout.strip() != "OK":
        raise RuntimeError(f"CLUSTER ADDSLOTS answered {added.stdout.strip() or added.stderr.strip()}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = subprocess.run(cli + ["cluster", "info"], capture_output=True, text=True,
                              timeout=timeout).stdout
        if "cluster_state:ok" in info:
            return
        time.sleep(0.1)
    raise RuntimeError(f"cluster on port {port} not ok after {timeout}s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def parse(output: str) -> dict:
    passed, failed, skipped = [], {}, []
    exception = None
    lines = [ANSI.sub("", line.rstrip("\r")) for line in output.splitlines()]
    pending = None  # an OTHER_ERR the next [ok] is failed with
    for i, line in enumerate(lines):
        if m := OK.match(line):
            if pending is None:
                passed.append(m.group(1))
            else:
                failed.setdefault(m.group(1), pending[:300])
                pending = None
        elif m := ERR.match(line):
            detail = lines[i + 1].strip() if i + 1 < len(lines) else ""
            failed.setdefault(m.group(1), detail[:300])
        elif m := OTHER_ERR.match(line):
            pending = m.group(1)
        elif m := SKIP.match(line):
            skipped.append(m.group(1))
        elif m := EXCEPTION.match(line):
            if exception is None:
                tail = [l.strip() for l in lines[i + 1:i + 4] if l.strip()]
                exception = " / ".join([m.group(1)] + tail)[:400]
    return {"passed": passed, "failed": failed, "skipped": skipped, "exception": exception}


def suite_file(unit: str) -> str:
    """The suite's name of a unit: `type/list` is `unit/type/list`; `integration/...`
    units are named in full."""
    return unit if unit.startswith("integration/") else f"unit/{unit}"


def run_unit(kind: str, binary: str, unit: str, src: Path, results: Path,
             timeout: int, baseport: int, mode: str) -> dict:
    job = EXTERNAL_JOBS[mode]
    workdir = Path(tempfile.mkdtemp(prefix=f"compat-{kind}-"))
    logs = kind if mode == "external" else f"{kind}-{mode}"
    log_path = results / logs / f"{unit.replace('/', '_')}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    proc = None
    try:
        proc, port = start_server(binary, workdir, job)
        cmd = ["tclsh", "tests/test_helper.tcl", "--host", "127.0.0.1", "--port", str(port),
               "--single", suite_file(unit), "--baseport", str(baseport), "--portcount", "100",
               "--timeout", str(timeout)] + job.options
        try:
            run = subprocess.run(cmd, cwd=src, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, timeout=timeout,
                                 start_new_session=True)
            output = run.stdout.decode("utf-8", "replace")
            timed_out = False
        except subprocess.TimeoutExpired as e:
            output = (e.stdout or b"").decode("utf-8", "replace")
            timed_out = True
        crashed = proc.poll() is not None
        log_path.write_text(output)
        result = parse(output)
        if timed_out:
            result["exception"] = result["exception"] or f"unit timed out after {timeout}s"
        if crashed:
            result["exception"] = (result["exception"] or "") + " [server process died]"
    except RuntimeError as e:
        result = {"passed": [], "failed": {}, "skipped": [], "exception": str(e)}
        log_path.write_text(str(e))
    finally:
        if proc is not None:
            stop(proc)
        shutil.rmtree(workdir, ignore_errors=True)
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def spawned_tree(src: Path, binary: str, tls: bool = False) -> Path:
    """A scratch copy of the suite whose `src/redis-server` is `binary`; with `tls`, the
    certificates its `--tls` mode reads (tests/tls, made by Redis's own script)."""
    tree = Path(tempfile.mkdtemp(prefix="compat-tree-"))
    shutil.copytree(src / "tests", tree / "tests")
    if tls:
        subprocess.run(["bash", str(src / "utils" / "gen-test-certs.sh")], cwd=tree,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (tree / "src").mkdir()
    (tree / "src" / "redis-server").symlink_to(shutil.which(binary) or binary)
    # Sentinels are always Redis's: a redis-server binary called by this name runs as one.
    sentinel = shutil.which("redis-sentinel") or shutil.which("redis-server")
    if sentinel:
        (tree / "src" / "redis-sentinel").symlink_to(sentinel)
    for tool in SUITE_TOOLS:
        found = shutil.which(tool)
        if found:
            (tree / "src" / tool).symlink_to(found)
    return tree


def run_suite(cmd: list[str], tree: Path, timeout: int) -> tuple[str, bool]:
    """Runs the suite's `cmd` in `tree` for at most `timeout` seconds, then kills its
    process group (the servers it started are in it): its output, and whether it timed
    out."""
    proc = subprocess.Popen(cmd, cwd=tree, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if timed_out:
        out, _ = proc.communicate()
    return (out or b"").decode("utf-8", "replace"), timed_out


def run_unit_spawned(kind: str, tree: Path, unit: str, results: Path, timeout: int,
                     baseport: int, skip: list[str], tag: str, tls: bool) -> dict:
    log_path = results / f"{kind}-{tag}" / f"{unit.replace('/', '_')}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    cmd = ["tclsh", "tests/test_helper.tcl", "--single", suite_file(unit),
           "--baseport", str(baseport), "--portcount", "4000", "--clients", "2",
           "--timeout", str(timeout)] + (["--tls"] if tls else [])
    for test in skip:
        cmd += ["--skiptest", test]
    output, timed_out = run_suite(cmd, tree, timeout)
    log_path.write_text(output)
    result = parse(output)
    if timed_out:
        result["exception"] = result["exception"] or f"unit timed out after {timeout}s"
    result["seconds"] = round(time.monotonic() - started, 1)
    shutil.rmtree(tree / "tests" / "tmp", ignore_errors=True)
    return result


def cluster_test_name(head: str) -> str:
    """A cluster- or Sentinel-suite test's name from what precedes its verdict: the name
    and ": ",
    then any progress output (which has no ": " of its own)."""
    head = head.rstrip()
    if head.endswith(":"):
        return head[:-1]
    return head.rsplit(": ", 1)[0]


def parse_separate_suite(suite: str, output: str) -> dict:
    """Results per `<suite>/<file>` unit from one run of the cluster or Sentinel suite."""
    units: dict = {}
    current = None
    pending = None
    lines = [ANSI.sub("", line.rstrip("\r")) for line in output.splitlines()]
    for line in lines:
        if m := CLUSTER_UNIT.match(line):
            current = units.setdefault(f"{suite}/{m.group(1)}", {
                "passed": [], "failed": {}, "skipped": [], "exception": None})
            pending = None
            continue
        if current is None:
            continue
        if m := CLUSTER_TEST.match(line):
            pending = line = m.group(1)
        if pending is None:
            if line.startswith("FAILED: caught an error") and current["exception"] is None:
                current["exception"] = line[len("FAILED: "):][:400]
            continue
        if "FAILED: " in line:
            at = line.index("FAILED: ")
            head = line[:at] if line is pending else pending
            current["failed"].setdefault(cluster_test_name(head), line[at + 8:][:300])
            pending = None
        elif line.endswith("OK"):
            head = line[:-2] if line is pending else pending
            current["passed"].append(cluster_test_name(head))
            pending = None
    return units


def kill_processes_under(tree: Path) -> None:
    """Kills every process whose working directory is inside `tree`."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd.startswith(f"{tree}/"):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


def run_separate_suite(suite: str, kind: str, tree: Path, results: Path, timeout: int,
                       tag: str, tls: bool) -> dict:
    """Runs Redis's cluster or Sentinel suite once in `tree`; its results per file."""
    log_path = results / f"{kind}-{tag}" / f"{suite}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    script = SEPARATE_SUITES[suite]
    cmd = ["tclsh", script] + (["--tls"] if tls else [])
    output, timed_out = run_suite(cmd, tree, timeout)
    # Its servers run in the background, outside the suite's process group: the suite
    # kills them at its end, a timed-out run leaves them behind.
    kill_processes_under(tree)
    log_path.write_text(output)
    units = parse_separate_suite(suite, output)
    seconds = round(time.monotonic() - started, 1)
    if timed_out and units:
        last = list(units.values())[-1]
        last["exception"] = last["exception"] or f"suite timed out after {timeout}s"
    for result in units.values():
        result["seconds"] = seconds
    tmp = tree / Path(script).parent / "tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(exist_ok=True)
    return units


# A needs.tsv reason starting with this marks a test redline-server's run skips: one
# that would abort its unit there (the suite stops a unit at an error outside a test's
# own checks), so the unit's later tests are reached. It still counts as not passed.
SKIPPED = "skipped on redline-server's run"


def skipped_tests(needs: dict, unit: str) -> list[str]:
    """The tests of `unit` redline-server's run skips (see `SKIPPED`)."""
    return [test for (u, test), reason in needs.items() if u == unit and reason.startswith(SKIPPED)]


def load_needs(path: Path) -> dict:
    """Tests that need a later issue's feature: `unit<TAB>test name<TAB>reason`."""
    needs = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                parts = line.split("\t")
                if len(parts) >= 3:
                    needs[(parts[0], parts[1])] = parts[2]
    return needs


# Units whose number of tests is not fixed: the report says so beside their counts.
VARIABLE_COUNT = {
    "integration/psync2": "runs as many cycles of 10 tests as fit in 40 s, a random number "
                          "on either server (5 or 6 here)",
    "integration/psync2-reg": "runs its two link-killing tests at random for 20 s",
    "cluster-suite/03-failover-loop": "kills a master or a replica, picked at random, in each "
                                      "of 19 iterations; a master's iteration runs more tests",
}


def name_shape(test: str) -> str:
    """A test's name with its numbers masked: psync2 names its tests after a random
    layout ("Set #3 to replicate from #0") and counts cycles for a fixed time, so the
    two servers' runs name the same tests differently."""
    return re.sub(r"\d+", "#", test)


def missing_tests(redis_ok: Counter, redline_ok: Counter, short: Counter) -> list[str]:
    """Names of the tests redis-server passed and redline-server did not: for each
    shape redline-server passed `short[shape]` times fewer, that many of redis-server's
    names it did not pass itself."""
    unmatched = redis_ok - redline_ok
    missing = []
    for shape, count in short.items():
        names = [t for t in unmatched.elements() if name_shape(t) == shape]
        names += [shape] * (count - len(names))
        missing += names[:count]
    return missing


def report_units(summary: dict, spawned: bool, tls: bool = False) -> list[str]:
    """The report's units in order, the cluster suite's files in place of it."""
    units = []
    for unit in (TLS_UNITS if tls else []) + (SPAWNED_UNITS if spawned else UNITS):
        if unit in SEPARATE_SUITES:
            prefix = f"{unit}/"
            units += sorted(u for u in summary.get("units", {}) if u.startswith(prefix))
        else:
            units.append(unit)
    return units


def external_header(mode: str) -> list[str]:
    """The report's opening lines for one of the external-server CI's jobs."""
    job = EXTERNAL_JOBS[mode]
    make = "make compat" + ("" if mode == "external" else f" MODE={mode}")
    server = " ".join(job.server_args) or "its default configuration"
    return [
        f"Generated by `{make}` (compat/run.py --mode {mode}), as Redis's own external-server",
        "CI job does it (.github/workflows/external.yml). Redis's Tcl suite, tag 7.0.15, runs",
        f"unmodified in external-server mode with `{' '.join(job.options)}`, one unit at a",
        "time, against a fresh redis-server and a fresh redline-server, each started with",
        f"`--save \"\"` and {'`' + server + '`' if job.server_args else server}"
        + (", then made a one-node cluster owning every slot (CLUSTER ADDSLOTS)."
           if job.cluster else "."),
    ]


def write_report(summary: dict, needs: dict, path: Path, meta: dict, mode: str,
                 tls: bool = False) -> None:
    spawned = mode == "spawned"
    rows, gaps = [], []
    total_redis = total_redline = total_both = 0
    for unit in report_units(summary, spawned, tls):
        entry = summary.get("units", {}).get(unit)
        if not entry or "redis" not in entry:
            continue
        # Test names repeat within a unit (scripting runs each test for EVAL and for
        # FCALL), so passes are counted as multisets, not sets; and some carry numbers
        # drawn at random or counted at run time (psync2's layouts and cycles), so
        # they are compared by shape (see `name_shape`).
        redis_ok = Counter(entry["redis"]["passed"])
        redline = entry.get("redline", {"passed": [], "failed": {}, "exception": "not run"})
        redline_ok = Counter(redline["passed"])
        redis_shapes = Counter(name_shape(t) for t in redis_ok.elements())
        redline_shapes = Counter(name_shape(t) for t in redline_ok.elements())
        both = redis_shapes & redline_shapes
        missing = missing_tests(redis_ok, redline_ok, redis_shapes - redline_shapes)
        total_redis += sum(redis_ok.values())
        total_redline += sum(redline_ok.values())
        total_both += sum(both.values())
        note = VARIABLE_COUNT.get(unit, "")
        if redline.get("exception"):
            note = "aborted: " + redline["exception"].replace("|", "\\|")[:160]
        rows.append(f"| {unit} | {sum(redis_ok.values())} | {sum(both.values())} | {len(missing)} | {note} |")
        for test in missing:
            reason = needs.get((unit, test))
            error = redline["failed"].get(test)
            if error is None:
                error = "not reached (unit aborted earlier)" if redline.get("exception") else "not run"
            gaps.append((unit, test, reason, error))
    pct = 100.0 * total_both / total_redis if total_redis else 0.0
    lines = [
        "# Redis 7.0.15 test suite against redline-server",
        "",
        *([
            "Generated by `make compat MODE=spawned` (compat/run.py --mode spawned). Redis's",
            "Tcl suite, tag 7.0.15, runs unmodified in its own mode (it starts its servers from",
            "`src/redis-server`, with its configuration files, restarts and replicas) as Redis's",
            "daily CI runs it (slow tests included, object encodings checked), one unit at a time, once",
            "with redis-server and once with redline-server there. Redis's separate cluster",
            "suite (`runtest-cluster`, up to 20 nodes it starts itself) and Sentinel suite",
            "(`runtest-sentinel`: five real Sentinels, `redis-sentinel` 7.0, fail over five",
            "servers under test) run once per server; their files are the `cluster-suite/`",
            "and `sentinel-suite/` units.",
            *([
                "",
                "**TLS mode** (`make compat MODE=spawned TLS=1`, the suites' `--tls`): the",
                "servers listen on TLS only and replicate and run the cluster bus over TLS,",
                "with the certificates Redis's utils/gen-test-certs.sh makes.",
            ] if tls else []),
        ] if spawned else external_header(mode)),
        "",
        f"- redis-server: {meta.get('redis_version', '?')}; redline-server: {meta.get('redline_version', '?')}",
        f"- run: {meta.get('date', '?')}",
        "",
        f"**Total: redline-server passes {total_both} of the {total_redis} tests redis-server "
        f"passes ({pct:.1f}%).**",
        "",
        "| unit | redis-server passes | redline-server passes of those | missing | note |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "## Tests redis-server passes and redline-server does not",
        "",
        "Reason column: the later issue a test waits for, or why it does not apply",
        "(compat/needs.tsv), empty when it is a gap of this one. A test whose reason starts",
        f"with \"{SKIPPED}\" is skipped there, so that its unit goes on (it counts as",
        "not passed). Error: the first line the suite printed for it.",
        "",
        "| unit | test | waits for | first error |",
        "|---|---|---|---|",
    ]
    for unit, test, reason, error in gaps:
        esc = lambda s: s.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {unit} | {esc(test)} | {reason or ''} | {esc(error)[:200]} |")
    path.write_text("\n".join(lines) + "\n")


def main() -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--redis-src", required=True, help="redis source tree at tag 7.0.15")
    ap.add_argument("--redis-bin", default="redis-server")
    ap.add_argument("--redline-bin", default=str(here.parent / "target/release/redline-server"))
    ap.add_argument("--units", default=None, help="comma-separated (default: every unit of the mode)")
    ap.add_argument("--servers", default="redis,redline")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per unit")
    ap.add_argument("--out", default=str(here))
    ap.add_argument("--mode", choices=list(EXTERNAL_JOBS) + ["spawned"], default="external",
                    help="external: the suite against running servers (the default); "
                         "external-cluster: the same in its cluster mode against one-node "
                         "clusters; external-nodebug: against servers with the default "
                         "configuration; spawned: the suite starts the servers itself")
    ap.add_argument("--tls", action="store_true",
                    help="spawned mode only: the suite's --tls mode (clients, replication "
                         "and the cluster bus over TLS)")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite REPORT.md from results/summary.json without running")
    args = ap.parse_args()

    src = Path(args.redis_src).resolve()
    if not (src / "tests/test_helper.tcl").exists():
        print(f"compat: {src} is not a redis source tree", file=sys.stderr)
        return 2
    out = Path(args.out)
    results = out / "results"
    results.mkdir(parents=True, exist_ok=True)
    spawned = args.mode == "spawned"
    if args.tls and not spawned:
        print("compat: --tls needs --mode spawned", file=sys.stderr)
        return 2
    # Names of the summary, the report and the logs' directories.
    tag = "spawned-tls" if args.tls else args.mode
    summary_path = results / ("summary.json" if tag == "external" else f"summary-{tag}.json")
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    summary.setdefault("units", {})
    # The servers start in their own directories: resolve relative paths first.
    binaries = {kind: str(Path(b).resolve()) if "/" in b else b
                for kind, b in (("redis", args.redis_bin), ("redline", args.redline_bin))}
    servers = [s for s in args.servers.split(",") if s]
    default_units = (TLS_UNITS if args.tls else []) + (SPAWNED_UNITS if spawned else UNITS)
    units = [u for u in (args.units or ",".join(default_units)).split(",") if u]
    meta = summary.setdefault("meta", {})
    meta["redis_version"] = version(binaries["redis"])
    meta["redline_version"] = version(binaries["redline"])
    if not args.report_only:
        meta["date"] = time.strftime("%Y-%m-%d %H:%M")

    needs = load_needs(out / "needs.tsv")
    trees = ({kind: spawned_tree(src, binaries[kind], args.tls) for kind in servers}
             if spawned else {})
    for unit in ([] if args.report_only else units):
        for kind in servers:
            # The suite's own test server listens on a port of its range (and that
            # port + 10000): a range per run, so runs side by side do not collide.
            baseport = 20000 + (os.getpid() % 80) * 100
            if spawned and unit in SEPARATE_SUITES:
                timeout = max(args.timeout, 3600)
                suite = run_separate_suite(unit, kind, trees[kind], results, timeout, tag,
                                           args.tls)
                for name, r in suite.items():
                    summary["units"].setdefault(name, {})[kind] = r
                    print(f"compat: {name:34} {kind:8} ok {len(r['passed']):4} err "
                          f"{len(r['failed']):4}", flush=True)
                summary_path.write_text(json.dumps(summary, indent=1, sort_keys=True))
                continue
            if spawned:
                skip = skipped_tests(needs, unit) if kind == "redline" else []
                r = run_unit_spawned(kind, trees[kind], unit, results, args.timeout, baseport,
                                     skip, tag, args.tls)
            else:
                r = run_unit(kind, binaries[kind], unit, src, results, args.timeout, baseport,
                             args.mode)
            summary["units"].setdefault(unit, {})[kind] = r
            flag = f" (aborted: {r['exception'][:100]})" if r["exception"] else ""
            print(f"compat: {unit:22} {kind:8} ok {len(r['passed']):4} err "
                  f"{len(r['failed']):4} in {r['seconds']}s{flag}", flush=True)
            summary_path.write_text(json.dumps(summary, indent=1, sort_keys=True))

    for tree in trees.values():
        shutil.rmtree(tree, ignore_errors=True)
    report = out / ("REPORT.md" if tag == "external" else f"REPORT-{tag}.md")
    write_report(summary, needs, report, meta, args.mode, args.tls)
    print(f"compat: wrote {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
