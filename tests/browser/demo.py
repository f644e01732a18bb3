#!/usr/bin/env python3
"""Proof in real browsers (make test-browser): a matrix of bots and people opens `vigil serve
--demo`'s /demo page, whose agent sends the visit to the collect route; each session is then read
back through the API and printed on one line (score and reasons).

Bots, each scoreBot >= 0.9, disguised as scraping tutorials teach: Playwright headless and with a
display (Xvfb), `--enable-automation` dropped, `--disable-blink-features=AutomationControlled`, a
borrowed Windows Chrome user agent, with and without an init script that deletes
navigator.webdriver; `chromium --headless=new` with a borrowed user agent; puppeteer-core with
puppeteer-extra's stealth plugin. Plus Playwright's plain headless Chromium.

People, each scoreBot < 0.5: Chromium and Firefox ESR under Xvfb started as a person starts them,
and Firefox ESR with privacy.resistFingerprinting. The person's Chromium makes fifteen visits:
its first page at launch, then fourteen in new tabs the running browser opens; every one must
score as a person, and only after all arrived does a DevTools client attach, to read the pages
and photograph the first.

Every browser is Debian's (never a downloaded build). Screenshots go to target/browser/. The
agent's collection time (from `Vigil.collect` to the send) is printed over the person's Chromium
visits (what a visitor's page pays) and, apart, over the driven visits (a fresh browser each, and
the driver's own work: Playwright and Puppeteer hold every new Worker until they resume it).
"""

