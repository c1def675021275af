#!/usr/bin/env bash
# solo.sh MODE FILE CONNS SECS WINDOWS: one server alone, ticks (user sys) and GB per window
mode=$1; file=$2; c=$3; secs=$4; n=$5
dll=/work/main/benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll
if [ $mode = nginx ]; then taskset -c 0 nginx -p /tmp/prof/ng -c /tmp/prof/ng/nginx.conf & port=19400; sleep 1; pid=$(pgrep -f "nginx: worker"|head -1)
else env ${SRVENV:-X=1} taskset -c 0 dotnet $dll --mode $mode --root /tmp/prof/files --http-port 19500 --https-port 19501 --h2c-port 19502 --cert /tmp/prof/cert.pem --key /tmp/prof/key.pem > /tmp/prof/solo.log 2>&1 & port=19500
  for _ in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:$port/f1k.bin && break; sleep 0.2; done; pid=$(pgrep -f "BenchHost.dll --mode $mode"|head -1); fi
gb() { awk '/requests in/ {v=$(NF-1); u=v; sub(/[0-9.]+/,"",u); sub(/[A-Za-z]+$/,"",v); m=(u=="GB")?1:(u=="MB")?1/1024:(u=="KB")?1/1048576:1/1073741824; print v*m}' $1; }
for _ in 1 2; do taskset -c 1 wrk -t1 -c$c -d${secs}s http://127.0.0.1:$port/$file > /dev/null; done
for w in $(seq 1 $n); do
  read u0 s0 < <(awk '{print $14, $15}' /proc/$pid/stat)
  taskset -c 1 wrk -t1 -c$c -d${secs}s http://127.0.0.1:$port/$file > /tmp/prof/solo-wrk.txt
  read u1 s1 < <(awk '{print $14, $15}' /proc/$pid/stat)
  g=$(gb /tmp/prof/solo-wrk.txt)
  python3 -c "print(f'w$w user {$u1-$u0} sys {$s1-$s0} GB {$g:.2f} ticks/GB {($u1-$u0+$s1-$s0)/$g:.2f}')"
done
if [ $mode = nginx ]; then kill $(cat /tmp/prof/ng/nginx.pid); else kill $pid; fi; sleep 1
