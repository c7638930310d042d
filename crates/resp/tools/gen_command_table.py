#!/usr/bin/env python3
"""Generates crates/resp/src/command/table.rs from a real redis-server.

Usage (from the repository root):

    python3 crates/resp/tools/gen_command_table.py [--redis-server /usr/bin/redis-server]

It starts a scratch redis-server on a free loopback port (in a temporary directory, no
persistence), reads `COMMAND INFO` and `COMMAND DOCS`, probes the two flags that
`COMMAND INFO` hides on purpose (see `probe_hidden_flags`), writes the Rust table and runs
rustfmt on it. The server is stopped on exit. Only the standard library is used.

What the server cannot tell us is written down below, with its reason:
- GETKEYS_PROCS: which commands have a key-extraction procedure in Redis 7.0
  (`getkeys_proc` in src/commands.c). Redis falls back to it when a command's key specs
  fail (incomplete, unknown or out of range) or carry `variable_flags`; the test
  crates/resp/tests/command_table.rs checks the result against `COMMAND GETKEYS`.
- PROBE_SKIP: commands not safe to run on the probe server (they stop it, replicate from
  it or block the probe); none of them has the hidden flags.
"""

import argparse
import itertools
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "command", "table.rs")

# Key-extraction procedures of Redis 7.0, by command. The Rust names are the variants of
# `GetKeysProc`; `Numkeys(store, numkeys, first, step)` is Redis's generic numkeys helper.
GETKEYS_PROCS = {
    "zunionstore": "GetKeysProc::Numkeys { store: 1, numkeys: 2, first: 3, step: 1 }",
    "zinterstore": "GetKeysProc::Numkeys { store: 1, numkeys: 2, first: 3, step: 1 }",
    "zdiffstore": "GetKeysProc::Numkeys { store: 1, numkeys: 2, first: 3, step: 1 }",
    "zunion": "GetKeysProc::Numkeys { store: 0, numkeys: 1, first: 2, step: 1 }",
    "zinter": "GetKeysProc::Numkeys { store: 0, numkeys: 1, first: 2, step: 1 }",
    "zdiff": "GetKeysProc::Numkeys { store: 0, numkeys: 1, first: 2, step: 1 }",
    "zintercard": "GetKeysProc::Numkeys { store: 0, numkeys: 1, first: 2, step: 1 }",
    "sintercard": "GetKeysProc::Numkeys { store: 0, numkeys: 1, first: 2, step: 1 }",
    "lmpop": "GetKeysProc::Numkeys { store: 0, numkeys: 1, first: 2, step: 1 }",
    "zmpop": "GetKeysProc::Numkeys { store: 0, numkeys: 1, first: 2, step: 1 }",
    "blmpop": "GetKeysProc::Numkeys { store: 0, numkeys: 2, first: 3, step: 1 }",
    "bzmpop": "GetKeysProc::Numkeys { store: 0, numkeys: 2, first: 3, step: 1 }",
    "eval": "GetKeysProc::Numkeys { store: 0, numkeys: 2, first: 3, step: 1 }",
    "evalsha": "GetKeysProc::Numkeys { store: 0, numkeys: 2, first: 3, step: 1 }",
    "eval_ro": "GetKeysProc::Numkeys { store: 0, numkeys: 2, first: 3, step: 1 }",
    "evalsha_ro": "GetKeysProc::Numkeys { store: 0, numkeys: 2, first: 3, step: 1 }",
    "fcall": "GetKeysProc::Numkeys { store: 0, numkeys: 2, first: 3, step: 1 }",
    "fcall_ro": "GetKeysProc::Numkeys { store: 0, numkeys: 2, first: 3, step: 1 }",
    "sort": "GetKeysProc::Sort",
    "sort_ro": "GetKeysProc::SortRo",
    "migrate": "GetKeysProc::Migrate",
    "georadius": "GetKeysProc::Georadius",
    "georadiusbymember": "GetKeysProc::Georadius",
    "xread": "GetKeysProc::Xread",
    "xreadgroup": "GetKeysProc::Xread",
    "set": "GetKeysProc::Set",
    "bitfield": "GetKeysProc::Bitfield",
}

