#!/usr/bin/env bash
# Installs what make test-browser needs from Debian's packages when it is missing: Chromium (the
# real browser; Playwright never downloads its own) and Xvfb (a display for the headed run).
set -euo pipefail
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v Xvfb >/dev/null || missing+=(xvfb)
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "installing ${missing[*]} with apt-get"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
