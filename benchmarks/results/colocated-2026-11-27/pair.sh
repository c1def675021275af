#!/usr/bin/env bash
# pair.sh A B FILE CONNS SECS WINDOWS WARMRUNS: servers A and B (nginx or BenchHost modes) both on CPU 0 at once, one
# wrk -t1 per server on CPU 1 at once; per window, each server's CPU ticks (utime+stime) per GB that its wrk read and
# per GiB it wrote (wchar). Expects: the test files in /tmp/prof/files (f1k.bin, f64k.bin, f1m.bin, f100m.bin, f1g.bin),
# a certificate pair /tmp/prof/cert.pem and key.pem, and for nginx /tmp/prof/ng/nginx.conf made from
# eng/bench/nginx.conf.in (one worker, HTTP/1.1 on 127.0.0.1:19400, root /tmp/prof/files). DLL, DLL_A, DLL_B: the
# BenchHost to run (default: this checkout's Release build). ENV_A, ENV_B: NAME=value settings for that server's environment.
# Each wrk runs under /usr/bin/time, so a window also gives each wrk's CPU ticks and B/A of server + wrk ticks per GB read.
A=$1; B=$2; file=$3; conns=$4; secs=$5; windows=$6; warmruns=${7:-4}
dll=${DLL:-/work/main/benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll}
start() { # cfg port dll
  if [ "$1" = nginx ]; then
    taskset -c 0 nginx -p /tmp/prof/ng -c /tmp/prof/ng/nginx.conf > /tmp/prof/pair-ng.log 2>&1 &
  else
    env ${4:-} taskset -c 0 dotnet ${3:-$dll} --mode $1 --root /tmp/prof/files --http-port $2 --https-port $(($2+1)) --h2c-port $(($2+2)) --cert /tmp/prof/cert.pem --key /tmp/prof/key.pem > /tmp/prof/pair-$2.log 2>&1 &
  fi
}
pa=19500; pb=19520; [ "$A" = nginx ] && pa=19400; [ "$B" = nginx ] && pb=19400
start $A $pa "${DLL_A:-$dll}" "${ENV_A:-}"; start $B $pb "${DLL_B:-$dll}" "${ENV_B:-}"
for p in $pa $pb; do for _ in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:$p/f1k.bin && break; sleep 0.2; done; done
pidof() { if [ "$1" = nginx ]; then pgrep -f "nginx: worker" | head -1; else pgrep -f "BenchHost.dll --mode $1 .*--http-port $2" | head -1; fi; }
ia=$(pidof $A $pa); ib=$(pidof $B $pb)
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
wch() { awk '/^wchar/ {print $2}' /proc/$1/io; }
gb() { awk '/requests in/ {v=$(NF-1); u=v; sub(/[0-9.]+/,"",u); sub(/[A-Za-z]+$/,"",v); m=(u=="GB")?1:(u=="MB")?1/1024:(u=="KB")?1/1048576:1/1073741824; print v*m}' $1; }
both() { /usr/bin/time -f "%U %S" -o /tmp/prof/ta.time taskset -c 1 wrk -t1 -c$conns -d${secs}s http://127.0.0.1:$pa/$file > /tmp/prof/pa.txt & wa=$!
         /usr/bin/time -f "%U %S" -o /tmp/prof/tb.time taskset -c 1 wrk -t1 -c$conns -d${secs}s http://127.0.0.1:$pb/$file > /tmp/prof/pb.txt & wb=$!
         wait $wa $wb; }
for _ in $(seq 1 $warmruns); do both; done
for w in $(seq 1 $windows); do
  a0=$(ticks $ia); b0=$(ticks $ib); xa0=$(wch $ia); xb0=$(wch $ib); both; a1=$(ticks $ia); b1=$(ticks $ib); xa1=$(wch $ia); xb1=$(wch $ib)
  ga=$(gb /tmp/prof/pa.txt); gbb=$(gb /tmp/prof/pb.txt)
  wa_=$(awk '{print ($1+$2)*100}' /tmp/prof/ta.time); wb_=$(awk '{print ($1+$2)*100}' /tmp/prof/tb.time)
  python3 -c "
ta=$a1-$a0; tb=$b1-$b0; sa=($xa1-$xa0)/2**30; sb=($xb1-$xb0)/2**30
print(f'w$w A read {$ga:.2f} sent {sa:.2f} GiB {ta} ticks  B read {$gbb:.2f} sent {sb:.2f} GiB {tb} ticks  B/A per read {(tb/$gbb)/(ta/$ga):.3f} per sent {(tb/sb)/(ta/sa):.3f}  wrkA {$wa_:.0f} wrkB {$wb_:.0f} ticks  B/A server+wrk per read {((tb+$wb_)/$gbb)/((ta+$wa_)/$ga):.3f}')"
done
kill $(pgrep -f "BenchHost.dll --mode" ) 2>/dev/null; [ -f /tmp/prof/ng/nginx.pid ] && kill $(cat /tmp/prof/ng/nginx.pid) 2>/dev/null; sleep 1