PROBE_SKIP = {
    "shutdown", "monitor", "sync", "psync", "replicaof", "slaveof", "failover",
    "client|unpause", "pfselftest",
}

COMMAND_FLAGS = {
    "write": "WRITE", "readonly": "READONLY", "denyoom": "DENYOOM", "module": "MODULE",
    "admin": "ADMIN", "pubsub": "PUBSUB", "noscript": "NOSCRIPT", "blocking": "BLOCKING",
    "loading": "LOADING", "stale": "STALE", "skip_monitor": "SKIP_MONITOR",
    "skip_slowlog": "SKIP_SLOWLOG", "asking": "ASKING", "fast": "FAST", "no_auth": "NO_AUTH",
    "no_mandatory_keys": "NO_MANDATORY_KEYS", "no_async_loading": "NO_ASYNC_LOADING",
    "no_multi": "NO_MULTI", "movablekeys": "MOVABLE_KEYS", "allow_busy": "ALLOW_BUSY",
    "may_replicate": "MAY_REPLICATE", "protected": "PROTECTED",
}

KEY_FLAGS = {
    "RO": "RO", "RW": "RW", "OW": "OW", "RM": "RM", "access": "ACCESS", "update": "UPDATE",
    "insert": "INSERT", "delete": "DELETE", "not_key": "NOT_KEY", "incomplete": "INCOMPLETE",
    "variable_flags": "VARIABLE_FLAGS",
}


# --- a minimal RESP2 client -------------------------------------------------------------

def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def call(self, *args):
        self.sock.sendall(encode(args))
        return read_reply(self.file)

    def close(self):
        self.file.close()
        self.sock.close()


class RedisError(Exception):
    pass


def read_reply(f):
    line = f.readline()
    if not line.endswith(b"\r\n"):
        raise EOFError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        return RedisError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2].decode(errors="replace")
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [read_reply(f) for _ in range(n)]
    raise ValueError("unexpected RESP line %r" % line)


def pairs(flat):
    return dict(zip(flat[::2], flat[1::2]))


# --- the scratch server ------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, workdir):
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", workdir, "--enable-debug-command", "no", "--enable-module-command", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            c = Conn(port)
            if c.call("PING") == "PONG":
                return proc, port, c
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("redis-server did not start on port %d" % port)


# --- hidden flags --------------------------------------------------------------------------

def probe_args(info):
    """The command's name parts followed by placeholders up to its minimal arity."""
    parts = info[0].split("|")
    need = abs(info[1]) - len(parts)
    return parts + ["x"] * max(need, 0)


def probe_hidden_flags(port, control, infos):
    """Finds `may_replicate` and `protected`, which COMMAND INFO does not report.

    Under `CLIENT PAUSE WRITE`, Redis 7.0 postpones exactly the commands flagged `write` or
    `may_replicate`, after the arity and `protected` checks and before running anything, so a
    non-write command that gets no reply is `may_replicate`; a `protected` command answers
    "... command not allowed. If the enable-..." while the protection is on (the default).
    """
    found = {}
    assert control.call("CLIENT", "PAUSE", "60000", "WRITE") == "OK"
    probes = []
    for info in infos:
        name = info[0]
        if name in PROBE_SKIP or "write" in info[2]:
            continue
        c = Conn(port)
        c.sock.sendall(encode(probe_args(info)))
        probes.append((name, c))
    time.sleep(1.0)
    for name, c in probes:
        readable, _, _ = select.select([c.sock], [], [], 0)
        if not readable:
            found.setdefault(name, set()).add("may_replicate")
            continue
        reply = read_reply(c.file)
        if isinstance(reply, RedisError) and "command not allowed. If the enable-" in str(reply):
            found.setdefault(name, set()).add("protected")
    assert control.call("CLIENT", "UNPAUSE") == "OK"
    for _, c in probes:
        c.close()
    return found


# --- Rust output ---------------------------------------------------------------------------

def rust_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def flag_set(kind, names, mapping):
    return "%s::of(&[%s])" % (kind, ", ".join("%s::%s" % (kind, mapping[n]) for n in names))


def acl_set(cats):
    return "A::of(&[%s])" % ", ".join("A::" + c.lstrip("@").upper() for c in cats)


