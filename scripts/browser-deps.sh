#!/usr/bin/env bash
# Installs what make test-browser needs from Debian's packages when it is missing: Chromium and
# Firefox ESR (the real browsers; Playwright and Puppeteer never download their own), Xvfb (a
# display for the headed runs), and the wire matrix's clients and certificate tools.
set -euo pipefail
missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v Xvfb >/dev/null || missing+=(xvfb)
command -v firefox-esr >/dev/null || missing+=(firefox-esr)
command -v node >/dev/null || missing+=(nodejs npm)
# The wire matrix: the clients whose TLS it fingerprints, and the tools that make and trust its
# certificate (openssl, and NSS's certutil for Firefox's profile).
command -v curl >/dev/null || missing+=(curl)
command -v go >/dev/null || missing+=(golang)
command -v openssl >/dev/null || missing+=(openssl)
command -v certutil >/dev/null || missing+=(libnss3-tools)
# The second generation of automation: Debian's chromedriver for undetected-chromedriver (it never
# downloads one), and xdotool for the people's operating-system input.
command -v chromedriver >/dev/null || missing+=(chromium-driver)
command -v xdotool >/dev/null || missing+=(xdotool)
# The relay lab (make test-network): network namespaces and TUN devices.
command -v ip >/dev/null || missing+=(iproute2)
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} with apt-get"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# uBlock Origin for one Firefox person profile, unpacked into the project's cache (never installed
# system-wide: Debian's package would load it into every Firefox on the machine).
cd "$(dirname "$0")/.."
ublock=.cache/ublock/firefox
if [ ! -f "$ublock/manifest.json" ]; then
  mkdir -p .cache/ublock
  (cd .cache/ublock && { apt-get download webext-ublock-origin-firefox 2>/dev/null ||
     { "${sudo[@]}" apt-get update -qq && apt-get download webext-ublock-origin-firefox; }; })
  rm -rf .cache/ublock/root && dpkg-deb -x .cache/ublock/webext-ublock-origin-firefox_*.deb .cache/ublock/root
  rm -rf "$ublock" && mv ".cache/ublock/root/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/uBlock0@raymondhill.net" "$ublock"
fi
