#!/usr/bin/env bash
# Vendors Redoc's standalone bundle for the API reference page (GET /v1/docs) from npm, at the
# pinned version, and checks it against the recorded SHA-256; `--check` only verifies the
# committed copy (make lint). Nothing is fetched at build or run time.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=2.5.4
SHA256=dcaf76612bc4a3fbcc923a8966dee2f6146a5f32e5ce1b6f02dd60cbbf89500b
OUT=reference/vendor
if [ "${1:-}" = "--check" ]; then
  echo "$SHA256  $OUT/redoc.standalone.js" | sha256sum --check --quiet
  exit
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "redoc@$VERSION" >/dev/null && tar xzf "redoc-$VERSION.tgz")
echo "$SHA256  $tmp/package/bundles/redoc.standalone.js" | sha256sum --check --quiet
cp "$tmp/package/bundles/redoc.standalone.js" "$OUT/"
cp "$tmp/package/bundles/redoc.standalone.js.LICENSE.txt" "$OUT/"
cp "$tmp/package/LICENSE" "$OUT/redoc.LICENSE"
echo "vendored redoc $VERSION into $OUT"
