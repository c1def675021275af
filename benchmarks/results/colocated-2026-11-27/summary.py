#!/usr/bin/env python3
"""Medians of the per-window B/A ratios in pair.sh output (one file or several): CPU ticks per GiB read by wrk and per
GiB the server wrote (/proc/PID/io wchar), with the range over windows."""
import re
import statistics
import sys

for path in sys.argv[1:]:
    print(f"# {path}")
    title, rows = None, []

    def flush():
        if title and rows:
            read = [r for r, _ in rows]
            sent = [s for _, s in rows]
            print(f"{title:55s} per read {statistics.median(read):.3f} [{min(read):.3f}-{max(read):.3f}]  "
                  f"per sent {statistics.median(sent):.3f} [{min(sent):.3f}-{max(sent):.3f}]  windows {len(rows)}")

    for line in open(path):
        if line.startswith("=="):
            flush()
            title, rows = line[2:].strip(), []
        m = re.search(r"per read ([0-9.]+) per sent ([0-9.]+)", line)
        if m:
            rows.append((float(m.group(1)), float(m.group(2))))
    flush()
