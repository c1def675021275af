#!/usr/bin/env python3
"""Where the small-file ceiling is on this machine: the load generator's core, or the server's.

Runs nginx (one worker, `sendfile off`, its best for small files), `probe` (probe.c: the least CPU per request an
HTTP/1.1 keep-alive server can spend) and a FastFiles BenchHost mode, alternated round by round, each pinned to CPU 0
with wrk pinned to CPU 1. For every run it prints requests per second, the server's user and system CPU per request
(/proc/PID/stat) and how busy each core was (/proc/stat). If a server that spends far less CPU than nginx per request
cannot serve more requests than nginx, the load generator's core is the ceiling, not the server.

Usage: benchmarks/ceiling/ceiling.py [--rounds 5] [--duration 5] [--sizes 1024,4096] [--mode fastfiles-lane-inline-zerocopy]
Needs: cc, nginx, wrk, openssl, a Release build of benchmarks/FastFiles.BenchHost.
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
HOST_DLL = REPO / "benchmarks" / "FastFiles.BenchHost" / "bin" / "Release" / "net10.0" / "FastFiles.BenchHost.dll"
SERVER_CPU, LOAD_CPU = "0", "1"

NGINX_CONF = """daemon off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    default_type application/octet-stream;
    access_log off;
    server_tokens off;
    sendfile off;
    tcp_nodelay on;
    open_file_cache max=1000 inactive=60s;
    open_file_cache_valid 60s;
    keepalive_requests 100000000;
    client_body_temp_path {prefix}/tmp;
    proxy_temp_path {prefix}/tmp;
    fastcgi_temp_path {prefix}/tmp;
    uwsgi_temp_path {prefix}/tmp;
    scgi_temp_path {prefix}/tmp;
    server {{ listen 127.0.0.1:{port}; root {files}; }}
}}
"""


def cpu_ticks():
    lines = [l.split() for l in Path("/proc/stat").read_text().splitlines() if re.match(r"cpu[01] ", l)]
    return [[int(v) for v in l[1:]] for l in lines]


def process_ticks(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))


def wait_port(port, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if subprocess.run(["curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{port}/"], timeout=5).returncode == 0:
            return
        time.sleep(0.2)
    sys.exit(f"nothing answered on port {port}")


def measure(pid, port, path, duration):
    url = f"http://127.0.0.1:{port}{path}"
    subprocess.run(["taskset", "-c", LOAD_CPU, "wrk", "-t1", "-c32", "-d2", url], capture_output=True, check=True)
    hz = os.sysconf("SC_CLK_TCK")
    u0, s0 = process_ticks(pid)
    c0 = cpu_ticks()
    out = subprocess.run(["taskset", "-c", LOAD_CPU, "wrk", "-t1", "-c32", f"-d{duration}", url],
                         capture_output=True, text=True, check=True).stdout
    u1, s1 = process_ticks(pid)
    c1 = cpu_ticks()
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    if re.search(r"Non-2xx|Socket errors", out):
        sys.exit(f"errors from {url}:\n{out}")
    busy = []
    for before, after in zip(c0, c1):
        delta = [b - a for a, b in zip(before, after)]
        busy.append(100.0 * (sum(delta) - delta[3] - delta[4]) / sum(delta))
    return {"rps": rps, "user_us": (u1 - u0) / hz * 1e6 / requests, "sys_us": (s1 - s0) / hz * 1e6 / requests,
            "server_busy": busy[0], "load_busy": busy[1]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--sizes", default="1024,4096")
    parser.add_argument("--mode", default="fastfiles-lane-inline-zerocopy", help="the BenchHost --mode to compare")
    parser.add_argument("--base-port", type=int, default=39100)
    args = parser.parse_args()
    for tool in ("cc", "nginx", "wrk", "openssl", "taskset", "curl"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed")
    if not HOST_DLL.exists():
        sys.exit(f"build BenchHost first: dotnet build {HOST_DLL.parents[3]} -c Release")

    work = Path(tempfile.mkdtemp(prefix="fastfiles-ceiling-"))
    work.chmod(0o755)  # nginx started as root serves as an unprivileged user
    children = []
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
        files = work / "files"
        files.mkdir()
        for size in sizes:
            (files / f"f{size}.bin").write_bytes(os.urandom(size))
        subprocess.run(["cc", "-O2", "-o", str(work / "probe"), str(HERE / "probe.c")], check=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(work / "key.pem"),
                        "-out", str(work / "cert.pem"), "-days", "2", "-subj", "/CN=localhost"], capture_output=True, check=True)
        (work / "nginx" / "tmp").mkdir(parents=True)
        port = args.base_port
        conf = work / "nginx.conf"
        conf.write_text(NGINX_CONF.format(prefix=work / "nginx", port=port, files=files))
        pin = ["taskset", "-c", SERVER_CPU]
        servers = {}
        log = open(work / "servers.log", "w")
        nginx = subprocess.Popen(pin + ["nginx", "-c", str(conf), "-p", str(work / "nginx")], stdout=log, stderr=log)
        children.append(nginx)
        wait_port(port)
        # nginx's master forks the worker that serves; its CPU is the one counted.
        worker = int(subprocess.run(["pgrep", "-P", str(nginx.pid)], capture_output=True, text=True).stdout.split()[0])
        servers["nginx"] = (worker, port)
        dotnet = subprocess.Popen(pin + ["dotnet", str(HOST_DLL), "--mode", args.mode, "--root", str(files),
                                         "--http-port", str(port + 1), "--https-port", str(port + 2), "--h2c-port", str(port + 3),
                                         "--cert", str(work / "cert.pem"), "--key", str(work / "key.pem")],
                                  stdout=log, stderr=log, env=dict(os.environ, DOTNET_CLI_TELEMETRY_OPTOUT="1"))
        children.append(dotnet)
        wait_port(port + 1)
        servers[args.mode] = (dotnet.pid, port + 1)
        results = {}
        for size in sizes:
            # One probe per size: its response is prebuilt.
            probe = subprocess.Popen(pin + [str(work / "probe"), str(port + 4), str(size)], stdout=log, stderr=log)
            children.append(probe)
            wait_port(port + 4)
            servers["probe"] = (probe.pid, port + 4)
            for name, (pid, p) in servers.items():
                measure(pid, p, f"/f{size}.bin", 3)  # warm-up (the .NET server compiles its hot paths)
            for round_ in range(args.rounds):
                for name, (pid, p) in servers.items():
                    r = measure(pid, p, f"/f{size}.bin", args.duration)
                    results.setdefault((size, name), []).append(r)
                    print(f"size {size} round {round_ + 1} {name:32s} {r['rps']:9.0f} req/s  user {r['user_us']:5.2f} us"
                          f"  sys {r['sys_us']:5.2f} us  server core {r['server_busy']:3.0f}%  wrk core {r['load_busy']:3.0f}%", flush=True)
            probe.send_signal(signal.SIGTERM)
            probe.wait()
            children.remove(probe)

        print("\n| Size | Server | req/s x nginx (rounds) | user us/req | sys us/req | server core busy | wrk core busy |")
        print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
        for size in sizes:
            base = [r["rps"] for r in results[(size, "nginx")]]
            for name in ("nginx", "probe", args.mode):
                runs = results[(size, name)]
                ratios = [r["rps"] / b for r, b in zip(runs, base)]
                med = lambda k: statistics.median(r[k] for r in runs)
                print(f"| {size} B | {name} | {statistics.median(ratios):.2f} ({'/'.join(f'{x:.2f}' for x in ratios)}) |"
                      f" {med('user_us'):.2f} | {med('sys_us'):.2f} | {med('server_busy'):.0f}% | {med('load_busy'):.0f}% |")
    finally:
        for child in children:
            child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
