#!/usr/bin/env python3
"""Proof in a real browser (make test-browser): Debian's Chromium opens `vigil serve`'s /demo page,
whose agent sends the visit to the collect route; the session is then read back through the API.

- headless Chromium driven by Playwright: scoreBot >= 0.9, with headless_browser or webdriver among
  the reasons;
- Chromium with a display (Xvfb), started as a person would start it (no automation flags; only a
  DevTools port, opened after the visit, to take the screenshot): scoreBot < 0.5.

Screenshots of the page in both cases are written to target/browser/.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
VIGIL = Path(os.environ.get("VIGIL", ROOT / "target" / "debug" / "vigil"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SHOTS = ROOT / "target" / "browser"
# This machine's network is closed: keep Chromium from calling home. None of these is an
# automation flag (none sets navigator.webdriver or changes what a page sees).
QUIET = [
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]
if os.geteuid() == 0:
    QUIET.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`vigil serve` on a fresh SQLite database: it creates the demo account and prints its key."""

    def __init__(self, tmp):
        self.proc = subprocess.Popen(
            [str(VIGIL), "--db", str(Path(tmp) / "vigil.db"), "serve", "--demo", "--addr", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.port = self.key = None
        deadline = time.time() + 30
        for line in self.proc.stdout:
            if line.startswith("vigil listening on http://127.0.0.1:"):
                self.port = int(line.rsplit(":", 1)[1].split("/")[0])
            elif line.strip().startswith("vgl_"):
                self.key = line.strip()
            if (self.port and self.key) or time.time() > deadline:
                break
        if not (self.port and self.key):
            self.stop()
            sys.exit("vigil serve did not print its address and demo key")
        # Keep draining stdout so the server never blocks on a full pipe.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def demo_url(self, session):
        return f"http://localhost:{self.port}/demo?session={session}"

    def latest_event(self, session):
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1/projects/prj_demo/sessions/{session}/events?limit=1",
            headers={"Authorization": f"Bearer {self.key}"},
        )
        with urllib.request.urlopen(req, timeout=5) as r:
            events = json.load(r)["data"]
        return events[0] if events else None

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def codes(event):
    return [r["code"] for r in event["reasons"]]


def report(name, event):
    print(f"{name}: scoreBot={event['scoreBot']} scoreProxyVpn={event['scoreProxyVpn']} "
          f"reasons={codes(event)}")


def headless(server, pw):
    session = "headless-" + uuid.uuid4().hex[:10]
    browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=QUIET)
    try:
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(server.demo_url(session))
        page.wait_for_selector("body[data-state=done]", timeout=30_000)
        page.screenshot(path=str(SHOTS / "demo-headless.png"), full_page=True)
    finally:
        browser.close()
    event = server.latest_event(session)
    assert event, f"no event stored for {session}"
    report("headless", event)
    assert event["scoreBot"] >= 0.9, event
    assert {"headless_browser", "webdriver"} & set(codes(event)), event


def with_display(server, pw, tmp):
    session = "display-" + uuid.uuid4().hex[:10]
    display = f":{100 + os.getpid() % 400}"
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1280x900x24", "-nolisten", "tcp"],
                            stderr=subprocess.DEVNULL)
    devtools = free_port()
    chromium = None
    try:
        time.sleep(1)
        env = dict(os.environ, DISPLAY=display)
        chromium = subprocess.Popen(
            [CHROMIUM, *QUIET, f"--user-data-dir={tmp}/profile", "--window-size=1280,900",
             f"--remote-debugging-port={devtools}", server.demo_url(session)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline, event = time.time() + 60, None
        while time.time() < deadline and not event:
            time.sleep(0.5)
            event = server.latest_event(session)
        assert event, f"the visit of {session} never arrived"
        # Only now attach, to photograph the page as the visitor sees it.
        browser = pw.chromium.connect_over_cdp(f"http://127.0.0.1:{devtools}")
        pages = [p for c in browser.contexts for p in c.pages if "/demo" in p.url]
        assert pages, "the demo page is not open"
        pages[0].wait_for_selector("body[data-state=done]", timeout=30_000)
        pages[0].screenshot(path=str(SHOTS / "demo-display.png"), full_page=True)
        browser.close()
    finally:
        if chromium:
            chromium.kill()
            chromium.wait()
        xvfb.kill()
        xvfb.wait()
    report("with a display", event)
    assert event["scoreBot"] < 0.5, event


def main():
    SHOTS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(tmp)
        try:
            with sync_playwright() as pw:
                headless(server, pw)
                with_display(server, pw, tmp)
        finally:
            server.stop()
    print(f"screenshots: {SHOTS}/demo-headless.png, {SHOTS}/demo-display.png")


if __name__ == "__main__":
    main()
