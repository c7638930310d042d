"""REST scenarios: the rest-cache service with each cache backend under wrk (Debian's wrk
4.1 with the Lua scripts in bench/rest/), standalone Redis and a 3-master cluster. Before
every run the database is a fresh file seeded with the same 10,000 users and Redis is
flushed; backends alternate in rotation within every (mode, scenario) cell."""

import itertools
import json
import os
import subprocess
import time

from common import log, rotation, with_others_cpu
from procs import RELEASE, ROOT, Procs, flushall, free_port, wait_port

BACKENDS = ["redline", "fred", "redis-rs"]
SCENARIOS = ["get_single", "get_list", "post", "mixed"]


def plan(quick):
    if quick:
        return {"rounds": 3, "duration_secs": 3, "warmup_secs": 1, "threads": 2,
                "connections": 64,
                "standalone": SCENARIOS, "cluster": ["get_single", "mixed"]}
    return {"rounds": 3, "duration_secs": 10, "warmup_secs": 2, "threads": 2,
            "connections": 64, "standalone": SCENARIOS, "cluster": SCENARIOS}


_wrk_runs = itertools.count(int(time.time()))


def wrk(script, url, p, seconds):
    # The trailing tag makes POSTed emails unique across wrk processes (warm-up, run).
    argv = ["wrk", f"-t{p['threads']}", f"-c{p['connections']}", f"-d{seconds}s",
            "--timeout", "5s", "-s", os.path.join(ROOT, "bench", "rest", f"{script}.lua"), url,
            "--", str(next(_wrk_runs))]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"wrk printed no result: {out.stdout[-300:]} {out.stderr[-300:]}")


def one_run(procs, backend, scenario, redis_url, cluster, ports, p):
    flushall(ports)
    d = procs.tmpdir("rest")
    port = free_port()
    env = dict(os.environ, PORT=str(port), SQLITE_DB=os.path.join(d, "users.db"),
               REDIS_URL=redis_url, REDIS_CLUSTER="1" if cluster else "0",
               CACHE_BACKEND=backend, RESEED="1")
    svc = procs.spawn([os.path.join(RELEASE, "rest-cache")], os.path.join(d, "log"), env=env)
    try:
        wait_port(port, proc=svc)
        url = f"http://127.0.0.1:{port}"
        if p["warmup_secs"]:
            wrk(scenario, url, p, p["warmup_secs"])
        return wrk(scenario, url, p, p["duration_secs"])
    finally:
        procs.stop(svc)


def run(quick):
    p = plan(quick)
    runs, notes = [], []
    procs = Procs()
    try:
        for mode in ("standalone", "cluster"):
            cluster = mode == "cluster"
            try:
                ports = procs.cluster(3) if cluster else None
            except Exception as e:
                log(f"{mode}: {e}")
                notes.append(f"{mode} skipped: the cluster did not start ({e})")
                continue
            if cluster:
                redis_url = ",".join(f"redis://127.0.0.1:{x}" for x in ports)
            else:
                _, port = procs.redis()
                ports = [port]
                redis_url = f"redis://127.0.0.1:{port}"
            for scenario in p[mode]:
                for r in range(p["rounds"]):
                    for backend in rotation(BACKENDS, r):
                        try:
                            # The service is started and reaped inside the run, so its
                            # CPU counts as the run's own, with wrk's.
                            res = with_others_cpu(
                                procs.pids(),
                                lambda: one_run(procs, backend, scenario, redis_url, cluster,
                                                ports, p))
                        except Exception as e:
                            log(f"rest: {backend} {mode} {scenario}: {e}")
                            notes.append(f"{backend} {mode} {scenario} round {r}: {e}")
                            continue
                        res.update({"backend": backend, "mode": mode, "scenario": scenario,
                                    "round": r})
                        runs.append(res)
                        log(f"rest {mode} {scenario} r{r} {backend}: {res['rps']:.0f} req/s "
                            f"p99 {res['latency_us']['p99']:.0f} us, "
                            f"others used {res.get('others_cpu', '?')} cores")
    finally:
        procs.close()
    flags = dict(p)
    flags["wrk"] = (f"wrk -t{p['threads']} -c{p['connections']} -d{p['duration_secs']}s "
                    f"--timeout 5s -s bench/rest/<scenario>.lua (after a "
                    f"{p['warmup_secs']}s warm-up run)")
    flags["service"] = ("target/release/rest-cache, defaults: SQLITE_POOL=4, "
                        "CACHE_TIMEOUT_MS=1000, RESEED=1 on a fresh file per run")
    return {"flags": flags, "runs": runs, "notes": notes}
