#!/usr/bin/env bash
# alt.sh A B FILE CONNS SECS QUADS WARMRUNS: servers A and B (nginx or BenchHost modes) both started on CPU 0, but
# loaded one at a time by wrk -t1 on CPU 1, in A B B A order per quad, so drift in the host's speed falls on both.
# Per quad: each server's CPU ticks (utime+stime from /proc/PID/stat) per GB its wrk read, summed over its two
# windows, and B/A of that; also each server's GB/s. Files, certificate and nginx.conf as pair.sh expects.
A=$1; B=$2; file=$3; conns=$4; secs=$5; quads=$6; warmruns=${7:-2}
dll=${DLL:-/work/main/benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll}
start() { # cfg port
  if [ "$1" = nginx ]; then
    taskset -c 0 nginx -p /tmp/prof/ng -c /tmp/prof/ng/nginx.conf > /tmp/prof/alt-ng.log 2>&1 &
  else
    taskset -c 0 dotnet $dll --mode $1 --root /tmp/prof/files --http-port $2 --https-port $(($2+1)) --h2c-port $(($2+2)) --cert /tmp/prof/cert.pem --key /tmp/prof/key.pem > /tmp/prof/alt-$2.log 2>&1 &
  fi
}
pa=19500; pb=19520; [ "$A" = nginx ] && pa=19400; [ "$B" = nginx ] && pb=19400
start $A $pa; start $B $pb
for p in $pa $pb; do for _ in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:$p/f1k.bin && break; sleep 0.2; done; done
pidof() { if [ "$1" = nginx ]; then pgrep -f "nginx: worker" | head -1; else pgrep -f "BenchHost.dll --mode $1 .*--http-port $2" | head -1; fi; }
ia=$(pidof $A $pa); ib=$(pidof $B $pb)
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
gb() { awk '/requests in/ {v=$(NF-1); u=v; sub(/[0-9.]+/,"",u); sub(/[A-Za-z]+$/,"",v); m=(u=="GB")?1:(u=="MB")?1/1024:(u=="KB")?1/1048576:1/1073741824; print v*m}' $1; }
one() { # pid port -> "ticks gb"
  local t0 t1; t0=$(ticks $1); taskset -c 1 wrk -t1 -c$conns -d${secs}s http://127.0.0.1:$2/$file > /tmp/prof/w.txt; t1=$(ticks $1)
  echo "$((t1-t0)) $(gb /tmp/prof/w.txt)"; }
for _ in $(seq 1 $warmruns); do one $ia $pa > /dev/null; one $ib $pb > /dev/null; done
for q in $(seq 1 $quads); do
  r1=$(one $ia $pa); r2=$(one $ib $pb); r3=$(one $ib $pb); r4=$(one $ia $pa)
  python3 -c "
a=[float(x) for x in '$r1 $r4'.split()]; b=[float(x) for x in '$r2 $r3'.split()]
ta=a[0]+a[2]; ga=a[1]+a[3]; tb=b[0]+b[2]; gb=b[1]+b[3]
print(f'q$q A {ta:.0f} ticks {ga:.2f} GB ({ga/(2*$secs):.2f} GB/s)  B {tb:.0f} ticks {gb:.2f} GB ({gb/(2*$secs):.2f} GB/s)  B/A cpu/GB {(tb/gb)/(ta/ga):.3f}  B/A GB/s {gb/ga:.3f}')"
done
kill $(pgrep -f "BenchHost.dll --mode" ) 2>/dev/null; [ -f /tmp/prof/ng/nginx.pid ] && kill $(cat /tmp/prof/ng/nginx.pid) 2>/dev/null; sleep 1
