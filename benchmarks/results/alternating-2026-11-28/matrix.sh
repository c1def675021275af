#!/usr/bin/env bash
# matrix.sh: longer alternating runs for the large-body rows, a same-build control, then the send path alone.
L=fastfiles-lane-inline-zerocopy; Z=zerocopy-inline
run() { echo "## $1 vs $2: $3 x $4 ($6 quads, $7 warm runs per server)" >> $8; bash "$(dirname "$0")/alt.sh" $1 $2 $3 $4 $5 $6 $7 >> $8 2>&1; }
for r in "f100m.bin 256" "f1g.bin 256" "f100m.bin 32" "f1g.bin 32"; do set -- $r; run nginx $L $1 $2 8 9 4 lane-large.txt; done
run $L $L f100m.bin 256 8 7 4 control.txt
for r in "f64k.bin 256" "f1m.bin 256" "f64k.bin 32" "f1m.bin 32"; do set -- $r; run nginx $Z $1 $2 8 5 2 send-path.txt; done
for r in "f100m.bin 256" "f1g.bin 256" "f100m.bin 32" "f1g.bin 32"; do set -- $r; run nginx $Z $1 $2 8 9 4 send-path.txt; done
