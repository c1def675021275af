#!/usr/bin/env bash
# Server and client CPU per byte, nginx (A) against the lane with the send path (B), both running at once (../colocated-2026-11-27/pair.sh).
for row in "f64k.bin 256 3" "f1m.bin 32 3" "f1m.bin 256 3" "f100m.bin 32 6" "f100m.bin 256 6" "f1g.bin 256 6"; do
  set -- $row
  echo "== $1 x $2"
  bash ../colocated-2026-11-27/pair.sh nginx fastfiles-lane-inline-zerocopy $1 $2 8 5 $3 2>&1 | grep '^w'
done
