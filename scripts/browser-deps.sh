#!/usr/bin/env bash
# Installs what make test-browser needs from Debian's packages when it is missing: Chromium and
# Firefox ESR (the real browsers; Playwright and Puppeteer never download their own) and Xvfb (a
# display for the headed runs).
set -euo pipefail
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v Xvfb >/dev/null || missing+=(xvfb)
command -v firefox-esr >/dev/null || missing+=(firefox-esr)
command -v node >/dev/null || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "installing ${missing[*]} with apt-get"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
