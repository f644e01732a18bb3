#!/usr/bin/env bash
# Requests per second of `vigil serve` (release build, SQLite store, demo data) under a loopback
# load generator (wrk), for: a 100-result page, the plan, and an unknown route (router only: the
# ceiling of the server itself). Server and load generator share this machine's cores, so the
# figures are a floor for a machine that runs the server alone.
#
# Usage: benches/serve_rps.sh [SECONDS] [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
conns=${2:-32}

if ! command -v wrk >/dev/null; then
  echo "installing wrk (Debian package)" >&2
  { apt-get update -qq && apt-get install -y -qq wrk; } >/dev/null
fi
cargo build --release --bin vigil >&2

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
target/release/vigil --db "$dir/bench.db" serve --addr "127.0.0.1:$port" >"$dir/out" 2>"$dir/err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do grep -q 'vgl_live_' "$dir/out" 2>/dev/null && break; sleep 0.1; done
key=$(grep -o 'vgl_live_[A-Za-z0-9]*' "$dir/out" | head -1)
[ -n "$key" ] || { echo "server did not start" >&2; cat "$dir/err" >&2; exit 1; }
base="http://127.0.0.1:$port/v1"

# Sanity: the page really holds 100 results.
n=$(curl -s -H "Authorization: Bearer $key" "$base/results/prj_demo/sess_long" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')
[ "$n" = 100 ] || { echo "expected a 100-result page, got $n" >&2; exit 1; }

printf '%-40s %12s %10s %10s\n' "endpoint" "req/s" "p50" "p99"
for target in "results/prj_demo/sess_long (100 results)" "plan" "nope (404, router only)"; do
  path=${target%% *}
  out=$(wrk -t2 -c"$conns" -d"${secs}s" --latency -H "Authorization: Bearer $key" "$base/$path")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  errs=$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr '\n' ' ' || true)
  printf '%-40s %12s %10s %10s %s\n' "$target" "$rps" "$p50" "$p99" "${errs:+($errs)}"
done
echo "(wrk -t2 -c$conns -d${secs}s on $(nproc) cores shared with the server; $(date -u +%F))"
