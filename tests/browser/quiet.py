#!/usr/bin/env python3
"""The quiet scraper (make test-browser; issue 48): a headful, patched browser that opens page
after page of the demo shop and never acts is a bot by its third page; people browsing the same
pages are not, on any page.

Bots: the anti-detection drivers of 2026 from PyPI and npm (patchright, rebrowser-playwright,
nodriver, zendriver, undetected-chromedriver, botasaurus-driver, pydoll, rebrowser-puppeteer-core,
puppeteer-real-browser, puppeteer-extra's stealth plugin) driving Debian's Chromium with a display
(Xvfb), as they run in production; each opens five pages of one session (`/demo`, then four
product pages) by `goto`, 1-3 s on each, no form, no input. pydoll also runs headless with a
Windows user agent, which it spreads to client hints, `navigator.platform` and Workers. Each must
reach scoreBot >= 0.9 by its third page at the latest.

People, with no automation attached, driven by the operating system (X11 input: XTEST and
`xdotool`): Chromium and Firefox ESR clicking the shop's links with the mouse, each a real
person's recorded movements replayed (replay.py: SapiMouse, translated so that the recorded press
lands on the link, at the recorded timing); Chromium and Firefox ESR by
keyboard (Tab, then Enter); Chromium reading one page for 30 s without input, then closed; Chromium
reaching a page by typing its address into the address bar after two clicked ones. Every page of
each must stay < 0.5.

Every page's event is read back through the API. The table printed at the end (per tool, the page
on which it crossed 0.9; per person, the highest score) is the one in
docs/research/issue-48-quiet-scraper.md.
"""

import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay  # noqa: E402
from automation import session_id, undetected_chrome, wait_events, xdotool  # noqa: E402
from demo import (CHROMIUM, FIREFOX, FIREFOX_PREFS, NODE_MODULES, PERSON_CHROMIUM_ARGS, QUIET, ROOT,  # noqa: E402
                  WIN_UA, Display, Server, codes)

PAGES = 5
PRODUCTS = ["lamp", "kettle", "chair", "rug", "clock"]
# The shop's link bar lies along the bottom of the window, five tiles across; the first tile is
# the next product (replay.Geometry.next_tile). The windows fill the 1280x900 screen from its top
# left.


def urls(server, session):
    """The session's five pages: the shop's home (which names the session), then products, whose
    pages go on with the browser's session by its cookie."""
    base = f"http://localhost:{server.port}"
    return [f"{base}/demo?session={session}"] + [f"{base}/demo/products/{p}" for p in PRODUCTS[:PAGES - 1]]


def dwell(rng):
    return rng.uniform(1.0, 3.0)


def playwright_like(module, name):
    """patchright or rebrowser-playwright, headful, a persistent context without a viewport (as
    their READMEs recommend)."""

    def visit(server, tmp, display, rng):
        sync_playwright = __import__(f"{module}.sync_api", fromlist=["sync_playwright"]).sync_playwright
        session = session_id(name)
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                f"{tmp}/{session}", executable_path=CHROMIUM, headless=False, no_viewport=True,
                args=[a for a in QUIET if a == "--no-sandbox"], env=display.env())
            try:
                page = ctx.new_page()
                for url in urls(server, session):
                    page.goto(url)
                    time.sleep(dwell(rng))
            finally:
                ctx.close()
        return session
    return visit


def cdp_driver(module, name):
    """nodriver or zendriver: the DevTools Protocol with no WebDriver, headful."""

    def visit(server, tmp, display, rng):
        driver = __import__(module)
        session = session_id(name)

        async def run():
            os.environ["DISPLAY"] = display.name
            browser = await driver.start(browser_executable_path=CHROMIUM, headless=False,
                                         sandbox=os.geteuid() != 0, user_data_dir=f"{tmp}/{session}")
            try:
                for url in urls(server, session):
                    await browser.get(url)
                    await asyncio.sleep(dwell(rng))
            finally:
                stopped = browser.stop()
                if asyncio.iscoroutine(stopped):
                    await stopped

        # The driver's own loop, left open as its documentation does: closing it under the
        # browser's process transports prints a traceback at exit.
        driver.loop().run_until_complete(run())
        return session
    return visit


def undetected_visit(server, tmp, display, rng):
    session = session_id("undetected-chromedriver")
    driver = undetected_chrome(tmp, session, display)
    try:
        for url in urls(server, session):
            driver.get(url)
            time.sleep(dwell(rng))
    finally:
        driver.quit()
    return session


