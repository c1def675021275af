#!/usr/bin/env bash
# ab.sh MODE FILE CONNS ROUNDS SECS: before (/tmp/base) vs after (/work/main) interleaved; ticks per GB
mode=$1; file=$2; conns=$3; rounds=$4; secs=$5
for r in $(seq 1 $rounds); do
 for b in before after; do
  if [ $b = before ]; then dll=/tmp/base/benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll; else dll=${AFTER:-/work/main/benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll}; fi
  taskset -c 0 dotnet $dll --mode $mode --root /tmp/prof/files --http-port 19610 --https-port 19611 --h2c-port 19612 --cert /tmp/prof/cert.pem --key /tmp/prof/key.pem > /tmp/prof/ab-srv.log 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:19610/f1k.bin && break; sleep 0.2; done
  taskset -c 1 wrk -t1 -c$conns -d8s http://127.0.0.1:19610/$file > /dev/null
  read u0 s0 < <(awk '{print $14, $15}' /proc/$pid/stat)
  out=$(taskset -c 1 wrk -t1 -c$conns -d${secs}s http://127.0.0.1:19610/$file)
  read u1 s1 < <(awk '{print $14, $15}' /proc/$pid/stat)
  kill $pid; wait $pid 2>/dev/null
  gb=$(echo "$out" | awk '/requests in/ {print $5}')
  echo "$r $b $(echo "$out" | grep Transfer/sec | awk '{print $2}') user=$((u1-u0)) sys=$((s1-s0)) read=$gb"
 done
done
