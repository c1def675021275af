#!/usr/bin/env python3
"""End-to-end load harness for FastFiles: BenchHost modes vs nginx (and Caddy) on loopback.

Server pinned to CPU 0, load generator to CPU 1; configurations interleaved A B C A B C per round; medians.
Python 3.11 standard library only, so it runs on a fresh Debian 12 machine with the .NET SDK.
See benchmarks/README.md for usage.
"""

from __future__ import annotations

import argparse
import email.utils
import atexit
import datetime as dt
import functools
import hashlib
import json
import os
import platform
import random
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
HOST_PROJECT = REPO / "benchmarks" / "FastFiles.BenchHost" / "FastFiles.BenchHost.csproj"
HOST_DLL = REPO / "benchmarks" / "FastFiles.BenchHost" / "bin" / "Release" / "net10.0" / "FastFiles.BenchHost.dll"
# --baseline-host: configurations named "baseline:<mode>" run <mode> from another BenchHost build (an older commit),
# interleaved with this build's, for before/after comparisons in one run.
BASELINE_PREFIX = "baseline:"
BASELINE_DLL: Path | None = None
# A --smoke run: its numbers are not meaningful, so the load tools skip their own warm-up.
SMOKE = False

TLS13_SUITE = "TLS_AES_128_GCM_SHA256"
SERVER_CPU = "0"
CLIENT_CPU = "1"

# .NET configurations are BenchHost --mode names; adding a mode there and its name here is all it takes.
DOTNET_MODES = ["stock", "sendfile", "fastfiles", "fastfiles-coalesce", "fastfiles-stage", "fastfiles-nostage", "fastfiles-nocache",
                "staticassets", "staticassets-fast", "fastfiles-noopenfiles", "zerocopy", "fastfiles-lane"]
# nginx-nosendfile: the same nginx with `sendfile off` (faster than sendfile for small files); "x nginx" ratios use the
# better of the two nginx configurations run.
# nginx-gzip: nginx with `gzip on` for the text types (compressing every response, at its default level 1); only run when
# named in --configs, for the dynamic-compression workloads.
PEERS = ["nginx", "nginx-nosendfile", "caddy"]
OPTIONAL_PEERS = ["nginx-gzip"]
NGINX_PEERS = ["nginx", "nginx-nosendfile", "nginx-gzip"]
# Runtime settings that only an environment variable can make (read before Main runs), per BenchHost mode.
MODE_ENVIRONMENT = {"knob-inlinecompletions": {"DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS": "1"}}
REQUIRED_TOOLS = {"wrk": "wrk", "h2load": "nghttp2-client", "nginx": "nginx", "curl": "curl", "openssl": "openssl"}

KIB = 1024
MIB = 1024 * 1024
GIB = 1024 * MIB
SINGLE_FILES = {"f1k.bin": KIB, "f4k.bin": 4 * KIB, "f64k.bin": 64 * KIB, "f256k.bin": 256 * KIB, "f1m.bin": MIB, "f100m.bin": 100 * MIB, "f1g.bin": GIB}
# Written only when a selected workload asks for them.
HUGE_FILES = ("f100m.bin", "f1g.bin")
# Compressible text (a stylesheet), for the dynamic-compression workloads: deterministic, so every run serves the same bytes.
TEXT_FILES = {"f64k.css": 64 * KIB}
# The load shapes a --smoke run puts through its one short round when no workloads are named.
SMOKE_WORKLOADS = ("h1-1k", "h1-1k-p16", "h1-1m", "h1-1m-ranges4", "h1tls-1k", "h2-1x70-1k", "h2c-1x70-1k", "h2-16x100-mixed")
# 20 files spread evenly over 1..85 KiB: a page's worth of scripts, styles and images.
MIXED_FILES = {f"mixed/m{i:02d}.bin": round((1 + i * 84 / 19) * KIB) for i in range(20)}


@dataclass
class Workload:
    name: str
    group: str  # "http1", "h2" or "h2c"
    title: str
    tool: str  # "wrk" or "h2load"
    path: str | None = None  # a single file, or None for the mixed set
    connections: int = 1
    streams: int = 1
    # Throughput ratios use req/s for small bodies and MB/s where few requests complete (100 MiB).
    ratio_metric: str = "rps"
    # Request headers a browser sends for a stylesheet; "revalidate" adds If-Modified-Since (now), so every
    # server answers 304 without needing its own ETag.
    browser: bool = False
    # Extra request headers (e.g. a multi-range Range), sent by wrk and h2load alike.
    headers: tuple[str, ...] = ()
    revalidate: bool = False
    # wrk over TLS (HTTP/1.1 via ALPN), to show the HTTP/2 TLS stage leaves it alone.
    tls: bool = False
    # h2load on the cleartext HTTP/2 port (prior knowledge): HTTP/2 framing without TLS, which the stage passes through.
    h2c: bool = False
    # h2load's initial flow-control windows as 2**n - 1 (stream and connection); None keeps its default (2**30 - 1).
    # Response flow control is the client's window (RFC 9113 6.9), so this is the knob that can make it bind.
    window_bits: int | None = None
    # wrk requests per write (HTTP/1.1 pipelining); 1 is plain keep-alive.
    pipeline: int = 1


BROWSER_HEADERS = [
    "Accept: text/css,*/*;q=0.1",
    "Accept-Encoding: gzip, deflate, br, zstd",
    "Accept-Language: en-US,en;q=0.9",
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36",
    "Cookie: session=3f2a9c1b7d; theme=dark",
    "Sec-Fetch-Dest: style",
    "Sec-Fetch-Mode: no-cors",
    "Sec-Fetch-Site: same-origin",
    'Sec-CH-UA: "Chromium";v="130", "Not?A_Brand";v="99"',
    "Sec-CH-UA-Mobile: ?0",
    'Sec-CH-UA-Platform: "Linux"',
]


MULTI_RANGE = "Range: bytes=0-65535,262144-327679,524288-589823,786432-851967"

