#!/usr/bin/env bash
# Side-by-side figures for bench/NOTES.md ("server"): redis-server 7.0 vs the release
# redline-server on free loopback ports, alternating A B A B in one run.
#   crates/server/scripts/bench.sh [rounds]   (default 3; needs `cargo build --release`)
set -euo pipefail
ROUNDS=${1:-3}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
REDLINE=${REDLINE:-$ROOT/target/release/redline-server}
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() { for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.1; done; echo "port $1 not ready" >&2; exit 1; }
start_redis() { local p; p=$(free_port); redis-server --port "$p" --save '' --appendonly no --daemonize no --dir "$WORK" >/dev/null 2>&1 & PIDS+=($!); wait_ready "$p"; echo "$p $!"; }
start_redline() { local p; p=$(free_port); "$REDLINE" --port "$p" >/dev/null 2>&1 & PIDS+=($!); wait_ready "$p"; echo "$p $!"; }
rps() { # port test extra-args... -> requests per second of the one test
  local port=$1 test=$2; shift 2
  redis-benchmark -p "$port" -t "$test" --csv "$@" 2>/dev/null | awk -F'","' 'NR==2 {print $2}'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
rss_kb() { ps -o rss= -p "$1" | tr -d ' '; }

echo "# machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(redis-server --version | cut -d' ' -f3)"
read -r RP RPID < <(start_redis)
read -r LP LPID < <(start_redline)
PIDS+=("$RPID" "$LPID")

echo "## SET/GET -n 1000000 -c 50 -r 1000000 -d 64"
for P in 1 16; do
  for t in set get; do
    : >"$WORK/r" ; : >"$WORK/l"
    for i in $(seq "$ROUNDS"); do
      rps "$RP" "$t" -n 1000000 -c 50 -r 1000000 -d 64 -P "$P" >>"$WORK/r"
      rps "$LP" "$t" -n 1000000 -c 50 -r 1000000 -d 64 -P "$P" >>"$WORK/l"
    done
    r=$(median <"$WORK/r"); l=$(median <"$WORK/l")
    echo "$t P=$P redis=$r redline=$l ratio=$(python3 -c "print(round($l/$r,2))") rounds_redis=[$(paste -sd' ' "$WORK/r")] rounds_redline=[$(paste -sd' ' "$WORK/l")]"
  done
done

echo "## bytes per key: 1,000,000 x SET key:N vN through redis-cli --pipe"
python3 -c 'import sys
w=sys.stdout.write
for i in range(1000000):
    k=b"key:%d" % i; v=b"v%d" % i
    sys.stdout.buffer.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k),k,len(v),v))' >"$WORK/keys.resp"
for side in redis redline; do
  if [ $side = redis ]; then p=$RP; pid=$RPID; else p=$LP; pid=$LPID; fi
  redis-cli -p "$p" flushall >/dev/null; sleep 1
  before=$(rss_kb "$pid")
  out=$(redis-cli -p "$p" --pipe <"$WORK/keys.resp" 2>&1 | tail -1)
  sleep 1
  after=$(rss_kb "$pid")
  echo "$side: pipe: $out; dbsize=$(redis-cli -p "$p" dbsize) rss_delta_bytes_per_key=$(( (after-before)*1024/1000000 ))"
done

echo "## INCR with 1,000,000 TTL keys vs none (redline, two servers, alternating)"
read -r EP EPID < <(start_redline)
PIDS+=("$EPID")
python3 -c 'import sys
for i in range(1000000):
    k=b"ttl:%d" % i
    sys.stdout.buffer.write(b"*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n$2\r\nEX\r\n$6\r\n100000\r\n" % (len(k),k))' | redis-cli -p "$EP" --pipe | tail -1
redis-cli -p "$LP" flushall >/dev/null
echo "ttl server: $(redis-cli -p "$EP" info keyspace | grep db0)"
: >"$WORK/a"; : >"$WORK/b"
for i in $(seq "$ROUNDS"); do
  rps "$LP" incr -n 1000000 -c 50 -r 1000000 >>"$WORK/a"
  rps "$EP" incr -n 1000000 -c 50 -r 1000000 >>"$WORK/b"
done
a=$(median <"$WORK/a"); b=$(median <"$WORK/b")
echo "incr none=$a with_ttl_keys=$b ratio=$(python3 -c "print(round($b/$a,2))") rounds_none=[$(paste -sd' ' "$WORK/a")] rounds_ttl=[$(paste -sd' ' "$WORK/b")]"

echo "## full redis-benchmark suite against redline (-n 100000 -c 50)"
redis-cli -p "$LP" flushall >/dev/null
redis-benchmark -p "$LP" -t ping,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,lrange_300,mset -n 100000 -c 50 --csv >"$WORK/suite.csv" 2>"$WORK/suite.err" || echo "redis-benchmark exit $?"
cat "$WORK/suite.csv"
echo "stderr lines: $(wc -l <"$WORK/suite.err")"; head -5 "$WORK/suite.err"
