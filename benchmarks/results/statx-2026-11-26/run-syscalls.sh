#!/bin/bash
# Syscalls per response (perf tracepoints) of the lane with the send path, before (BASE dll) and after (NEW dll), and nginx.
# usage: run-syscalls.sh BASE_DLL NEW_DLL FILES_DIR NGINX_CONF CERT KEY
set -u
base=$1; new=$2; files=$3; ngconf=$4; cert=$5; key=$6; here=$(dirname "$0")
start() { taskset -c 0 dotnet "$1" --mode fastfiles-lane-inline-zerocopy --root "$files" --http-port $2 --https-port $(($2+1)) --h2c-port $(($2+2)) --cert "$cert" --key "$key" > /dev/null 2>&1 & echo $!; }
b=$(start "$base" 19110); n=$(start "$new" 19120)
taskset -c 0 nginx -p "$(dirname "$ngconf")" -c "$ngconf" > /dev/null 2>&1 &
sleep 3
ng=$(pgrep -f "nginx: worker" | head -1)
for p in 19110 19120; do taskset -c 1 wrk -t1 -c64 -d15s http://127.0.0.1:$p/f64k.bin > /dev/null; done
for w in "f64k.bin 32" "f64k.bin 256" "f1m.bin 256"; do
  set -- $w
  for s in "before $b 19110" "after $n 19120" "nginx $ng 19000"; do
    set -- $w $s
    echo "== $3 $1 c$2"; "$here/syscalls.sh" $4 $5 $1 $2 5
  done
done
kill $b $n; pkill -f "nginx: master"