WORKLOADS = [
    Workload("h1-1k", "http1", "HTTP/1.1 keep-alive, 1 KiB", "wrk", "f1k.bin", connections=32),
    Workload("h1-1k-browser", "http1", "HTTP/1.1 keep-alive, 1 KiB, browser headers", "wrk", "f1k.bin", connections=32, browser=True),
    Workload("h1-1k-revalidate", "http1", "HTTP/1.1 keep-alive, 1 KiB, browser revalidation (304)", "wrk", "f1k.bin", connections=32, browser=True, revalidate=True),
    Workload("h1-4k", "http1", "HTTP/1.1 keep-alive, 4 KiB", "wrk", "f4k.bin", connections=32),
    Workload("h1-64k", "http1", "HTTP/1.1 keep-alive, 64 KiB", "wrk", "f64k.bin", connections=32),
    # Just above the 64 KiB content-cache limit: read from disk per request, where open/close per request shows most.
    Workload("h1-256k", "http1", "HTTP/1.1 keep-alive, 256 KiB", "wrk", "f256k.bin", connections=32),
    Workload("h1-1k-c256", "http1", "HTTP/1.1 keep-alive, 1 KiB, 256 connections", "wrk", "f1k.bin", connections=256),
    Workload("h1-4k-c256", "http1", "HTTP/1.1 keep-alive, 4 KiB, 256 connections", "wrk", "f4k.bin", connections=256),
    Workload("h1-1k-p16", "http1", "HTTP/1.1 pipelined 16 deep, 1 KiB", "wrk", "f1k.bin", connections=32, pipeline=16),
    Workload("h1-1m", "http1", "HTTP/1.1 keep-alive, 1 MiB", "wrk", "f1m.bin", connections=16),
    Workload("h1-100m", "http1", "HTTP/1.1 keep-alive, 100 MiB", "wrk", "f100m.bin", connections=4, ratio_metric="mbps"),
    # Issue 11 (zero-copy sendfile): large bodies at 32 and 256 connections; throughput and server CPU per GiB sent.
    Workload("h1-64k-c256", "http1", "HTTP/1.1 keep-alive, 64 KiB, 256 connections", "wrk", "f64k.bin", connections=256),
    Workload("h1-1m-c32", "http1", "HTTP/1.1 keep-alive, 1 MiB, 32 connections", "wrk", "f1m.bin", connections=32, ratio_metric="mbps"),
    Workload("h1-1m-c256", "http1", "HTTP/1.1 keep-alive, 1 MiB, 256 connections", "wrk", "f1m.bin", connections=256, ratio_metric="mbps"),
    Workload("h1-100m-c32", "http1", "HTTP/1.1 keep-alive, 100 MiB, 32 connections", "wrk", "f100m.bin", connections=32, ratio_metric="mbps"),
    Workload("h1-100m-c256", "http1", "HTTP/1.1 keep-alive, 100 MiB, 256 connections", "wrk", "f100m.bin", connections=256, ratio_metric="mbps"),
    Workload("h1-1g-c32", "http1", "HTTP/1.1 keep-alive, 1 GiB, 32 connections", "wrk", "f1g.bin", connections=32, ratio_metric="mbps"),
    Workload("h1-1g-c256", "http1", "HTTP/1.1 keep-alive, 1 GiB, 256 connections", "wrk", "f1g.bin", connections=256, ratio_metric="mbps"),
    Workload("h1tls-1k", "http1", "HTTP/1.1 over TLS keep-alive, 1 KiB", "wrk", "f1k.bin", connections=32, tls=True),
    Workload("h1tls-64k", "http1", "HTTP/1.1 over TLS keep-alive, 64 KiB", "wrk", "f64k.bin", connections=32, tls=True),
    Workload("h2-1x70-1k", "h2", "HTTP/2 TLS, 1 conn x 70 streams, 1 KiB", "h2load", "f1k.bin", 1, 70),
    Workload("h2-1x70-64k", "h2", "HTTP/2 TLS, 1 conn x 70 streams, 64 KiB", "h2load", "f64k.bin", 1, 70),
    Workload("h2-1x16-1m", "h2", "HTTP/2 TLS, 1 conn x 16 streams, 1 MiB", "h2load", "f1m.bin", 1, 16, ratio_metric="mbps"),
    # Four 64 KiB ranges of a 1 MiB file: a 206 multipart/byteranges body of about 256 KiB from every server.
    Workload("h1-1m-ranges4", "http1", "HTTP/1.1 keep-alive, 1 MiB, 4 ranges (multipart/byteranges)", "wrk", "f1m.bin", connections=16,
             headers=(MULTI_RANGE,)),
    Workload("h2-1x16-1m-ranges4", "h2", "HTTP/2 TLS, 1 conn x 16 streams, 1 MiB, 4 ranges (multipart/byteranges)", "h2load", "f1m.bin", 1, 16,
             ratio_metric="mbps", headers=(MULTI_RANGE,)),
    # Dynamic compression (issue 13): a 64 KiB stylesheet asked for gzip (what nginx's `gzip on` does), brotli (FastFiles
    # only: Debian's nginx has no brotli), and with no Accept-Encoding (the identity path of a compressible file).
    Workload("h1-64k-css", "http1", "HTTP/1.1 keep-alive, 64 KiB CSS, no Accept-Encoding", "wrk", "f64k.css", connections=32),
    Workload("h1-64k-css-gzip", "http1", "HTTP/1.1 keep-alive, 64 KiB CSS, Accept-Encoding: gzip", "wrk", "f64k.css", connections=32,
             headers=("Accept-Encoding: gzip",)),
    Workload("h1-64k-css-br", "http1", "HTTP/1.1 keep-alive, 64 KiB CSS, Accept-Encoding: br", "wrk", "f64k.css", connections=32,
             headers=("Accept-Encoding: br",)),
    Workload("h2-1x70-64k-css-gzip", "h2", "HTTP/2 TLS, 1 conn x 70 streams, 64 KiB CSS, Accept-Encoding: gzip", "h2load", "f64k.css", 1, 70,
             headers=("Accept-Encoding: gzip",)),
    Workload("h2-1x1-1k", "h2", "HTTP/2 TLS, 1 conn x 1 stream, 1 KiB", "h2load", "f1k.bin", 1, 1),
    Workload("h2-1x1-64k", "h2", "HTTP/2 TLS, 1 conn x 1 stream, 64 KiB", "h2load", "f64k.bin", 1, 1),
    Workload("h2-16x100-mixed", "h2", "HTTP/2 TLS, 16 conns x 100 streams, 20 files of 1-85 KiB", "h2load", None, 16, 100),
    Workload("h2-1x1-64k-win64k", "h2", "HTTP/2 TLS, 1 conn x 1 stream, 64 KiB, client windows 64 KiB", "h2load", "f64k.bin", 1, 1, window_bits=16),
    Workload("h2-1x70-64k-win64k", "h2", "HTTP/2 TLS, 1 conn x 70 streams, 64 KiB, client windows 64 KiB", "h2load", "f64k.bin", 1, 70, window_bits=16),
    Workload("h2c-1x70-1k", "h2c", "HTTP/2 cleartext, 1 conn x 70 streams, 1 KiB", "h2load", "f1k.bin", 1, 70, h2c=True),
    Workload("h2c-1x1-64k", "h2c", "HTTP/2 cleartext, 1 conn x 1 stream, 64 KiB", "h2load", "f64k.bin", 1, 1, h2c=True),
    Workload("h2c-16x100-mixed", "h2c", "HTTP/2 cleartext, 16 conns x 100 streams, 20 files of 1-85 KiB", "h2load", None, 16, 100, h2c=True),
]

