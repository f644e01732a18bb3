#!/usr/bin/env python3
"""The acting scraper (make test-browser; issue 58): a headful scraper that browses the demo shop
as a person does, with a humanizer library's cursor (curved paths, overshoot, jittered timing),
clicking the next link on every page, is a bot by its third page; people, replayed from real
recordings through the operating system, are not, on any page.

Bots, each driving Debian's Chromium under Xvfb through the DevTools protocol, each one session of
five pages (`/demo`, then four product pages): the first by goto, the next four by the library's
own humanized move and click on the link bar's first tile (`#shop a:first-child`), after a couple
of seconds on the page and a little wheel scrolling:

- ghost-cursor on rebrowser-puppeteer-core (createCursor(page).click, cursor.scroll);
- ghost-cursor-playwright (ghost-cursor's Playwright port) on patchright (npm);
- puppeteer-real-browser's page.realCursor / page.realClick;
- botasaurus-driver's human mode (enable_human_mode, driver.click);
- HumanCursor (WebCursor.click_on) on undetected-chromedriver (Selenium, Debian's chromedriver);
- python-ghost-cursor on patchright (Python);
- OxyMouse's paths played through patchright's page.mouse (one move per point, 16 ms apart);
- tells removed: WindMouse paths at 60 Hz through CDP Input.dispatchMouseEvent on patchright,
  the press with force 0.5, a person's last-move-to-press pause (40-400 ms) and hold (60-180 ms),
  wheel notches of deltaY 100, starting each page where the last click was;
- the forger: a quiet scraper (goto, 1-3 s, no input) whose init script rewrites the page summary
  the agent carries in sessionStorage ("vigil.page") to claim a press and a click on a link.

Each must reach scoreBot >= 0.9 by its third page and stay there.

People: twelve SapiMouse users (real recordings, tests/browser/replay.py) replayed through XTEST
into Chromium and Firefox ESR with nothing attached, six each: on each page they scroll one or two
wheel notches, move while reading, and click the next link with one of their own approach
movements, translated so that its press lands on the link, at its recorded timing. Every page of
each must stay < 0.5.

`python tests/browser/acting.py NAME...` runs only those profiles. ACTING_DEBUG=1 adds a probe
script to each bot's pages (and replays two people in Chromium and one in Firefox on probe pages
of the shop's layout) and prints what the page saw of the input: press pressure, hold,
last-move-to-press gap, wheel deltas, mousemove intervals, screenX - clientX, whether
MouseEvent.prototype.screenX's getter is native, and elements the library added to the DOM.
"""

import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay  # noqa: E402
from automation import session_id, undetected_chrome, wait_events  # noqa: E402
from demo import CHROMIUM, NODE_MODULES, QUIET, ROOT, Display, Server, codes  # noqa: E402
from quiet import PAGES, judged, urls  # noqa: E402

DEBUG = bool(os.environ.get("ACTING_DEBUG"))
NEXT = "#shop a:first-child"
WINDOW = ["--window-position=0,0", "--window-size=1280,900"]
SANDBOX = [a for a in QUIET if a == "--no-sandbox"]


def dwell(rng):
    return rng.uniform(1.5, 2.5)


STORED = ("Object.keys(sessionStorage).filter(function (k) { return k.indexOf('acting.debug.') === 0; })"
          ".map(function (k) { return sessionStorage.getItem(k); })")


def stored_reports(values):
    """The probe's reports kept in the tab's sessionStorage (patchright's pages send no beacon to
    the probe server): read at the session's end, in the page's own world."""
    if DEBUG:
        for v in values or []:
            replay.probe_server().reports.put(json.loads(v))


# ---- Node humanizers (acting.js)

def node_bot(driver, name):
    def visit(server, tmp, display, rng, probe):
        session = session_id(name)
        probe_file = "-"
        if probe:
            probe_file = str(Path(tmp) / f"probe-{session}.js")
            Path(probe_file).write_text(probe)
        out = subprocess.run(["node", str(ROOT / "tests" / "browser" / "acting.js"), driver,
                              str(int(dwell(rng) * 1000)), probe_file, *urls(server, session)],
                             env=dict(display.env(), NODE_PATH=str(NODE_MODULES), CHROMIUM=CHROMIUM),
                             capture_output=True, text=True, timeout=240)
        assert out.returncode == 0, out.stderr[-2000:]
        for line in out.stderr.splitlines():  # a click the driver had to repeat, for the log
            if line.startswith("acting: "):
                print(f"       {name}: {line}", flush=True)
        for line in out.stdout.splitlines():
            if line.startswith("ACTING_REPORTS "):
                stored_reports(json.loads(line.split(" ", 1)[1]))
        return session
    return visit