def key_spec(raw, pad):
    d = pairs(raw)
    bs, fk = pairs(d["begin_search"]), pairs(d["find_keys"])
    if bs["type"] == "index":
        begin = "BeginSearch::Index(%d)" % pairs(bs["spec"])["index"]
    elif bs["type"] == "keyword":
        s = pairs(bs["spec"])
        begin = "BeginSearch::Keyword {\n%s    keyword: %s,\n%s    start_from: %d,\n%s}" % (
            pad, rust_str(s["keyword"]), pad, s["startfrom"], pad)
    else:
        assert bs["type"] == "unknown", bs
        begin = "BeginSearch::Unknown"
    if fk["type"] == "range":
        s = pairs(fk["spec"])
        find = "FindKeys::Range {\n%s    last_key: %d,\n%s    key_step: %d,\n%s    limit: %d,\n%s}" % (
            pad, s["lastkey"], pad, s["keystep"], pad, s["limit"], pad)
    elif fk["type"] == "keynum":
        s = pairs(fk["spec"])
        find = ("FindKeys::Keynum {\n%s    keynum_index: %d,\n%s    first_key: %d,\n"
                "%s    key_step: %d,\n%s}") % (
            pad, s["keynumidx"], pad, s["firstkey"], pad, s["keystep"], pad)
    else:
        assert fk["type"] == "unknown", fk
        find = "FindKeys::Unknown"
    return [
        pad + "KeySpec {",
        pad + "    notes: %s," % rust_str(d.get("notes", "")),
        pad + "    flags: %s," % flag_set("K", d["flags"], KEY_FLAGS),
        pad + "    begin_search: %s," % begin.replace("\n", "\n    "),
        pad + "    find_keys: %s," % find.replace("\n", "\n    "),
        pad + "},",
    ]


def doc_arg(raw, pad):
    """One documented argument as a `DocArg` builder chain, one argument a line (the
    fields Redis omits when unset are left at their defaults)."""
    a = pairs(raw)
    out = "DocArg::new(%s, %s)" % (rust_str(a["name"]), rust_str(a["type"]))
    if "key_spec_index" in a:
        out += ".key_spec(%d)" % a["key_spec_index"]
    for field in ("token", "summary", "since", "deprecated_since"):
        if field in a:
            out += ".%s(%s)" % (field, rust_str(a[field]))
    if a.get("flags"):
        out += ".flags(&[%s])" % ", ".join(rust_str(f) for f in a["flags"])
    if "arguments" in a:
        out += ".arguments(%s)" % doc_args(a["arguments"], pad)
    return pad + out + ",\n"


def doc_args(args, pad):
    """A slice of `DocArg`s, one a line, indented one level below `pad`."""
    if not args:
        return "&[]"
    return "&[\n%s%s]" % ("".join(doc_arg(a, pad + "    ") for a in args), pad)


def listed(items, pad):
    """A slice literal, one item a line."""
    if not items:
        return "&[]"
    return "&[\n%s%s]" % ("".join(pad + "    " + i + ",\n" for i in items), pad)


