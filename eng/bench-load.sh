#!/usr/bin/env bash
# End-to-end load comparison: BenchHost modes vs nginx (and Caddy when Debian's package installs).
#   eng/bench-load.sh            full run (3 rounds x 10 s per configuration and workload), tables in benchmarks/results/
#   eng/bench-load.sh --smoke    CI: build, verify bytes from every configuration over HTTP/1.1, h2 (TLS) and h2c, one 1 s round
#   eng/bench-load.sh --help     all options
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 eng/bench/harness.py "$@"
