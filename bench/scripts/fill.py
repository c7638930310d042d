"""Fill comparison: `redline fill` vs `redis-cli --pipe`, loading the same number of keys
of the same sizes into redis-server 7.0 (flushed before each run), alternating. Wall time
of each command; the protocol file for --pipe is generated beforehand and not timed."""

import os
import subprocess
import time

from common import log, rotation
from procs import RELEASE, Procs, cli, flushall
from server import pipe

TOOLS = ["redline fill", "redis-cli --pipe"]


def plan(quick):
    return {"rounds": 2 if quick else 3, "keys": 1_000_000, "key_size": 16, "value_size": 64}


def redline_fill(port, p):
    argv = [os.path.join(RELEASE, "redline"), "fill", "-h", "127.0.0.1", "-p", str(port),
            "--keys", str(p["keys"]), "--key-size", str(p["key_size"]),
            "--value-size", str(p["value_size"]), "--json"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"redline fill exited {out.returncode}: {out.stderr[-300:]}")


def fill_available():
    binary = os.path.join(RELEASE, "redline")
    if os.environ.get("BENCH_NO_REDLINE_CLI"):
        return False, "redline-cli did not build from this tree (an older binary is not measured)"
    if not os.path.exists(binary):
        return False, "target/release/redline was not built"
    out = subprocess.run([binary, "fill", "--help"], capture_output=True, text=True, timeout=30)
    text = out.stdout + out.stderr
    if out.returncode != 0 or "--keys" not in text:
        return False, "`redline fill` is not implemented in this build (no --keys flag)"
    return True, ""


def run(quick):
    p = plan(quick)
    ok, why = fill_available()
    if not ok:
        return {"flags": p, "runs": [], "notes": [f"skipped: {why}"], "skipped": True}
    runs, notes = [], []
    procs = Procs()
    try:
        _, port = procs.redis()
        d = procs.tmpdir("fill")
        path = os.path.join(d, "fill.resp")
        # Same shape as redline fill's keys: key_size-byte names, value_size-byte values.
        key_fmt = "k%0" + str(p["key_size"] - 1) + "d"
        value_fmt = "%0" + str(p["value_size"]) + "d"
        from server import protocol_file
        protocol_file(path, p["keys"], key_fmt, value_fmt)
        for r in range(p["rounds"]):
            for tool in rotation(TOOLS, r):
                flushall([port])
                t0 = time.perf_counter()
                try:
                    if tool == "redline fill":
                        redline_fill(port, p)
                    else:
                        pipe(port, path)
                except Exception as e:
                    notes.append(f"{tool} round {r}: {e}")
                    continue
                seconds = time.perf_counter() - t0
                keys = int(cli(port, "DBSIZE"))
                # The rate counts commands sent; DBSIZE is recorded as a check.
                runs.append({"tool": tool, "round": r, "seconds": round(seconds, 3),
                             "dbsize": keys, "keys_per_sec": round(p["keys"] / seconds, 1)})
                log(f"fill r{r} {tool}: {keys} keys in {seconds:.2f}s")
    finally:
        procs.close()
    flags = dict(p)
    flags["target"] = "redis-server 7.0 (no persistence), FLUSHALL before each run"
    flags["redline fill"] = (f"redline fill --keys {p['keys']} --key-size {p['key_size']} "
                             f"--value-size {p['value_size']} (default 4 connections, "
                             "pipeline 8192)")
    flags["redis-cli --pipe"] = "same count and sizes from a pre-generated RESP file"
    return {"flags": flags, "runs": runs, "notes": notes}