def command(info, docs, hidden, depth, ids):
    name, arity, flags, first, last, step, cats, tips, specs, subs = info
    flags = list(flags) + sorted(hidden.get(name, ()))
    # Table order is the bit order, which is the order of Redis's COMMAND INFO reply.
    flags.sort(key=list(COMMAND_FLAGS).index)
    doc = pairs(docs.get(name, []))
    subs = sorted(subs, key=lambda s: s[0])
    sub_docs = pairs(doc.get("subcommands", []))
    pad = "    " * depth
    out = [
        pad + "CommandSpec {",
        pad + "    name: %s," % rust_str(name),
        pad + "    id: %d," % next(ids),
        pad + "    arity: %d," % arity,
        pad + "    flags: %s," % flag_set("F", flags, COMMAND_FLAGS),
        pad + "    acl_categories: %s," % acl_set(cats),
        pad + "    first_key: %d," % first,
        pad + "    last_key: %d," % last,
        pad + "    key_step: %d," % step,
        pad + "    tips: &[%s]," % ", ".join(rust_str(t) for t in tips),
    ]
    if specs:
        out.append(pad + "    key_specs: &[")
        for spec in specs:
            out += key_spec(spec, pad + "        ")
        out.append(pad + "    ],")
    else:
        out.append(pad + "    key_specs: &[],")
    out += [
        pad + "    get_keys: %s," % (
            "Some(%s)" % GETKEYS_PROCS[name] if name in GETKEYS_PROCS else "None"),
        pad + "    docs: CommandDocs {",
        pad + "        summary: %s," % rust_str(doc.get("summary", "")),
        pad + "        since: %s," % rust_str(doc.get("since", "")),
        pad + "        group: %s," % rust_str(doc.get("group", "")),
        pad + "        complexity: %s," % rust_str(doc.get("complexity", "")),
        pad + "        doc_flags: &[%s]," % ", ".join(rust_str(f) for f in doc.get("doc_flags", [])),
        pad + "        deprecated_since: %s," % rust_str(doc.get("deprecated_since", "")),
        pad + "        replaced_by: %s," % rust_str(doc.get("replaced_by", "")),
        pad + "        history: %s," % listed(
            ["(%s, %s)" % (rust_str(v), rust_str(c)) for v, c in doc.get("history", [])],
            pad + "        "),
        pad + "        arguments: %s," % doc_args(doc.get("arguments", []), pad + "        "),
        pad + "    },",
    ]
    if subs:
        out.append(pad + "    subcommands: &[")
        for sub in subs:
            out += command(sub, sub_docs, hidden, depth + 2, ids)
        out.append(pad + "    ],")
    else:
        out.append(pad + "    subcommands: &[],")
    out.append(pad + "},")
    return out


def walk(infos):
    for info in infos:
        yield info
        yield from walk(info[9])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="redline-gen-")
    proc, port, conn = start_server(args.redis_server, workdir)
    try:
        server_info = conn.call("INFO", "server").split("\r\n")
        version = dict(l.split(":", 1) for l in server_info if ":" in l)["redis_version"]
        infos = sorted(conn.call("COMMAND", "INFO"), key=lambda c: c[0])
        docs = pairs(conn.call("COMMAND", "DOCS"))
        hidden = probe_hidden_flags(port, conn, list(walk(infos)))
        conn.close()
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)

    missing = set(GETKEYS_PROCS) - {i[0] for i in walk(infos)}
    assert not missing, "unknown commands in GETKEYS_PROCS: %s" % missing

    lines = [
        "//! The command table of redis-server %s, generated: do not edit." % version,
        "//!",
        "//! Regenerate from the repository root with",
        "//! `python3 crates/resp/tools/gen_command_table.py` (needs redis-server %s on the" % version,
        "//! PATH or `--redis-server PATH`). Source: `COMMAND INFO` and `COMMAND DOCS` of a live",
        "//! server, `may_replicate`/`protected` probed on it (COMMAND INFO hides them), and the",
        "//! key-extraction procedures listed in the generator.",
        "",
        "use super::flags::{AclCategories as A, CommandFlags as F, KeySpecFlags as K};",
        "use super::spec::{",
        "    BeginSearch, CommandDocs, CommandSpec, DocArg, FindKeys, GetKeysProc, KeySpec,",
        "};",
        "",
        "/// Version of the redis-server this table was generated from.",
        "pub const REDIS_VERSION: &str = %s;" % rust_str(version),
        "",
        "/// Every top-level command, sorted by name; subcommands sorted inside their parent.",
        "pub(crate) const TABLE: &[CommandSpec] = &[",
    ]
    # Dense ids in table order (each command, then its subcommands): the order of
    # `command::all()`, so ids index arrays of handlers and ACL bits.
    ids = itertools.count()
    for info in infos:
        lines += command(info, docs, hidden, 1, ids)
    lines.append("];")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run(["rustfmt", "--edition", "2021", args.out], check=False)
    total = sum(1 for _ in walk(infos))
    print("wrote %s: %d commands, %d subcommands, hidden flags on %d (%s)" % (
        os.path.normpath(args.out), len(infos), total - len(infos), len(hidden),
        ", ".join("%s=%s" % (k, "/".join(sorted(v))) for k, v in sorted(hidden.items()))))


if __name__ == "__main__":
    main()
