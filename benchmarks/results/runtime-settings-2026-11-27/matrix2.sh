#!/usr/bin/env bash
# matrix2.sh OUT CFG ENV: nginx (A) against CFG (B) run with ENV, per workload
out=$1; b=$2; export ENV_B="$3"; : > $out
echo "# B env: $ENV_B" | tee -a $out
for wl in "f64k.bin 32 3" "f64k.bin 256 3" "f1m.bin 32 3" "f1m.bin 256 3" "f100m.bin 32 6" "f100m.bin 256 6" "f1g.bin 32 6" "f1g.bin 256 6"; do
  set -- $wl
  echo "== nginx vs $b $1 c$2" | tee -a $out
  bash /tmp/prof/pair.sh nginx $b $1 $2 8 5 $3 2>&1 | tee -a $out
done
