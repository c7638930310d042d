"""Fill comparison: `redline fill` vs `redis-cli --pipe`, loading the same number of keys
of the same sizes into redis-server 7.0 (flushed before each run), alternating. Wall time
of each command; the protocol file for --pipe is generated beforehand and not timed."""

import os
import subprocess
import time

from common import log, rotation
from procs import RELEASE, Procs, cli, flushall
from server import pipe

FILL = "redline fill"
FILL_SET = "redline fill --mset 1"
PIPE = "redis-cli --pipe"


def plan(quick):
    return {"rounds": 2 if quick else 3, "keys": 1_000_000, "key_size": 16, "value_size": 64}


def redline_fill(port, p, extra=()):
    argv = [os.path.join(RELEASE, "redline"), "fill", "-h", "127.0.0.1", "-p", str(port),
            "--keys", str(p["keys"]), "--key-size", str(p["key_size"]),
            "--value-size", str(p["value_size"]), "--json", *extra]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"redline fill exited {out.returncode}: {out.stderr[-300:]}")


def fill_available():
    binary = os.path.join(RELEASE, "redline")
    if os.environ.get("BENCH_NO_REDLINE_CLI"):
        return False, "redline-cli did not build from this tree (an older binary is not measured)", False
    if not os.path.exists(binary):
        return False, "target/release/redline was not built", False
    out = subprocess.run([binary, "fill", "--help"], capture_output=True, text=True, timeout=30)
    text = out.stdout + out.stderr
    if out.returncode != 0 or "--keys" not in text:
        return False, "`redline fill` is not implemented in this build (no --keys flag)", False
    # Since fill batches keys into MSETs, `--mset 1` (plain SETs, like the --pipe file) is
    # measured too, so the tool and the protocol choice can be told apart.
    return True, "", "--mset" in text


def run(quick):
    p = plan(quick)
    ok, why, has_mset = fill_available()
    tools = [FILL, FILL_SET, PIPE] if has_mset else [FILL, PIPE]
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
            for tool in rotation(tools, r):
                flushall([port])
                t0 = time.perf_counter()
                try:
                    if tool == FILL:
                        redline_fill(port, p)
                    elif tool == FILL_SET:
                        redline_fill(port, p, ["--mset", "1"])
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
                             f"--value-size {p['value_size']} (defaults: 4 connections, "
                             "pipeline 8192" + (", MSET of 32 keys per command)" if has_mset else ")"))
    flags["redis-cli --pipe"] = "same count and sizes as SETs from a pre-generated RESP file"
    return {"flags": flags, "runs": runs, "notes": notes}
