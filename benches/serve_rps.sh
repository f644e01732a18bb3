#!/usr/bin/env bash
# Requests per second of `vigil serve` (built with the `server` profile, SQLite store) under a
# loopback load generator (wrk), for: a 100-result page, the plan, the browser agent's POST
# /collect with a realistic body (events/collect.json's signals: public key and origin checks, one
# evaluation by the engine, one event written, each to a fresh session), and an unknown route
# (router only: the ceiling of the server itself). Every authenticated request passes the plan
# stage (counted against the positions the server has claimed from the file); the seeded plan's
# limits are too high to refuse any, so the figures include the counting, not 429s.
# Visits come from varied addresses, as a site's visitors do: the server trusts the loopback load
# generator as its proxy (`--trust-proxy 127.0.0.1/32`) and each visit names a random address in
# X-Forwarded-For, so the per-address visit budget refuses none. A line whose answers are not the
# ones it claims (any non-2xx but on the 404 line, or socket errors) fails the bench.
# Server and load generator share this machine's cores, so the figures are a floor for a machine
# that runs the server alone.
#
# Usage: benches/serve_rps.sh [SECONDS] [CONNECTIONS]
#   BASELINE_BIN=path/to/an/older/vigil  also runs that build, in the same run, after this one.
#   CURRENT_BIN=path/to/a/vigil          runs that build as "current" instead of building one.
#   ROUNDS=N (with BASELINE_BIN)         N rounds, the order swapped every round (so neither build
#                                        always goes first), then each line's current/baseline
#                                        ratio per round and its median: a same-run comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
conns=${2:-32}
rounds=${ROUNDS:-1}

if ! command -v wrk >/dev/null; then
  echo "installing wrk (Debian package)" >&2
  { apt-get update -qq && apt-get install -y -qq wrk; } >/dev/null
fi
current_bin=${CURRENT_BIN:-}
if [ -z "$current_bin" ]; then
  cargo build --profile server --bin vigil >&2
  current_bin=target/server/vigil
fi

dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT
key=vgl_bench_key
python3 - "$dir/seed.json" "$key" <<'PY'
import json, sys
path, key = sys.argv[1], sys.argv[2]
plan = {"id": "plan_bench", "name": "Bench", "description": "limits no load here reaches",
        "maxRps": 1000000000, "maxProjects": 10, "maxRequests": 1000000000000,
        "expiresAt": None, "subscribedAt": "2026-01-01T00:00:00.000Z", "status": "active",
        "unsubscribedAt": None}
