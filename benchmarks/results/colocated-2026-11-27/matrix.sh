#!/usr/bin/env bash
# matrix.sh OUT: nginx (A) against each FastFiles configuration (B) at once, per workload
out=$1; : > $out
for b in zerocopy-inline fastfiles-lane-inline-zerocopy; do
  for wl in "f64k.bin 32 3" "f64k.bin 256 3" "f1m.bin 32 3" "f1m.bin 256 3" "f100m.bin 32 6" "f100m.bin 256 6" "f1g.bin 32 6" "f1g.bin 256 6"; do
    set -- $wl
    echo "== nginx vs $b $1 c$2" | tee -a $out
    bash /tmp/prof/pair.sh nginx $b $1 $2 8 5 $3 2>&1 | tee -a $out
  done
done