# ---- patchright (Python): one persistent context, headful, no viewport, as its README says

def patchright_session(name, act, first=None):
    """Five pages: the first by goto, each next one by `act(page, rng, state)` (which must click
    the next link); `first(ctx)` may add init scripts."""

    def visit(server, tmp, display, rng, probe):
        from patchright.sync_api import sync_playwright
        session = session_id(name)
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                f"{tmp}/{session}", executable_path=CHROMIUM, headless=False, no_viewport=True,
                args=SANDBOX + WINDOW, env=display.env())
            try:
                if probe:
                    ctx.add_init_script(probe)
                if first:
                    first(ctx)
                page = ctx.pages[0] if ctx.pages else ctx.new_page()
                if os.environ.get("ACTING_BODIES"):
                    page.on("request", print_summary)
                state = {}
                page.goto(urls(server, session)[0])
                for i in range(PAGES):
                    page.wait_for_selector("body[data-state=done]", timeout=30_000)
                    time.sleep(dwell(rng))
                    if i == PAGES - 1:
                        break
                    with page.expect_navigation(timeout=30_000):
                        act(page, rng, state)
                if probe:
                    stored_reports(page.evaluate(STORED, isolated_context=False))
            finally:
                ctx.close()
        return session
    return visit


def print_summary(request):
    """ACTING_BODIES=1: each load's summary of the page before, as the agent sends it."""
    if request.url.endswith("/collect") and request.post_data:
        nav = (json.loads(request.post_data).get("signals") or {}).get("navigation") or {}
        print("  summary:", json.dumps(nav.get("previous")), flush=True)


def link_point(page, rng):
    """A point inside the next link (not its centre), client pixels."""
    box = page.locator(NEXT).bounding_box()
    return (box["x"] + box["width"] * rng.uniform(0.2, 0.8), box["y"] + box["height"] * rng.uniform(0.25, 0.75))


def python_ghost_cursor_act(page, rng, state):
    from python_ghost_cursor.playwright_sync import create_cursor
    if "cursor" not in state:
        state["cursor"] = create_cursor(page)
    page.mouse.wheel(0, 100)
    time.sleep(rng.uniform(0.2, 0.5))
    page.mouse.wheel(0, 100)
    time.sleep(rng.uniform(0.3, 0.8))
    state["cursor"].click(NEXT)


def oxymouse_act(algorithm):
    def act(page, rng, state):
        from oxymouse import OxyMouse
        mouse = OxyMouse(algorithm=algorithm)
        page.mouse.wheel(0, 100)
        time.sleep(rng.uniform(0.2, 0.5))
        page.mouse.wheel(0, 100)
        time.sleep(rng.uniform(0.3, 0.8))
        start = state.get("at", (0, 0))
        to = link_point(page, rng)
        points = mouse.generate_coordinates(from_x=int(start[0]), from_y=int(start[1]), to_x=int(to[0]), to_y=int(to[1]))
        state.setdefault("points", []).append(len(points))
        due = time.perf_counter()
        points = [(float(x), float(y)) for x, y in points]
        for x, y in points:
            page.mouse.move(x, y)
            due += 0.016
            time.sleep(max(0.0, due - time.perf_counter()))
        state["at"] = points[-1] if points else to
        page.mouse.down()
        page.mouse.up()
    return act