results = [{"projectId": "prj_demo", "sessionId": "sess_long", "scoreBot": 0.1,
            "scoreProxyVpn": 0.2, "ipAddress": "203.0.113.99",
            "createdAt": "2026-11-21T10:%02d:%02d.000Z" % (i // 60, i % 60)} for i in range(150)]
json.dump({"accounts": [{"id": "acc_bench", "apiKeys": [key], "plan": plan}],
           "projects": [{"id": "prj_demo", "accountId": "acc_bench", "name": "Bench",
                         "domain": "bench.example", "apiKeyPublic": "pk_bench",
                         "apiKeyPrivate": "sk_bench", "disabled": False,
                         "createdAt": "2026-01-01T00:00:00.000Z"}],
           "results": results}, open(path, "w"))
PY
# The agent's request: its body as events/collect.json has it, a new session each time.
python3 - "$dir/collect.lua" <<'PY'
import json, sys
event = json.load(open("events/collect.json"))
body = json.loads(event["body"])
body["publicKey"] = "pk_bench"
body["sessionId"] = "SESSION"
# Each visitor's own screen height, so visits come from many device keys as a site's do (one key
# for all would make every visit update one hot device's counters).
body["signals"]["screenHeight"] = 9999
text = json.dumps(body, separators=(",", ":"))
ua = event["headers"]["User-Agent"]
lua = f"""
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/plain;charset=UTF-8"
wrk.headers["Origin"] = "https://www.bench.example"
wrk.headers["User-Agent"] = {json.dumps(ua)}
wrk.headers["Accept-Language"] = "en-GB,en;q=0.9"
local body = {json.dumps(text)}
local n = 0
request = function()
  n = n + 1
  local s = string.gsub(body, "SESSION", "s" .. math.random(1, 1000000000) .. "_" .. n)
  s = string.gsub(s, "9999", tostring(math.random(600, 2160)))
  -- A visitor's own address, one of 64,516 (a public /16's worth), via the trusted proxy.
  wrk.headers["X-Forwarded-For"] = "81.2." .. math.random(1, 254) .. "." .. math.random(1, 254)
  return wrk.format(nil, nil, nil, s)
end
"""
open(sys.argv[1], "w").write(lua)
PY

# bench NAME BINARY: starts BINARY on its own database and prints its table; each line's req/s
# also goes to $dir/figures as "NAME<TAB>endpoint<TAB>req/s".
bench() {
  local name=$1 bin=$2 port out base n
  rm -rf "${dir:?}/$name"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$dir/$name"
  "$bin" --db "$dir/$name/bench.db" serve --addr "127.0.0.1:$port" --seed "$dir/seed.json" \
    --trust-proxy 127.0.0.1/32 \
    >"$dir/$name/out" 2>"$dir/$name/err" &
  pids+=($!)
  for _ in $(seq 1 100); do grep -q 'listening' "$dir/$name/out" 2>/dev/null && break; sleep 0.1; done
  grep -q 'listening' "$dir/$name/out" || { echo "$name: server did not start" >&2; cat "$dir/$name/err" >&2; exit 1; }
  base="http://127.0.0.1:$port/v1"
  # Sanity: the page really holds 100 results.
  n=$(curl -s -H "Authorization: Bearer $key" "$base/results/prj_demo/sess_long" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')
  [ "$n" = 100 ] || { echo "$name: expected a 100-result page, got $n" >&2; exit 1; }
  echo "== $name ($bin)"
  printf '%-40s %12s %10s %10s\n' "endpoint" "req/s" "p50" "p99"
  for target in "results/prj_demo/sess_long (100 results)" "plan" "collect (agent POST, 202)" "nope (404, router only)"; do
    path=${target%% *}
    script=()
    [ "$path" = collect ] && script=(-s "$dir/collect.lua")
    out=$(wrk -t2 -c"$conns" -d"${secs}s" --latency "${script[@]}" -H "Authorization: Bearer $key" "$base/$path")
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    p50=$(awk '$1=="50%" {print $2}' <<<"$out")
    p99=$(awk '$1=="99%" {print $2}' <<<"$out")
    errs=$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr '\n' ' ' || true)
    printf '%-40s %12s %10s %10s %s\n' "$target" "$rps" "$p50" "$p99" "${errs:+($errs)}"
    printf '%s\t%s\t%s\n' "$name" "$path" "$rps" >>"$dir/figures"
    # Honest lines: only the 404 line may count non-2xx answers; nothing may count socket errors.
    if grep -q 'Socket errors' <<<"$out" || { [ "$path" != nope ] && grep -q 'Non-2xx' <<<"$out"; }; then
      echo "$name: $target answered other than it claims: $errs" >&2
      exit 1
    fi
  done
  kill "${pids[-1]}"
}

for round in $(seq 1 "$rounds"); do
  [ "$rounds" -gt 1 ] && echo "-- round $round of $rounds"
  if [ -n "${BASELINE_BIN:-}" ] && [ $((round % 2)) = 0 ]; then
    bench baseline "$BASELINE_BIN"
    bench current "$current_bin"
  else
    bench current "$current_bin"
    if [ -n "${BASELINE_BIN:-}" ]; then bench baseline "$BASELINE_BIN"; fi
  fi
done
if [ -n "${BASELINE_BIN:-}" ]; then
  # Pairs in order: the n-th current line of an endpoint with the n-th baseline line of it.
  python3 - "$dir/figures" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, path, rps = line.rstrip("\n").split("\t")
    runs.setdefault(path, {}).setdefault(name, []).append(float(rps))
print("\ncurrent/baseline req/s, per round, then the median:")
for path, by in runs.items():
    ratios = [c / b for c, b in zip(by["current"], by["baseline"])]
    print(f"{path:10} {' '.join(f'{r:.2f}' for r in ratios):50} median {statistics.median(ratios):.2f}")
PY
fi
echo "(wrk -t2 -c$conns -d${secs}s on $(nproc) cores shared with the server; $(date -u +%F))"
