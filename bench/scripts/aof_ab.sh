#!/bin/bash
# usage: bench/scripts/aof_ab.sh <redline-server A> <redline-server B> [appendfsync] [rounds] [pipeline]
# SET with `appendonly yes` on two redline-server builds and redis-server, in rotation
# (A B redis, A B redis, ...), each on a fresh directory: redis-benchmark -t set -c 50
# -r 1000000 -d 64 -P <pipeline> (300,000 requests; 50,000 at -P 1). Prints "port rps";
# compare within a round (the keyspace fills and the files grow from round to round).
a=$1; b=$2; fsync=${3:-everysec}; rounds=${4:-3}; pipeline=${5:-16}
d=$(mktemp -d); mkdir -p $d/a $d/b $d/r
base=$((20000 + RANDOM % 20000))
$a --port $base --dir $d/a --appendonly yes --appendfsync $fsync --save "" > $d/a.log 2>&1 &
$b --port $((base + 1)) --dir $d/b --appendonly yes --appendfsync $fsync --save "" > $d/b.log 2>&1 &
redis-server --port $((base + 2)) --dir $d/r --appendonly yes --appendfsync $fsync --save "" > $d/r.log 2>&1 &
sleep 1
n=$([ "$pipeline" = 1 ] && echo 50000 || echo 300000)
for r in $(seq $rounds); do
  for p in $base $((base + 1)) $((base + 2)); do
    echo "$p $(redis-benchmark -p $p -t set -c 50 -n $n -P $pipeline -r 1000000 -d 64 --csv -q | tail -1 | cut -d, -f2)"
  done
done
for p in $base $((base + 1)) $((base + 2)); do redis-cli -p $p shutdown nosave > /dev/null 2>&1; done
rm -rf $d
uptime