def pydoll_options(profile, headless):
    """pydoll's options on Debian's Chromium; headless with a borrowed Windows user agent, which
    pydoll spreads to client hints, navigator.platform and Workers."""
    from pydoll.browser.options import ChromiumOptions
    options = ChromiumOptions()
    options.binary_location = CHROMIUM
    options.headless = headless
    for a in QUIET:
        # pydoll adds these two itself, and refuses an argument given twice.
        if a not in ("--no-first-run", "--no-default-browser-check"):
            options.add_argument(a)
    options.add_argument(f"--user-data-dir={profile}")
    if headless:
        options.add_argument(f"--user-agent={WIN_UA}")
    return options


def pydoll_visit(headless):
    def visit(server, tmp, display, rng):
        from pydoll.browser import Chrome
        session = session_id("pydoll-headless-windows" if headless else "pydoll")

        async def run():
            os.environ["DISPLAY"] = display.name
            async with Chrome(options=pydoll_options(f"{tmp}/{session}", headless)) as browser:
                tab = await browser.start()
                for url in urls(server, session):
                    await tab.go_to(url)
                    await asyncio.sleep(dwell(rng))

        asyncio.run(run())
        return session
    return visit


def botasaurus_visit(server, tmp, display, rng):
    """botasaurus-driver: its own DevTools client, headful."""
    from botasaurus_driver import Driver
    session = session_id("botasaurus-driver")
    os.environ["DISPLAY"] = display.name
    driver = Driver(headless=False, chrome_executable_path=CHROMIUM,
                    arguments=[a for a in QUIET if a == "--no-sandbox"])
    try:
        for url in urls(server, session):
            driver.get(url)
            time.sleep(dwell(rng))
    finally:
        driver.close()
    return session


