#!/usr/bin/env bash
# Runs the test suites. On a fresh Debian machine it first installs the clients the functional tests drive
# (curl, h2load/nghttp, openssl, node, python3, kill), then calls `dotnet test`. Extra arguments go to `dotnet test`.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v curl >/dev/null || missing+=(curl)
command -v h2load >/dev/null || missing+=(nghttp2-client)
command -v openssl >/dev/null || missing+=(openssl)
command -v node >/dev/null || missing+=(nodejs)
# The refused-syscall tests run the sample under a seccomp filter installed by a Python script.
command -v python3 >/dev/null || missing+=(python3)
# The graceful-shutdown tests signal the sample with kill(1), from procps, which minimal Debian installs leave out
# (`command -v kill` would find bash's builtin).
type -P kill >/dev/null || missing+=(procps)
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "missing tools (${missing[*]}); install them or run as root" >&2
    exit 1
  fi
fi

export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
exec dotnet test FastFiles.sln -c Release "$@"
