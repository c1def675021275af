#!/usr/bin/env bash
# hashcpu.sh DLL PORT -> server CPU seconds from the first request for an 8 GiB file until the server is idle again,
# and seconds until a HEAD through the lane endpoint carries the content-hash ETag.
dll=$1; port=$2
rm -f /tmp/probe/hroot/big.bin; python3 -c "f=open('/tmp/probe/hroot/big.bin','wb'); f.truncate(8<<30)"
echo small > /tmp/probe/hroot/a.txt
taskset -c 0 dotnet $dll --mode fastfiles-lane-hash --root /tmp/probe/hroot --http-port $port --https-port $((port+1)) --h2c-port $((port+2)) --cert cert.pem --key key.pem > hash$port.log 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:$port/a.txt && break; sleep 0.2; done
sleep 1
cpu() { awk '{print $14+$15}' /proc/$pid/stat; }
c0=$(cpu); t0=$(date +%s.%N)
curl -s -o /dev/null -I http://127.0.0.1:$port/big.bin
tag=""
while [ -z "$tag" ]; do tag=$(curl -s -I http://127.0.0.1:$port/big.bin | grep -i '^etag' ); [ -z "$tag" ] && sleep 0.2; done
t1=$(date +%s.%N)
prev=-1; while :; do sleep 1; c=$(cpu); [ "$c" = "$prev" ] && break; prev=$c; done
c1=$(cpu)
echo "tag after $(echo "$t1 - $t0" | bc) s; server CPU $(( c1 - c0 )) ticks; $tag"
kill $pid; wait $pid 2>/dev/null
