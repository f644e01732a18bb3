#!/usr/bin/env python3
"""Real people's mouse input, replayed through the operating system (XTEST) into a browser that
nothing else drives (make test-browser: the people of acting.py, quiet.py and automation.py).

The recordings are SapiMouse's (shared/human-mouse/sapimouse/: 60 people clicking targets in a web
page, JavaScript mouse events at about 60 Hz, CSV `client timestamp,button,state,x,y`). A page's
step replays, from one person's recording and at its recorded times:

- one or two wheel notches with the hand at rest (SapiMouse has no wheel: button 5, as a mouse
  wheel gives it);
- a stretch of their other movement, "reading" (one to two seconds of moves, no press), which
  starts where the pointer is and ends where their approach starts;
- an approach: the moves from rest (after a pause of >= 300 ms or their previous release) up to a
  Left press, the press after the recorded last-move-to-press gap and the release after the
  recorded hold.

Paths are translated, never scaled, so that the recorded press lands on the target (a link's
client rectangle, put on the screen with the browser's chrome offset, which `calibrate` measures
once per browser from a page's own mousemove). A recording is only ever moved, never reshaped,
except that the reading stretch, chosen among all of the person's stretches for the displacement
it needs, has its residual (a few pixels at most) spread along it so that no move jumps. Only
movements whose translated path stays inside the page's viewport are used.

Input goes through XTEST (python-xlib, `fake_input`, one connection per display, `sync` after each
event) at the recorded timestamps: one move per recorded sample, no process per sample.
"""

import bisect
import csv
import http.server
import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from demo import CHROMIUM, FIREFOX, FIREFOX_PREFS, PERSON_CHROMIUM_ARGS, QUIET, ROOT  # noqa: E402

SAPIMOUSE = Path(os.environ.get("SAPIMOUSE", ROOT.parent / "shared" / "human-mouse" / "sapimouse"))
if not SAPIMOUSE.exists():
    SAPIMOUSE = Path("/work/shared/human-mouse/sapimouse")
REST_MS = 300           # a pause that starts a movement "from rest"
HOLD_MS = (30, 300)     # press holds kept (longer ones are drags)
APPROACH_MS = (250, 2500)
READ_MS = (700, 3000)   # the reading stretch's length
SCREEN = (1280, 900)
# The demo shop's link bar: fixed at the viewport's bottom, 5rem (80 px) high, five tiles across.
BAR_H = 80


# ---- Recordings

@dataclass
class Approach:
    moves: list          # [(t_ms, x, y)] from rest up to the press, recorded client pixels
    press: tuple         # (t_ms, x, y)
    release_t: int
    rest_ms: int         # the recorded pause before the first move (REST_MS or more), or 0 after a release

    @property
    def hold(self):
        return self.release_t - self.press[0]

    @property
    def gap(self):
        return self.press[0] - self.moves[-1][0]


def load(user, session):
    rows = []
    with open(SAPIMOUSE / user / session, newline="") as f:
        for r in csv.DictReader(f):
            rows.append((int(float(r["client timestamp"])), r["button"], r["state"], int(float(r["x"])),
                         int(float(r["y"]))))
    return rows


