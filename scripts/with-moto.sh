#!/usr/bin/env bash
# Runs a command with a private moto server (DynamoDB + Streams emulator, see moto_server.py for why
# it serialises requests) on a free loopback port,
# exported as VIGIL_TEST_DYNAMODB_ENDPOINT, and stops it afterwards whatever happens.
# Usage: scripts/with-moto.sh VENV COMMAND...
set -euo pipefail
venv=$1; shift
port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp -t moto.XXXXXX.log)
"$venv/bin/python" "$(dirname "$0")/moto_server.py" 127.0.0.1 "$port" >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 100); do
  if curl -s -o /dev/null "http://127.0.0.1:$port/moto-api/"; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then echo "moto_server failed to start:" >&2; cat "$log" >&2; exit 1; fi
  sleep 0.2
done
curl -s -o /dev/null "http://127.0.0.1:$port/moto-api/" || { echo "moto_server did not answer on port $port" >&2; cat "$log" >&2; exit 1; }
export VIGIL_TEST_DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
echo "moto_server on $VIGIL_TEST_DYNAMODB_ENDPOINT" >&2
"$@"
