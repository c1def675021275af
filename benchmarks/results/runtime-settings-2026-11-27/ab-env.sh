#!/usr/bin/env bash
# ab-env.sh OUT: the lane build against itself with the runtime settings in B's environment only, at once.
out=$1; : > $out
export ENV_B="DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS=1 DOTNET_ThreadPool_UnfairSemaphoreSpinLimit=0"
echo "# B env: $ENV_B" | tee -a $out
for wl in "f1m.bin 256 3" "f100m.bin 256 6" "f1g.bin 256 6"; do
  set -- $wl
  echo "== lane vs lane+env $1 c$2" | tee -a $out
  bash /tmp/prof/pair.sh fastfiles-lane-inline-zerocopy fastfiles-lane-inline-zerocopy $1 $2 8 5 $3 2>&1 | tee -a $out
done
