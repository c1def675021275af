#!/usr/bin/env bash
# BenchmarkDotNet micro suites (benchmarks/FastFiles.Benchmarks), run in-process on the host .NET runtime.
#   eng/bench-micro.sh                 all suites, full BenchmarkDotNet jobs (long)
#   eng/bench-micro.sh --quick         all suites, 3 warm-up + 3 measured iterations
#   eng/bench-micro.sh --dry           CI: every case once, proves the suites run (numbers meaningless)
#   eng/bench-micro.sh --filter '*Header*'   any other argument goes to BenchmarkDotNet
set -euo pipefail
cd "$(dirname "$0")/.."
dotnet build benchmarks/FastFiles.Benchmarks/FastFiles.Benchmarks.csproj -c Release -nologo -v q -clp:ErrorsOnly
args=("$@")
# Without a filter BenchmarkSwitcher would ask interactively which suite to run.
if ! printf '%s\n' "${args[@]}" | grep -q -- '^--filter$'; then
    args+=(--filter '*')
fi
cd benchmarks/FastFiles.Benchmarks
# Pinned to one CPU so a suite does not compete with itself; artifacts stay beside the project (git-ignored).
exec taskset -c "${BENCH_CPU:-1}" dotnet bin/Release/net10.0/FastFiles.Benchmarks.dll --artifacts BenchmarkDotNet.Artifacts "${args[@]}"
