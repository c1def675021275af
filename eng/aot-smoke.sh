#!/usr/bin/env bash
# Publishes the sample with Native AOT and checks that it serves as the JIT-compiled sample does: configuration bound
# from appsettings.json, the static lane and zero-copy send path on the plaintext endpoint (sendfile(2) seen by strace),
# HTTPS, HTTP/2, ranges, precompressed sidecars, FastResults downloads, 404 for paths outside the root. Not part of the
# test run (publishing takes minutes); run it after changing anything that reflection or trimming could touch.
# Usage: bash eng/aot-smoke.sh [port]   (uses port and port+1 on 127.0.0.1)
set -euo pipefail
cd "$(dirname "$0")/.."
port=${1:-5980}
missing=()
command -v clang >/dev/null || missing+=(clang)
[[ -e /usr/include/zlib.h ]] || missing+=(zlib1g-dev)
command -v strace >/dev/null || missing+=(strace)
command -v curl >/dev/null || missing+=(curl)
if ((${#missing[@]})); then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
# Publish from a copy so that the linux-x64 intermediates stay out of the working tree's obj/ folders.
tar --exclude=bin --exclude=obj --exclude=.git -cf - . | tar -xf - -C "$work"
dotnet publish "$work/samples/FastFiles.Sample/FastFiles.Sample.csproj" -c Release -r linux-x64 -p:PublishAot=true -o "$work/out" -v q -nologo
out=$work/out
"$out/FastFiles.Sample" --urls "http://127.0.0.1:$port;https://127.0.0.1:$((port + 1))" > "$work/sample.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done

fail=0
check() { # description, expected, actual
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected '$2', got '$3'"; fail=1; fi
}
http=http://127.0.0.1:$port; https=https://127.0.0.1:$((port + 1))
big=$out/wwwroot/docs/big.txt
check "GET / is index.html" "$(sha256sum < "$out/wwwroot/index.html")" "$(curl -s "$http/" | sha256sum)"
check "Cache-Control from appsettings.json" "public, max-age=60" "$(curl -s -D - -o /dev/null "$http/index.html" | tr -d '\r' | sed -n 's/^Cache-Control: //Ip')"
check "big file over HTTP/1.1" "$(sha256sum < "$big")" "$(curl -s "$http/docs/big.txt" | sha256sum)"
check "big file over HTTPS" "$(sha256sum < "$big")" "$(curl -sk "$https/docs/big.txt" | sha256sum)"
check "big file over HTTP/2" "$(sha256sum < "$big")" "$(curl -sk --http2 "$https/docs/big.txt" | sha256sum)"
check "range" "$(head -c 20 "$big" | tail -c 10)" "$(curl -s -r 10-19 "$http/docs/big.txt")"
check "precompressed sidecar" "br" "$(curl -s -H 'Accept-Encoding: br' -D - -o /dev/null "$http/index.html" | tr -d '\r' | sed -n 's/^Content-Encoding: //Ip')"
check "FastResults download" "$(sha256sum < "$big")" "$(curl -s "$http/download/docs/big.txt" | sha256sum)"
check "outside the root" "404" "$(curl -s -o /dev/null -w '%{http_code}' --path-as-is "$http/../appsettings.json")"
strace -f -p "$pid" -e trace=sendfile -o "$work/strace.txt" 2>/dev/null &
tracer=$!
sleep 1
curl -s -o /dev/null "$http/docs/big.txt"
sleep 0.5
kill "$tracer"; wait "$tracer" 2>/dev/null || true
check "sendfile(2) on the plaintext endpoint" "yes" "$(grep -q 'sendfile(' "$work/strace.txt" && echo yes || echo no)"
if grep -q -E '^(fail|crit):' "$work/sample.log"; then echo "FAIL error logs:"; grep -A3 -E '^(fail|crit):' "$work/sample.log"; fail=1; fi
exit $fail