class Recording:
    """One person's two sessions: their approaches and their move-only stretches."""

    def __init__(self, user):
        self.user = user
        self.approaches, self.runs = [], []
        for session in ("session_3min.csv", "session_1min.csv"):
            path = SAPIMOUSE / user / session
            if path.exists():
                self._index(load(user, session))
        if not self.approaches:
            raise ValueError(f"{user}: no approach movement in the recordings")

    def _index(self, rows):
        # Move-only runs (reading material): consecutive NoButton moves, any pause under 1.5 s.
        run = []
        for t, button, state, x, y in rows:
            if state == "Move" and button == "NoButton" and (not run or 0 < t - run[-1][0] < 1500):
                run.append((t, x, y))
                continue
            if len(run) > 20:
                self.runs.append(run)
            run = [(t, x, y)] if state == "Move" and button == "NoButton" else []
        if len(run) > 20:
            self.runs.append(run)
        # Approaches: from rest up to a Left press, its release next with no drag between.
        for j, (t, button, state, x, y) in enumerate(rows):
            if not (button == "Left" and state == "Pressed"):
                continue
            if j + 1 >= len(rows) or rows[j + 1][2] != "Released":
                continue
            release_t = rows[j + 1][0]
            if not HOLD_MS[0] <= release_t - t <= HOLD_MS[1]:
                continue
            a, rest = j - 1, 0
            while a >= 0 and rows[a][2] == "Move" and rows[a][1] == "NoButton":
                if a > 0 and rows[a][0] - rows[a - 1][0] >= REST_MS:
                    rest = rows[a][0] - rows[a - 1][0]
                    break
                if a > 0 and rows[a - 1][2] != "Move":
                    break  # the previous release (or a drag): from there
                a -= 1
            moves = [(r[0], r[3], r[4]) for r in rows[max(a, 0):j]]
            if len(moves) < 6:
                continue
            span = t - moves[0][0]
            dist = ((moves[0][1] - x) ** 2 + (moves[0][2] - y) ** 2) ** 0.5
            if not APPROACH_MS[0] <= span <= APPROACH_MS[1] or dist < 120 or t - moves[-1][0] > 600:
                continue
            self.approaches.append(Approach(moves, (t, x, y), release_t, rest))


_RECORDINGS = {}


def recording(user):
    if user not in _RECORDINGS:
        _RECORDINGS[user] = Recording(user)
    return _RECORDINGS[user]


def users():
    """Users with approaches to replay, by number."""
    return sorted((p.name for p in SAPIMOUSE.iterdir() if p.is_dir() and p.name.startswith("user")),
                  key=lambda u: float(u[4:]))


# ---- Geometry: where a page's client pixels are on the screen

@dataclass
class Geometry:
    off_x: int      # screenX - clientX
    off_y: int      # screenY - clientY (the chrome above the page)
    inner_w: int
    inner_h: int

    def viewport(self):
        """The viewport's screen rectangle (x0, y0, x1, y1), exclusive ends, clipped to the screen."""
        return (max(self.off_x, 0), max(self.off_y, 0), min(self.off_x + self.inner_w, SCREEN[0]),
                min(self.off_y + self.inner_h, SCREEN[1]))

    def to_screen(self, rect):
        x0, y0, x1, y1 = rect
        return (x0 + self.off_x, y0 + self.off_y, x1 + self.off_x, y1 + self.off_y)

    def next_tile(self):
        """The link bar's first tile (the next product), client pixels."""
        return (0, self.inner_h - BAR_H, self.inner_w / 5, self.inner_h)


# ---- The probe server: the calibration page, the debug pages and their reports