def puppeteer_like(driver, name):
    """A puppeteer driver in `pages.js`: stealth, rebrowser or real-browser."""

    def visit(server, tmp, display, rng):
        session = session_id(name)
        out = subprocess.run(["node", str(ROOT / "tests" / "browser" / "pages.js"), driver,
                              str(int(dwell(rng) * 1000)), *urls(server, session)],
                             env=dict(display.env(), NODE_PATH=str(NODE_MODULES), CHROMIUM=CHROMIUM),
                             capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stderr[-2000:]
        return session
    return visit


BOTS = [
    ("patchright", playwright_like("patchright", "patchright")),
    ("rebrowser-playwright", playwright_like("rebrowser_playwright", "rebrowser-playwright")),
    ("nodriver", cdp_driver("nodriver", "nodriver")),
    ("zendriver", cdp_driver("zendriver", "zendriver")),
    ("undetected-chromedriver", undetected_visit),
    ("botasaurus-driver", botasaurus_visit),
    ("pydoll", pydoll_visit(headless=False)),
    ("pydoll-headless-windows-ua", pydoll_visit(headless=True)),
    ("rebrowser-puppeteer", puppeteer_like("rebrowser", "rebrowser-puppeteer")),
    ("puppeteer-real-browser", puppeteer_like("real-browser", "puppeteer-real-browser")),
    ("puppeteer-extra-stealth", puppeteer_like("stealth", "puppeteer-extra-stealth")),
]


# ---- People: no automation attached; the operating system's input (XTEST replays, xdotool keys).

def launch(browser, tmp, session, url, display):
    if browser == "chromium":
        cmd = [CHROMIUM, *QUIET, *PERSON_CHROMIUM_ARGS, f"--user-data-dir={tmp}/{session}",
               "--window-position=0,0", "--window-size=1280,900", url]
    else:
        profile = Path(tmp) / session
        profile.mkdir()
        (profile / "user.js").write_text(FIREFOX_PREFS)
        cmd = [FIREFOX, "--no-remote", "--profile", str(profile), "--width", "1280", "--height", "900", url]
    return subprocess.Popen(cmd, env=display.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def click_next(display, rng, hand):
    """A person reading, then their own recorded approach and click on the next link (replay.py:
    a SapiMouse user's movement, translated so that its press lands on the link bar's first tile,
    at its recorded timing, through XTEST)."""
    hand.click_next(notches=None)


def key_next(display, rng, hand):
    """Tab to the first link (the next product), then Enter; the pointer rests over the page
    (without a window manager, keys go to the window under it) and never clicks: before the keys,
    a stretch of the person's recorded moves over the page (replay.py)."""
    hand.read()
    time.sleep(rng.uniform(0.8, 1.5))
    xdotool(display, "key", "Tab")
    time.sleep(0.4)
    xdotool(display, "key", "Return")


def type_address(url):
    def step(display, rng, hand):
        time.sleep(rng.uniform(0.8, 1.5))
        xdotool(display, "key", "ctrl+l")
        time.sleep(0.4)
        xdotool(display, "type", "--delay", "40", url)
        time.sleep(0.3)
        xdotool(display, "key", "Return")
    return step


def person(browser, steps, read_s=0.0):
    """A person's session: the shop's home opened at the browser's launch, then one step (OS
    input) per further page; or one page read for `read_s` seconds, then the browser closed."""

    def visit(server, tmp, display, rng):
        session = session_id(f"person-{browser}")
        # One real person's recorded hand (SapiMouse), replayed through XTEST (replay.py).
        hand = replay.session_hand(display, browser, tmp, rng.choice(replay.users()), rng)
        proc = launch(browser, tmp, session, urls(server, session)[0], display)
        try:
            wait_events(server, session, 1)
            time.sleep(read_s)
            for i, step in enumerate(steps(server, session), start=2):
                time.sleep(rng.uniform(1.0, 2.0))
                began = time.time()
                step(display, rng, hand)
                wait_events(server, session, i)
                if os.environ.get("QUIET_DEBUG"):
                    print(f"  page {i} arrived {time.time() - began:.1f}s after its step", flush=True)
        finally:
            proc.kill()
            proc.wait()
            hand.close()
        return session
    return visit


def links(_server, _session):
    return [click_next] * (PAGES - 1)


def keys(_server, _session):
    return [key_next] * (PAGES - 1)


def typed_after_two(server, session):
    return [click_next, click_next, type_address(urls(server, session)[4]), click_next]


PEOPLE = [
    ("person-chromium-links", person("chromium", links)),
    ("person-firefox-links", person("firefox", links)),
    ("person-chromium-keyboard", person("chromium", keys)),
    ("person-firefox-keyboard", person("firefox", keys)),
    ("person-chromium-reads-30s", person("chromium", lambda *_: [], read_s=30.0)),
    ("person-chromium-typed-address", person("chromium", typed_after_two)),
]


def judged(kind, scores):
    """Whether a session's scores pass, and the verdict in words: a bot at 0.9 or more by its
    third page and on every page after; a person under 0.5 on every page."""
    crossed = next((i for i, s in enumerate(scores, 1) if s >= 0.9), None)
    if kind == "bot":
        ok = crossed is not None and crossed <= 3 and all(s >= 0.9 for s in scores[2:])
        return ok, f"crossed 0.9 on page {crossed}" if crossed else "never crossed 0.9"
    return max(scores) < 0.5, f"highest {max(scores)}"


def main():
    only = set(sys.argv[1:])
    rows, failures = [], []
    with tempfile.TemporaryDirectory() as tmp, Display() as display:
        server = Server(tmp)
        try:
            for kind, profiles in (("bot", BOTS), ("person", PEOPLE)):
                for name, visit in profiles:
                    if only and name not in only:
                        continue
                    started, rng = time.time(), random.Random(name)
                    try:
                        session = visit(server, tmp, display, rng)
                        want = 1 if name.endswith("reads-30s") else PAGES
                        got = wait_events(server, session, want)
                    except Exception as e:  # one profile's failure is reported with the others
                        failures.append(f"{name}: {e}")
                        print(f"{kind:6} {name:30} FAILED ({e})", flush=True)
                        continue
                    scores = [e["scoreBot"] for e in got]
                    ok, verdict = judged(kind, scores)
                    last = got[-1]
                    print(f"{kind:6} {name:30} {'ok  ' if ok else 'FAIL'} {verdict}; scores={scores} "
                          f"last reasons={codes(last)} ({time.time() - started:.1f}s)", flush=True)
                    path = [r["detail"] for r in last["reasons"] if r["code"] == "navigation_without_input"]
                    if path:
                        print(f"       {'':30} navigation_without_input: {path[0]}", flush=True)
                    rows.append((kind, name, verdict, scores, ok))
                    if not ok:
                        failures.append(f"{name}: {verdict}, scores {scores}, last reasons {codes(last)}")
        finally:
            server.stop()
    print("\n| profile | kind | result | scoreBot per page |\n|---|---|---|---|")
    for kind, name, verdict, scores, _ in rows:
        print(f"| {name} | {kind} | {verdict} | {', '.join(str(s) for s in scores)} |")
    print(f"{sum(1 for r in rows if r[4])} passed, {len(failures)} failed")
    if failures:
        sys.exit("quiet scraper matrix:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