WRK_SCRIPT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%d,"bytes":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.bytes, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


# wrk sends DEPTH requests per write and counts each response (wrk's own scripts/pipeline.lua does the same).
WRK_PIPELINE = """
init = function(args)
  local r = {}
  for i = 1, DEPTH do
    r[i] = wrk.format(nil, nil)
  end
  req = table.concat(r)
end

request = function()
  return req
end
"""


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


# ---------------------------------------------------------------- processes


class Children:
    """Servers this harness started; each is stopped by its own process group id, never by name."""

    def __init__(self) -> None:
        self._procs: list[subprocess.Popen] = []

    def start(self, argv: list[str], log_path: Path, env: dict | None = None) -> subprocess.Popen:
        out = open(log_path, "wb")
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.time() + 10
        for proc in self._procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._procs.clear()


CHILDREN = Children()

# Everything is on loopback: never let an http_proxy/https_proxy from the environment route these requests.
LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def run(argv: list[str], timeout: float | None = None, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=check)


def run_load(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """A load generator run, bounded: one that outlives its timeout is killed and reported (returncode None), not raised."""
    try:
        return run(argv, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        def text(v):
            return v.decode(errors="replace") if isinstance(v, bytes) else (v or "")
        return subprocess.CompletedProcess(argv, None, text(e.stdout), text(e.stderr) + f"\n[timed out after {timeout:.0f} s]\n")


# ---------------------------------------------------------------- setup


def ensure_tools(want_caddy: bool) -> bool:
    """Installs the Debian packages that are missing; returns whether Caddy is usable."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    updated = False

    def apt_install(packages: list[str], check: bool) -> bool:
        nonlocal updated
        if not updated:
            subprocess.run(["apt-get", "update"], check=check, env=env)
            updated = True
        return subprocess.run(["apt-get", "install", "-y"] + packages, check=check, env=env).returncode == 0

    missing = sorted({pkg for tool, pkg in REQUIRED_TOOLS.items() if shutil.which(tool) is None})
    if shutil.which("taskset") is None:
        missing.append("util-linux")
    if missing:
        if os.geteuid() != 0:
            sys.exit(f"missing tools ({', '.join(missing)}) and not root: apt-get install -y {' '.join(missing)}")
        log(f"installing {' '.join(missing)}")
        apt_install(["wrk", "nghttp2-client", "nginx", "curl", "openssl"] + (["util-linux"] if "util-linux" in missing else []), check=True)
    if not want_caddy:
        return False
    if shutil.which("caddy") is None and os.geteuid() == 0:
        # Optional peer: Debian 12 packages Caddy 2.6; if it does not install cleanly we run without it.
        log("caddy missing; trying apt-get install -y caddy")
        if not apt_install(["caddy"], check=False):
            log("caddy did not install; continuing without it")
    return shutil.which("caddy") is not None


def build_host(skip: bool) -> None:
    if skip and HOST_DLL.exists():
        return
    log("building FastFiles.BenchHost (Release)")
    subprocess.run(["dotnet", "build", str(HOST_PROJECT), "-c", "Release", "-nologo", "-v", "q", "-clp:ErrorsOnly"], check=True)


def make_files(root: Path, huge: set[str]) -> dict[str, str]:
    """Random (incompressible) files; returns relative path -> sha256. Of HUGE_FILES only those in huge are written."""
    hashes = {}
    files = dict(SINGLE_FILES, **MIXED_FILES)
    for name in HUGE_FILES:
        if name not in huge:
            files.pop(name)
    for rel, size in TEXT_FILES.items():
        text = stylesheet(size).encode("ascii")
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text)
        hashes[rel] = hashlib.sha256(text).hexdigest()
    for rel, size in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with open(path, "wb") as f:
            left = size
            while left:
                chunk = os.urandom(min(left, 4 * MIB))
                f.write(chunk)
                digest.update(chunk)
                left -= len(chunk)
        hashes[rel] = digest.hexdigest()
    return hashes


def stylesheet(size: int) -> str:
    """CSS-like rules from a fixed seed, cut to size bytes: compresses about as well as real stylesheets (4-6x)."""
    rng = random.Random(13)
    rules = []
    length = 0
    i = 0
    while length < size:
        rule = (f".c{i}-{rng.randrange(1000)} {{ color: #{rng.randrange(0xffffff):06x}; "
                f"margin: {rng.randrange(40)}px {rng.randrange(40)}px; }}\n")
        rules.append(rule)
        length += len(rule)
        i += 1
    return "".join(rules)[:size]


def make_certificate(work: Path) -> tuple[Path, Path]:
    cert, key = work / "cert.pem", work / "key.pem"
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "30", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
    return cert, key


# ---------------------------------------------------------------- servers


@dataclass
class Server:
    name: str
    http_port: int
    https_port: int
    h2c_port: int
    is_dotnet: bool
    proc: subprocess.Popen | None = None
    log_path: Path | None = None

    def url(self, path: str, tls: bool) -> str:
        return f"https://127.0.0.1:{self.https_port}/{path}" if tls else f"http://127.0.0.1:{self.http_port}/{path}"

    def h2c_url(self, path: str) -> str:
        # Plain http:// on a port that speaks only HTTP/2: curl needs --http2-prior-knowledge, h2load does it by default.
        return f"http://127.0.0.1:{self.h2c_port}/{path}"


def port_free(port: int) -> bool:
    with socket.socket() as s:
        # Servers bind with SO_REUSEADDR too, so TIME_WAIT leftovers of a previous run do not count as in use.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def start_server(server: Server, work: Path, files: Path, cert: Path, key: Path) -> None:
    for port in (server.http_port, server.https_port, server.h2c_port):
        if not port_free(port):
            sys.exit(f"port {port} on 127.0.0.1 is in use; pass --base-port")
    server.log_path = work / f"{server.name}.log"
    pin = ["taskset", "-c", SERVER_CPU]
    if server.is_dotnet:
        dll, mode = HOST_DLL, server.name
        if mode.startswith(BASELINE_PREFIX):
            if BASELINE_DLL is None:
                sys.exit(f"{server.name} needs --baseline-host")
            dll, mode = BASELINE_DLL, mode[len(BASELINE_PREFIX):]
        env = dict(os.environ, DOTNET_CLI_TELEMETRY_OPTOUT="1", DOTNET_NOLOGO="1", **MODE_ENVIRONMENT.get(mode, {}))
        argv = pin + ["dotnet", str(dll), "--mode", mode, "--root", str(files),
                      "--http-port", str(server.http_port), "--https-port", str(server.https_port),
                      "--h2c-port", str(server.h2c_port),
                      "--cert", str(cert), "--key", str(key)]
        server.proc = CHILDREN.start(argv, server.log_path, env)
    elif server.name in NGINX_PEERS:
        prefix = work / server.name
        for sub in ("logs", "tmp"):
            (prefix / sub).mkdir(parents=True, exist_ok=True)
        template = (HERE / "nginx.conf.in").read_text()
        conf = template.format(prefix=prefix, files=files, cert=cert, key=key,
                               http_port=server.http_port, https_port=server.https_port, h2c_port=server.h2c_port)
        if server.name == "nginx-nosendfile":
            conf = conf.replace("    sendfile on;\n", "    sendfile off;\n")
        if server.name == "nginx-gzip":
            # nginx compresses each response anew, at gzip_comp_level 1 unless told otherwise; Vary as FastFiles sends it.
            conf = conf.replace("    sendfile on;\n", "    sendfile on;\n    gzip on;\n    gzip_vary on;\n    gzip_min_length 1024;\n"
                                "    gzip_types text/css text/javascript application/javascript application/json image/svg+xml;\n")
        (prefix / "nginx.conf").write_text(conf)
        server.proc = CHILDREN.start(pin + ["nginx", "-p", str(prefix), "-c", str(prefix / "nginx.conf")], server.log_path)
    elif server.name == "caddy":
        prefix = work / "caddy"
        prefix.mkdir(parents=True, exist_ok=True)
        template = (HERE / "Caddyfile.in").read_text()
        (prefix / "Caddyfile").write_text(template.format(files=files, cert=cert, key=key, http_port=server.http_port,
                                                          https_port=server.https_port, h2c_port=server.h2c_port))
        env = dict(os.environ, HOME=str(prefix), XDG_DATA_HOME=str(prefix / "data"), XDG_CONFIG_HOME=str(prefix / "config"))
        server.proc = CHILDREN.start(pin + ["caddy", "run", "--config", str(prefix / "Caddyfile"), "--adapter", "caddyfile"],
                                     server.log_path, env)
    else:
        sys.exit(f"unknown configuration {server.name}")

    deadline = time.time() + 60
    while time.time() < deadline:
        if server.proc.poll() is not None:
            sys.exit(f"{server.name} exited at startup; see {server.log_path}:\n{server.log_path.read_text()[-2000:]}")
        try:
            with LOCAL.open(server.url("f1k.bin", tls=False), timeout=1) as r:
                r.read()
                return
        except OSError:
            time.sleep(0.2)
    sys.exit(f"{server.name} did not answer within 60 s; see {server.log_path}")


def server_stats(server: Server) -> dict | None:
    if not server.is_dotnet:
        return None
    try:
        with LOCAL.open(server.url("_stats", tls=False), timeout=5) as r:
            return json.loads(r.read())
    except OSError as e:
        log(f"  {server.name}: /_stats failed ({e}); no allocation numbers for this run")
        return None


def reset_peak_rss(server: Server) -> None:
    # Linux resets a process' peak RSS (VmHWM) when "5" is written to clear_refs; then each run reports its own peak.
    if server.proc is None:
        return
    try:
        Path(f"/proc/{server.proc.pid}/clear_refs").write_text("5")
    except OSError:
        pass


# ---------------------------------------------------------------- correctness


def verify(server: Server, hashes: dict[str, str], work: Path) -> list[str]:
    """Fetches files over HTTP/1.1, h2 with TLS and h2c (prior knowledge) and compares their sha256; returns the failures."""
    failures = []
    out = work / "verify.tmp"
    checks = [p for p in ("f1k.bin", "f4k.bin", "f64k.bin", "f1m.bin", "f100m.bin") if p in hashes]
    checks += ["mixed/m00.bin", "mixed/m10.bin", "mixed/m19.bin"]
    # (label, curl's protocol options, the URL of a path, the HTTP version curl must report)
    protocols = [("http/1.1", ["--http1.1"], functools.partial(server.url, tls=False), "1.1"),
                 ("h2", ["--http2", "-k"], functools.partial(server.url, tls=True), "2"),
                 ("h2c", ["--http2-prior-knowledge"], server.h2c_url, "2")]
    for rel in checks:
        for label, options, url, want_version in protocols:
            argv = ["curl", "-sS", "--noproxy", "*", "-o", str(out), "-w", "%{http_code} %{http_version}", "--max-time", "60"]
            result = run(argv + options + [url(rel)], check=False)
            code, _, version = result.stdout.partition(" ")
            if result.returncode != 0 or code != "200":
                failures.append(f"{server.name} {rel} {label}: curl rc={result.returncode} status={code} {result.stderr.strip()}")
                continue
            if version != want_version:
                failures.append(f"{server.name} {rel} {label}: HTTP/{version}, expected HTTP/{want_version}")
            if sha256_file(out) != hashes[rel]:
                failures.append(f"{server.name} {rel} {label}: sha256 mismatch")
    # The stylesheet with every coding curl decodes offered: identical bytes once decoded, whatever was chosen.
    if "f64k.css" in hashes:
        for label, options, url, _ in protocols:
            argv = ["curl", "-sS", "--noproxy", "*", "--compressed", "-o", str(out), "-w", "%{http_code}", "--max-time", "60"]
            result = run(argv + options + [url("f64k.css")], check=False)
            if result.returncode != 0 or result.stdout != "200" or sha256_file(out) != hashes["f64k.css"]:
                failures.append(f"{server.name} f64k.css {label} --compressed: rc={result.returncode} status={result.stdout}")
    # One range request, since every configuration claims range support.
    result = run(["curl", "-sS", "--noproxy", "*", "-o", str(out), "-w", "%{http_code}", "-r", "100-1123", server.url("f64k.bin", False)], check=False)
    expected = (Path(work / "files" / "f64k.bin").read_bytes())[100:1124]
    if result.stdout != "206" or out.read_bytes() != expected:
        failures.append(f"{server.name} range 100-1123: status {result.stdout}, bytes {'match' if out.read_bytes() == expected else 'differ'}")
    return failures


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


# ---------------------------------------------------------------- load


def load_command(workload: Workload, server: Server, duration: int, work: Path) -> list[str]:
    pin = ["taskset", "-c", CLIENT_CPU]
    if workload.tool == "wrk":
        script = work / ("report.lua" if workload.pipeline == 1 else f"report-p{workload.pipeline}.lua")
        if not script.exists():
            script.write_text(WRK_SCRIPT + (WRK_PIPELINE.replace("DEPTH", str(workload.pipeline)) if workload.pipeline > 1 else ""))
        headers: list[str] = []
        for header in workload.headers:
            headers += ["-H", header]
        if workload.browser:
            for header in BROWSER_HEADERS:
                headers += ["-H", header]
        if workload.revalidate:
            headers += ["-H", "If-Modified-Since: " + email.utils.formatdate(time.time(), usegmt=True)]
        return pin + ["wrk", "-t1", f"-c{workload.connections}", f"-d{duration}s", "--timeout", "10s",
                      "-s", str(script)] + headers + [server.url(workload.path, tls=workload.tls)]
    # The h2load warm-up lets all connections finish their handshakes before the measured window opens; a smoke run
    # measures nothing, and skipping it saves 1 s per h2 run (45 runs with every configuration).
    argv = pin + ["h2load", "-t1", f"-c{workload.connections}", f"-m{workload.streams}", "-D", str(duration)]
    if not SMOKE:
        argv.append("--warm-up-time=1")
    for header in workload.headers:
        argv += ["-H", header]
    if workload.window_bits is not None:
        argv += [f"--window-bits={workload.window_bits}", f"--connection-window-bits={workload.window_bits}"]
    if workload.h2c:
        # h2load speaks HTTP/2 with prior knowledge to http:// URIs (no Upgrade, no ALPN); there is no cipher to pin.
        url = server.h2c_url
    else:
        # One TLS 1.3 suite for every server: left to negotiate, nginx and Caddy follow h2load's preference (AES-128)
        # while Kestrel prefers its own (AES-256), and the comparison would partly be about the cipher.
        argv.append(f"--tls13-ciphers={TLS13_SUITE}")
        url = functools.partial(server.url, tls=True)
    if workload.path is None:
        uris = work / "mixed-uris.txt"
        uris.write_text("".join(url(rel) + "\n" for rel in MIXED_FILES))
        return argv + ["-i", str(uris)]
    return argv + [url(workload.path)]


def parse_wrk(text: str) -> dict:
    m = re.search(r"WRKJSON (\{.*\})", text)
    if not m:
        raise ValueError("no wrk summary")
    s = json.loads(m.group(1))
    seconds = s["duration_us"] / 1e6
    errors = s["connect"] + s["read"] + s["write"] + s["status"] + s["timeout"]
    return {"requests": s["requests"], "rps": s["requests"] / seconds, "mbps": s["bytes"] / seconds / 1e6,
            "bytes": s["bytes"], "errors": errors, "p50_ms": s["p50_us"] / 1000, "p99_ms": s["p99_us"] / 1000}


def parse_h2load(text: str) -> dict:
    finished = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", text)
    reqs = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", text)
    traffic = re.search(r"traffic: \S+ \((\d+)\) total", text)
    if not (finished and reqs and traffic):
        raise ValueError("no h2load summary")
    seconds = float(finished.group(1)) / (1000 if finished.group(2) == "ms" else 1)
    succeeded = int(reqs.group(4))
    cipher = re.search(r"Cipher: (\S+)", text)
    proto = re.search(r"Application protocol: (\S+)", text)
    return {"requests": succeeded, "rps": succeeded / seconds, "mbps": int(traffic.group(1)) / seconds / 1e6,
            "errors": int(reqs.group(5)) + int(reqs.group(6)) + int(reqs.group(7)),
            "cipher": cipher.group(1) if cipher else None, "protocol": proto.group(1) if proto else None}


def cpu_seconds(server: Server) -> float | None:
    """utime + stime of the server process and all its descendants (nginx's worker), from /proc/PID/stat."""
    if server.proc is None:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the command name (which may contain spaces): state ppid ... utime(14) stime(15).
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks
    tree = {server.proc.pid}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return sum(times.get(pid, 0.0) for pid in tree)


def measure(workload: Workload, server: Server, duration: int, work: Path, raw: Path, tag: str) -> dict:
    reset_peak_rss(server)
    before = server_stats(server)
    cpu_before = cpu_seconds(server)
    argv = load_command(workload, server, duration, work)
    result = run_load(argv, timeout=duration + 60)
    cpu_after = cpu_seconds(server)
    after = server_stats(server)
    (raw / f"{tag}.txt").write_text(shlex.join(argv) + "\n\n" + result.stdout + result.stderr)
    try:
        row = parse_wrk(result.stdout) if workload.tool == "wrk" else parse_h2load(result.stdout)
    except ValueError:
        log(f"  {server.name}: could not parse {workload.tool} output (rc={result.returncode}); see {raw / (tag + '.txt')}")
        row = {"requests": 0, "rps": 0.0, "mbps": 0.0, "errors": 1, "unparsed": True}
    if result.returncode is None:
        log(f"  {server.name}: {workload.tool} did not finish within {duration + 60} s; see {raw / (tag + '.txt')}")
        row["timed_out"] = True
    if cpu_before is not None and cpu_after is not None and row.get("bytes"):
        # Server CPU seconds (user + system, all threads and worker processes) per GiB the client received.
        row["cpu_s_per_gib"] = (cpu_after - cpu_before) / (row["bytes"] / GIB)
    if before and after:
        served = after["requests"] - before["requests"]
        row["served"] = served
        row["alloc_per_req"] = (after["allocatedBytes"] - before["allocatedBytes"]) / served if served else None
        row["peak_ws"] = after["peakWorkingSet"]
        row["gc"] = [after[f"gen{i}"] - before[f"gen{i}"] for i in range(3)]
    return row


# ---------------------------------------------------------------- reporting


def median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def fmt_bytes(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= MIB:
        return f"{value / MIB:,.1f} MiB"
    if value >= 10 * KIB:
        return f"{value / KIB:,.1f} KiB"
    return f"{value:,.0f} B"


def summarize(results: dict, workloads: list[Workload], configs: list[str]) -> dict:
    """Medians per (workload, configuration) and ratios computed within this run."""
    summary = {}
    for w in workloads:
        rows = {}
        for c in configs:
            runs = results.get(w.name, {}).get(c, [])
            rows[c] = {
                "rps": median([r["rps"] for r in runs]),
                "mbps": median([r["mbps"] for r in runs]),
                "alloc_per_req": median([r.get("alloc_per_req") for r in runs]),
                "peak_ws": median([r.get("peak_ws") for r in runs]),
                "cpu_s_per_gib": median([r.get("cpu_s_per_gib") for r in runs]),
                "errors": sum(r["errors"] for r in runs),
                "rounds": len(runs),
            }
        nginx_best = max((rows[n][w.ratio_metric] for n in NGINX_PEERS if n in rows and rows[n][w.ratio_metric]), default=None)
        for c in configs:
            metric = rows[c][w.ratio_metric]
            for ref in ("stock", "nginx"):
                base = nginx_best if ref == "nginx" else rows.get(ref, {}).get(w.ratio_metric)
                rows[c][f"x_{ref}"] = metric / base if metric and base else None
                cpu, cpu_base = rows[c]["cpu_s_per_gib"], rows.get(ref, {}).get("cpu_s_per_gib")
                rows[c][f"cpu_x_{ref}"] = cpu / cpu_base if cpu and cpu_base else None
        summary[w.name] = rows
    return summary


def write_tables(out: Path, summary: dict, workloads: list[Workload], configs: list[str], header: str) -> None:
    dotnet = [c for c in configs if c not in PEERS + OPTIONAL_PEERS]
    groups = {"http1": ("HTTP/1.1 keep-alive (wrk)", "http1.md"), "h2": ("HTTP/2 over TLS (h2load)", "h2.md"),
              "h2c": ("HTTP/2 cleartext, prior knowledge (h2load)", "h2c.md")}
    for group, (title, filename) in groups.items():
        lines = [f"# {title}", "", header, ""]
        for w in [w for w in workloads if w.group == group]:
            metric = "req/s" if w.ratio_metric == "rps" else "MB/s"
            lines += [f"## {w.title}", "", f"Ratios compare median {metric}.", "",
                      "| Configuration | req/s | MB/s | x stock | x nginx | CPU s/GiB | CPU x nginx | alloc/req | peak working set | errors |",
                      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
            for c in configs:
                r = summary[w.name][c]
                lines.append(f"| {c} | {fmt(r['rps'])} | {fmt(r['mbps'], 1)} | {fmt(r['x_stock'], 2)} | {fmt(r['x_nginx'], 2)} | "
                             f"{fmt(r['cpu_s_per_gib'], 2)} | {fmt(r['cpu_x_nginx'], 2)} | "
                             f"{fmt_bytes(r['alloc_per_req'])} | {fmt_bytes(r['peak_ws'])} | {r['errors']} |")
            lines.append("")
        (out / filename).write_text("\n".join(lines))

    lines = ["# Allocations and memory (.NET configurations)", "", header, "",
             "Bytes allocated per request = delta of `GC.GetTotalAllocatedBytes(true)` over a run / requests counted by",
             "BenchHost (the `/_stats` calls themselves are not counted). Peak working set is the server's VmHWM during",
             "the run (reset before each run). Medians over rounds.", "",
             "| Workload | " + " | ".join(f"{c} alloc/req" for c in dotnet) + " | " + " | ".join(f"{c} peak WS" for c in dotnet) + " |",
             "| --- | " + " | ".join("---:" for _ in dotnet * 2) + " |"]
    for w in workloads:
        rows = summary[w.name]
        lines.append(f"| {w.title} | " + " | ".join(fmt_bytes(rows[c]["alloc_per_req"]) for c in dotnet) + " | "
                     + " | ".join(fmt_bytes(rows[c]["peak_ws"]) for c in dotnet) + " |")
    (out / "memory.md").write_text("\n".join(lines) + "\n")


def write_chart(out: Path, summary: dict, workloads: list[Workload], configs: list[str], title: str) -> None:
    """A grouped horizontal bar chart of throughput relative to stock, drawn as plain SVG."""
    palette = ["#8c8c8c", "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2"]
    colors = {c: palette[i % len(palette)] for i, c in enumerate(configs)}
    bar_h, gap, label_w, plot_w, top = 12, 14, 300, 520, 60
    values = [summary[w.name][c]["x_stock"] or 0 for w in workloads for c in configs]
    vmax = max([1.0] + values) * 1.1
    group_h = bar_h * len(configs) + gap
    height = top + group_h * len(workloads) + 40
    width = label_w + plot_w + 90
    scale = plot_w / vmax
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" font-size="14" font-weight="bold">{escape(title)}</text>',
           '<text x="10" y="38">Median throughput relative to stock ASP.NET Core (UseStaticFiles) = 1.0; longer is faster.</text>']
    x1 = label_w + scale
    svg.append(f'<line x1="{x1:.1f}" y1="{top - 6}" x2="{x1:.1f}" y2="{height - 34}" stroke="#444" stroke-dasharray="3,3"/>')
    for i, w in enumerate(workloads):
        y0 = top + i * group_h
        svg.append(f'<text x="{label_w - 8}" y="{y0 + group_h / 2 - 2:.1f}" text-anchor="end">{escape(w.title)}</text>')
        for j, c in enumerate(configs):
            v = summary[w.name][c]["x_stock"]
            y = y0 + j * bar_h
            length = (v or 0) * scale
            svg.append(f'<rect x="{label_w}" y="{y}" width="{length:.1f}" height="{bar_h - 2}" fill="{colors[c]}"/>')
            svg.append(f'<text x="{label_w + length + 4:.1f}" y="{y + bar_h - 3}">{"-" if v is None else f"{v:.2f}"}</text>')
    lx = 10
    for c in configs:
        svg.append(f'<rect x="{lx}" y="{height - 24}" width="10" height="10" fill="{colors[c]}"/>')
        svg.append(f'<text x="{lx + 14}" y="{height - 15}">{escape(c)}</text>')
        lx += 20 + 7 * len(c) + 10
    svg.append("</svg>")
    (out / "throughput.svg").write_text("\n".join(svg) + "\n")


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def first_line(argv: list[str]) -> str:
    try:
        result = run(argv, check=False, timeout=30)
        return (result.stdout + result.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unavailable"


def write_machine(out: Path, configs: list[str], args: argparse.Namespace, ciphers: set) -> None:
    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    os_name = "unknown"
    try:
        os_name = next(line.split("=", 1)[1].strip('"') for line in Path("/etc/os-release").read_text().splitlines() if line.startswith("PRETTY_NAME"))
    except (OSError, StopIteration):
        pass
    runtimes = run(["dotnet", "--list-runtimes"], check=False).stdout.strip().splitlines()
    # A source tree without git (an unpacked archive, a machine without git) is recorded as such, not an error.
    try:
        commit = run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], check=False).stdout.strip() or "unknown (not a git checkout)"
        dirty = run(["git", "-C", str(REPO), "status", "--porcelain", "--", "src", "benchmarks", "eng"], check=False).stdout.strip()
    except OSError:
        commit, dirty = "unknown (git not installed)", ""
    lines = [
        "# Machine", "",
        f"- Date (UTC): {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M')}",
        f"- CPU: {cpu}; logical CPUs: {os.cpu_count()}",
        f"- OS: {os_name}; kernel {platform.release()}",
        f"- .NET SDK: {first_line(['dotnet', '--version'])}",
        f"- ASP.NET Core runtime: {', '.join(r for r in runtimes if r.startswith('Microsoft.AspNetCore.App')) or 'unknown'}",
        f"- nginx: {first_line(['nginx', '-v'])}",
        f"- Caddy: {first_line(['caddy', 'version']) if 'caddy' in configs else 'not run'}",
        f"- wrk: {first_line(['wrk', '-v'])}",
        f"- h2load: {first_line(['h2load', '--version'])}",
        f"- OpenSSL: {first_line(['openssl', 'version'])}",
        f"- TLS cipher(s) negotiated by h2load: {', '.join(sorted(c for c in ciphers if c)) or 'n/a'}",
        f"- FastFiles commit: {commit}{' (with uncommitted changes)' if dirty else ''}",
        f"- Server CPU {SERVER_CPU}, load generator CPU {CLIENT_CPU} (taskset); everything on 127.0.0.1",
        f"- Configurations: {', '.join(configs)}; rounds: {args.rounds}; {args.duration} s per run; warm-up {args.warmup} s per workload "
        f"after {args.jit_warmup} s of JIT warm-up per .NET configuration",
        "- BenchHost: Release build, Production environment, logging providers cleared, Kestrel defaults (server GC).",
    ]
    (out / "machine.md").write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="CI mode: verify bytes from every configuration, then one short round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10, help="seconds per load run")
    parser.add_argument("--warmup", type=int, default=3, help="seconds of unrecorded load per configuration and workload before round 1, in runs of at most --duration seconds")
    parser.add_argument("--jit-warmup", type=int, default=30,
                        help="seconds of unrecorded load per .NET configuration before anything else, so tiered compilation has settled")
    parser.add_argument("--configs", default=",".join(DOTNET_MODES + PEERS), help="comma-separated: BenchHost modes, nginx, caddy")
    parser.add_argument("--workloads", default="all", help="comma-separated workload names (see --list) or 'all'")
    parser.add_argument("--out", help="results folder (default benchmarks/results/run-<UTC time>; smoke: a temp folder)")
    parser.add_argument("--base-port", type=int, default=18100)
    parser.add_argument("--no-build", action="store_true", help="reuse an existing Release build of BenchHost")
    parser.add_argument("--keep", action="store_true", help="keep the temp work folder (files, configs, logs)")
    parser.add_argument("--list", action="store_true", help="list workloads and exit")
    parser.add_argument("--baseline-host", type=Path,
                        help="FastFiles.BenchHost.dll of another build; configurations 'baseline:<mode>' run <mode> from it")
    args = parser.parse_args()
    global BASELINE_DLL, SMOKE
    BASELINE_DLL = args.baseline_host.resolve() if args.baseline_host else None

    if args.list:
        for w in WORKLOADS:
            print(f"{w.name:18} {w.title}")
        return 0
    if args.smoke:
        SMOKE = True
        args.rounds, args.duration, args.warmup, args.jit_warmup = 1, min(args.duration, 1), 0, 0
        if args.workloads == "all":
            # Bytes from every configuration are verified either way; the one short round covers each load shape once
            # (plain, pipelined, large, multipart, TLS, h2, h2c) so CI stays within its time budget.
            args.workloads = ",".join(SMOKE_WORKLOADS)

    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in DOTNET_MODES + PEERS + OPTIONAL_PEERS]
    if unknown:
        # Modes BenchHost knows but this list does not (new experiments) are still allowed: BenchHost validates them.
        log(f"treating {', '.join(unknown)} as BenchHost modes")
    workloads = WORKLOADS if args.workloads == "all" else [w for w in WORKLOADS if w.name in args.workloads.split(",")]
    if not workloads:
        sys.exit("no workloads selected; see --list")
    if (os.cpu_count() or 1) < 2:
        sys.exit("needs at least 2 CPUs (server on CPU 0, load on CPU 1)")

    has_caddy = ensure_tools("caddy" in configs)
    if "caddy" in configs and not has_caddy:
        configs.remove("caddy")
        log("caddy unavailable: running without it")
    build_host(args.no_build)

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    if args.out:
        out = Path(args.out).resolve()
    elif args.smoke:
        out = Path(tempfile.mkdtemp(prefix="fastfiles-smoke-results-"))
    else:
        out = REPO / "benchmarks" / "results" / f"run-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    raw = REPO / "benchmarks" / "results" / "raw" / stamp if not args.smoke else out / "raw"
    raw.mkdir(parents=True, exist_ok=True)

    work = Path(tempfile.mkdtemp(prefix="fastfiles-bench-"))
    # nginx workers drop root for www-data/nobody, so the files (not the key) must be readable by others.
    work.chmod(0o755)
    atexit.register(CHILDREN.stop_all)
    if not args.keep:
        atexit.register(lambda: shutil.rmtree(work, ignore_errors=True))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    files = work / "files"
    huge = {w.path for w in workloads if w.path in HUGE_FILES}
    log(f"writing test files to {files}")
    hashes = make_files(files, huge)
    cert, key = make_certificate(work)

    # Three ports per server from --base-port: HTTP/1.1, TLS (HTTP/1.1 and h2), h2c.
    servers = [Server(c, *range(args.base_port + 3 * i, args.base_port + 3 * i + 3), is_dotnet=c not in PEERS + OPTIONAL_PEERS)
               for i, c in enumerate(configs)]
    for s in servers:
        log(f"starting {s.name} (http :{s.http_port}, https :{s.https_port}, h2c :{s.h2c_port})")
        start_server(s, work, files, cert, key)

    failures = []
    for s in servers:
        failures += verify(s, hashes, work)
    for f in failures:
        log(f"MISMATCH {f}")
    if failures:
        log(f"{len(failures)} correctness failure(s); not measuring")
        return 1
    log(f"bytes verified for {', '.join(configs)} over HTTP/1.1, h2 (TLS) and h2c")

    if args.jit_warmup > 0:
        # Tiered compilation with PGO runs instrumented code for many seconds under load before the final tier; a
        # profile of h2 1x70 64 KiB measured 4,820 req/s after 4 s of load and 6,279 after 25 s, with instrumented
        # methods on top of the first. nginx has no such phase, so .NET servers first get load on every protocol the
        # selected workloads use, split evenly.
        shapes = {(w.tool, w.tls, w.h2c): w for w in workloads}
        share = max(1, args.jit_warmup // len(shapes))
        log(f"JIT warm-up: {args.jit_warmup} s per .NET configuration ({len(shapes)} protocol shape(s) x {share} s)")
        for s in servers:
            if s.is_dotnet:
                for w in shapes.values():
                    run_load(load_command(w, s, share, work), timeout=share + 60)
    if args.warmup > 0:
        # In runs no longer than a measured one: each run opens its connections and resets those still mid-response when
        # it ends, as every measured run does. At 100 MiB x 256 no response completes within a run of 4-8 s, so a measured
        # run is mostly connection set-up, bodies and resets; after one 45 s warm-up run, about 400 methods of those paths
        # were still being compiled inside the next 8 s run (DOTNET_JitStdOutFile), and none once the runs had repeated.
        runs = -(-args.warmup // args.duration)
        log(f"warm-up: {args.warmup} s per configuration and workload, in {runs} run(s)")
        for w in workloads:
            for s in servers:
                left = args.warmup
                while left > 0:
                    seconds = min(left, args.duration)
                    run_load(load_command(w, s, seconds, work), timeout=seconds + 60)
                    left -= seconds

    results: dict = {}
    ciphers: set = set()
    for rnd in range(1, args.rounds + 1):
        for w in workloads:
            for s in servers:  # A B C, then A B C again next round
                row = measure(w, s, args.duration, work, raw, f"r{rnd}-{w.name}-{s.name}")
                ciphers.add(row.get("cipher"))
                results.setdefault(w.name, {}).setdefault(s.name, []).append(row)
                log(f"round {rnd} {w.name:16} {s.name:10} {row['rps']:>10,.0f} req/s {row['mbps']:>9,.1f} MB/s"
                    + (f"  {row['alloc_per_req']:,.0f} B/req" if row.get("alloc_per_req") else "")
                    + (f"  errors {row['errors']}" if row["errors"] else ""))
        for s in servers:
            if s.proc and s.proc.poll() is not None:
                log(f"{s.name} died; see {s.log_path}")
                return 1

    summary = summarize(results, workloads, configs)
    command = "eng/bench-load.sh " + shlex.join(sys.argv[1:])
    header = (f"Produced by `{command}` ({args.rounds} round(s), {args.duration} s per run, medians; "
              f"machine: see machine.md).{' SMOKE RUN: checks correctness, numbers are not meaningful.' if args.smoke else ''}")
    write_tables(out, summary, workloads, configs, header)
    write_chart(out, summary, workloads, configs, f"FastFiles end-to-end ({args.rounds} x {args.duration} s, {stamp})")
    write_machine(out, configs, args, ciphers)
    (out / "runs.json").write_text(json.dumps({"command": command, "configs": configs, "results": results, "summary": summary}, indent=1))
    log(f"results in {out}")
    # A load run that never finished against a FastFiles configuration is a hang to look into; against a peer (nginx,
    # Caddy) it is the peer's or the load generator's, reported above and in the tables as an error.
    hung = sorted({s for w in results.values() for s, rows in w.items()
                   if any(r.get("timed_out") for r in rows) and next(x for x in servers if x.name == s).is_dotnet})
    if hung:
        log(f"load runs against {', '.join(hung)} did not finish")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
