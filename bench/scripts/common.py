"""Small shared pieces: running a command that prints one JSON line, running
redis-benchmark and keeping its rows, rotation order for alternating runs, the CPU others
used during a run, logging to stderr, a minimal RESP connection."""

import csv
import io
import json
import os
import resource
import socket
import subprocess
import sys
import time


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rotation(items, round_no):
    """Round r runs items starting at r mod n: A B C, B C A, C A B... Every item takes
    every position equally often, so warm-up or drift effects do not favour one side."""
    n = len(items)
    return [items[(round_no + i) % n] for i in range(n)]


def json_line(argv, timeout, env=None, cwd=None):
    """Runs argv and returns the last stdout line that parses as a JSON object."""
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    for line in reversed(out.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    raise RuntimeError(f"{argv[0]} exited {out.returncode} without a JSON line: "
                       f"{out.stderr.strip()[-400:]}")


def redis_benchmark(target, tests, pipeline, p, timeout=900):
    """Runs `redis-benchmark <target> -t <tests> --csv` (`target`: its connection
    arguments) with the plan's request count for `pipeline`, clients and keyspace, and
    returns one row per test: test, rps, p50_ms, p99_ms."""
    argv = ["redis-benchmark", *target, "-t", tests, "-n", str(p["requests"][pipeline]),
            "-c", str(p["clients"]), "-P", str(pipeline), "-r", str(p["keyspace"]), "--csv"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    # With --cluster, redis-benchmark prints the node list before the CSV.
    lines = out.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"test"')), len(lines))
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    if not rows:
        raise RuntimeError(f"redis-benchmark printed nothing: {out.stderr[-300:]}")
    # "LPUSH (needed to benchmark LPOP)" -> "LPUSH"
    return [{"test": row["test"].split()[0], "rps": float(row["rps"]),
             "p50_ms": float(row.get("p50_latency_ms", 0) or 0),
             "p99_ms": float(row.get("p99_latency_ms", 0) or 0)} for row in rows]


def keep_rows(runs, notes, label, tags, bench, pids):
    """Calls `bench()` for a list of rows (as `redis_benchmark` returns); tags each with
    `tags`, the 1-minute load average as the run ended and the cores other processes used
    meanwhile (`with_others_cpu`; `pids`: the section's own servers), and appends it to
    `runs`. A failed run is recorded in `notes` and the section goes on."""
    try:
        measured = with_others_cpu(pids, lambda: {"rows": bench()})
    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
        notes.append(f"{label}: {e}")
        return
    load, others = measured["loadavg"], measured.get("others_cpu")
    for row in measured["rows"]:
        row.update(tags, loadavg=load, others_cpu=others)
        runs.append(row)
    log(f"{label} (load {load:.2f}, others used {others} cores): "
        + " ".join(f"{x['test']}={x['rps']:.0f}" for x in measured["rows"]))


def _busy_ticks():
    """Non-idle CPU time of the whole machine (all cores), in clock ticks; steal counts,
    as time a hypervisor gave to someone else."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle, iowait = fields[3], fields[4] if len(fields) > 4 else 0
    return sum(fields[:8]) - idle - iowait


def _pid_ticks(pid):
    """user + system clock ticks of process `pid` (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[11]) + int(rest[12])
    except (OSError, IndexError, ValueError):
        return 0


def cpu_seconds(pid):
    """user + system CPU seconds of process `pid` so far (0 once it is gone)."""
    return _pid_ticks(pid) / os.sysconf("SC_CLK_TCK")


def with_others_cpu(pids, run):
    """Calls `run()` (which waits for its child process) and adds two noise figures to the
    dict it returns: `others_cpu`, the cores that processes other than that child and the
    servers `pids` kept busy meanwhile, on average (unlike the load average it covers just
    this run and leaves out the run's own client and server, so a disturbed round stands
    out); and `loadavg`, the 1-minute load average as the run ends (which counts them)."""
    hz = os.sysconf("SC_CLK_TCK")
    t0, busy0 = time.monotonic(), _busy_ticks()
    servers0 = sum(_pid_ticks(p) for p in pids)
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = run()
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.monotonic() - t0
    own = ((sum(_pid_ticks(p) for p in pids) - servers0) / hz
           + (kids1.ru_utime - kids0.ru_utime) + (kids1.ru_stime - kids0.ru_stime))
    others = (_busy_ticks() - busy0) / hz - own
    if wall > 0:
        res["others_cpu"] = round(max(0.0, others) / wall, 2)
    res["loadavg"] = round(os.getloadavg()[0], 2)
    return res


class Resp:
    """One kept-open RESP2 connection, for scripts that look often or race commands
    (a redis-cli process per look would blur their timings)."""

    def __init__(self, port, timeout=30):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode() if isinstance(a, str) else a
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)

    def _more(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise RuntimeError("server closed the connection")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._more()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read(self):
        """One reply: bytes, int, list or None; an error reply raises RuntimeError."""
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._more()
            value, self.buf = self.buf[:n], self.buf[n + 2:]
            return value
        if kind == b":":
            return int(rest)
        if kind == b"-":
            raise RuntimeError(f"server answered {line!r}")
        return rest

    def cmd(self, *args):
        self.send(*args)
        return self.read()

    def close(self):
        self.sock.close()
