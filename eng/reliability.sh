#!/usr/bin/env bash
# The fault and abuse suite (issue 10): runs each case against the FastFiles sample as shipped and against stock
# UseStaticFiles (the bench host's "stock" mode), on loopback, bounded in time, and writes the figures side by side.
#   eng/reliability.sh [--ci | --short | --long] [--base-port 22000] [--out DIR] [--no-build] [--cases a,b] [--servers fastfiles,stock] [--soak REQUESTS]
# --ci (about a minute and a half) runs the quick cases against the sample only and fails on any broken promise;
# --short (about three minutes per server) runs every case with small counts; --long is for runs by hand
# (40 slow readers for 30 s, 500 slowloris connections past the 30 s header timeout, 3000 resets, a 10 million
# request soak). Needs dotnet, node, h2load, curl, openssl, prlimit. Put load runs under the bench lock on shared machines.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=short base=22000 out="" build=1 cases="" servers="fastfiles stock" soak_requests=""
while (($#)); do
  case "$1" in
    --ci) mode=ci ;;
    --short) mode=short ;;
    --long) mode=long ;;
    --base-port) base=$2; shift ;;
    --out) out=$2; shift ;;
    --no-build) build=0 ;;
    --cases) cases=$2; shift ;;
    --servers) servers=${2//,/ }; shift ;;
    --soak) soak_requests=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
if [[ $mode == ci ]]; then
  servers=${servers/stock/}
  cases=${cases:-hostile,churn,reset,h2-abuse,exhaustion,shutdown}
