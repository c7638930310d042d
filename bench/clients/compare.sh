#!/usr/bin/env bash
# Side-by-side client comparison on one redis-server, clients alternated A B C A B C.
#
#   bench/clients/compare.sh [bench-clients flags...]
#
# Defaults: --client redline,redis-rs,fred --op get,set --callers 1,16,64,256
#           --rounds 3 --duration-secs 5 --warmup-secs 1 --value-size 64
# Any flag given overrides its default (e.g. `--callers 16 --rounds 5`).
# Without --url (or REDIS_URL), a throwaway redis-server is started on a free loopback
# port (no persistence) and stopped at the end.
# stdout: one JSON line per run, then one `"kind":"summary"` line per client and
# combination (medians, ratio to the first client). stderr: progress and a table.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

cargo build --release -q -p redline-bench-clients --manifest-path "$root/Cargo.toml"
bin="$root/target/release/bench-clients"

declare -A given=()
for a in "$@"; do
    case "$a" in --*) given["${a%%=*}"]=1 ;; esac
done
defaults=()
[[ -v given[--client] ]] || defaults+=(--client redline,redis-rs,fred)
[[ -v given[--op] ]] || defaults+=(--op get,set)
[[ -v given[--callers] ]] || defaults+=(--callers 1,16,64,256)
[[ -v given[--rounds] ]] || defaults+=(--rounds 3)
[[ -v given[--duration-secs] ]] || defaults+=(--duration-secs 5)
[[ -v given[--warmup-secs] ]] || defaults+=(--warmup-secs 1)

server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    [[ -n "${tmpdir:-}" ]] && rm -rf "$tmpdir"
}
trap cleanup EXIT

if [[ ! -v given[--url] ]]; then
    if [[ -n "${REDIS_URL:-}" ]]; then
        defaults+=(--url "$REDIS_URL")
    else
        port=""
        for _ in $(seq 1 50); do
            p=$((20000 + RANDOM % 30000))
            if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
        done
        [[ -n "$port" ]] || { echo "compare.sh: no free port found" >&2; exit 1; }
        tmpdir="$(mktemp -d)"
        redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$tmpdir" --logfile "$tmpdir/redis.log" &
        server_pid=$!
        for _ in $(seq 1 100); do
            redis-cli -p "$port" ping >/dev/null 2>&1 && break
            sleep 0.05
        done
        echo "compare.sh: redis-server $(redis-server --version | awk '{print $3}') on 127.0.0.1:$port" >&2
        defaults+=(--url "redis://127.0.0.1:$port")
    fi
fi

"$bin" --compare "${defaults[@]}" "$@"
