#!/usr/bin/env bash
# make test-api: Schemathesis (every check, every phase: examples, coverage, fuzzing, and stateful
# sequences through the document's links) against vigil serve, once on SQLite and once on the
# DynamoDB emulator. Needs VIGIL_TEST_DYNAMODB_ENDPOINT (scripts/with-moto.sh sets it).
# One worker: CPython 3.11's ast.parse is not thread-safe, and Hypothesis calls it to describe
# filters (a worker pool fails at random with "AST constructor recursion depth mismatch").
# Usage: scripts/test-api.sh VENV [MAX_EXAMPLES]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$1
examples=${2:-${API_EXAMPLES:-25}}
# The emulator serves one request at a time and copies the whole table whenever a transaction's
# condition fails (scripts/moto_server.py), so it slows as the fuzzer fills the table, until calls
# outlast the SDK's timeouts: the DynamoDB run takes fewer examples to stay within them.
dynamo_examples=${DYNAMO_EXAMPLES:-10}
vigil=target/debug/vigil
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$dir"' EXIT

# fuzz NAME EXAMPLES ARGS...: serves the seed with `vigil ARGS serve` and runs Schemathesis.
fuzz() {
  local name=$1 examples=$2; shift 2
  local port out
  port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  out="$dir/$name"
  mkdir -p "$out"
  "$vigil" "$@" serve --addr "127.0.0.1:$port" --seed tests/api/seed.json >"$out/stdout" 2>"$out/stderr" &
  pids+=($!)
  for _ in $(seq 1 150); do grep -q listening "$out/stdout" 2>/dev/null && break; sleep 0.2; done
  grep -q listening "$out/stdout" || { echo "$name: vigil serve did not start" >&2; cat "$out/stderr" >&2; exit 1; }
  echo "== schemathesis on $name ($examples examples per operation)"
  # Two runs on one server: every check in the examples, coverage and fuzzing phases; then the
  # stateful sequences (positive data only) without negative_data_rejection, which Schemathesis
  # 4.32 applies to a positive step fed by a link and so reports a valid request as "accepted"
  # (a CLI --checks all overrides the configuration's per-phase switch).
  st() {
    (cd tests/api && "$OLDPWD/$venv/bin/schemathesis" --config-file schemathesis.toml run \
      "$OLDPWD/openapi.yaml" --url "http://127.0.0.1:$port/v1" \
      -H "Authorization: Bearer vgl_fuzz_key" --checks all --max-examples "$examples" \
      --workers 1 --seed 20261123 --no-color "$@")
  }
  if ! { st --phases examples,coverage,fuzzing &&
         st --phases stateful --exclude-checks negative_data_rejection; }; then
    cp "$out/stderr" "/tmp/test-api-$name.log"; echo "$name: schemathesis failed; the server's log:" >&2
    grep -i "panicked\|error" "$out/stderr" | head -20 >&2 || true
    exit 1
  fi
  # No answer of the run may have come from a panic.
  if grep -q panicked "$out/stderr"; then echo "$name: the server panicked" >&2; exit 1; fi
  cp "$out/stderr" "/tmp/test-api-$name.log" 2>/dev/null || true
  kill "${pids[-1]}"
}

fuzz sqlite "$examples" --db "$dir/fuzz.db"
export VIGIL_TABLE="vigil-fuzz-$$" AWS_ENDPOINT_URL="$VIGIL_TEST_DYNAMODB_ENDPOINT"
"$vigil" --dynamodb table create >/dev/null
fuzz dynamodb "$dynamo_examples" --dynamodb
