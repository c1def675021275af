#!/usr/bin/env bash
# matrix-first.sh OUT: alt.sh nginx against the lane with the send path, every row of issue 11's table (lane-first.txt).
out=$1; B=${B:-fastfiles-lane-inline-zerocopy}
for row in "f64k.bin 256 7" "f1m.bin 256 7" "f100m.bin 256 7" "f1g.bin 256 7" "f64k.bin 32 5" "f1m.bin 32 5" "f100m.bin 32 5" "f1g.bin 32 5"; do
  set -- $row
  echo "## $1 x $2" >> $out
  bash "$(dirname "$0")/alt.sh" nginx $B $1 $2 8 $3 2 >> $out 2>&1
done
