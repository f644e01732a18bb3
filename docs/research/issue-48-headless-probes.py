#!/usr/bin/env python3
"""Issue 48, item 4: what could tell pydoll's headless Chromium under a spread Windows user agent
from a person's headful Chromium, measured on both before anything is kept. Run with the browser
venv (`make test-browser` makes it) and Xvfb on the machine:

    .cache/venv-browser/bin/python docs/research/issue-48-headless-probes.py

Each browser opens the same local page (served by this script); a DevTools client reads the
candidates after the page has loaded (attaching changes none of them), and the script prints one
line per candidate with both browsers' values.
"""

import asyncio
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "browser"))
from demo import CHROMIUM, PERSON_CHROMIUM_ARGS, QUIET, Display, free_port  # noqa: E402

PROBES = """(async () => {
  const o = {};
  const t = (k, f) => { try { o[k] = f(); } catch (e) { o[k] = 'throws'; } };
  t('outer-inner', () => [outerWidth - innerWidth, outerHeight - innerHeight]);
  t('screen', () => [screen.width, screen.height, screen.availWidth, screen.availHeight]);
  t('screenXY', () => [screenX, screenY]);
  t('dpr', () => devicePixelRatio);
  t('colorDepth', () => screen.colorDepth);
  t('pdfViewer', () => navigator.pdfViewerEnabled);
  t('plugins', () => navigator.plugins.length);
  t('notification', () => Notification.permission);
  try { o['perm-notifications'] = (await navigator.permissions.query({name: 'notifications'})).state; } catch (e) { o['perm-notifications'] = 'throws'; }
  try { o['perm-geolocation'] = (await navigator.permissions.query({name: 'geolocation'})).state; } catch (e) { o['perm-geolocation'] = 'throws'; }
  t('h264', () => document.createElement('video').canPlayType('video/mp4; codecs="avc1.42E01E"'));
  t('vp9', () => document.createElement('video').canPlayType('video/webm; codecs="vp9"'));
  t('aac', () => document.createElement('audio').canPlayType('audio/mp4; codecs="mp4a.40.2"'));
  t('voices', () => speechSynthesis.getVoices().length);
  try { o['media-devices'] = (await navigator.mediaDevices.enumerateDevices()).map(d => d.kind).join(','); } catch (e) { o['media-devices'] = 'throws'; }
  t('connection-rtt', () => navigator.connection && navigator.connection.rtt);
  t('dark', () => matchMedia('(prefers-color-scheme: dark)').matches);
  t('hover', () => matchMedia('(hover: hover)').matches);
  t('chrome-keys', () => Object.keys(window.chrome || {}).sort().join(','));
  t('fonts', () => ['Arial', 'Times New Roman', 'DejaVu Sans', 'Liberation Sans', 'Segoe UI'].filter(f => document.fonts.check('12px "' + f + '"')).join(','));
  t('visibility', () => document.visibilityState);
  t('hasFocus', () => document.hasFocus());
  t('platform', () => navigator.platform);
  t('uaData', () => navigator.userAgentData && navigator.userAgentData.platform);
  return JSON.stringify(o);
})()"""


def serve():
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<!doctype html><title>probe</title><p>probe</p>")

        def log_message(self, *a):
            pass
    port = free_port()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return port


def person(url, tmp, display):
    from playwright.sync_api import sync_playwright
    devtools = free_port()
    proc = subprocess.Popen([CHROMIUM, *QUIET, *PERSON_CHROMIUM_ARGS, f"--user-data-dir={tmp}/person",
                             "--window-position=0,0", "--window-size=1280,900",
                             f"--remote-debugging-port={devtools}", url],
                            env=display.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(4)
        with sync_playwright() as pw:
            b = pw.chromium.connect_over_cdp(f"http://127.0.0.1:{devtools}")
            page = next(p for c in b.contexts for p in c.pages if p.url.startswith(url))
            return json.loads(page.evaluate(PROBES))
    finally:
        proc.kill()
        proc.wait()


def pydoll_headless(url, tmp):
    from pydoll.browser import Chrome
    from quiet import pydoll_options

    async def run():
        async with Chrome(options=pydoll_options(f"{tmp}/pydoll", headless=True)) as browser:
            tab = await browser.start()
            await tab.go_to(url)
            r = await tab.execute_script(PROBES, await_promise=True, return_by_value=True)
            return json.loads(r["result"]["result"]["value"])
    return asyncio.run(run())


def main():
    url = f"http://127.0.0.1:{serve()}/"
    with tempfile.TemporaryDirectory() as tmp, Display() as display:
        os.environ["DISPLAY"] = display.name
        a = person(url, tmp, display)
        b = pydoll_headless(url, tmp)
    print(f"| candidate | person, Chromium headful | pydoll headless, Windows user agent |\n|---|---|---|")
    for k in a:
        mark = "" if a[k] == b.get(k) else " **differs**"
        print(f"| {k} | {a[k]} | {b.get(k)}{mark} |")


if __name__ == "__main__":
    main()
