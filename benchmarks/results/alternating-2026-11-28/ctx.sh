#!/usr/bin/env bash
# ctx.sh MODE FILE CONNS: voluntary and involuntary context switches and CPU ticks per thread of one BenchHost over one
# 8 s window of wrk load, after 3 unrecorded runs.
mode=$1; file=$2; c=$3
dll=/work/main/benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll
env ${SRVENV:-X=1} taskset -c 0 dotnet $dll --mode $mode --root /tmp/prof/files --http-port 19500 --https-port 19501 --h2c-port 19502 --cert /tmp/prof/cert.pem --key /tmp/prof/key.pem > /tmp/prof/ctx.log 2>&1 & port=19500
for _ in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:$port/f1k.bin && break; sleep 0.2; done; pid=$(pgrep -f "BenchHost.dll --mode $mode"|head -1)
for _ in 1 2 3; do taskset -c 1 wrk -t1 -c$c -d8s http://127.0.0.1:$port/$file > /dev/null; done
snap() { for t in /proc/$pid/task/*; do echo "$(basename $t) $(cat $t/comm | tr ' ' _) $(awk '/^voluntary_ctxt/ {v=$2} /^nonvoluntary/ {n=$2} END {print v, n}' $t/status) $(sed 's/.*) //' $t/stat | awk '{print $12+$13}')"; done | sort; }
snap > /tmp/prof/ctx0.txt
taskset -c 1 wrk -t1 -c$c -d8s http://127.0.0.1:$port/$file > /dev/null
snap > /tmp/prof/ctx1.txt
join /tmp/prof/ctx0.txt /tmp/prof/ctx1.txt | awk '{dv=$6-$3; dn=$7-$4; dt=$8-$5; if (dv+dn+dt>0) print $2, "vol", dv, "invol", dn, "ticks", dt}'
kill $pid; sleep 1
