#!/usr/bin/env bash
# mem.sh DLL LABEL: start the sample on /tmp/mem/root, fetch every file over HTTP/1.1 (the lane) and HTTP/2 (UseFastFiles),
# print VmRSS before and after, and the managed heap as the runtime reports it (dotnet-counters not needed: /proc only).
dll=$1; label=$2
cd $(dirname $dll)
taskset -c 0 dotnet $dll --root /tmp/mem/root --urls "http://127.0.0.1:5780;https://127.0.0.1:5743" > /tmp/mem/$label.log 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:5780/f0.bin && break; sleep 0.2; done
sleep 1
rss0=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
curl --http1.1 -s -K /tmp/mem/h1.cfg
curl --http2 -k -s -K /tmp/mem/h2.cfg
curl --http1.1 -s -K /tmp/mem/h1.cfg
curl --http2 -k -s -K /tmp/mem/h2.cfg
sleep 2
rss1=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
fds=$(ls /proc/$pid/fd | wc -l)
echo "$label: RSS before ${rss0} KiB, after ${rss1} KiB, grew $(( (rss1-rss0)/1024 )) MiB; open fds $fds"
kill $pid; sleep 1
