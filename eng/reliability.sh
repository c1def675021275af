#!/usr/bin/env bash
# The fault and abuse suite (issue 10): runs each case against the FastFiles sample as shipped and against stock
# UseStaticFiles (the bench host's "stock" mode), on loopback, bounded in time, and writes the figures side by side.
#   eng/reliability.sh [--short | --long] [--base-port 22000] [--out DIR] [--no-build] [--cases a,b]
# --short (CI, about two minutes per server) runs smaller counts and durations; --long is for runs by hand
# (40 slow readers for 30 s, 500 slowloris connections past the 30 s header timeout, 3000 resets, a 10 million
# request soak). Needs dotnet, node, h2load, curl, openssl, prlimit. Put load runs under the bench lock on shared machines.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=short base=22000 out="" build=1 cases=""
while (($#)); do
  case "$1" in
    --short) mode=short ;;
    --long) mode=long ;;
    --base-port) base=$2; shift ;;
    --out) out=$2; shift ;;
    --no-build) build=0 ;;
    --cases) cases=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
work=$(mktemp -d /tmp/fastfiles-reliability.XXXXXX)
out=${out:-$work/out}
mkdir -p "$out"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work/www" "$work/tls"
}
trap cleanup EXIT

if ((build)); then
  dotnet build samples/FastFiles.Sample -c Release -v q -nologo >/dev/null
  dotnet build benchmarks/FastFiles.BenchHost -c Release -v q -nologo >/dev/null
fi
sample=samples/FastFiles.Sample/bin/Release/net10.0/FastFiles.Sample.dll
stock=benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll

# The served tree: a secret and a link out of the root, a small (cached) file, 1 MiB and 100 MiB files.
www=$work/www/root
mkdir -p "$www" "$work/tls"
printf 'SECRET-OUTSIDE-ROOT-3c9e' > "$work/www/secret.txt"
ln -s ../secret.txt "$www/link-out.txt"
head -c 1000 /dev/urandom > "$www/small.txt"
head -c $((1 << 20)) /dev/urandom > "$www/1mib.bin"
head -c $((100 << 20)) /dev/urandom > "$www/big.bin"
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 2 -keyout "$work/tls/key.pem" -out "$work/tls/cert.pem" 2>/dev/null

# start NAME NOFILE: starts a server, sets $pid, $http, $https, $log.
start() {
  local name=$1 nofile=${2:-} prefix=()
  [[ -n $nofile ]] && prefix=(prlimit "--nofile=$nofile:$nofile")
  log=$out/$name${nofile:+-nofile$nofile}.log
  if [[ $name == fastfiles ]]; then
    http=http://127.0.0.1:$base https=https://127.0.0.1:$((base + 1))
    "${prefix[@]}" dotnet "$sample" --root "$www" --urls "$http;$https" >"$log" 2>&1 &
  else
    http=http://127.0.0.1:$((base + 10)) https=https://127.0.0.1:$((base + 11))
    "${prefix[@]}" dotnet "$stock" --mode stock --root "$www" --http-port $((base + 10)) --https-port $((base + 11)) \
      --cert "$work/tls/cert.pem" --key "$work/tls/key.pem" >"$log" 2>&1 &
  fi
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do curl -s -o /dev/null "$http/small.txt" && return 0; sleep 0.2; done
  echo "$name did not start" >&2; cat "$log" >&2; exit 1
}

stop() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }

# soak NAME: mixed requests with h2load (h1 plaintext, h2 over TLS: hits, misses, ranges, 304s); descriptors and memory.
soak() {
  local total=$1 n
  local before_fds before_rss
  n=$((total / 8))
  h2load --h1 -n 2000 -c 8 "$http/small.txt" >/dev/null 2>&1 || true
  before_fds=$(ls /proc/$pid/fd | wc -l); before_rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  local runs=(
    "--h1 -c 16 -m 1 $http/small.txt $http/1mib.bin $http/missing.txt"
    "--h1 -c 16 -m 1 -H Range:bytes=100-2000 $http/1mib.bin"
    "--h1 -c 16 -m 1 -H If-Modified-Since:Sat,01Jan2100000000GMT $http/small.txt"
    "-c 8 -m 16 $https/small.txt $https/1mib.bin $https/missing.txt"
    "-c 8 -m 16 -H range:bytes=100-2000 $https/1mib.bin"
  )
  local ok=0 errors=0 s2=0 s3=0 s4=0 s5=0 line f e t
  for r in "${runs[@]}"; do
    # shellcheck disable=SC2086
    line=$(h2load -n $((n * 8 / ${#runs[@]})) $r 2>&1 | grep -E '^(requests|status codes):' | tr '\n' ' ')
    ok=$((ok + $(sed -E 's/.*requests: [0-9]+ total, [0-9]+ started, [0-9]+ done, ([0-9]+) succeeded.*/\1/' <<<"$line")))
    read -r f e t < <(sed -E 's/.* ([0-9]+) failed, ([0-9]+) errored, ([0-9]+) timeout.*/\1 \2 \3/' <<<"$line")
    errors=$((errors + f + e + t))
    s2=$((s2 + $(sed -E 's/.*status codes: ([0-9]+) 2xx.*/\1/' <<<"$line")))
    s3=$((s3 + $(sed -E 's/.* ([0-9]+) 3xx.*/\1/' <<<"$line")))
    s4=$((s4 + $(sed -E 's/.* ([0-9]+) 4xx.*/\1/' <<<"$line")))
    s5=$((s5 + $(sed -E 's/.* ([0-9]+) 5xx.*/\1/' <<<"$line")))
  done
  sleep 1
  local after_fds after_rss
  after_fds=$(ls /proc/$pid/fd | wc -l); after_rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  printf '{"requests":%d,"succeeded":%d,"errors":%d,"2xx":%d,"3xx":%d,"4xx":%d,"5xx":%d,"fdsBefore":%d,"fdsAfter":%d,"rssBeforeMiB":%d,"rssAfterMiB":%d}\n' \
    $((ok + errors)) "$ok" "$errors" "$s2" "$s3" "$s4" "$s5" "$before_fds" "$after_fds" $((before_rss / 1024)) $((after_rss / 1024))
}

all_cases=${cases:-slow-readers,slowloris,reset,churn,hostile,h2-abuse,soak,exhaustion,shutdown}
soak_total=200000
[[ $mode == long ]] && soak_total=10000000
results=$out/results.json
for name in fastfiles stock; do
  start "$name"
  idle_fds=$(ls /proc/$pid/fd | wc -l)
  echo "$name: pid $pid, idle descriptors $idle_fds"
  node_cases=$(tr ',' '\n' <<<"$all_cases" | grep -vxE 'soak|exhaustion|shutdown' | paste -sd, || true)
  if [[ -n $node_cases ]]; then
    node eng/reliability/suite.mjs --name "$name" --http "$http" --https "$https" --pid "$pid" --root "$www" \
      --mode "$mode" --cases "$node_cases" --out "$results" --log "$log"
  fi
  if grep -qx soak <<<"${all_cases//,/$'\n'}"; then
    figure=$(soak $soak_total)
    echo "$name soak: $figure"
    node -e "const fs=require('fs');const r=JSON.parse(fs.readFileSync('$results','utf8'));r['$name']??={};r['$name'].soak=$figure;fs.writeFileSync('$results',JSON.stringify(r,null,2))"
  fi
  if grep -qx shutdown <<<"${all_cases//,/$'\n'}"; then
    node eng/reliability/suite.mjs --name "$name" --http "$http" --https "$https" --pid "$pid" --root "$www" \
      --mode "$mode" --cases shutdown --out "$results" --log "$log"
  fi
  stop
  if grep -qx exhaustion <<<"${all_cases//,/$'\n'}"; then
    nofile=$((idle_fds + 150))
    start "$name" "$nofile"
    node eng/reliability/suite.mjs --name "$name" --http "$http" --https "$https" --pid "$pid" --root "$www" \
      --mode "$mode" --cases exhaustion --out "$results" --log "$log" --nofile "$nofile"
    stop
  fi
  node -e "const fs=require('fs');const r=JSON.parse(fs.readFileSync('$results','utf8'));r['$name'].idleDescriptors=$idle_fds;fs.writeFileSync('$results',JSON.stringify(r,null,2))"
done
echo "figures: $results"