import json
import os
import re
import ssl
import statistics
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
INSECURE = ssl.create_default_context()
INSECURE.check_hostname = False
INSECURE.verify_mode = ssl.CERT_NONE
VIGIL = Path(os.environ.get("VIGIL", ROOT / "target" / "debug" / "vigil"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FIREFOX = os.environ.get("FIREFOX", "/usr/bin/firefox-esr")
NODE_MODULES = ROOT / ".cache" / "browser-node" / "node_modules"
SHOTS = ROOT / "target" / "browser"
# A borrowed user agent: Chrome on Windows, as scrapers copy it.
WIN_UA = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/138.0.0.0 Safari/537.36")
STEALTH_ARGS = ["--disable-blink-features=AutomationControlled"]
HIDE_WEBDRIVER = "delete Object.getPrototypeOf(navigator).webdriver"
FIREFOX_PREFS = """user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("app.update.enabled", false);
user_pref("browser.safebrowsing.malware.enabled", false);
user_pref("browser.safebrowsing.phishing.enabled", false);
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
user_pref("browser.aboutwelcome.enabled", false);
"""
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
    """`vigil serve` on a fresh SQLite database: it creates the demo account and prints its key.
    `extra` adds serve options (HTTPS with `--tls-cert`/`--tls-key`)."""

    def __init__(self, tmp, extra=(), db="vigil.db"):
        self.proc = subprocess.Popen(
            [str(VIGIL), "--db", str(Path(tmp) / db), "serve", "--demo", "--addr", "127.0.0.1:0", *extra],
            stdout=subprocess.PIPE,
            stderr=open(os.environ.get("VIGIL_LOG", os.devnull), "w"),
            text=True,
        )
        self.port = self.key = None
        self.scheme = "http"
        deadline = time.time() + 30
        for line in self.proc.stdout:
            m = re.match(r"vigil listening on (https?)://127\.0\.0\.1:(\d+)/", line)
            if m:
                self.scheme, self.port = m.group(1), int(m.group(2))
            elif line.strip().startswith("vgl_"):
                self.key = line.strip()
            if (self.port and self.key) or time.time() > deadline:
                break
        if not (self.port and self.key):
            self.stop()
            sys.exit("vigil serve did not print its address and demo key")
        # Keep draining stdout so the server never blocks on a full pipe.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def get(self, path, headers=None):
        """The harness's own read (its certificate, when HTTPS, is the test's own: not checked)."""
        req = urllib.request.Request(f"{self.scheme}://127.0.0.1:{self.port}{path}", headers=headers or {})
        with urllib.request.urlopen(req, timeout=10, context=INSECURE) as r:
            return r.read().decode()

    def demo_url(self, session):
        return f"http://localhost:{self.port}/demo?session={session}"

    def latest_event(self, session):
        body = self.get(f"/v1/projects/prj_demo/sessions/{session}/events?limit=1",
                        {"Authorization": f"Bearer {self.key}"})
        events = json.loads(body)["data"]
        return events[0] if events else None

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def codes(event):
    return [r["code"] for r in event["reasons"]]


def session_id(name):
    return f"{name}-{uuid.uuid4().hex[:8]}"


def wait_event(server, session, seconds=60):
    deadline, event = time.time() + seconds, None
    while time.time() < deadline and not event:
        time.sleep(0.5)
        event = server.latest_event(session)
    assert event, f"the visit of {session} never arrived"
    return event


class Display:
    """An Xvfb display for the browsers that need one."""

    def __enter__(self):
        number = 100 + os.getpid() % 400
        self.name = f":{number}"
        # -noreset: by default the X server resets when its last client leaves, and a client that
        # connects during that reset is dropped ("Connection reset by peer"). A matrix closes one
        # browser and then opens the next connection at once, so the reset must not happen.
        self.proc = subprocess.Popen(["Xvfb", self.name, "-screen", "0", "1280x900x24", "-nolisten", "tcp",
                                      "-noreset"], stderr=subprocess.DEVNULL)
        # Ready when its socket accepts (a file left by an earlier server is not enough).
        deadline = time.time() + 10
        while self.proc.poll() is None and time.time() < deadline:
            with socket.socket(socket.AF_UNIX) as probe:
                try:
                    probe.connect(f"/tmp/.X11-unix/X{number}")
                    return self
                except OSError:
                    time.sleep(0.05)
        self.proc.kill()
        raise RuntimeError(f"Xvfb {self.name} did not start")

    def env(self):
        return dict(os.environ, DISPLAY=self.name)

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def playwright_bot(server, pw, name, headless=True, stealth=True, hide=False, display=None):
    """A Playwright-driven visit; returns the event and the agent's collection time."""
    session = session_id(name)
    launch = {"executable_path": CHROMIUM, "headless": headless, "args": QUIET + (STEALTH_ARGS if stealth else [])}
    if stealth:
        launch["ignore_default_args"] = ["--enable-automation"]
    if display:
        launch["env"] = display.env()
    browser = pw.chromium.launch(**launch)
    try:
        context = browser.new_context(viewport={"width": 1100, "height": 900},
                                      **({"user_agent": WIN_UA} if stealth else {}))
        if hide:
            context.add_init_script(HIDE_WEBDRIVER)
        page = context.new_page()
        page.goto(server.demo_url(session))
        page.wait_for_selector("body[data-state=done]", timeout=30_000)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
        ms = page.evaluate("Number(document.body.dataset.collectMs)")
    finally:
        browser.close()
    return server.latest_event(session), ms


def headless_new(server, tmp):
    """`chromium --headless=new` with a borrowed user agent, no driver attached at all."""
    session = session_id("headless-new")
    proc = subprocess.Popen([CHROMIUM, "--headless=new", *QUIET, f"--user-agent={WIN_UA}",
                             f"--user-data-dir={tmp}/headless-new", server.demo_url(session)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return wait_event(server, session), None
    finally:
        proc.kill()
        proc.wait()


def puppeteer_stealth(server):
    session = session_id("puppeteer-stealth")
    out = subprocess.run(["node", str(ROOT / "tests" / "browser" / "stealth.js"), server.demo_url(session),
                          str(SHOTS / "puppeteer-stealth.png")],
                         env=dict(os.environ, NODE_PATH=str(NODE_MODULES), CHROMIUM=CHROMIUM),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    ms = json.loads(out.stdout.strip().splitlines()[-1])["collectMs"]
    return server.latest_event(session), ms


# The device key each person's browser got (the project's key for it: one per browser profile).
DEVICES = {}

# Visits a person's Chromium makes after its first page, each in a new tab of the running browser.
PERSON_TABS = 14
# This machine has no GPU, and Chromium no longer falls back to software WebGL by itself; a
# person's browser has WebGL, so this one gets it through SwiftShader and its visits pay for the
# agent's two WebGL contexts (window and Worker) as a person's do. It also shows
# software_renderer, a soft signal, as the Firefox profiles do.
PERSON_CHROMIUM_ARGS = ["--enable-unsafe-swiftshader"]


def new_tab(devtools, url):
    """The running browser opens `url` in a new tab, as when a person opens one and types the
    address: the DevTools HTTP endpoint's /json/new makes the browser create the tab and attaches
    nothing to it (no protocol session, so nothing runs in or waits on the page)."""
    req = urllib.request.Request(f"http://127.0.0.1:{devtools}/json/new?{url}", method="PUT")
    with urllib.request.urlopen(req, timeout=30) as res:
        res.read()


def person_chromium_visits(server, pw, tmp, display, tabs, shot=None):
    """Chromium started as a person starts it, with the demo as its first page; then `tabs` more
    visits, each in a new tab the running browser opens (`new_tab`). Nothing is attached until
    every visit has arrived; only then does a DevTools client read each page's collection time
    (and photograph the first page to `shot`).
    Returns the events, first visit first, and the collection times."""
    sessions = [session_id("person-chromium")] + [session_id("person-chromium-tab") for _ in range(tabs)]
    devtools = free_port()
    chromium = subprocess.Popen([CHROMIUM, *QUIET, f"--user-data-dir={tmp}/person-chromium-{sessions[0]}",
                                 "--window-size=1280,900", *PERSON_CHROMIUM_ARGS,
                                 f"--remote-debugging-port={devtools}", server.demo_url(sessions[0])],
                                env=display.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        events = [wait_event(server, sessions[0])]
        for session in sessions[1:]:
            new_tab(devtools, server.demo_url(session))
            events.append(wait_event(server, session))
        browser = pw.chromium.connect_over_cdp(f"http://127.0.0.1:{devtools}")
        pages = {p.url.rsplit("session=", 1)[-1]: p for c in browser.contexts for p in c.pages if "/demo" in p.url}
        assert set(sessions) <= set(pages), "a demo page is not open"
        times = []
        for session in sessions:
            pages[session].wait_for_selector("body[data-state=done]", timeout=30_000)
            times.append(pages[session].evaluate("Number(document.body.dataset.collectMs)"))
        if shot:
            # The first page is a background tab by now, which renders no frame to photograph:
            # bring it to the front. A picture is kept for people, never a check: one that still
            # cannot be taken (a loaded machine) is reported, not failed.
            try:
                pages[sessions[0]].bring_to_front()
                pages[sessions[0]].screenshot(path=str(shot), full_page=True, timeout=15_000)
            except Exception as e:  # noqa: BLE001 - any failure to photograph is the same
                print(f"  (no screenshot of {sessions[0]}: {str(e).splitlines()[0]})")
        browser.close()
    finally:
        chromium.kill()
        chromium.wait()
    return events, times


def chromium_person(server, pw, tmp, display, person_times):
    """The person's Chromium profile: its first visit and PERSON_TABS more in new tabs, all of
    which must score as a person; the line shows the highest-scoring one."""
    events, times = person_chromium_visits(server, pw, tmp, display, PERSON_TABS,
                                           shot=SHOTS / "person-chromium.png")
    person_times.extend(times)
    # One browser profile, many sessions: one device key (issue 30's device key, measured here).
    keys = {e["device"] for e in events}
    assert len(keys) == 1 and None not in keys, f"the profile's sessions got device keys {keys}"
    DEVICES["person-chromium"] = keys.pop()
    return max(events, key=lambda e: e["scoreBot"]), None


def firefox_person(server, tmp, display, rfp=False):
    name = "person-firefox-rfp" if rfp else "person-firefox"
    session = session_id(name)
    profile = Path(tmp) / name
    profile.mkdir()
    prefs = FIREFOX_PREFS + ('user_pref("privacy.resistFingerprinting", true);\n' if rfp else "")
    (profile / "user.js").write_text(prefs)
    firefox = subprocess.Popen([FIREFOX, "--no-remote", "--profile", str(profile), "--width", "1280",
                                "--height", "900", server.demo_url(session)],
                               env=display.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        event = wait_event(server, session)
        DEVICES[name] = event["device"]
        return event, None
    finally:
        firefox.kill()
        firefox.wait()


def main():
    SHOTS.mkdir(parents=True, exist_ok=True)
    results, failures, person_times = [], [], []

    def run(kind, name, visit):
        started = time.time()
        try:
            event, ms = visit()
        except Exception as e:  # one profile's failure is reported with the others
            failures.append(f"{name}: {e}")
            print(f"{name}: FAILED ({e})", flush=True)
            return
        assert event, f"no event stored for {name}"
        score = event["scoreBot"]
        ok = score >= 0.9 if kind == "bot" else score < 0.5
        timing = f" collect={ms}ms" if ms is not None else ""
        print(f"{kind:6} {name:34} scoreBot={score:<6} {'ok  ' if ok else 'FAIL'} reasons={codes(event)}"
              f"{timing} ({time.time() - started:.1f}s)", flush=True)
        results.append((kind, name, score, ms, ok))
        if not ok:
            failures.append(f"{name}: scoreBot {score} with {codes(event)}")

    with tempfile.TemporaryDirectory() as tmp:
        server = Server(tmp)
        try:
            with sync_playwright() as pw, Display() as display:
                run("bot", "playwright-headless", lambda: playwright_bot(server, pw, "playwright-headless",
                                                                        stealth=False))
                for headless in (True, False):
                    for hide in (False, True):
                        name = ("stealth-headless" if headless else "stealth-display") + (
                            "-no-webdriver" if hide else "")
                        run("bot", name, lambda: playwright_bot(
                            server, pw, name, headless=headless, hide=hide,
                            display=None if headless else display))
                run("bot", "headless-new-borrowed-ua", lambda: headless_new(server, tmp))
                run("bot", "puppeteer-extra-stealth", lambda: puppeteer_stealth(server))
                run("person", "person-chromium", lambda: chromium_person(server, pw, tmp, display, person_times))
                run("person", "person-firefox", lambda: firefox_person(server, tmp, display))
                run("person", "person-firefox-rfp", lambda: firefox_person(server, tmp, display, rfp=True))
        finally:
            server.stop()
    # What a visitor's page pays: a person's Chromium, nothing attached. The driven visits add
    # their driver: Playwright and Puppeteer hold every new Worker until the driver resumes it.
    if person_times:
        print(f"agent collection time (start to send) on a person's Chromium over {len(person_times)} visits "
              f"(the first at its launch, then new tabs; nothing attached): "
              f"p50 {statistics.median(person_times):.0f} ms, max {max(person_times)} ms; all {person_times}")
    timings = [r[3] for r in results if r[3] is not None]
    if timings:
        print(f"agent collection time (start to send) over {len(timings)} driven visits (a fresh browser each, "
              f"the driver holding every new Worker until it resumes it): "
              f"p50 {statistics.median(timings):.0f} ms, max {max(timings)} ms")
    # Each browser its own device key: Chromium's fifteen sessions share one, Firefox has another.
    if len(DEVICES) == 3:
        print(f"device keys: person-chromium's {PERSON_TABS + 1} sessions {DEVICES['person-chromium']}, "
              f"person-firefox {DEVICES['person-firefox']}, person-firefox-rfp {DEVICES['person-firefox-rfp']}")
        if len(set(DEVICES.values())) != 3 or None in DEVICES.values():
            failures.append(f"device keys not one per browser: {DEVICES}")
    print(f"screenshots: {SHOTS}/")
    print(f"{sum(1 for r in results if r[4])} passed, {len(failures)} failed")
    if failures:
        sys.exit("failed profiles:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