# What a page sees of the input: the debug figures (ACTING_DEBUG=1). Stored per page, sent to the
# probe server at pagehide (and at each press, in case the page is never left).
PROBE_JS = r"""(function () {
  if (window.top !== window || window.__actingProbe) return;
  window.__actingProbe = true;
  var REPORT = "__REPORT__";
  var R = { url: location.pathname, moves: 0, intervals: [], presses: [], clicks: [], wheels: [], offsets: [],
            firstMove: null, lastMove: null, added: [] }, nodes = [], lastMove = 0, down = 0, ready = false;
  try {
    var d = Object.getOwnPropertyDescriptor(MouseEvent.prototype, "screenX");
    R.screenXGetterNative = !!(d && d.get) && /\{\s*\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(d.get));
    R.screenXGetterSource = d && d.get ? Function.prototype.toString.call(d.get).slice(0, 80) : String(d);
  } catch (e) { R.screenXGetterNative = "error " + e; }
  function r1(v) { return Math.round(v * 10) / 10; }
  addEventListener("mousemove", function (e) {
    R.moves++;
    if (lastMove && R.intervals.length < 600) R.intervals.push(r1(e.timeStamp - lastMove));
    lastMove = e.timeStamp;
    var p = { x: e.clientX, y: e.clientY, t: Math.round(e.timeStamp), trusted: e.isTrusted };
    if (!R.firstMove) R.firstMove = p;
    R.lastMove = p;
    var o = [e.screenX - e.clientX, e.screenY - e.clientY];
    if (R.offsets.length < 5 && !R.offsets.some(function (q) { return q[0] === o[0] && q[1] === o[1]; })) R.offsets.push(o);
  }, true);
  addEventListener("pointerdown", function (e) {
    down = e.timeStamp;
    R.presses.push({ pressure: e.pressure, pointerType: e.pointerType, button: e.button, buttons: e.buttons,
      trusted: e.isTrusted, gapMs: lastMove ? r1(e.timeStamp - lastMove) : null, x: e.clientX, y: e.clientY,
      offX: e.screenX - e.clientX, offY: e.screenY - e.clientY, width: e.width, height: e.height,
      movedBefore: R.moves, target: e.target && e.target.tagName });
  }, true);
  addEventListener("pointerup", function (e) {
    var p = R.presses[R.presses.length - 1];
    if (p && p.holdMs === undefined) { p.holdMs = r1(e.timeStamp - down); p.upPressure = e.pressure; }
    send();
  }, true);
  addEventListener("click", function (e) {
    R.clicks.push({ trusted: e.isTrusted, detail: e.detail, x: e.clientX, y: e.clientY,
      link: !!(e.target && e.target.closest && e.target.closest("a[href]")) });
  }, true);
  addEventListener("wheel", function (e) {
    R.wheels.push({ deltaY: e.deltaY, deltaMode: e.deltaMode, wheelDeltaY: e.wheelDeltaY, trusted: e.isTrusted,
      x: e.clientX, y: e.clientY });
  }, { capture: true, passive: true });
  document.addEventListener("DOMContentLoaded", function () { ready = true; });
  try {
    new MutationObserver(function (list) {
      list.forEach(function (m) {
        m.addedNodes.forEach(function (n) {
          if (n.nodeType !== 1) return;
          var top = n.parentNode === document.body || n.parentNode === document.documentElement;
          if ((ready && top) || n.tagName.indexOf("-") > 0) nodes.push(n);
        });
      });
    }).observe(document, { childList: true, subtree: true });
  } catch (e) { /* none */ }
  function describe(n) {
    var s = n.tagName.toLowerCase() + (n.id ? "#" + n.id : "") + (n.className && typeof n.className === "string" ? "." + n.className.split(/\s+/).join(".") : "");
    try { var cs = getComputedStyle(n); if (cs.position === "fixed" || cs.position === "absolute") s += "[" + cs.position + " z" + cs.zIndex + (cs.pointerEvents === "none" ? " pe:none" : "") + "]"; } catch (e) { /* detached */ }
    return s;
  }
  function send() {
    R.added = nodes.filter(function (n) { return n.isConnected; }).map(describe);
    R.removedAdded = nodes.filter(function (n) { return !n.isConnected; }).map(function (n) { return n.tagName.toLowerCase(); });
    R.scrollY = window.scrollY;
    var body = JSON.stringify(R);
    try { sessionStorage.setItem("acting.debug." + location.pathname, body); } catch (e) { /* none */ }
    try { if (REPORT) navigator.sendBeacon(REPORT, body); } catch (e) { /* none */ }
  }
  addEventListener("pagehide", send);
})();"""

