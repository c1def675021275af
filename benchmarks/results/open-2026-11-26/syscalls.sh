#!/bin/bash
# usage: count.sh PID PORT FILE CONNS SECS
pid=$1; port=$2; file=$3; c=$4; secs=${5:-5}
ev="raw_syscalls:sys_enter,syscalls:sys_enter_openat,syscalls:sys_enter_statx,syscalls:sys_enter_newfstat,syscalls:sys_enter_newfstatat,syscalls:sys_enter_flock,syscalls:sys_enter_fcntl,syscalls:sys_enter_lseek,syscalls:sys_enter_close,syscalls:sys_enter_readlinkat,syscalls:sys_enter_pread64,syscalls:sys_enter_sendmsg,syscalls:sys_enter_recvfrom"
taskset -c 1 wrk -t1 -c$c -d$((secs+3))s http://127.0.0.1:$port/$file > /tmp/sc/wrk.out 2>&1 &
w=$!
sleep 1.5
t0=$(awk '{print $14+$15}' /proc/$pid/stat)
perf stat -x, -e $ev -p $pid -- sleep $secs 2> /tmp/sc/perf.out
t1=$(awk '{print $14+$15}' /proc/$pid/stat)
wait $w
reqs=$(grep -oP 'Requests/sec:\s+\K[\d.]+' /tmp/sc/wrk.out)
n=$(python3 -c "print(int($reqs*$secs))")
echo "req/s $reqs  cpu_us/resp $(python3 -c "print(round(($t1-$t0)*10000/$n,1))")"
awk -F, -v n=$n '{ if ($1+0>0) printf "  %-40s %8.3f\n", $3, $1/n }' /tmp/sc/perf.out
