#!/bin/bash
# usage: measure.sh PID PORT FILE CONNS [SECS]
pid=$1; port=$2; file=$3; c=$4; secs=${5:-5}
ev="raw_syscalls:sys_enter,syscalls:sys_enter_sendfile64,syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_recvmsg,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_ctl,syscalls:sys_enter_futex,syscalls:sys_enter_openat,syscalls:sys_enter_newfstat,syscalls:sys_enter_statx,syscalls:sys_enter_setsockopt,syscalls:sys_enter_epoll_pwait,context-switches"
taskset -c 1 wrk -t1 -c$c -d$((secs+3))s http://127.0.0.1:$port/$file > /tmp/sc/wrk.out 2>&1 &
w=$!
sleep 1.5
t0=$(awk '{print $14+$15}' /proc/$pid/stat)
perf stat -x, -e $ev -p $pid -- sleep $secs 2> /tmp/sc/perf.out
t1=$(awk '{print $14+$15}' /proc/$pid/stat)
wait $w
reqs=$(grep -oP 'Requests/sec:\s+\K[\d.]+' /tmp/sc/wrk.out)
n=$(python3 -c "print(int($reqs*$secs))")
echo "req/s $reqs  cpu% $(( (t1-t0) / secs ))  cpu_us/resp $(python3 -c "print(round(($t1-$t0)*10000/$n,1))")"
awk -F, -v n=$n '{ if ($1+0>0) printf "  %-40s %8.3f\n", $3, $1/n }' /tmp/sc/perf.out