def wind_mouse(rng, start, dest, gravity=9.0, wind=3.0, max_step=15.0, target_area=12.0):
    """Benjamin J. Land's WindMouse: a point pulled to its destination by gravity and pushed by a
    wind that changes at random, its steps capped; integer points, the destination last."""
    sqrt3, sqrt5 = math.sqrt(3), math.sqrt(5)
    x, y = float(start[0]), float(start[1])
    vx = vy = wx = wy = 0.0
    points, cur = [], (round(x), round(y))
    while True:
        dist = math.hypot(dest[0] - x, dest[1] - y)
        if dist < 1:
            break
        w_mag = min(wind, dist)
        if dist >= target_area:
            wx = wx / sqrt3 + (2 * rng.random() - 1) * w_mag / sqrt5
            wy = wy / sqrt3 + (2 * rng.random() - 1) * w_mag / sqrt5
        else:
            wx, wy = wx / sqrt3, wy / sqrt3
            if max_step < 3:
                max_step = rng.random() * 3 + 3
            else:
                max_step /= sqrt5
        vx += wx + gravity * (dest[0] - x) / dist
        vy += wy + gravity * (dest[1] - y) / dist
        v_mag = math.hypot(vx, vy)
        if v_mag > max_step:
            clip = max_step / 2 + rng.random() * max_step / 2
            vx, vy = vx / v_mag * clip, vy / v_mag * clip
        x += vx
        y += vy
        p = (round(x), round(y))
        if p != cur:
            points.append(p)
            cur = p
        if len(points) > 2000:
            break
    if not points or points[-1] != (round(dest[0]), round(dest[1])):
        points.append((round(dest[0]), round(dest[1])))
    return points


def windmouse_act(page, rng, state):
    """Tells removed: CDP mouse events at 60 Hz, pressure 0.5, people's pauses and holds."""
    if "cdp" not in state:
        state["cdp"] = page.context.new_cdp_session(page)
    cdp = state["cdp"]
    # The first page: a pointer that enters somewhere over the page; then where the last click was.
    at = state.get("at") or (rng.uniform(300, 900), rng.uniform(200, 600))

    def mouse(kind, x, y, **kw):
        cdp.send("Input.dispatchMouseEvent", dict({"type": kind, "x": x, "y": y, "pointerType": "mouse"}, **kw))

    for _ in range(rng.randint(1, 2)):
        mouse("mouseWheel", at[0], at[1], deltaX=0, deltaY=100)
        time.sleep(rng.uniform(0.15, 0.45))
    time.sleep(rng.uniform(0.3, 0.8))

    def glide(a, b):
        due = time.perf_counter()
        for x, y in wind_mouse(rng, a, b):
            mouse("mouseMoved", x, y)
            due += 1 / 60
            time.sleep(max(0.0, due - time.perf_counter()))

    # Over the page while "reading", a rest, then to the link.
    over = (rng.uniform(250, 1000), rng.uniform(150, 550))
    glide(at, over)
    time.sleep(rng.uniform(0.3, 1.0))
    to = link_point(page, rng)
    glide(over, to)
    x, y = round(to[0]), round(to[1])
    time.sleep(rng.uniform(0.04, 0.4))
    mouse("mousePressed", x, y, button="left", buttons=1, clickCount=1, force=0.5)
    time.sleep(rng.uniform(0.06, 0.18))
    mouse("mouseReleased", x, y, button="left", buttons=0, clickCount=1, force=0)
    state["at"] = (x, y)


# The forger's init script: before the agent loads, the summary of the page before claims a press
# and a click on a link, and input a moment before the navigation.
FORGE = r"""(function () {
  try {
    var k = "vigil.page", v = JSON.parse(sessionStorage.getItem(k));
    if (!v || !v.page) return;
    v.page.presses = 1; v.page.clicks = 1; v.page.left = "link";
    v.lastInputAt = Math.round(performance.timeOrigin - 150 - Math.random() * 700);
    sessionStorage.setItem(k, JSON.stringify(v));
  } catch (e) { /* none */ }
})();"""


def forger_visit(server, tmp, display, rng, probe):
    from patchright.sync_api import sync_playwright
    session = session_id("forger")
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            f"{tmp}/{session}", executable_path=CHROMIUM, headless=False, no_viewport=True,
            args=SANDBOX + WINDOW, env=display.env())
        try:
            ctx.add_init_script(FORGE)
            if probe:
                ctx.add_init_script(probe)
            page = ctx.pages[0] if ctx.pages else ctx.new_page()
            for url in urls(server, session):
                page.goto(url)
                # The page's collect answered before the next goto leaves it.
                page.wait_for_selector("body[data-state=done]", timeout=30_000)
                time.sleep(rng.uniform(1.0, 3.0))
            if probe:
                stored_reports(page.evaluate(STORED, isolated_context=False))
        finally:
            ctx.close()
    return session


