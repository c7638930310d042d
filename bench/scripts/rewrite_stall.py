"""`python3 bench/scripts/rewrite_stall.py <redline-server> <rounds>`: max GET round trip
on one connection while another runs a command (and, for
BGREWRITEAOF, until the rewrite ends), on a server with 1M keys: BGREWRITEAOF (a cut in
the background) against SAVE (every shard held: what the rewrite did before), A B A B."""
import socket, subprocess, sys, tempfile, threading, time, statistics
BIN, ROUNDS, PORT = sys.argv[1], int(sys.argv[2]), 7411
d = tempfile.mkdtemp()
srv = subprocess.Popen([BIN, "--port", str(PORT), "--save", "", "--appendonly", "yes",
                        "--enable-debug-command", "yes", "--dir", d],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(1)
def cli(*a):
    return subprocess.run(["redis-cli", "-p", str(PORT), *a], capture_output=True, text=True).stdout
cli("debug", "populate", "1000000", "key", "100")
def rewriting():
    return "aof_rewrite_in_progress:1" in cli("info", "persistence")
while rewriting(): time.sleep(0.2)
def measure(cmd):
    s = socket.create_connection(("127.0.0.1", PORT)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    worst, samples, stop = [0.0], [], threading.Event()
    def loop():
        while not stop.is_set():
            t = time.perf_counter(); s.sendall(b"GET key:7\r\n"); s.recv(256)
            dt = time.perf_counter() - t; samples.append(dt); worst[0] = max(worst[0], dt)
    th = threading.Thread(target=loop); th.start(); time.sleep(0.5)
    t0 = time.perf_counter(); cli(cmd)
    while rewriting(): time.sleep(0.02)
    took = time.perf_counter() - t0
    time.sleep(0.3); stop.set(); th.join(); s.close()
    p99 = statistics.quantiles(samples, n=100)[98]
    print(f"{cmd:13s} took {took:5.2f} s; GET max {worst[0]*1000:8.1f} ms, p99 {p99*1000:6.2f} ms, {len(samples)} GETs", flush=True)
for _ in range(ROUNDS):
    measure("BGREWRITEAOF"); measure("SAVE")
cli("shutdown", "nosave"); srv.wait()
