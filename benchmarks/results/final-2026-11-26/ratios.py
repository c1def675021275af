#!/usr/bin/env python3
"""ratios.py RUNS.JSON A:B [A:B ...] -> per workload: median of per-round MB/s ratio and CPU/GiB ratio, with rounds."""
import json, statistics, sys
d = json.load(open(sys.argv[1]))
r = d['results']
for w in r:
    for pair in sys.argv[2:]:
        a, b = pair.split('|')
        if a not in r[w] or b not in r[w]:
            continue
        ra, rb = r[w][a], r[w][b]
        n = min(len(ra), len(rb))
        t = [ra[i]['mbps'] / rb[i]['mbps'] for i in range(n)]
        c = [ra[i]['cpu_s_per_gib'] / rb[i]['cpu_s_per_gib'] for i in range(n) if ra[i].get('cpu_s_per_gib') and rb[i].get('cpu_s_per_gib')]
        print(f"{w:14} {a} / {b}: MB/s x{statistics.median(t):.2f} [{' '.join(f'{x:.2f}' for x in t)}]  CPU/GiB x{statistics.median(c) if c else float('nan'):.2f} [{' '.join(f'{x:.2f}' for x in c)}]")