# ---- botasaurus-driver's human mode

def botasaurus_visit(server, tmp, display, rng, probe):
    from botasaurus_driver import Driver, cdp
    session = session_id("botasaurus-human")
    os.environ["DISPLAY"] = display.name
    driver = Driver(headless=False, chrome_executable_path=CHROMIUM, arguments=SANDBOX + WINDOW)
    try:
        if probe:
            driver.run_cdp_command(cdp.page.add_script_to_evaluate_on_new_document(source=probe))
        driver.enable_human_mode()
        pages = urls(server, session)
        driver.get(pages[0])
        for i in range(PAGES):
            driver.wait_for_element("body[data-state=done]", wait=30)
            time.sleep(dwell(rng))
            if i == PAGES - 1:
                break
            # Human mode has no wheel (its scroll is window.scrollBy): the protocol's wheel.
            for _ in range(2):
                driver.run_cdp_command(cdp.input_.dispatch_mouse_event(
                    "mouseWheel", x=640, y=400, delta_x=0, delta_y=100))
                time.sleep(rng.uniform(0.2, 0.5))
            before = driver.current_url
            driver.click(NEXT)
            deadline = time.time() + 30
            while driver.current_url == before and time.time() < deadline:
                time.sleep(0.1)
            assert driver.current_url != before, "botasaurus' click did not leave the page"
        if probe:
            stored_reports(driver.run_js(STORED))
    finally:
        driver.close()
    return session


# ---- HumanCursor on undetected-chromedriver (Selenium)

def humancursor_visit(server, tmp, display, rng, probe):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    # humancursor imports pyautogui, which opens the X display at import.
    os.environ["DISPLAY"] = display.name
    from humancursor import WebCursor
    session = session_id("humancursor")
    driver = undetected_chrome(tmp, session, display)
    try:
        driver.set_window_rect(0, 0, 1280, 900)
        if probe:
            driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": probe})
        cursor = WebCursor(driver)
        driver.get(urls(server, session)[0])
        for i in range(PAGES):
            WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "body[data-state=done]"))
            time.sleep(dwell(rng))
            if i == PAGES - 1:
                break
            # HumanCursor scrolls by dragging the scroll bar; a wheel is WebDriver's.
            ActionChains(driver).scroll_by_amount(0, 100).perform()
            time.sleep(rng.uniform(0.2, 0.5))
            ActionChains(driver).scroll_by_amount(0, 100).perform()
            time.sleep(rng.uniform(0.3, 0.8))
            before = driver.current_url
            # HumanCursor's curve draws its knots from range(int(a), int(b)), which is
            # empty when the cursor already rests on the same pixel column or row as
            # the point it picked near a viewport edge (a ValueError about 1 click in
            # 30): its user would click again, and another point is picked.
            for attempt in range(5):
                try:
                    cursor.click_on(driver.find_element(By.CSS_SELECTOR, NEXT))
                    break
                except ValueError:
                    if attempt == 4:
                        raise
            WebDriverWait(driver, 30).until(lambda d: d.current_url != before)
        if probe:
            stored_reports(driver.execute_script(f"return {STORED}"))
    finally:
        driver.quit()
    return session


BOTS = [
    ("ghost-cursor", node_bot("ghost-cursor", "ghost-cursor")),
    ("ghost-cursor-playwright", node_bot("ghost-cursor-playwright", "ghost-cursor-playwright")),
    ("puppeteer-real-browser", node_bot("real-browser", "puppeteer-real-browser")),
    ("botasaurus-human", botasaurus_visit),
    ("humancursor", humancursor_visit),
    ("python-ghost-cursor", patchright_session("python-ghost-cursor", python_ghost_cursor_act)),
    ("oxymouse", patchright_session("oxymouse", oxymouse_act("bezier"))),
    ("windmouse-tells-removed", patchright_session("windmouse-tells-removed", windmouse_act)),
    ("forger", forger_visit),
]


# ---- People: SapiMouse users replayed through XTEST, nothing attached