fi
missing=()
for tool in node h2load curl openssl prlimit; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if ((${#missing[@]})); then
  # A fresh Debian machine (CI): install what is missing when we can.
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq nodejs nghttp2-client curl openssl util-linux >/dev/null
  else
    echo "missing tools: ${missing[*]}" >&2; exit 2
  fi
fi
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
hook=$PWD/eng/reliability/MetricsHook/bin/Release/net10.0/MetricsHook.dll
# The startup hook is not part of the solution: built here unless it is there already and --no-build was given.
if ((build)) || [[ ! -f $hook ]]; then
  dotnet build eng/reliability/MetricsHook -c Release -v q -nologo >/dev/null
fi
sample=samples/FastFiles.Sample/bin/Release/net10.0/FastFiles.Sample.dll
stock=benchmarks/FastFiles.BenchHost/bin/Release/net10.0/FastFiles.BenchHost.dll

# The served tree: a secret and a link out of the root, a small (cached) file, 64 KiB, 1 MiB and 100 MiB files.
www=$work/www/root
mkdir -p "$www" "$work/tls"
printf 'SECRET-OUTSIDE-ROOT-3c9e' > "$work/www/secret.txt"
ln -s ../secret.txt "$www/link-out.txt"
head -c 1000 /dev/urandom > "$www/small.txt"
head -c $((64 << 10)) /dev/urandom > "$www/64k.bin"
head -c $((1 << 20)) /dev/urandom > "$www/1mib.bin"
head -c $((100 << 20)) /dev/urandom > "$www/big.bin"
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 2 -keyout "$work/tls/key.pem" -out "$work/tls/cert.pem" 2>/dev/null

# start NAME NOFILE: starts a server, sets $pid, $http, $https, $h2c, $log, $metrics. The startup hook writes the
# server's in-process figures (FastFiles' meter, Kestrel's connections and memory pool) to $metrics; the app is untouched.
start() {
  local name=$1 nofile=${2:-} prefix=()
  [[ -n $nofile ]] && prefix=(prlimit "--nofile=$nofile:$nofile")
  log=$out/$name${nofile:+-nofile$nofile}.log
  metrics=$work/$name-metrics.json
  rm -f "$metrics"
  export DOTNET_STARTUP_HOOKS=$hook FASTFILES_METRICS_FILE=$metrics
  if [[ $name == fastfiles ]]; then
    http=http://127.0.0.1:$base https=https://127.0.0.1:$((base + 1)) h2c=http://127.0.0.1:$((base + 2))
    # The sample as shipped; its endpoints from configuration (as a deployment would set them), one of them h2c.
    Kestrel__Endpoints__Http__Url=$http Kestrel__Endpoints__Https__Url=$https \
      Kestrel__Endpoints__H2c__Url=$h2c Kestrel__Endpoints__H2c__Protocols=Http2 \
      "${prefix[@]}" dotnet "$sample" --root "$www" >"$log" 2>&1 &
  else
    http=http://127.0.0.1:$((base + 10)) https=https://127.0.0.1:$((base + 11)) h2c=http://127.0.0.1:$((base + 12))
    "${prefix[@]}" dotnet "$stock" --mode stock --root "$www" --http-port $((base + 10)) --https-port $((base + 11)) \
      --h2c-port $((base + 12)) --cert "$work/tls/cert.pem" --key "$work/tls/key.pem" >"$log" 2>&1 &
  fi
  unset DOTNET_STARTUP_HOOKS FASTFILES_METRICS_FILE
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do curl -s -o /dev/null "$http/small.txt" && return 0; sleep 0.2; done
  echo "$name did not start" >&2; cat "$log" >&2; exit 1
}

stop() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }

# soak TOTAL: mixed requests with h2load over HTTP/1.1 (plaintext and TLS), h2c and h2 over TLS: hits, misses, ranges,
# 304s. Descriptors and resident memory are sampled every 2 s; "after warm-up" is the first sample past a tenth of the run.
soak() {
  local total=$1 etag
  etag=$(curl -sI "$http/small.txt" | tr -d '\r' | awk -F': ' 'tolower($1) == "etag" {print $2}')
  local runs=(
    "--h1 -c 16 $http/small.txt $http/64k.bin $http/missing.txt"
    "--h1 -c 16 -H range:bytes=100-2000 $http/1mib.bin"
    "--h1 -c 16 -H if-none-match:$etag $http/small.txt"
    "--h1 -c 8 $https/small.txt $https/missing.txt"
    "-c 8 -m 16 $https/small.txt $https/64k.bin $https/missing.txt"
    "-c 8 -m 16 -H range:bytes=100-2000 $https/1mib.bin"
    "-c 8 -m 16 $h2c/small.txt $h2c/missing.txt"
    "-c 8 -m 16 -H if-none-match:$etag $h2c/small.txt"
  )
  local per=$((total / ${#runs[@]})) samples=$work/soak-samples
  h2load --h1 -n 2000 -c 8 "$http/small.txt" >/dev/null 2>&1 || true
  : >"$samples"
  (while kill -0 "$pid" 2>/dev/null; do
    echo "$(date +%s) $(ls /proc/$pid/fd | wc -l) $(awk '/VmRSS/ {print $2}' /proc/$pid/status)" >>"$samples"; sleep 2
  done) &
  local sampler=$!
  local ok=0 errors=0 s2=0 s3=0 s4=0 s5=0 line f e t r4 started
  started=$(date +%s)
  for r in "${runs[@]}"; do
    # shellcheck disable=SC2086
    line=$(h2load -n "$per" $r 2>&1 | grep -E '^(requests|status codes):' | tr '\n' ' ')
    ok=$((ok + $(sed -E 's/.*requests: [0-9]+ total, [0-9]+ started, [0-9]+ done, ([0-9]+) succeeded.*/\1/' <<<"$line")))
    read -r f e t < <(sed -E 's/.* ([0-9]+) failed, ([0-9]+) errored, ([0-9]+) timeout.*/\1 \2 \3/' <<<"$line")
    r4=$(sed -E 's/.* ([0-9]+) 4xx.*/\1/' <<<"$line")
    # h2load counts the expected 404s (missing.txt) as failed; an error is anything else that failed, errored or timed out.
    errors=$((errors + f - r4 + e + t))
    ok=$((ok + r4))
    s2=$((s2 + $(sed -E 's/.*status codes: ([0-9]+) 2xx.*/\1/' <<<"$line")))
    s3=$((s3 + $(sed -E 's/.* ([0-9]+) 3xx.*/\1/' <<<"$line")))
    s4=$((s4 + r4))
    s5=$((s5 + $(sed -E 's/.* ([0-9]+) 5xx.*/\1/' <<<"$line")))
  done
  local seconds=$(($(date +%s) - started))
  sleep 3
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  # Warm-up: the first tenth of the run. Flat: the highest figures after it against the one at its end.
  awk -v ok="$ok" -v errors="$errors" -v s2="$s2" -v s3="$s3" -v s4="$s4" -v s5="$s5" -v secs="$seconds" '
    NR == 1 { t0 = $1 } { t[NR] = $1; fd[NR] = $2; rss[NR] = $3; n = NR }
    END {
      w = 1; while (w < n && t[w] - t0 < secs / 10) w++
      maxfd = 0; maxrss = 0; for (i = w; i <= n; i++) { if (fd[i] > maxfd) maxfd = fd[i]; if (rss[i] > maxrss) maxrss = rss[i] }
      printf "{\"requests\":%d,\"succeeded\":%d,\"errors\":%d,\"2xx\":%d,\"3xx\":%d,\"4xx\":%d,\"5xx\":%d,\"seconds\":%d,", ok + errors, ok, errors, s2, s3, s4, s5, secs
      printf "\"fdsAfterWarmup\":%d,\"fdsMaxAfterWarmup\":%d,\"fdsEnd\":%d,\"rssAfterWarmupMiB\":%d,\"rssMaxAfterWarmupMiB\":%d,\"rssEndMiB\":%d}\n", fd[w], maxfd, fd[n], rss[w] / 1024, maxrss / 1024, rss[n] / 1024
    }' "$samples"
}

all_cases=${cases:-slow-readers,slowloris,reset,churn,hostile,h2-abuse,soak,exhaustion,shutdown}
soak_total=200000
[[ $mode == long ]] && soak_total=10000000
soak_total=${soak_requests:-$soak_total}
results=$out/results.json
for name in $servers; do
  start "$name"
  idle_fds=$(ls /proc/$pid/fd | wc -l)
  echo "$name: pid $pid, idle descriptors $idle_fds"
  node_cases=$(tr ',' '\n' <<<"$all_cases" | grep -vxE 'soak|exhaustion|shutdown' | paste -sd, || true)
  if [[ -n $node_cases ]]; then
    node eng/reliability/suite.mjs --name "$name" --http "$http" --https "$https" --h2c "$h2c" --pid "$pid" --metrics "$metrics" --root "$www" \
      --mode "$mode" --cases "$node_cases" --out "$results" --log "$log"
  fi
  if grep -qx soak <<<"${all_cases//,/$'\n'}"; then
    figure=$(soak $soak_total)
    echo "$name soak: $figure"
    node -e "const fs=require('fs');const r=fs.existsSync('$results')?JSON.parse(fs.readFileSync('$results','utf8')):{};r['$name']??={};r['$name'].soak=$figure;fs.writeFileSync('$results',JSON.stringify(r,null,2))"
  fi
  if grep -qx shutdown <<<"${all_cases//,/$'\n'}"; then
    node eng/reliability/suite.mjs --name "$name" --http "$http" --https "$https" --h2c "$h2c" --pid "$pid" --metrics "$metrics" --root "$www" \
      --mode "$mode" --cases shutdown --out "$results" --log "$log"
  fi
  stop
  if grep -qx exhaustion <<<"${all_cases//,/$'\n'}"; then
    nofile=$((idle_fds + 150))
    start "$name" "$nofile"
    node eng/reliability/suite.mjs --name "$name" --http "$http" --https "$https" --h2c "$h2c" --pid "$pid" --metrics "$metrics" --root "$www" \
      --mode "$mode" --cases exhaustion --out "$results" --log "$log" --nofile "$nofile"
    stop
  fi
  node -e "const fs=require('fs');const r=fs.existsSync('$results')?JSON.parse(fs.readFileSync('$results','utf8')):{};r['$name']??={};r['$name'].idleDescriptors=$idle_fds;fs.writeFileSync('$results',JSON.stringify(r,null,2))"
done
echo "figures: $results"
if [[ $mode == ci ]]; then
  node eng/reliability/check.mjs "$results" fastfiles
fi
