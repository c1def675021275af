#!/usr/bin/env bash
# sys.sh MODE FILE CONNS: syscall counts and context switches of one server over 8 s of wrk load (after 2 warm runs)
mode=$1; file=$2; c=$3
dll=/work/main/benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll
if [ $mode = nginx ]; then taskset -c 0 nginx -p /tmp/prof/ng -c /tmp/prof/ng/nginx.conf & port=19400; sleep 1; pid=$(pgrep -f "nginx: worker"|head -1)
else env ${SRVENV:-X=1} taskset -c 0 dotnet $dll --mode $mode --root /tmp/prof/files --http-port 19500 --https-port 19501 --h2c-port 19502 --cert /tmp/prof/cert.pem --key /tmp/prof/key.pem > /tmp/prof/sys.log 2>&1 & port=19500
  for _ in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:$port/f1k.bin && break; sleep 0.2; done; pid=$(pgrep -f "BenchHost.dll --mode $mode"|head -1); fi
for _ in 1 2; do taskset -c 1 wrk -t1 -c$c -d8s http://127.0.0.1:$port/$file > /dev/null; done
ev=context-switches; for s in sendfile64 sendmsg writev recvfrom epoll_wait futex openat setsockopt getsockopt newfstatat statx close; do ev="$ev,syscalls:sys_enter_$s"; done
t0=$(awk '{print $14" "$15}' /proc/$pid/stat)
taskset -c 1 wrk -t1 -c$c -d8s http://127.0.0.1:$port/$file > /tmp/prof/sys-wrk.txt &
w=$!
perf stat -e "$ev" -p $pid -x, -o /tmp/prof/sys-perf.txt -- sleep 7.5
wait $w
t1=$(awk '{print $14" "$15}' /proc/$pid/stat)
echo "== $mode $file x $c  utime/stime before $t0 after $t1"
grep -v '^#' /tmp/prof/sys-perf.txt | awk -F, 'NF>2 {printf "%s=%s ", $3, $1} END {print ""}'
grep -E "Transfer|requests in" /tmp/prof/sys-wrk.txt | tr '\n' ' '; echo
if [ $mode = nginx ]; then kill $(cat /tmp/prof/ng/nginx.pid); else kill $pid; fi; sleep 1
