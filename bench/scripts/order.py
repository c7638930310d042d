"""Cross-connection order: how often a server runs two clients' commands in another
order than they were sent, when neither client waits for a reply in between.

Redis, on one thread, runs them in arrival order; a multi-core server runs connections
in parallel and must keep that order where the outcome shows it (see redline-server's
`net::input_turns`). Each scenario is a race run `--trials` times; the figure is how
many trials ended as Redis would not have ended them. Rounds alternate the servers.

    python3 bench/scripts/order.py [--trials 500] [--rounds 2] [--bin PATH ...]
                                   [--idle N] [--busy N] [--scenario NAME ...]

`--bin` compares redline-server builds (default: target/release/redline-server);
redis-server runs beside them as the reference. `--idle N` keeps N more connections
open and idle during the run, as a server with many clients has (redline-server
orders a push differently past 256 connections); `--busy N` keeps N connections
sending GETs meanwhile (redis-benchmark), so that other input interleaves.

Scenarios:
- blpop-new: two new connections send BLPOP k 0 one after the other, a third LPUSHes;
  out of order when the second BLPOP gets the element.
- blpop-open: the same on connections that have already run a command (PING), as a
  client library's pooled connections have.
- publish-then-unsubscribe: a PUBLISH, then the subscriber's UNSUBSCRIBE; out of order
  when the PUBLISH reached nobody.
- unsubscribe-then-publish: the reverse; out of order when it reached the subscriber.
- xreadgroup-then-del: a consumer that has blocked on the stream before sends
  XREADGROUP ... BLOCK 0, then another connection DELs the stream; out of order when
  the read gets NOGROUP (it ran after the DEL) instead of being ended by it.
"""

import argparse
import os
import socket
import subprocess

import procs as procs_mod
from common import Resp


def blpop(port, trials, warm):
    r = Resp(port, timeout=10)
    wrong = 0
    for i in range(trials):
        key = f"order:{i}"
        first, second = Resp(port, timeout=10), Resp(port, timeout=10)
        if warm:
            first.cmd("PING")
            second.cmd("PING")
        first.send("BLPOP", key, "0")
        second.send("BLPOP", key, "0")
        r.cmd("LPUSH", key, "x")
        first.sock.settimeout(1.0)
        try:
            got = first.read()
        except socket.timeout:
            got = None
        wrong += got is None
        first.close()
        second.close()
        r.cmd("DEL", key)
    r.close()
    return wrong


def publish(port, trials, publish_first):
    publisher = Resp(port, timeout=10)
    wrong = 0
    for i in range(trials):
        channel = f"order:{i}"
        sub = Resp(port, timeout=10)
        sub.cmd("SUBSCRIBE", channel)
        if publish_first:
            publisher.send("PUBLISH", channel, "m")
            sub.send("UNSUBSCRIBE", channel)
        else:
            sub.send("UNSUBSCRIBE", channel)
            publisher.send("PUBLISH", channel, "m")
        reached = publisher.read()
        wrong += (reached == 0) if publish_first else (reached == 1)
        sub.close()
    publisher.close()
    return wrong


def xreadgroup_then_del(port, trials):
    r = Resp(port, timeout=10)
    wrong = 0
    for i in range(trials):
        key = f"order:{i}"
        r.cmd("XGROUP", "CREATE", key, "g", "$", "MKSTREAM")
        reader = Resp(port, timeout=10)
        read = ["XREADGROUP", "GROUP", "g", "c", "BLOCK", "1", "STREAMS", key, ">"]
        reader.cmd(*read)
        read[5] = "0"
        reader.send(*read)
        r.cmd("DEL", key)
        reader.sock.settimeout(1.0)
        try:
            got = reader.read()
        except socket.timeout:
            got = None
        except RuntimeError as error:  # the error reply
            got = str(error)
        wrong += "no longer exists" not in str(got)
        reader.close()
    r.close()
    return wrong


SCENARIOS = [
    ("blpop-new", lambda port, n: blpop(port, n, warm=False)),
    ("blpop-open", lambda port, n: blpop(port, n, warm=True)),
    ("publish-then-unsubscribe", lambda port, n: publish(port, n, publish_first=True)),
    ("unsubscribe-then-publish", lambda port, n: publish(port, n, publish_first=False)),
    ("xreadgroup-then-del", xreadgroup_then_del),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--bin", action="append", default=[],
                    help="a redline-server binary (repeat to compare builds)")
    ap.add_argument("--idle", type=int, default=0,
                    help="idle connections held open during the run")
    ap.add_argument("--busy", type=int, default=0,
                    help="connections kept busy with GETs during the run "
                         "(redis-benchmark -c BUSY)")
    ap.add_argument("--scenario", action="append", default=[],
                    choices=[name for name, _ in SCENARIOS],
                    help="run only these scenarios (repeat)")
    args = ap.parse_args()
    scenarios = [s for s in SCENARIOS if not args.scenario or s[0] in args.scenario]
    bins = args.bin or [os.path.join(procs_mod.RELEASE, "redline-server")]
    servers = [("redis-server", None)] + [(b, b) for b in bins]
    totals = {}
    for _ in range(args.rounds):
        for label, binary in servers:
            procs = procs_mod.Procs()
            try:
                if binary is None:
                    _, port = procs.redis()
                else:
                    os.environ["REDLINE_SERVER_BIN"] = binary
                    _, port = procs.redline_server()
                idle = [Resp(port, timeout=10) for _ in range(args.idle)]
                for conn in idle:
                    conn.cmd("PING")
                busy = None
                if args.busy:
                    busy = subprocess.Popen(
                        ["redis-benchmark", "-p", str(port), "-c", str(args.busy),
                         "-n", "1000000000", "-q", "-t", "get"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for name, run in scenarios:
                    wrong = run(port, args.trials)
                    totals.setdefault((label, name), []).append(wrong)
                    load = open("/proc/loadavg").read().split()[0]
                    print(f"{label} {name}: {wrong} of {args.trials} out of order "
                          f"(load {load})", flush=True)
                for conn in idle:
                    conn.close()
                if busy:
                    busy.kill()
                    busy.wait()
            finally:
                procs.close()
    print("\nout of order, per round:")
    for (label, name), counts in totals.items():
        print(f"  {label:40} {name:26} {counts}")


if __name__ == "__main__":
    main()
