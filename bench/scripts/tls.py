"""TLS throughput: redline-server vs redis-server 7.0, both serving TLS on a `tls-port`
with the same certificates (a CA and a server certificate made with the openssl command
here), measured by `redis-benchmark --tls` (SET and GET at -P 1 and -P 16; servers
alternate in rotation, medians over rounds). Clients present no certificate
(`tls-auth-clients no`): the figure is the cost of the encrypted connection, not of
client authentication."""

import os
import subprocess

from common import keep_rows, redis_benchmark, rotation
from procs import Procs, flushall, free_port

TESTS = "set,get"
SERVERS = ["redline-server", "redis-server"]


def plan(quick):
    if quick:
        return {"rounds": 2, "requests": {1: 50_000, 16: 300_000}, "clients": 50,
                "keyspace": 100_000}
    return {"rounds": 3, "requests": {1: 200_000, 16: 1_000_000}, "clients": 50,
            "keyspace": 100_000}


def certificates(d):
    """A CA and a server certificate for 127.0.0.1 (X.509 v3: rustls refuses v1), also good
    as a client certificate: TLS cluster nodes present it to each other on the bus."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            "-out", "ca.crt", "-days", "2", "-subj", "/CN=redline bench CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
            "-out", "server.csr", "-subj", "/CN=redline bench server")
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth,clientAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "server.ext")
    return {name: os.path.join(d, name) for name in ("ca.crt", "server.crt", "server.key")}


def run(quick):
    p = plan(quick)
    runs, notes = [], []
    procs = Procs()
    try:
        certs = certificates(procs.tmpdir("tls-certs"))
        tls_ports = {s: free_port() for s in SERVERS}

        def tls_args(server):
            return ["--tls-port", str(tls_ports[server]), "--tls-cert-file", certs["server.crt"],
                    "--tls-key-file", certs["server.key"], "--tls-ca-cert-file", certs["ca.crt"],
                    "--tls-auth-clients", "no"]
        # The plain ports are for readiness checks and FLUSHALL; the benchmark uses TLS.
        plain = {"redline-server": procs.redline_server(tls_args("redline-server"))[1],
                 "redis-server": procs.redis(tls_args("redis-server"))[1]}
        for r in range(p["rounds"]):
            for server in rotation(SERVERS, r):
                for pipeline in (1, 16):
                    flushall([plain[server]])
                    target = ["-h", "127.0.0.1", "-p", str(tls_ports[server]), "--tls",
                              "--cacert", certs["ca.crt"]]
                    keep_rows(runs, notes, f"tls r{r} {server} -P {pipeline}",
                              {"server": server, "pipeline": pipeline, "round": r},
                              lambda: redis_benchmark(target, TESTS, pipeline, p),
                              procs.pids())
    finally:
        procs.close()
    flags = {"redis-benchmark": f"--tls --cacert ca.crt -t {TESTS} -c {p['clients']} "
                                f"-r {p['keyspace']} -n {p['requests'][1]} (-P 1) / "
                                f"{p['requests'][16]} (-P 16) --csv",
             "rounds": p["rounds"],
             "servers": "both running side by side, TLS on tls-port with the same RSA-2048 "
                        "certificate, tls-auth-clients no, no persistence; redline-server "
                        "with its defaults (workers = cores)"}
    return {"flags": flags, "runs": runs, "notes": notes}