def person_visit(browser, user):
    def visit(server, tmp, display, rng, probe):
        session = session_id(f"person-{browser}-{user}")
        hand = replay.session_hand(display, browser, tmp, user, rng)
        proc = replay.launch(browser, tmp, session, urls(server, session)[0], display)
        try:
            wait_events(server, session, 1)
            for i in range(2, PAGES + 1):
                time.sleep(rng.uniform(0.3, 1.0))
                info = hand.click_next()
                if DEBUG:
                    print(f"       page {i - 1}: {info}", flush=True)
                wait_events(server, session, i)
        finally:
            proc.kill()
            proc.wait()
            hand.close()
        return session
    return visit


def person_probe(browser, user, server_probe, tmp, display, rng):
    """The same replay on probe pages of the shop's layout: what the page sees (ACTING_DEBUG)."""
    hand = replay.session_hand(display, browser, tmp, user, rng)
    server_probe.drain()
    proc = replay.launch(browser, tmp, f"probe-{browser}-{user}", server_probe.url("/probe/1"), display)
    try:
        time.sleep(6)
        for _ in range(PAGES - 1):
            time.sleep(rng.uniform(0.3, 1.0))
            hand.click_next()
            time.sleep(3)
    finally:
        proc.kill()
        proc.wait()
        hand.close()
    time.sleep(0.5)
    return server_probe.drain()


PEOPLE_USERS = replay.people_users(12)
PEOPLE = [(f"person-{'chromium' if i % 2 == 0 else 'firefox'}-{u}",
           person_visit("chromium" if i % 2 == 0 else "firefox", u)) for i, u in enumerate(PEOPLE_USERS)]


def main():
    only = set(sys.argv[1:])
    rows, failures, figures = [], [], []
    probe_server = replay.probe_server() if DEBUG else None
    probe = probe_server.probe_js() if DEBUG else None
    with tempfile.TemporaryDirectory() as tmp, Display() as display:
        server = Server(tmp)
        try:
            for kind, profiles in (("bot", BOTS), ("person", PEOPLE)):
                for name, visit in profiles:
                    if only and name not in only:
                        continue
                    started, rng = time.time(), random.Random(name)
                    if probe_server:
                        probe_server.drain()
                    try:
                        session = visit(server, tmp, display, rng, probe)
                        got = wait_events(server, session, PAGES)
                    except Exception as e:  # one profile's failure is reported with the others
                        failures.append(f"{name}: {str(e)[:1500]}")
                        print(f"{kind:6} {name:30} FAILED ({str(e)[:1500]})", flush=True)
                        continue
                    took = time.time() - started
                    scores = [e["scoreBot"] for e in got]
                    ok, verdict = judged(kind, scores)
                    print(f"{kind:6} {name:30} {'ok  ' if ok else 'FAIL'} {verdict}; scores={scores} "
                          f"last reasons={codes(got[-1])} ({took:.1f}s)", flush=True)
                    rows.append((kind, name, verdict, scores, ok, took))
                    if not ok:
                        failures.append(f"{name}: {verdict}, scores {scores}, last reasons {codes(got[-1])}")
                    if probe_server and kind == "bot":
                        time.sleep(0.5)
                        figures.append((name, replay.describe_figures(replay.summarize(probe_server.drain()))))
            if DEBUG and (not only or "people-probe" in only):
                for browser, user in (("chromium", PEOPLE_USERS[0]), ("chromium", PEOPLE_USERS[2]),
                                      ("firefox", PEOPLE_USERS[1])):
                    reports = person_probe(browser, user, probe_server, tmp, display, random.Random(user))
                    figures.append((f"person-{browser}-{user} (probe pages)",
                                    replay.describe_figures(replay.summarize(reports))))
        finally:
            server.stop()
    if figures:
        print("\nWhat the page saw of the input (ACTING_DEBUG):")
        for name, f in figures:
            print(f"  {name}:")
            for k, v in f.items():
                print(f"    {k}: {v}")
    print("\n| profile | kind | result | scoreBot per page | seconds |\n|---|---|---|---|---|")
    for kind, name, verdict, scores, _, took in rows:
        print(f"| {name} | {kind} | {verdict} | {', '.join(str(s) for s in scores)} | {took:.0f} |")
    print(f"{sum(1 for r in rows if r[4])} passed, {len(failures)} failed")
    if failures:
        sys.exit("acting scraper matrix:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
