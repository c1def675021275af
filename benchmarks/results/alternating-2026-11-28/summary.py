#!/usr/bin/env python3
"""Medians of per-quad ratios from alt.sh output files: python3 summary.py FILE..."""
import re, statistics, sys

rows = []
for path in sys.argv[1:]:
    head = None
    for line in open(path):
        if line.startswith('## '):
            head = line[3:].split(' (')[0].strip()
            rows.append([head, [], []])
        m = re.search(r'B/A cpu/GB ([0-9.]+)\s+B/A GB/s ([0-9.]+)', line)
        if m and rows:
            rows[-1][1].append(float(m.group(1)))
            rows[-1][2].append(float(m.group(2)))

print('| Row | quads | CPU per GB, B/A: median [range] | GB/s, B/A: median [range] |')
print('| --- | ---: | --- | --- |')
for head, cpu, thr in rows:
    if cpu:
        print(f'| {head} | {len(cpu)} | {statistics.median(cpu):.2f} [{min(cpu):.2f}-{max(cpu):.2f}] '
              f'| {statistics.median(thr):.2f} [{min(thr):.2f}-{max(thr):.2f}] |')
