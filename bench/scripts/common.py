"""Small shared pieces: running a command that prints one JSON line, rotation order for
alternating runs, logging to stderr."""

import json
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
