"""Processes the benchmarks start and always stop: redis-server (standalone and a
3-master cluster), redline-server, the rest-cache service. Loopback only, free ports,
private temporary directories; everything started here is killed by `Procs.close()`."""

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Where cargo puts release binaries: $CARGO_TARGET_DIR (relative to the root, where
# bench.py runs cargo) when set, as cargo itself does, else target/.
RELEASE = os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR") or "target", "release")
GO_BIN = os.path.join(ROOT, "target", "bench-go", "bench-go")


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_port(bus=False):
    """A port nobody listens on right now. With `bus`, also port + 10000 (a cluster node's
    bus port), which caps the port at 55535 as redis-server requires."""
    if not bus:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]
    for _ in range(1000):
        port = random.randint(20000, 55535)
        if _bindable(port) and _bindable(port + 10000):
            return port
    raise RuntimeError("no free port pair for a cluster node")


def wait_port(port, timeout=20.0, proc=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process on port {port} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout}s")


def cli(port, *args, check=True):
    """redis-cli against 127.0.0.1:port; stdout as text."""
    out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *map(str, args)],
                         capture_output=True, text=True, timeout=120)
    if check and out.returncode != 0:
        raise RuntimeError(f"redis-cli {args}: {out.stderr.strip()}")
    return out.stdout.strip()


def wait_ping(port, timeout=20.0, proc=None):
    wait_port(port, timeout, proc)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cli(port, "PING", check=False) == "PONG":
            return
        time.sleep(0.05)
    raise RuntimeError(f"port {port} never answered PING")


def info_field(port, section, field):
    for line in cli(port, "INFO", section).splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return None


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Procs:
    """Owns every process and directory a benchmark section starts."""

    def __init__(self):
        self.procs = []
        self.dirs = []

    def pids(self):
        """The process ids of everything running now (the section's own servers, for
        `common.with_others_cpu`)."""
        return [p.pid for p in self.procs]

    def tmpdir(self, prefix):
        d = tempfile.mkdtemp(prefix=f"redline-bench-{prefix}-")
        self.dirs.append(d)
        return d

    def spawn(self, argv, log_path, env=None, cwd=None):
        log = open(log_path, "wb")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                             start_new_session=True)
        log.close()
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM, timeout=10.0):
        if p.poll() is None:
            try:
                p.send_signal(sig)
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p in self.procs:
            self.procs.remove(p)

    def close(self):
        for p in list(self.procs):
            self.stop(p, signal.SIGKILL)
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)
        self.dirs.clear()

    # --- servers ---------------------------------------------------------------

    def redis(self, extra=()):
        """A plain redis-server 7.0 with no persistence; returns (proc, port)."""
        port = free_port()
        d = self.tmpdir("redis")
        p = self.spawn(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                        "--save", "", "--appendonly", "no", "--dir", d, *extra],
                       os.path.join(d, "log"))
        wait_ping(port, proc=p)
        return p, port

    def redline_server(self, extra=()):
        port = free_port()
        d = self.tmpdir("redline")
        binary = os.environ.get("REDLINE_SERVER_BIN", os.path.join(RELEASE, "redline-server"))
        p = self.spawn([binary, "--port", str(port),
                        "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *extra],
                       os.path.join(d, "log"), cwd=d)
        wait_ping(port, proc=p)
        return p, port

    def cluster(self, masters=3, server="redis-server"):
        """A Redis Cluster of `masters` masters, no replicas, of redis-server nodes or
        (`server="redline-server"`) redline-server nodes; returns the ports."""
        ports = []
        for _ in range(masters):
            port = free_port(bus=True)
            d = self.tmpdir("cluster")
            program = "redis-server"
            if server == "redline-server":
                program = os.environ.get("REDLINE_SERVER_BIN",
                                         os.path.join(RELEASE, "redline-server"))
            p = self.spawn([program, "--port", str(port), "--bind", "127.0.0.1",
                            "--save", "", "--appendonly", "no", "--dir", d,
                            "--cluster-enabled", "yes", "--cluster-config-file",
                            os.path.join(d, "nodes.conf"), "--cluster-node-timeout", "5000"],
                           os.path.join(d, "log"), cwd=d)
            wait_ping(port, proc=p)
            ports.append(port)
        form_cluster(["redis-cli"], ports, lambda p: cli(p, "CLUSTER", "INFO", check=False))
        # The report calls it a `masters`-master cluster: make sure it is one.
        nodes = cli(ports[0], "CLUSTER", "NODES").splitlines()
        have = sum(1 for n in nodes if "master" in n.split()[2].split(","))
        if have != masters:
            raise RuntimeError(f"cluster has {have} masters, not {masters}")
        return ports


def form_cluster(cli_argv, ports, cluster_info):
    """`redis-cli --cluster create` over `ports` (`cli_argv`: redis-cli and its TLS
    flags), no replicas; then waits until every node's `cluster_info(port)` says all
    16384 slots are served."""
    out = subprocess.run([*cli_argv, "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
                          "--cluster-replicas", "0", "--cluster-yes"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"cluster create failed: {out.stdout}{out.stderr}")
    deadline = time.time() + 30
    while time.time() < deadline:
        infos = [cluster_info(p) for p in ports]
        if all("cluster_state:ok" in i and "cluster_slots_ok:16384" in i for i in infos):
            return
        time.sleep(0.1)
    raise RuntimeError("cluster never reached cluster_state:ok")


def flushall(ports):
    for port in ports:
        cli(port, "FLUSHALL")


def tls_cluster(procs, certs, masters=3):
    """A Redis Cluster of `masters` masters (no replicas) speaking TLS to clients and on
    its bus (`tls-cluster yes`), no plain port. Returns [(tls port, redis-cli argv for
    that node over TLS)]."""
    nodes = []
    for _ in range(masters):
        tls_port = free_port(bus=True)
        d = procs.tmpdir("tls-cluster")
        p = procs.spawn(["redis-server", "--port", "0", "--bind", "127.0.0.1",
                         "--save", "", "--appendonly", "no", "--dir", d,
                         "--tls-port", str(tls_port), "--tls-cert-file", certs["server.crt"],
                         "--tls-key-file", certs["server.key"],
                         "--tls-ca-cert-file", certs["ca.crt"], "--tls-auth-clients", "no",
                         "--tls-cluster", "yes", "--tls-replication", "yes",
                         "--cluster-port", str(tls_port + 10000), "--cluster-enabled", "yes", "--cluster-config-file",
                         os.path.join(d, "nodes.conf"), "--cluster-node-timeout", "5000"],
                        os.path.join(d, "log"))
        tls_cli = ["redis-cli", "-h", "127.0.0.1", "-p", str(tls_port), "--tls",
                   "--cacert", certs["ca.crt"]]
        deadline = time.time() + 20
        while True:
            out = subprocess.run([*tls_cli, "PING"], capture_output=True, text=True)
            if out.stdout.strip() == "PONG":
                break
            if p.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"TLS cluster node on {tls_port} never answered PING")
            time.sleep(0.05)
        nodes.append((tls_port, tls_cli))
    clis = dict(nodes)
    form_cluster(["redis-cli", "--tls", "--cacert", certs["ca.crt"]], list(clis),
                 lambda port: subprocess.run([*clis[port], "CLUSTER", "INFO"],
                                             capture_output=True, text=True).stdout)
    return nodes
