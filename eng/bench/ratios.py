#!/usr/bin/env python3
"""Medians of per-round ratios from a harness run (runs.json), for pairs of configurations.

    python3 eng/bench/ratios.py RUNS.JSON 'A|B' ['C|D' ...]

For every workload holding both configurations of a pair: the median over rounds of A's MB/s divided by B's MB/s in
the same round, and the same for server CPU seconds per GiB, each followed by every round's ratio. Interleaved rounds
share the machine's state, so a per-round ratio cancels much of the drift that a ratio of medians keeps.
"""
import json
import statistics
import sys


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    results = json.load(open(sys.argv[1]))["results"]
    for workload, configs in results.items():
        for pair in sys.argv[2:]:
            a, b = pair.split("|")
            if a not in configs or b not in configs:
                continue
            ra, rb = configs[a], configs[b]
            # A round in which either served nothing (a failed run, logged by the harness) has no ratio.
            paired = min(len(ra), len(rb))
            rounds = [i for i in range(paired) if ra[i]["mbps"] > 0 and rb[i]["mbps"] > 0]
            skipped = paired - len(rounds)
            if not rounds:
                print(f"{workload:14} {a} / {b}: no round in which both served")
                continue
            mbps = [ra[i]["mbps"] / rb[i]["mbps"] for i in rounds]
            cpu = [ra[i]["cpu_s_per_gib"] / rb[i]["cpu_s_per_gib"] for i in rounds
                   if ra[i].get("cpu_s_per_gib") and rb[i].get("cpu_s_per_gib")]
            cpu_median = f"{statistics.median(cpu):.2f}" if cpu else "-"
            print(f"{workload:14} {a} / {b}: MB/s x{statistics.median(mbps):.2f} [{' '.join(f'{x:.2f}' for x in mbps)}]"
                  f"  CPU/GiB x{cpu_median} [{' '.join(f'{x:.2f}' for x in cpu)}]"
                  + (f"  ({skipped} round(s) without a ratio)" if skipped else ""))


if __name__ == "__main__":
    main()
