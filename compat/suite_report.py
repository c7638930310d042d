"""The side-by-side report of a client library's own test suite, run once against
redis-server and once against redline-server (redis_py.py, go_redis.py, hiredis.py),
and what those runners share."""

import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    """A loopback port free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_version(binary: str) -> str:
    """What `binary --version` prints, or "unknown"."""
    try:
        out = subprocess.run([binary, "--version"], stdout=subprocess.PIPE, timeout=10)
        return out.stdout.decode().strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def passed(outcomes: dict) -> set:
    return {test for test, outcome in outcomes.items() if outcome == "passed"}


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
