#!/usr/bin/env bash
# End-to-end check of the Python client: build the wheel and sdist, install the wheel (with its
# extras) into a fresh venv outside the repository, type-check it, start a real `vigil serve`
# and run the test suite against it, importing the installed package only.
#
#   clients/python/run-e2e.sh path/to/vigil
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 VIGIL_BIN" >&2
    exit 2
fi
VIGIL_BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[[ -x "$VIGIL_BIN" ]] || { echo "not an executable: $1" >&2; exit 2; }

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE="$REPO/.cache/clients-python"
export PIP_CACHE_DIR="$CACHE/pip"
export PIP_DISABLE_PIP_VERSION_CHECK=1
PYTHON=${PYTHON:-python3}

# Test-only tools, pinned so a run today and a run next month test the same thing.
TEST_DEPS=(
    "pytest==9.2.0"
    "pytest-asyncio==1.5.0"
    "mypy==2.4.1"
    "PyYAML==6.0.4"
    "django-stubs==6.1.2"
)
BUILD_DEP="build==1.6.1"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vigil-python-e2e.XXXXXX")
SERVER_PID=""
cleanup() {
    # Always stop the server this script started (by its pid only), then drop the temp dir.
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

echo "== build (wheel + sdist)"
if [[ ! -x "$CACHE/tools/bin/python" ]]; then
    "$PYTHON" -m venv "$CACHE/tools"
fi
"$CACHE/tools/bin/pip" install -q "$BUILD_DEP"
"$CACHE/tools/bin/python" -m build --outdir "$WORK/dist" "$HERE" >"$WORK/build.log" 2>&1 \
    || { cat "$WORK/build.log" >&2; exit 1; }
WHEEL=$(ls "$WORK"/dist/vigil_client-1.0.0-*.whl)
ls "$WORK"/dist/vigil_client-1.0.0.tar.gz >/dev/null
echo "   $(basename "$WHEEL") and the sdist"

echo "== fresh venv in $WORK/venv"
"$PYTHON" -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
"$PY" -m pip install -q "${WHEEL}[fastapi,django]" "${TEST_DEPS[@]}"

echo "== mypy --strict (installed package and examples)"
cp -r "$HERE/tests" "$HERE/examples" "$WORK/"
(cd "$WORK" && "$PY" -m mypy --strict --cache-dir "$WORK/.mypy_cache" -p vigil_client)
(cd "$WORK" && "$PY" -m mypy --strict --cache-dir "$WORK/.mypy_cache" examples)

echo "== vigil serve"
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$VIGIL_BIN" serve --demo --db "$WORK/v.db" --addr "127.0.0.1:$PORT" --allow-loopback-webhooks \
    >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!
API_KEY=""
# Up to 60 s: a fresh store first gets the demo shop's day (a few seconds in a debug build).
for _ in $(seq 1 600); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "the server exited:" >&2
        cat "$WORK/server.err" >&2
        exit 1
    fi
    API_KEY=$(grep -o 'vgl_live_[A-Za-z0-9_]*' "$WORK/server.out" | head -n 1 || true)
    if [[ -n "$API_KEY" ]] && (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
        break
    fi
    sleep 0.1
done
[[ -n "$API_KEY" ]] || { echo "no developer key printed by the server" >&2; cat "$WORK/server.err" >&2; exit 1; }
echo "   listening on 127.0.0.1:$PORT"

echo "== pytest (from $WORK, against the installed wheel)"
export VIGIL_BASE_URL="http://127.0.0.1:$PORT"
export VIGIL_API_KEY="$API_KEY"
export VIGIL_PROJECT=prj_demo
export VIGIL_OPENAPI="$REPO/openapi.yaml"
export VIGIL_EXPECT_INSTALLED=1
cd "$WORK"
"$PY" -m pytest -q -p no:cacheprovider -o asyncio_default_fixture_loop_scope=function \
    --rootdir "$WORK" tests

echo "== the README's quick start, as written"
# The first python block under "## Quick start", run as a user would paste it.
awk '/^## Quick start/ {q = 1} q && /^```python$/ {f = 1; next} f && /^```$/ {exit} f' \
    "$HERE/README.md" >"$WORK/quickstart.py"
[[ -s "$WORK/quickstart.py" ]] || { echo "no quick start found in README.md" >&2; exit 1; }
out=$("$PY" "$WORK/quickstart.py")
echo "   $out"
[[ $out == *scoreBot* ]] || { echo "the quick start printed no verdict" >&2; exit 1; }
echo "== all green"