CALIBRATE_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>calibrate</title>
<style>html,body{margin:0;height:100%}</style></head><body><script>
var sent = false;
addEventListener("mousemove", function (e) {
  if (sent || !e.isTrusted) return; sent = true;
  fetch("/calibrated", {method: "POST", body: JSON.stringify({off_x: e.screenX - e.clientX, off_y: e.screenY - e.clientY,
    inner_w: innerWidth, inner_h: innerHeight, outer_w: outerWidth, outer_h: outerHeight, screen_x: screenX, screen_y: screenY})});
});
</script></body></html>"""

# The debug pages for people: the demo shop's link bar and body, the probe inline.
PROBE_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>probe {n}</title><script>{probe}</script>
<style>body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem 6rem; }}
#shop {{ position: fixed; left: 0; right: 0; bottom: 0; display: flex; height: 5rem; background: #f3f5f9; border-top: 1px solid #d5dae3; }}
#shop a {{ flex: 1; display: flex; align-items: center; justify-content: center; color: #1d4ed8; font-size: 1.1rem; }}
.filler {{ height: 1600px; }}</style></head>
<body><nav id="shop"><a href="/probe/{next}">Next</a><a href="/probe/1">1</a><a href="/probe/2">2</a><a href="/probe/3">3</a><a href="/probe/4">4</a></nav>
<h1>Probe page {n}</h1><p>What a page sees of the replayed input.</p><div class="filler"></div></body></html>"""


class ProbeServer:
    """A small HTTP server on 127.0.0.1: /calibrate, /probe/N, and the reports they POST."""

    def __init__(self):
        self.reports = queue.Queue()
        self.calibrations = queue.Queue()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                if self.path.startswith("/probe/"):
                    n = int(self.path.rsplit("/", 1)[1] or 1)
                    body = PROBE_PAGE.format(n=n, next=n + 1, probe=outer.probe_js()).encode()
                elif self.path.startswith("/calibrate"):
                    body = CALIBRATE_HTML.encode()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(204)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()
                try:
                    obj = json.loads(data)
                except ValueError:
                    return
                (outer.calibrations if self.path == "/calibrated" else outer.reports).put(obj)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def probe_js(self):
        return PROBE_JS.replace("__REPORT__", self.url("/report"))

    def drain(self):
        out = []
        while True:
            try:
                out.append(self.reports.get_nowait())
            except queue.Empty:
                return out

    def stop(self):
        self.httpd.shutdown()


_PROBE = None


def probe_server():
    global _PROBE
    if _PROBE is None:
        _PROBE = ProbeServer()
    return _PROBE


def launch(browser, tmp, session, url, display, extra_env=None):
    """A person's browser, as quiet.py starts it: nothing attached, the window at the screen's top
    left, 1280x900."""
    env = dict(display.env(), **(extra_env or {}))
    if browser.startswith("chromium"):
        cmd = [CHROMIUM, *QUIET, *PERSON_CHROMIUM_ARGS, f"--user-data-dir={tmp}/{session}",
               "--window-position=0,0", "--window-size=1280,900", url]
    else:
        profile = Path(tmp) / session
        profile.mkdir(parents=True, exist_ok=True)
        (profile / "user.js").write_text(FIREFOX_PREFS)
        cmd = [FIREFOX, "--no-remote", "--profile", str(profile), "--width", "1280", "--height", "900", url]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


_GEOMETRY = {}


def calibrate(display, browser, tmp):
    """The browser's chrome offset and viewport, measured once per browser family: a page reports
    its first trusted mousemove's screenX - clientX (and Y) and its inner size."""
    family = "chromium" if browser.startswith("chromium") else "firefox"
    key = (display.name, family)
    if key in _GEOMETRY:
        return _GEOMETRY[key]
    server = probe_server()
    while not server.calibrations.empty():
        server.calibrations.get_nowait()
    proc = launch(family, tmp, f"calibrate-{family}-{os.getpid()}", server.url("/calibrate"), display)
    x = XInput(display.name)
    try:
        deadline, got, i = time.time() + 60, None, 0
        while time.time() < deadline and got is None:
            i += 1
            x.move(600 + (i % 7) * 10, 450 + (i % 5) * 10)
            try:
                got = server.calibrations.get(timeout=0.5)
            except queue.Empty:
                pass
        if got is None:
            raise AssertionError(f"{family}: the calibration page never reported a mousemove")
    finally:
        proc.kill()
        proc.wait()
        x.close()
    geometry = Geometry(got["off_x"], got["off_y"], got["inner_w"], got["inner_h"])
    if os.environ.get("ACTING_DEBUG") or os.environ.get("REPLAY_DEBUG"):
        print(f"  calibrated {family}: {got}", flush=True)
    _GEOMETRY[key] = geometry
    return geometry


