/*! Vigil agent */
/* Usage:
 *   <script src="https://API/v1/agent.js"></script>
 *   Vigil.collect({ publicKey: "pk_...", sessionId: "...", sessionToken: "..." })
 *     .then(function (receipt) { ... });
 * receipt is the visit's receipt id; for a project that seals its verdicts, { id, sealed }, where
 * sealed is the verdict encrypted for the site's backend: post it with the form, never read it.
 * sessionToken comes from the site's backend (README, Security model). Every signal is read in
 * its own try: a browser quirk drops that signal, never the visit. No dependencies, no cookies;
 * sessionStorage keeps one page's input counts for the tab's next page of the session. The
 * served copy keeps only the first line of this comment (make agent). */
(function (global) {
  "use strict";

  // The API the script was loaded from: /v1/agent.js -> /v1/collect.
  var script = document.currentScript;
  var defaultEndpoint = script && script.src ? script.src.replace(/\/agent\.js(\?.*)?$/, "/collect") : "/v1/collect";

  function read(signals, name, fn) {
    try {
      var v = fn();
      if (v !== undefined && v !== null && v === v) signals[name] = v;
    } catch (e) { /* this signal is unavailable here */ }
  }

  // Globals that automation frameworks leave behind (Selenium, PhantomJS, Node helpers, ...);
  // the drivers' prefixed ones (__webdriver_*, __playwright*, cdc_*) are frameworkMarkers'.
  var AUTOMATION = ["_phantom", "callPhantom", "__nightmare", "_selenium", "callSelenium",
    "_Selenium_IDE_Recorder", "__lastWatirAlert", "domAutomation", "domAutomationController",
    "Buffer", "emit", "spawn"];

  function automationGlobals() {
    var found = [];
    for (var i = 0; i < AUTOMATION.length; i++) {
      var n = AUTOMATION[i];
      try { if (n in global) found.push(n); } catch (e) { /* ignore */ }
    }
    try {
      var attrs = document.documentElement.getAttributeNames();
      for (var j = 0; j < attrs.length; j++) {
        if (/^(selenium|webdriver|driver)$/.test(attrs[j])) found.push("document." + attrs[j]);
      }
    } catch (e) { /* ignore */ }
    return found;
  }

  var GL = { antialias: false, depth: false, stencil: false };
  function webgl(signals) {
    // Strings only: the cheapest context (no multisample or depth buffers to allocate).
    var canvas = document.createElement("canvas");
    canvas.width = canvas.height = 1;
    var gl = canvas.getContext("webgl", GL) || canvas.getContext("experimental-webgl", GL);
    if (!gl) return;
    var info = gl.getExtension("WEBGL_debug_renderer_info");
    read(signals, "webglVendor", function () { return gl.getParameter(info ? info.UNMASKED_VENDOR_WEBGL : gl.VENDOR); });
    read(signals, "webglRenderer", function () { return gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER); });
  }

  // Addresses in the browser's WebRTC candidates (a public one unlike the request's means a
  // proxy). Only with STUN servers the page passes: without them there are only mDNS names.
  function webrtcIps(stun, ms) {
    return new Promise(function (resolve) {
      var ips = {}, done = false, pc;
      function finish() {
        if (done) return;
        done = true;
        try { pc.close(); } catch (e) { /* ignore */ }
        resolve(Object.keys(ips));
      }
      try {
        var RTC = global.RTCPeerConnection || global.webkitRTCPeerConnection;
        if (!RTC) return resolve(undefined);
        pc = new RTC({ iceServers: stun ? [{ urls: stun }] : [] });
        pc.createDataChannel("v");
        pc.onicecandidate = function (e) {
          if (!e.candidate) return finish();
          var m = /([0-9]{1,3}(\.[0-9]{1,3}){3}|[0-9a-f]{1,4}(:[0-9a-f]{0,4}){2,7})/i.exec(e.candidate.candidate);
          if (m) ips[m[1]] = true;
        };
        pc.createOffer().then(function (o) { return pc.setLocalDescription(o); }).catch(finish);
        setTimeout(finish, ms);
      } catch (e) {
        resolve(undefined);
      }
    });
  }

  // The page's STUN server; else the one `vigil serve` runs beside the API (it appends
  // `Vigil.stunPort` to the script it serves), asked on the host the script came from.
  // `stun: false` turns WebRTC off.
  function stunServer(options) {
    if (options.stun !== undefined) return options.stun;
    try {
      return Vigil.stunPort && script && script.src ? "stun:" + new URL(script.src).hostname + ":" + Vigil.stunPort : null;
    } catch (e) {
      return null;
    }
  }

  // ---- Browser integrity, as measured against drivers and people (docs/research).

  // A DevTools Protocol client with the Runtime domain on (every Playwright and Puppeteer driver)
  // formats console arguments: formatting an Error's stack calls Error.prepareStackTrace. The hook
  // lives only around one console.debug call and is put back. (An Error with a stack getter is the
  // same test for older engines.)
  function cdp() {
    var E = global.Error, c = global.console, hit = false, own, prev;
    var e = new E("");
    try {
      Object.defineProperty(e, "stack", { configurable: true, get: function () { hit = true; return ""; } });
      c.debug(e);
    } catch (x) { /* ignore */ }
    own = Object.prototype.hasOwnProperty.call(E, "prepareStackTrace");
    prev = E.prepareStackTrace;
    var err = new E("");
    E.prepareStackTrace = function (x, frames) {
      if (x === err) { hit = true; return ""; }
      return typeof prev === "function" ? prev(x, frames) : String(x);
    };
    try { c.debug(err); } finally { if (own) E.prepareStackTrace = prev; else delete E.prepareStackTrace; }
    return hit;
  }

  // Page-world bindings and leftovers of drivers, and frames of injected evaluation.
  var MARKER = /^(\$?cdc_|\$?wdc_|__playwright|__pw|__puppeteer|puppeteer|__ariaQuerySelector|__selenium|__webdriver|__driver_|__fxdriver)/;
  function frameworkMarkers() {
    var found = [], names = Object.getOwnPropertyNames(global), i;
    for (i = 0; i < names.length && found.length < 8; i++) if (MARKER.test(names[i])) found.push(names[i].slice(0, 40));
    try {
      names = Object.getOwnPropertyNames(document);
      for (i = 0; i < names.length; i++) if (/^\$?(cdc|wdc)_/.test(names[i])) found.push("document." + names[i].slice(0, 30));
    } catch (e) { /* ignore */ }
    var m = /(pptr:|__puppeteer_evaluation_script__|UtilityScript\.)/.exec(String(new Error("").stack));
    if (m) found.push("stack:" + m[1]);
    return found;
  }

  var NATIVE = /^function\s*([^(]*)\(\)\s*\{\s*\[native code\]\s*\}$/;
  // Not native: "source" (script text), "name" (another function's), or toString throws.
  function notNative(f, name, ts) {
    var m;
    try { m = NATIVE.exec(ts.call(f)); } catch (e) { return "throws"; }
    if (!m) return "source";
    var n = m[1].replace(/^\s+|\s+$/g, "");
    return name && n !== name && n !== "get " + name ? "name" : "";
  }

  // A fresh realm's toString, which a page-world patch has not reached.
  function realmToString(frame) {
    try { return frame.contentWindow.Function.prototype.toString; } catch (e) { return Function.prototype.toString; }
  }

  // navigator.webdriver as Blink (>= 89) and Gecko define it: a native getter on
  // Navigator.prototype, never an own property, the same in a fresh iframe.
  function webdriverTamper(frame) {
    var out = [], nav = global.navigator, ts = realmToString(frame);
    var d = Object.getOwnPropertyDescriptor(Navigator.prototype, "webdriver");
    if (!d && ("userAgentData" in nav || "mozInnerScreenX" in global)) out.push("missing");
    if (Object.prototype.hasOwnProperty.call(nav, "webdriver")) out.push("own");
    if (d && (!d.get || notNative(d.get, "webdriver", ts))) out.push("getter");
    try { if (frame.contentWindow.navigator.webdriver !== nav.webdriver) out.push("iframe"); } catch (e) { /* ignore */ }
    return out;
  }

  // Natives that stealth kits wrap. A real native has no own "prototype", no extra keys, is not a
  // constructor, prints as native code, and refuses a prototype cycle (a Proxy accepts one).
  var NATIVES = [["Function", "toString"], ["Permissions", "query"], ["HTMLCanvasElement", "toDataURL"],
    ["HTMLCanvasElement", "getContext"], ["WebGLRenderingContext", "getParameter"],
    ["WebGL2RenderingContext", "getParameter"], ["HTMLMediaElement", "canPlayType"],
    ["Document", "createElement"], ["Element", "getBoundingClientRect"], ["Date", "getTimezoneOffset"],
    ["Navigator", "webdriver", 1], ["Navigator", "userAgent", 1], ["Navigator", "platform", 1],
    ["Navigator", "languages", 1], ["Navigator", "hardwareConcurrency", 1], ["Navigator", "plugins", 1],
    ["Screen", "width", 1], ["Screen", "height", 1], ["MouseEvent", "screenX", 1], ["MouseEvent", "screenY", 1],
    ["PointerEvent", "pressure", 1]];
  function tamperedFunctions(frame) {
    var out = [], ts = realmToString(frame), i, k;
    for (i = 0; i < NATIVES.length && out.length < 16; i++) {
      var t = NATIVES[i], why = [], f, p;
      try {
        p = global[t[0]].prototype;
        f = t[2] ? (Object.getOwnPropertyDescriptor(p, t[1]) || {}).get : p[t[1]];
      } catch (e) { continue; }
      if (typeof f !== "function") continue;
      try {
        var keys = Object.getOwnPropertyNames(f);
        for (k = 0; k < keys.length; k++) if (!/^(length|name)$/.test(keys[k])) { why.push("keys"); break; }
        Reflect.construct(Object, [], f);
        why.push("ctor");
      } catch (e) { /* not a constructor: as natives are */ }
      var nn = notNative(f, t[1], ts);
      if (nn) why.push(nn);
      var proto = Object.getPrototypeOf(f);
      try { Object.setPrototypeOf(f, Object.create(f)); why.push("proxy"); Object.setPrototypeOf(f, proto); } catch (e) { /* a cycle: real */ }
      if (why.length) out.push(t[0] + "." + t[1] + ":" + why.join("+"));
    }
    try {
      var own = Object.getOwnPropertyNames(document);
      for (k = 0; k < own.length && out.length < 12; k++) {
        if (own[k] !== "location" && typeof document[own[k]] === "function") out.push("document." + own[k].slice(0, 30) + ":own");
      }
    } catch (e) { /* ignore */ }
    return out;
  }

  // What a dedicated Worker reads of the browser, against the window: spoofing kits patch the
  // window and forget the worker.
  var WORKER = "var n=self.navigator,o={};try{o.userAgent=n.userAgent;o.platform=n.platform;" +
    "o.hardwareConcurrency=n.hardwareConcurrency;o.languages=String(n.languages);" +
    "if(n.userAgentData)o.brands=n.userAgentData.brands.map(function(b){return b.brand+'/'+b.version}).join()}catch(e){}" +
    "try{var g=new OffscreenCanvas(1,1).getContext('webgl',{antialias:false,depth:false,stencil:false}),d=g.getExtension('WEBGL_debug_renderer_info');" +
    "o.webglVendor=String(g.getParameter(d.UNMASKED_VENDOR_WEBGL));o.webglRenderer=String(g.getParameter(d.UNMASKED_RENDERER_WEBGL))}catch(e){}" +
    "postMessage(o)";
  // The Worker's values, or undefined when it does not answer within `ms`.
  function workerValues(ms) {
    return new Promise(function (resolve) {
      var w, url;
      function done(o) {
        try { w.terminate(); URL.revokeObjectURL(url); } catch (e) { /* ignore */ }
        resolve(o);
      }
      try {
        url = URL.createObjectURL(new Blob([WORKER], { type: "text/javascript" }));
        w = new Worker(url);
        w.onmessage = function (e) { done(e.data || {}); };
        w.onerror = function () { done(); };
        setTimeout(done, ms);
      } catch (e) { resolve(undefined); }
    });
  }

  // The fields in which the Worker and the window (as read at collect time) disagree.
  function contextMismatch(s, o) {
    var nav = global.navigator, diff = [];
    var win = { userAgent: nav.userAgent, platform: nav.platform, hardwareConcurrency: nav.hardwareConcurrency,
      languages: String(nav.languages), webglVendor: s.webglVendor, webglRenderer: s.webglRenderer };
    try { win.brands = nav.userAgentData.brands.map(function (b) { return b.brand + "/" + b.version; }).join(); } catch (e) { /* ignore */ }
    for (var k in win) if (o[k] !== undefined && win[k] !== undefined && String(o[k]) !== String(win[k])) diff.push(k);
    return diff;
  }

  function highEntropy(ms) {
    return new Promise(function (resolve) {
      var d = global.navigator.userAgentData;
      if (!d || !d.getHighEntropyValues) return resolve(undefined);
      setTimeout(resolve, ms);
      d.getHighEntropyValues(["platformVersion", "architecture", "bitness", "model", "uaFullVersion", "fullVersionList"]).then(function (v) {
        resolve({
          platformVersion: v.platformVersion, architecture: v.architecture, bitness: v.bitness, model: v.model,
          uaFullVersion: v.uaFullVersion,
          fullVersionList: (v.fullVersionList || []).map(function (b) { return { brand: b.brand, version: b.version }; })
        });
      }, function () { resolve(undefined); });
    });
  }

  // The page's first mouse events and clicks (touch aside), counted by hand() below: untrusted
  // ones are script-made.
  var input = { events: 0, untrusted: 0, screenEqClient: 0 };

  // What happens between load and a meaningful action, as counts only (no keys, no positions
  // kept): the artefacts protocol-made input leaves that a device's never does, measured on
  // patchright, nodriver, undetected-chromedriver and people driven by the OS (docs/research).
  var since = Date.now();
  var activity = { presses: 0, untrustedPresses: 0, untrustedClicks: 0, zeroPressure: 0,
    keys: 0, charsWithoutKeydown: 0, capitalsWithoutShift: 0 };
  var lastKeydown = 0, keyDown = false, charPending = false;
  // The whole page's input beside it, for the tab's next page (see pages below).
  var page = { clicks: 0, wheels: 0, touches: 0, left: "unknown", lastInputAt: 0 };
  function first() {
    // The page's first input is saved at once, later ones within a second.
    var had = page.lastInputAt;
    page.lastInputAt = Date.now();
    if (had) soon(); else save();
  }
  function trusted(e) { if (e.isTrusted) first(); return e.isTrusted; }
  // ---- The hand: the page's pointer input cut into movements (from rest to a press, or to a
  // pause of REST ms), each kept as a few numbers once it ends (its path is dropped), with the
  // presses' holds, the wheel's deltas and the keys' timing. What a person's hand makes and a
  // humanizer's generator does not is judged on the server (docs/detection.md, "The hand").
  var REST = 300, MAXM = 16, pts = [], moveAt = 0, downAt = 0, held = null;
  var kin = { m: [], holds: [], keys: 0, wheels: 0, ratios: [], keyHolds: [], keyGaps: [], noCode: 0, screenEq: 0, mouse: 0 };
  function hyp(a, b) { return Math.sqrt((a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2])); }
  function keep(list, v) { if (list.length < MAXM) list.push(v); }
  // One movement's shape: [duration ms, distance px, samples, speed peaks, curvature sign flips
  // per 100 turns, % of its time in the last 10% of its distance, pauses of 50 ms or more,
  // frames skipped (25-50 ms between moves), x reversals, y reversals, straightness %, last move
  // to press ms (-1: it ended at rest), peak speed against mean speed %, and the press's hold
  // once released].
  function shape(gap) {
    var p = pts, n = p.length, a = p[0], z = p[n - 1], dur, dist, i, d, c, v = [], len = 0, top = 0,
      k = [0, 0, 0, 0, 0, 0, 0, 0], sx = 0, sy = 0, sign = 0;
    pts = [];
    // A movement to a press is kept however short (its press's timing is judged); one that
    // ended at rest only from 40 px.
    if (n < 2 || (dur = z[0] - a[0]) <= 0 || ((dist = hyp(z, a)) < 40 && gap < 0)) return;
    // k: speed peaks, flips, turns, pauses, skips, x and y reversals.
    for (i = 1; i < n; i++) {
      var dt = p[i][0] - p[i - 1][0], dx = p[i][1] - p[i - 1][1], dy = p[i][2] - p[i - 1][2];
      len += d = hyp(p[i], p[i - 1]);
      v.push(d / Math.max(dt, 1));
      k[dt >= 50 ? 3 : 4] += dt >= 25;
      k[5] += dx * sx < 0;
      k[6] += dy * sy < 0;
      sx = dx || sx;
      sy = dy || sy;
      c = i > 1 ? (p[i - 1][1] - p[i - 2][1]) * dy - (p[i - 1][2] - p[i - 2][2]) * dx : 0;
      if (c > 0.5 || c < -0.5) { k[2]++; k[1] += c * sign < 0; sign = c; }
    }
    // Speed over three intervals; a peak is a local top above 30% of the fastest.
    for (i = 0; i < v.length; i++) top = Math.max(top, v[i] = (v[Math.max(i - 1, 0)] + v[i] + v[Math.min(i + 1, v.length - 1)]) / 3);
    for (i = 1; i < v.length - 1; i++) k[0] += v[i] > v[i - 1] && v[i] >= v[i + 1] && v[i] > 0.3 * top;
    for (i = 0; hyp(z, p[i]) > dist / 10; i++);
    var m = [(dur | 0), (dist | 0), n, k[0] || 1, k[2] > 1 ? (100 * k[1] / (k[2] - 1) | 0) : 0,
      (100 * (z[0] - p[i][0]) / dur | 0), k[3], k[4], k[5], k[6], (100 * dist / len | 0), gap, (100 * top * dur / len | 0)];
    if (kin.m.length >= MAXM) kin.m.shift();
    kin.m.push(m);
    return m;
  }
  function hand(e) {
    if (e.pointerType && e.pointerType !== "mouse") return;
    var t = e.timeStamp, eq = e.screenX === e.clientX && e.screenY === e.clientY;
    if (input.events < 20) {
      input.events++;
      if (!e.isTrusted) input.untrusted++;
      else input.screenEqClient += eq;
    }
    if (!e.isTrusted || e.type === "click") return;
    kin.mouse++;
    // A window with a toolbar whose page starts at the screen's corner is not on a screen.
    if (eq && global.outerHeight - global.innerHeight > 30) kin.screenEq++;
    if (e.type === "mousemove") {
      if (pts.length && t - moveAt >= REST) shape(-1);
      if (pts.length < 600) pts.push([t, e.clientX, e.clientY]);
      moveAt = t;
    } else if (e.type === "mousedown") {
      downAt = t;
      held = shape(moveAt && pts.length ? (t - moveAt | 0) : -1);
    } else if (downAt) {
      var h = (t - downAt | 0);
      keep(kin.holds, h);
      if (held) held.push(h);
      downAt = 0;
      held = null;
    }
  }
  var keyDownAt = {};
  function wheel(e) {
    if (!e.isTrusted) return;
    kin.wheels++;
    // A device turns its wheel by one ratio of wheelDelta to delta; every page's notch the same.
    var r = e.deltaY && e.wheelDeltaY ? (100 * e.wheelDeltaY / e.deltaY | 0) : 0;
    if (r && kin.ratios.indexOf(r) < 0) keep(kin.ratios, r);
  }

  var onActivity = {
    mousemove: hand,
    mousedown: hand,
    mouseup: hand,
    wheel: function (e) { if (trusted(e)) page.wheels++; wheel(e); },
    touchstart: function (e) { if (trusted(e)) page.touches++; },
    pointerdown: function (e) {
      if (e.pointerType !== "mouse") return;
      first();
      if (!e.isTrusted) { activity.untrustedPresses++; return; }
      activity.presses++;
      // A device's press has pressure 0.5 where it measures none; a press with none is made.
      if (e.buttons && e.pressure === 0) activity.zeroPressure++;
    },
    click: function (e) {
      hand(e);
      if (trusted(e)) page.clicks++;
      else activity.untrustedClicks++;
      // A link that leaves the page: followed by a device's click or by script.
      var a = e.target && e.target.closest ? e.target.closest("a[href]") : null;
      if (a && a.href.split("#")[0] !== location.href.split("#")[0]) {
        page.left = e.isTrusted ? "link" : "script-link";
        save();
      }
    },
    submit: function () { page.left = "form"; save(); },
    keydown: function (e) {
      first();
      if (!e.isTrusted) return;
      activity.keys++;
      kin.keys++;
      if (!e.repeat) keyDownAt[e.code || e.key] = e.timeStamp;
      if (!e.code && e.key && e.key.length === 1) kin.noCode++;
      keyDown = true;
      // Modifiers are left out of the timing: Shift and its letter come down together.
      if (/^(Shift|Control|Alt|Meta|CapsLock|AltGraph)$/.test(e.key)) return;
      var now = e.timeStamp;
      // Whole milliseconds, truncated: a gap under 4 ms stays under 4.
      if (lastKeydown && !e.repeat) keep(kin.keyGaps, now - lastKeydown | 0);
      lastKeydown = now;
      // A capital letter from a keyboard comes with Shift or Caps Lock.
      if (e.key && e.key.length === 1 && e.key >= "A" && e.key <= "Z" && !e.shiftKey &&
          !(e.getModifierState && e.getModifierState("CapsLock"))) activity.capitalsWithoutShift++;
    },
    keyup: function (e) {
      var c = e.code || e.key;
      keyDown = false;
      if (e.isTrusted && keyDownAt[c]) keep(kin.keyHolds, e.timeStamp - keyDownAt[c] | 0);
      delete keyDownAt[c];
    },
    keypress: function (e) {
      if (e.isTrusted && !keyDown) { activity.charsWithoutKeydown++; charPending = true; }
    },
    beforeinput: function (e) {
      // Typed text without a key down: inserted by a driver (paste, drop, autofill and IME
      // composition have their own input types and are not counted). A keypress just counted
      // is the same character.
      if (charPending) { charPending = false; return; }
      if (e.isTrusted && e.inputType === "insertText" && !keyDown && activity.keys === 0) {
        activity.charsWithoutKeydown += e.data ? e.data.length : 1;
      }
    }
  };
  try {
    for (var ak in onActivity) {
      if (Object.prototype.hasOwnProperty.call(onActivity, ak)) {
        global.addEventListener(ak, onActivity[ak], { capture: true, passive: true });
      }
    }
  } catch (e) { /* ignore */ }

  // Getters a humanizer patches and the cursor it draws, read when the page is summarised (a
  // humanizer installs them after the first collect).
  function foreign() {
    var out = tamperedFunctions({}).filter(function (t) { return /^(Mouse|Pointer)Event/.test(t); });
    if (document.querySelector("p-mouse-pointer")) out.push("p-mouse-pointer");
    return out;
  }

  function activitySummary(name) {
    var a = { action: String(name || "action").slice(0, 64) };
    for (var k in activity) if (Object.prototype.hasOwnProperty.call(activity, k)) a[k] = activity[k];
    a.kin = kin;
    read(a, "foreign", foreign);
    return a;
  }

  // Pages: how this page was reached, and what the visitor did on the session's page before it
  // in this tab, kept in sessionStorage (counts only) from one page to the next. A driver goes
  // from page to page with no input on any; a person clicks, keys or taps (docs/detection.md).
  var KEY = "vigil.page", pageSession = null, visibleMs = 0, shown = since;
  var previous = null, saving = 0;
  try { previous = JSON.parse(sessionStorage.getItem(KEY)); } catch (e) { /* none, or blocked */ }
  function visible() { return document.visibilityState !== "hidden"; }
  function tick() {
    var now = Date.now();
    if (shown) visibleMs += now - shown;
    shown = visible() ? now : 0;
  }
  if (!visible()) shown = 0;
  function save() {
    clearTimeout(saving);
    saving = 0;
    if (!pageSession) return;
    tick();
    var p = activitySummary("page");
    delete p.action;
    for (var k in page) p[k] = page[k];
    p.dwellMs = Date.now() - since; p.visibleMs = visibleMs;
    try { sessionStorage.setItem(KEY, JSON.stringify({ session: pageSession, page: p })); } catch (e) { /* full or blocked */ }
  }
  // Saved within a second of input, so a page left without pagehide still says it had some.
  function soon() { if (pageSession && !saving) saving = setTimeout(save, 1000); }
  try {
    global.addEventListener("pagehide", save);
    document.addEventListener("visibilitychange", function () { tick(); if (!visible()) save(); });
  } catch (e) { /* ignore */ }

  function referrer() {
    if (!document.referrer) return "none";
    var site = function (h) {
      // The registrable domain, roughly: two labels, three under a two-letter country's
      // second level (co.uk, com.au).
      var l = h.split(".");
      return l.slice(/^[a-z]{2}$/.test(l[l.length - 1]) && l[l.length - 2].length <= 3 ? -3 : -2).join(".");
    };
    try { return site(new URL(document.referrer).hostname) === site(location.hostname) ? "same-site" : "cross-site"; } catch (e) { return "cross-site"; }
  }

  function navigation(session) {
    var n = {}, entry, p = previous;
    read(n, "type", function () { entry = performance.getEntriesByType("navigation")[0]; return entry && entry.type; });
    n.referrer = referrer();
    if (p && p.session === session && p.page) {
      n.previous = p.page;
    }
    return n;
  }

  function integrity(s) {
    var frame;
    read(s, "cdp", cdp);
    read(s, "frameworkMarkers", frameworkMarkers);
    try {
      frame = document.createElement("iframe");
      frame.style.display = "none";
      (document.body || document.documentElement).appendChild(frame);
    } catch (e) { frame = {}; }
    read(s, "webdriverTamper", function () { return webdriverTamper(frame); });
    read(s, "tamperedFunctions", function () { return tamperedFunctions(frame); });
    try { frame.parentNode.removeChild(frame); } catch (e) { /* ignore */ }
  }

  // The probes that do not depend on the call start as soon as the agent loads: a Worker boots
  // on its own thread while the page goes on loading. The first collect takes them.
  function offThread(ms) { return [workerValues(ms), highEntropy(ms)]; }
  var early = offThread(150);

  function signals(options) {
    var s = {}, nav = global.navigator || {}, t0 = Date.now();
    var pending = early || offThread(options.timeout || 150);
    early = null;
    var stun = stunServer(options);
    pending = pending.concat(stun ? webrtcIps(stun, options.webrtcTimeout || 300) : []);
    read(s, "webdriver", function () { return nav.webdriver === true; });
    read(s, "userAgent", function () { return nav.userAgent; });
    read(s, "uaData", function () {
      var d = nav.userAgentData;
      if (!d) return undefined;
      return {
        brands: (d.brands || []).map(function (b) { return { brand: b.brand, version: b.version }; }),
        mobile: !!d.mobile,
        platform: d.platform
      };
    });
    read(s, "languages", function () { return Array.prototype.slice.call(nav.languages || []); });
    // Temporal takes 0.3 ms, a first Intl use 10-20 ms.
    read(s, "timeZone", function () {
      return typeof Temporal == "object" ? Temporal.Now.timeZoneId() : Intl.DateTimeFormat().resolvedOptions().timeZone;
    });
    read(s, "timezoneOffset", function () { return new Date().getTimezoneOffset(); });
    read(s, "plugins", function () { return nav.plugins ? nav.plugins.length : undefined; });
    read(s, "innerWidth", function () { return global.innerWidth; });
    read(s, "innerHeight", function () { return global.innerHeight; });
    read(s, "screenWidth", function () { return global.screen.width; });
    read(s, "screenHeight", function () { return global.screen.height; });
    read(s, "evalLength", function () { return eval.toString().length; });
    read(s, "productSub", function () { return nav.productSub; });
    read(s, "hardwareConcurrency", function () { return nav.hardwareConcurrency; });
    read(s, "maxTouchPoints", function () { return nav.maxTouchPoints; });
    read(s, "automationGlobals", automationGlobals);
    try { webgl(s); } catch (e) { /* no WebGL */ }
    integrity(s);
    return Promise.all(pending).then(function (a) {
      // The window's outer size once the probes are back: just after a navigation, a browser
      // without a window manager may report 0 for a moment.
      read(s, "outerWidth", function () { return global.outerWidth; });
      read(s, "outerHeight", function () { return global.outerHeight; });
      if (a[0]) s.contextMismatch = contextMismatch(s, a[0]);
      if (a[1]) s.highEntropy = a[1];
      if (a[2]) s.webrtcIps = a[2];
      s.input = { events: input.events, untrusted: input.untrusted, screenEqClient: input.screenEqClient,
        chromeless: global.outerWidth - global.innerWidth <= 0 && global.outerHeight - global.innerHeight <= 0 };
      Vigil.collectMs = Date.now() - t0;
      return s;
    }, function () { return s; });
  }

  function send(options, s) {
    var visit = { publicKey: options.publicKey, sessionId: options.sessionId, signals: s };
    if (options.sessionToken) visit.sessionToken = options.sessionToken;
    var body = JSON.stringify(visit);
    // text/plain keeps this a "simple" cross-origin request: no preflight round trip.
    return fetch(options.endpoint || defaultEndpoint, {
      method: "POST",
      headers: { "Content-Type": "text/plain;charset=UTF-8" },
      body: body,
      credentials: "omit",
      keepalive: true
    }).then(function (res) {
      return res.json().then(function (j) {
        if (!res.ok) throw new Error("Vigil: " + res.status + " " + (j && j.message));
        return j.data.sealed ? { id: j.data.id, sealed: j.data.sealed } : j.data.id;
      });
    });
  }

  // The last collect's options and signals: an action is sent with them at once (a submit may
  // leave the page a moment later), judged with them as the same visit's second look.
  var last = null, actions = {};

  /** Collects and sends this visit's signals; resolves to the visit's receipt id (with its
   * sealed verdict, { id, sealed }, when the project seals them). */
  function collect(options) {
    options = options || {};
    var nav = null;
    if (!pageSession && options.sessionId) {
      pageSession = String(options.sessionId);
      nav = navigation(pageSession);
      save();
    }
    return signals(options).then(function (s) {
      if (nav) s.navigation = nav;
      last = { options: options, signals: s };
      return send(options, s);
    });
  }

  /** A meaningful action (checkout, sign-up): the visit's signals again with what the input
   * since load looked like, in the same session. At most one send per action name. */
  function action(name) {
    name = String(name || "action");
    if (actions[name]) return actions[name];
    if (!last) return Promise.reject(new Error("Vigil: collect before an action"));
    var s = {}, k;
    for (k in last.signals) if (Object.prototype.hasOwnProperty.call(last.signals, k) && k !== "navigation") s[k] = last.signals[k];
    s.activity = activitySummary(name);
    actions[name] = send(last.options, s);
    return actions[name];
  }

  // Automatically at the first form submit, and at a click on an element marked
  // data-vigil-action="name" (or inside one), once the page has collected.
  function auto(e, name) {
    if (!last || !name) return;
    action(name).catch(function () { /* the page goes on; the load collect stands */ });
  }
  try {
    global.addEventListener("submit", function (e) {
      var f = e.target;
      auto(e, (f && f.getAttribute && f.getAttribute("data-vigil-action")) || "submit");
    }, { capture: true, passive: true });
    global.addEventListener("click", function (e) {
      var el = e.target && e.target.closest ? e.target.closest("[data-vigil-action]") : null;
      if (el) auto(e, el.getAttribute("data-vigil-action"));
    }, { capture: true, passive: true });
  } catch (e) { /* ignore */ }

  var Vigil = global.Vigil = { collect: collect, action: action, signals: signals, version: "6", collectMs: undefined };
})(typeof window !== "undefined" ? window : this);
