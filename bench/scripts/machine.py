"""What the report states about the machine and the software measured."""

import os
import platform
import re
import subprocess

from procs import RELEASE, ROOT


def _run(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (out.stdout + out.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _lock_version(name):
    try:
        text = open(os.path.join(ROOT, "Cargo.lock")).read()
    except OSError:
        return None
    m = re.search(r'\[\[package\]\]\nname = "%s"\nversion = "([^"]+)"' % re.escape(name), text)
    return m.group(1) if m else None


def _go_version(module):
    try:
        text = open(os.path.join(ROOT, "bench", "go", "go.mod")).read()
    except OSError:
        return None
    m = re.search(re.escape(module) + r"\s+(v\S+)", text)
    return m.group(1) if m else None


def _first(pattern, text):
    m = re.search(pattern, text)
    return m.group(1) if m else (text.splitlines()[0] if text else "")


def describe():
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) // 1024 // 1024} GiB"
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": mem,
        "kernel": platform.release(),
        "loadavg_start": os.getloadavg()[0],
        "versions": {
            "rustc": _first(r"rustc (\S+)", _run(["rustc", "--version"])),
            "go": _first(r"go version go(\S+)", _run(["go", "version"])),
            "redis-server": _first(r"v=(\S+)", _run(["redis-server", "--version"])),
            "redis-benchmark": _first(r"redis-benchmark (\S+)", _run(["redis-benchmark", "--version"])),
            "wrk": _first(r"wrk (\S+)", _run(["wrk", "-v"])),
            "redline": _lock_version("redline"),
            "redline-server": _first(r"v=(\S+)", _run([os.path.join(RELEASE, "redline-server"), "--version"])),
            "fred": _lock_version("fred"),
            "redis-rs": _lock_version("redis"),
            "rueidis": _go_version("github.com/redis/rueidis"),
            "go-redis": _go_version("github.com/redis/go-redis/v9"),
            "git": _run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]),
        },
        "profile": "cargo --release (lto = fat, codegen-units = 1); Go default build",
    }