# ---- XTEST

class XInput:
    """Operating-system input through XTEST on one long-lived connection."""

    def __init__(self, display_name):
        from Xlib import X, display as xdisplay
        from Xlib.ext import xtest
        self.X, self.xtest = X, xtest
        self.d = xdisplay.Display(display_name)
        if not self.d.has_extension("XTEST"):
            raise RuntimeError(f"{display_name} has no XTEST")

    def move(self, x, y):
        self.xtest.fake_input(self.d, self.X.MotionNotify, x=int(round(x)), y=int(round(y)))
        self.d.sync()

    def button(self, n, down):
        self.xtest.fake_input(self.d, self.X.ButtonPress if down else self.X.ButtonRelease, n)
        self.d.sync()

    def key(self, keysym_name, down):
        from Xlib import XK
        code = self.d.keysym_to_keycode(XK.string_to_keysym(keysym_name))
        self.xtest.fake_input(self.d, self.X.KeyPress if down else self.X.KeyRelease, code)
        self.d.sync()

    def position(self):
        p = self.d.screen().root.query_pointer()
        return p.root_x, p.root_y

    def close(self):
        self.d.close()


def play(x, timeline):
    """Plays [(ms, kind, a, b)] at those times from now: kind `move` (a, b = x, y), `down`/`up`
    (a = button). Returns the lateness of the worst event in ms."""
    start, worst = time.perf_counter(), 0.0
    for ms, kind, a, b in timeline:
        due = start + ms / 1000
        while True:
            left = due - time.perf_counter()
            if left <= 0:
                break
            time.sleep(left - 0.002 if left > 0.003 else 0)
        worst = max(worst, (time.perf_counter() - due) * 1000)
        if kind == "move":
            x.move(a, b)
        else:
            x.button(a, kind == "down")
    return worst


# ---- A hand: one person's recording, replayed

