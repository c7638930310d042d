#!/bin/bash
# usage: bench/scripts/slot_keys.sh <server-binary> <port>: 1M keys (DEBUG POPULATE) on a one-node cluster, then
# resharding's queries: GETKEYSINSLOT 10 and COUNTKEYSINSLOT over 2000 slots.
bin=$1; port=$2
d=$(mktemp -d); cd $d
$bin --port $port --cluster-enabled yes --save "" --appendonly no --enable-debug-command yes > log 2>&1 &
pid=$!
sleep 0.5
redis-cli -p $port cluster addslotsrange 0 16383 > /dev/null
redis-cli -p $port debug populate 1000000 > /dev/null
python3 - $port <<'PY'
import socket, sys, time
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")
def cmd(*args):
    out = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in map(lambda x: str(x).encode(), args))
    s.sendall(out)
def read():
    line = f.readline()
    if line[:1] == b"*":
        n = int(line[1:])
        return [read() for _ in range(n)]
    if line[:1] == b"$":
        n = int(line[1:]); data = f.read(n + 2); return data[:-2]
    return line.strip()
for name, args in (("first GETKEYSINSLOT (builds the index)", ("CLUSTER", "GETKEYSINSLOT", 1, 10)),):
    t = time.perf_counter(); cmd(*args); read(); print(f"{name}: {1000*(time.perf_counter()-t):.2f} ms")
for name in ("GETKEYSINSLOT", "COUNTKEYSINSLOT"):
    t = time.perf_counter()
    for slot in range(0, 16384, 8):
        if name == "GETKEYSINSLOT": cmd("CLUSTER", name, slot, 10)
        else: cmd("CLUSTER", name, slot)
        read()
    el = time.perf_counter() - t
    print(f"{name}: {el*1e6/2048:.1f} us per call (2048 slots)")
PY
kill $pid; wait $pid 2>/dev/null; rm -rf $d
