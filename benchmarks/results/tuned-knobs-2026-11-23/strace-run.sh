#!/usr/bin/env bash
# Counts the server's system calls per request for one BenchHost mode (strace -c on the running server while wrk
# loads it for 3 s after a 3 s warm-up). Server on CPU 0, wrk on CPU 1, loopback only; run under the bench lock.
#   strace-run.sh MODE p16.lua|p1.lua PORT [ENV=VALUE ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
mode=$1; script=$here/$2; port=$3; shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/www"
head -c 1024 /dev/urandom > "$work/www/f1k.bin"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 -subj /CN=localhost 2>/dev/null
env "$@" taskset -c 0 dotnet "$repo/benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll" --mode "$mode" \
  --root "$work/www" --http-port "$port" --https-port $((port + 1)) --h2c-port $((port + 2)) \
  --cert "$work/cert.pem" --key "$work/key.pem" > "$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$port/f1k.bin" && break; sleep 0.2; done
taskset -c 1 wrk -t1 -c32 -d3s -s "$script" "http://127.0.0.1:$port/f1k.bin" > /dev/null
timeout 20 strace -c -f -q -p "$pid" -o "$work/strace.txt" &
tracer=$!
sleep 1
requests=$(taskset -c 1 wrk -t1 -c32 -d3s -s "$script" "http://127.0.0.1:$port/f1k.bin" | grep REQUESTS)
sleep 0.5
kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true
kill "$pid"; wait "$pid" 2>/dev/null || true
echo "$mode $2 $requests"
grep -E "calls|sendmsg|sendto|recvfrom|epoll_wait|futex|total" "$work/strace.txt"