class Hand:
    """One person (a SapiMouse user) on one display, for one browser's geometry."""

    def __init__(self, display, user, geometry, rng):
        self.display, self.user, self.geometry, self.rng = display, user, geometry, rng
        self.rec = recording(user)
        self.x = XInput(display.name)
        self.log = []

    def close(self):
        self.x.close()

    # -- choosing

    def _fits(self, points, dx, dy, bounds):
        x0, y0, x1, y1 = bounds
        return all(x0 <= px + dx < x1 and y0 <= py + dy < y1 for _, px, py in points)

    def _approach(self, target_rect, bounds):
        """An approach and its translation landing its press inside target_rect (screen)."""
        tx0, ty0, tx1, ty1 = target_rect
        # The press lands inside the target with a margin, at a point of the rng's choosing.
        mx, my = min(20, (tx1 - tx0) / 4), min(12, (ty1 - ty0) / 4)
        cands = list(self.rec.approaches)
        self.rng.shuffle(cands)
        for _ in range(6):
            px, py = self.rng.uniform(tx0 + mx, tx1 - mx), self.rng.uniform(ty0 + my, ty1 - my)
            for ap in cands:
                dx, dy = round(px - ap.press[1]), round(py - ap.press[2])
                if self._fits(ap.moves, dx, dy, bounds):
                    return ap, dx, dy
        raise AssertionError(f"{self.user}: no approach fits target {target_rect} within {bounds}")

    def _reading(self, start, end, bounds):
        """A stretch of READ_MS of the person's moves whose displacement is nearest end - start,
        translated to begin at start; its residual is spread along it (a few pixels)."""
        need = (end[0] - start[0], end[1] - start[1])
        cands = []
        for run in self.rec.runs:
            times = [p[0] for p in run]
            for i in range(0, len(run), 2):
                lo = bisect.bisect_left(times, times[i] + READ_MS[0])
                hi = bisect.bisect_right(times, times[i] + READ_MS[1])
                for j in range(lo, min(hi, len(run))):
                    ddx = run[j][1] - run[i][1] - need[0]
                    ddy = run[j][2] - run[i][2] - need[1]
                    cands.append((ddx * ddx + ddy * ddy, id(run), i, j, run))
        cands.sort(key=lambda c: c[:4])
        x0, y0, x1, y1 = bounds
        for err, _, i, j, run in cands[:3000]:
            seg = run[i:j + 1]
            n = len(seg) - 1
            ex = need[0] - (seg[-1][1] - seg[0][1])
            ey = need[1] - (seg[-1][2] - seg[0][2])
            pts = [(t - seg[0][0], start[0] + (px - seg[0][1]) + ex * k / n,
                    start[1] + (py - seg[0][2]) + ey * k / n) for k, (t, px, py) in enumerate(seg)]
            if all(x0 <= px < x1 and y0 <= py < y1 for _, px, py in pts):
                return pts, err ** 0.5
        return None, None

    # -- acting

    def wheel(self, notches, down=True):
        """Wheel notches with the hand at rest, a person's spacing between them."""
        for _ in range(notches):
            self.x.button(5 if down else 4, True)
            time.sleep(self.rng.uniform(0.008, 0.02))
            self.x.button(5 if down else 4, False)
            time.sleep(self.rng.uniform(0.12, 0.45))

    def read(self, bounds=None):
        """A stretch of the person's moves while reading, from where the pointer is."""
        bounds = bounds or self.geometry.viewport()
        start = self.x.position()
        run = self.rng.choice(self.rec.runs)
        i = self.rng.randrange(max(1, len(run) - 40))
        seg = [p for p in run[i:] if p[0] - run[i][0] <= self.rng.uniform(*READ_MS)]
        dx, dy = start[0] - seg[0][1], start[1] - seg[0][2]
        if not self._fits(seg, dx, dy, bounds):
            return 0
        play(self.x, [(t - seg[0][0], "move", px + dx, py + dy) for t, px, py in seg])
        return len(seg)

    def click(self, target_client, notches=(1, 2), read=True, bounds_client=None):
        """Wheel notches at rest, a reading stretch from the pointer to the approach's start, the
        rest, the approach and its press and release on target_client (a client rectangle)."""
        g = self.geometry
        bounds = g.to_screen(bounds_client) if bounds_client else g.viewport()
        target = g.to_screen(target_client)
        start = self.x.position()
        # The approach whose start the person's reading can reach from the pointer best.
        best = None
        for _ in range(8 if read else 1):
            ap, dx, dy = self._approach(target, bounds)
            first = (ap.moves[0][1] + dx, ap.moves[0][2] + dy)
            pts, residual = self._reading(start, first, bounds) if read else (None, None)
            if best is None or (residual is not None and (best[4] is None or residual < best[4])):
                best = (ap, dx, dy, pts, residual)
            if residual is not None and residual < 12:
                break
        ap, dx, dy, pts, residual = best
        info = {"user": self.user, "approach_ms": ap.press[0] - ap.moves[0][0], "moves": len(ap.moves),
                "gap_ms": ap.gap, "hold_ms": ap.hold, "press": (ap.press[1] + dx, ap.press[2] + dy)}
        n = self.rng.randint(*notches) if notches else 0
        if n:
            time.sleep(self.rng.uniform(0.3, 0.9))
            self.wheel(n)
        timeline, t = [], 0
        info["reading_residual_px"] = None if residual is None else round(residual, 1)
        if pts:
            timeline += [(ms, "move", px, py) for ms, px, py in pts]
            t = pts[-1][0]
        # The rest before the approach: the recorded one, or (after a release) a short one.
        t += min(ap.rest_ms, 1500) if ap.rest_ms else round(self.rng.uniform(REST_MS, 700))
        base = ap.moves[0][0]
        timeline += [(t + ms - base, "move", px + dx, py + dy) for ms, px, py in ap.moves]
        timeline.append((t + ap.press[0] - base, "down", 1, None))
        timeline.append((t + ap.release_t - base, "up", 1, None))
        info["late_ms"] = round(play(self.x, timeline), 1)
        self.log.append(info)
        return info

    def click_next(self, **kw):
        """The demo shop's next link: the link bar's first tile."""
        return self.click(self.geometry.next_tile(), **kw)


