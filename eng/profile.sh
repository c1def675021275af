#!/usr/bin/env bash
# CPU profile of one BenchHost mode under an h2load load, with .NET symbols (perf maps).
#   eng/profile.sh MODE NAME [h2load arguments...]      e.g.
#   eng/profile.sh fastfiles-nostage h2-1x70-64k -c1 -m70 https://127.0.0.1:18301/f64k.bin
# Writes NAME.perf.data, NAME.dso.txt, NAME.sym.txt and NAME.h2load.txt under benchmarks/results/raw/profile/.
# The server runs on CPU 0 and h2load on CPU 1; WARM (default 25) seconds of load come first so tiered
# compilation has settled, then perf samples 6 s of a 12 s run. Needs linux-perf, h2load, openssl, curl.
set -eu
mode=$1; name=$2; shift 2
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/benchmarks/results/raw/profile; mkdir -p "$out"
work=$(mktemp -d /tmp/fastfiles-profile-XXXXXX); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/files/mixed"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 2 -subj /CN=localhost 2>/dev/null
head -c 1024 /dev/urandom > "$work/files/f1k.bin"; head -c 65536 /dev/urandom > "$work/files/f64k.bin"
for i in $(seq 0 19); do head -c $(( (1024 + i * 84 * 1024 / 19) )) /dev/urandom > "$work/files/mixed/m$(printf %02d "$i").bin"; done
for i in $(seq -w 0 19); do echo "https://127.0.0.1:18301/mixed/m$i.bin"; done > "$work/mixed-uris.txt"
dll=$repo/benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll
[ -f "$dll" ] || dotnet build "$repo/benchmarks/FastFiles.BenchHost" -c Release -v q
# W^X double mapping hides JIT code from perf; perf maps name it.
DOTNET_PerfMapEnabled=1 DOTNET_EnableWriteXorExecute=0 taskset -c 0 dotnet "$dll" --mode "$mode" --root "$work/files" \
  --http-port 18300 --https-port 18301 --cert "$work/cert.pem" --key "$work/key.pem" > "$work/host.log" 2>&1 &
pid=$!
for _ in $(seq 1 150); do curl -s -o /dev/null http://127.0.0.1:18300/f1k.bin && break; sleep 0.2; done
args=("$@"); [ ${#args[@]} -gt 0 ] || args=(-c16 -m100 -i "$work/mixed-uris.txt")
taskset -c 1 h2load -t1 -D "${WARM:-25}" "${args[@]}" > /dev/null 2>&1 || true
taskset -c 1 h2load -t1 -D 12 "${args[@]}" > "$out/$name.h2load.txt" 2>&1 &
load=$!
sleep 3
perf record -F 499 -g -p "$pid" -o "$out/$name.perf.data" -- sleep 6 > /dev/null 2>&1
wait "$load" || true
kill "$pid"; wait "$pid" 2>/dev/null || true
perf report -i "$out/$name.perf.data" --no-children --sort dso --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -15 > "$out/$name.dso.txt" || true
perf report -i "$out/$name.perf.data" --no-children --sort symbol --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -60 > "$out/$name.sym.txt" || true
grep -E "finished in" "$out/$name.h2load.txt"
head -12 "$out/$name.dso.txt"
