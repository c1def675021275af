#!/usr/bin/env python3
"""Conditional GETs (If-None-Match: the file's content-hash tag) against UseFastFiles with the cache off and
EnableContentHashETags: before/after builds interleaved, server on CPU 0, wrk on CPU 1."""
import base64, hashlib, json, os, re, subprocess, sys, time, urllib.request
builds = {"before": sys.argv[1], "after": sys.argv[2]}
rounds, duration, conns = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
files = sys.argv[6].split(",")
root = os.environ.get("FILES", "/tmp/prof/files")  # f1k.bin, f1m.bin, f100m.bin (random bytes)
def tag(name):
    h = hashlib.sha256(open(os.path.join(root, name), "rb").read()).digest()[:16]
    return '"' + base64.urlsafe_b64encode(h).decode().rstrip("=") + '"'
def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
rows = []
for r in range(1, rounds + 1):
    for name, dll in builds.items():
        proc = subprocess.Popen(["taskset", "-c", "0", "dotnet", dll, "--mode", "fastfiles-nocache-hash", "--root", root,
                                 "--http-port", "19510", "--https-port", "19511", "--h2c-port", "19512",
                                 "--cert", os.environ.get("CERT", "/tmp/prof/cert.pem"), "--key", os.environ.get("KEY", "/tmp/prof/key.pem")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                urllib.request.urlopen("http://127.0.0.1:19510/f1k.bin").read(); break
            except Exception:
                time.sleep(0.2)
        for f in files:
            t = tag(f)
            url = f"http://127.0.0.1:19510/{f}"
            # Warm-up (JIT): 2 s.
            subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", "-d2s", "-H", f"If-None-Match: {t}", url], capture_output=True)
            c0 = cpu(proc.pid)
            out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{duration}s", "--timeout", "30s", "-H", f"If-None-Match: {t}", url],
                                 capture_output=True, text=True).stdout
            c1 = cpu(proc.pid)
            reqs = int(re.search(r"(\d+) requests in", out).group(1))
            non = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
            rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
            row = {"round": r, "build": name, "file": f, "rps": rps, "requests": reqs, "errors": int(non.group(1)) if non else 0,
                   "cpu_s": round(c1 - c0, 2), "cpu_ms_per_req": round((c1 - c0) * 1000 / max(reqs, 1), 3)}
            # One response's status and ETag, to show what the requests got.
            st = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", f"If-None-Match: {t}", url], capture_output=True, text=True).stdout
            row["status"] = st
            rows.append(row)
            print(json.dumps(row), flush=True)
        proc.terminate(); proc.wait()
json.dump(rows, open(sys.argv[7], "w"), indent=1)
