#!/usr/bin/env bash
# wake.sh MODE FILE CONNS: who wakes the thread pool's workers during a loaded window (sched_waking with call graphs)
mode=$1; file=$2; c=$3
dll=/work/main/benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll
DOTNET_PerfMapEnabled=1 DOTNET_EnableWriteXorExecute=0 taskset -c 0 dotnet $dll --mode $mode --root /tmp/prof/files --http-port 19500 --https-port 19501 --h2c-port 19502 --cert /tmp/prof/cert.pem --key /tmp/prof/key.pem > /tmp/prof/wake.log 2>&1 &
port=19500
for _ in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:$port/f1k.bin && break; sleep 0.2; done; pid=$(pgrep -f "BenchHost.dll --mode $mode"|head -1)
for _ in 1 2 3; do taskset -c 1 wrk -t1 -c$c -d8s http://127.0.0.1:$port/$file > /dev/null; done
taskset -c 1 wrk -t1 -c$c -d8s http://127.0.0.1:$port/$file > /dev/null &
w=$!
sleep 1
perf record -e sched:sched_waking -e sched:sched_switch -g -p $pid -o /tmp/prof/wake.data -- sleep 5 > /dev/null 2>&1
wait $w
kill $pid; sleep 1
