#!/usr/bin/env bash
# End-to-end load comparison: BenchHost modes vs nginx (and Caddy when Debian's package installs).
#   eng/bench-load.sh            full run (3 rounds x 10 s per configuration and workload), tables in benchmarks/results/
#   eng/bench-load.sh --smoke    CI: build, verify bytes from every configuration over HTTP/1.1, h2 (TLS) and h2c, one 1 s round
#   eng/bench-load.sh --help     all options
set -euo pipefail
cd "$(dirname "$0")/.."
# The harness installs the load tools and peers it needs itself, but it is Python: a fresh Debian machine with only the
# .NET SDK has no python3 (Debian's minimal and container installs leave it out).
if ! command -v python3 >/dev/null; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "installing: python3"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 >/dev/null
  else
    echo "missing tool (python3); install it or run as root" >&2
    exit 1
  fi
fi
exec python3 eng/bench/harness.py "$@"
