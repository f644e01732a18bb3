#!/usr/bin/env bash
# End-to-end check of the Node client: builds and packs it, installs the tarball in a fresh
# project outside the repository (as a user would), type-checks the examples against it, and
# runs the tests against a real `vigil serve`.
#
#   clients/node/run-e2e.sh VIGIL_BIN        e.g. clients/node/run-e2e.sh target/release/vigil
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 VIGIL_BIN" >&2
  exit 2
fi
vigil_bin=$(realpath "$1")
[[ -x $vigil_bin ]] || { echo "not an executable: $1" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# One npm cache for every run, inside the repository's cache folder, so reruns install offline.
cache="$repo/.cache/clients-node/npm"
mkdir -p "$cache"
npm_() { npm --cache "$cache" --prefer-offline --no-audit --no-fund --loglevel=error "$@"; }

# Test-only dependencies of the fresh project, pinned like the package's own.
test_deps=(express@5.3.0 @types/express@5.0.6 typescript@5.9.3 @types/node@20.19.43)

work=$(mktemp -d "${TMPDIR:-/tmp}/vigil-node-e2e.XXXXXX")
server_pid=""
cleanup() {
  local rc=$?
  if [[ -n $server_pid ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [[ $rc -eq 0 ]]; then
    rm -rf "$work"
  else
    echo "run-e2e.sh failed (exit $rc); logs and the test project are kept in $work" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step() { printf '\n== %s\n' "$*"; }

step "install, check the generated types, type-check and build ($here)"
cd "$here"
npm_ ci
npm_ run check
npm_ run build

step "pack"
mkdir -p "$work/pack"
# Built just above: --ignore-scripts keeps prepack from building a second time.
tarball="$work/pack/$(npm_ pack --ignore-scripts --pack-destination "$work/pack" | tail -n 1)"
# Only what a user needs: package.json, README and the compiled output.
unexpected=$(tar -tzf "$tarball" | grep -Ev '^package/(package\.json|README\.md|dist/(esm|cjs)/[A-Za-z0-9_.]+\.(js|d\.ts|json))$' || true)
if [[ -n $unexpected ]]; then
  echo "unexpected files in $tarball:" >&2
  echo "$unexpected" >&2
  exit 1
fi
echo "$(tar -tzf "$tarball" | wc -l) files in $(basename "$tarball")"

step "fresh project with the tarball installed ($work/project)"
mkdir -p "$work/project"
cd "$work/project"
cat > package.json <<'JSON'
{ "name": "vigil-client-e2e", "version": "0.0.0", "private": true, "type": "module" }
JSON
npm_ install --save-exact "$tarball" "${test_deps[@]}"
cp -R "$here/test" "$here/examples" .

step "type-check the examples against the installed package (tsc --strict)"
npx --no-install tsc -p examples/tsconfig.json --strict

step "start vigil serve"
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
"$vigil_bin" serve --demo --db "$work/v.db" --addr "127.0.0.1:$port" --allow-loopback-webhooks \
  >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
api_key=""
# Up to 60 s: a fresh store first gets the demo shop's day (a few seconds in a debug build).
for _ in $(seq 1 600); do
  kill -0 "$server_pid" 2>/dev/null || { echo "vigil serve exited:" >&2; cat "$work/server.err" >&2; exit 1; }
  api_key=$(grep -o 'vgl_live_[A-Za-z0-9_]*' "$work/server.out" | head -n 1 || true)
  if [[ -n $api_key ]] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    break
  fi
  api_key=""
  sleep 0.1
done
[[ -n $api_key ]] || { echo "vigil serve did not start listening on $port within 60 s" >&2; cat "$work/server.err" >&2; exit 1; }
echo "listening on 127.0.0.1:$port (pid $server_pid)"

step "node --test"
export VIGIL_BASE_URL="http://127.0.0.1:$port" VIGIL_API_KEY="$api_key" VIGIL_PROJECT=prj_demo
# One file at a time: the files share the demo plan's 10 requests a second.
node --test --test-concurrency=1 test/*.test.mjs

step "the README's quick start, as written"
# The first js block under "## Quick start", run as a user would paste it into a module.
awk '/^## Quick start/ {q = 1} q && /^```js$/ {f = 1; next} f && /^```$/ {exit} f' \
  "$here/README.md" >quickstart.mjs
[[ -s quickstart.mjs ]] || { echo "no quick start found in README.md" >&2; exit 1; }
out=$(node quickstart.mjs)
echo "$out"
[[ $out == *scoreBot* ]] || { echo "the quick start printed no verdict" >&2; exit 1; }