def people_users(n, offset=0):
    """n distinct SapiMouse users, spread over the set."""
    all_users = users()
    step = max(1, len(all_users) // n)
    return [all_users[(offset + i * step) % len(all_users)] for i in range(n)]


def geometry_for(display, browser, tmp):
    return calibrate(display, browser, tmp)


def session_hand(display, browser, tmp, user, rng):
    return Hand(display, user, calibrate(display, browser, tmp), rng)


def summarize(reports):
    """The debug figures of a session's probe reports (one per page left)."""
    out = {"presses": [], "holds": [], "gaps": [], "wheel": set(), "intervals": [], "offsets": set(),
           "native": set(), "added": set(), "trusted": set(), "first_moves": []}
    # A page reports at each release and at pagehide: its last report holds everything.
    last = {}
    for r in reports:
        last[r.get("url")] = r
    for r in last.values():
        for p in r.get("presses", []):
            out["presses"].append(p.get("pressure"))
            if p.get("holdMs") is not None:
                out["holds"].append(p["holdMs"])
            if p.get("gapMs") is not None:
                out["gaps"].append(p["gapMs"])
            out["trusted"].add(p.get("trusted"))
        for w in r.get("wheels", []):
            out["wheel"].add((w.get("deltaY"), w.get("wheelDeltaY"), w.get("deltaMode")))
        out["intervals"] += r.get("intervals", [])
        for o in r.get("offsets", []):
            out["offsets"].add(tuple(o))
        out["native"].add(r.get("screenXGetterNative"))
        out["added"] |= set(r.get("added", []))
        if r.get("firstMove"):
            out["first_moves"].append((r["firstMove"]["x"], r["firstMove"]["y"]))
    return out


def describe_figures(f):
    import statistics

    def rng(v):
        if not v:
            return "-"
        v = sorted(v)
        return f"{v[0]:g}-{v[-1]:g} (median {statistics.median(v):g})"

    iv = f["intervals"]
    band = ""
    if iv:
        s = sorted(iv)
        band = (f"median {statistics.median(s):g}, p10 {s[len(s) // 10]:g}, p90 {s[len(s) * 9 // 10]:g}, "
                f"{sum(1 for v in s if 13 <= v <= 20) * 100 // len(s)}% in 13-20 ms, n={len(s)}")
    return {
        "pressure": sorted({p for p in f["presses"]}, key=str),
        "hold ms": rng(f["holds"]),
        "move->press ms": rng(f["gaps"]),
        "wheel (deltaY, wheelDeltaY, mode)": sorted(f["wheel"], key=str),
        "mousemove interval ms": band or "-",
        "screen-client offsets": sorted(f["offsets"]),
        "screenX getter native": sorted(f["native"], key=str),
        "foreign elements": sorted(f["added"]),
        "trusted presses": sorted(f["trusted"], key=str),
        "first move per page": f["first_moves"],
    }
