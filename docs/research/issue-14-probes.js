/* Vigil lab: browser-side probes for hidden automation.
 * ES5, no dependencies. Each exported function is self-contained, wraps its work in try, and
 * returns plain JSON-able values (async ones return a Promise that always resolves).
 * Written for the Vigil agent (agent/vigil.js); adapt names/shape when merging.
 * Exposed as window.VigilProbes for the lab page. */
(function (global) {
  "use strict";

  // ---------------------------------------------------------------------------------------------
  // Shared helpers (copy the ones a probe uses when moving it into the agent).

  // Native functions stringify as "function NAME() { [native code] }" (Firefox adds newlines).
  var NATIVE_RE = /^function\s*([^(]*)\(\)\s*\{\s*\[native code\]\s*\}$/;

  // Returns null when fn looks native (and carries the expected name), else a short reason.
  // `ts` is a Function.prototype.toString, ideally from a fresh iframe realm so that a patched
  // toString in the page cannot lie about the page's functions.
  function nativeReason(fn, name, ts) {
    var s;
    try { s = ts.call(fn); } catch (e) { return "tostring-throws"; }
    var m = NATIVE_RE.exec(s);
    if (!m) return "source";
    if (name) {
      var n = m[1].replace(/^\s+|\s+$/g, "");
      // A Proxy around a native prints "function () { [native code] }" (V8): the name is lost.
      if (n !== name && n !== "get " + name && n !== "set " + name) return "name";
    }
    return null;
  }

  // A fresh same-origin realm (srcdoc iframe). Creating one costs ~10-15 ms, so probes running
  // in the same task share it; it is removed on the next macrotask. done() is kept for callers.
  var realmCache = null;
  function freshRealm() {
    if (realmCache) return realmCache;
    var f = document.createElement("iframe");
    f.style.display = "none";
    f.setAttribute("aria-hidden", "true");
    f.srcdoc = "";
    (document.body || document.documentElement).appendChild(f);
    realmCache = { win: f.contentWindow, done: function () {} };
    setTimeout(function () {
      realmCache = null;
      try { f.parentNode.removeChild(f); } catch (e) { /* ignore */ }
    }, 0);
    return realmCache;
  }

  function chromiumMajor(ua) {
    var m = /(?:Chrome|Chromium|CriOS)\/(\d+)/.exec(ua || "");
    return m ? parseInt(m[1], 10) : 0;
  }

  // ---------------------------------------------------------------------------------------------
  // 1. cdpAutomation
  // When a DevTools-protocol client has enabled the Runtime domain (Puppeteer, Playwright,
  // Selenium 4 CDP, chromedp ... or an open DevTools window), every console call is serialised
  // at once to emit Runtime.consoleAPICalled, and V8's inspector reads an Error argument's
  // `stack` to describe it. Without a client, messages are only buffered, never described.
  //  - prepare: current V8 no longer calls a *script-defined* `stack` getter from the inspector,
  //    but it still reads the native stack accessor, which formats the (lazily formatted) stack
  //    and so calls Error.prepareStackTrace. We install a hook for the duration of one
  //    console.debug call only, and restore the previous value (or absence) right after.
  //  - getter: the classic own `stack` accessor; still works on older Chromium (< ~2025).
  // console.debug is "Verbose" level: hidden in DevTools by default. Gecko/WebKit ignore
  // prepareStackTrace and have no Runtime domain: both stay false there.
  var cdpLateHit = false;
  function cdpAutomation() {
    var r = { prepare: false, getter: false };
    var c = global.console, E = global.Error;
    if (!c || typeof c.debug !== "function" || !E) return r;
    try {
      var hit = false;
      var e = new E("");
      Object.defineProperty(e, "stack", {
        configurable: true, enumerable: false,
        get: function () { hit = true; cdpLateHit = true; return ""; }
      });
      c.debug(e);
      r.getter = hit;
    } catch (x) { /* ignore */ }
    try {
      var own = Object.prototype.hasOwnProperty.call(E, "prepareStackTrace");
      var prev = E.prepareStackTrace, seen = false;
      var err = new E(""); // created before the hook: only a later formatting can reach it
      E.prepareStackTrace = function (x, frames) {
        if (x === err) { seen = true; return ""; }
        return typeof prev === "function" ? prev(x, frames) : String(x);
      };
      try { c.debug(err); } finally {
        if (own) E.prepareStackTrace = prev; else delete E.prepareStackTrace;
      }
      r.prepare = seen;
    } catch (x) { /* ignore */ }
    return r;
  }
  function cdpAutomationLate() {
    return new Promise(function (resolve) {
      setTimeout(function () { resolve(cdpLateHit); }, 0);
    });
  }

  // ---------------------------------------------------------------------------------------------
  // 2. automationFramework
  // Page-world leftovers of automation drivers: Playwright's CDP binding and init-script
  // registry, ChromeDriver's cdc_/$cdc_ caches, Selenium/WebDriver helper globals, document
  // attributes, and frames of injected evaluation (pptr:..., __puppeteer_evaluation_script__,
  // Playwright's UtilityScript) in our own call stack.
  var GLOBAL_RE = /^(\$?cdc_|\$?wdc_|__playwright|__pw|__puppeteer|puppeteer|__selenium|__webdriver|__driver_|__fxdriver|_selenium|callSelenium|_Selenium_IDE|__nightmare|_phantom|callPhantom|domAutomation|__lastWatirAlert|__ariaQuerySelector)/;
  var STACK_RE = /(pptr:|__puppeteer_evaluation_script__|__playwright_evaluation_script__|UtilityScript\.|playwright)/i;

  function stackMarkers(stack) {
    var out = [], lines = String(stack || "").split("\n");
    for (var i = 0; i < lines.length && out.length < 3; i++) {
      var m = STACK_RE.exec(lines[i]);
      if (m) out.push(m[1]);
    }
    return out;
  }

  function automationFramework() {
    var found = [];
    try {
      var names = Object.getOwnPropertyNames(global);
      for (var i = 0; i < names.length && found.length < 10; i++) {
        if (GLOBAL_RE.test(names[i])) found.push("window." + names[i].slice(0, 40));
      }
    } catch (e) { /* ignore */ }
    try {
      var dn = Object.getOwnPropertyNames(document);
      for (var j = 0; j < dn.length; j++) {
        if (/^\$?(cdc|wdc)_/.test(dn[j])) found.push("document." + dn[j].slice(0, 40));
      }
    } catch (e) { /* ignore */ }
    try {
      var attrs = document.documentElement.getAttributeNames();
      for (var k = 0; k < attrs.length; k++) {
        if (/^(selenium|webdriver|driver)$/.test(attrs[k])) found.push("attr." + attrs[k]);
      }
    } catch (e) { /* ignore */ }
    try {
      var sm = stackMarkers(new Error("").stack);
      for (var s = 0; s < sm.length; s++) found.push("stack." + sm[s]);
    } catch (e) { /* ignore */ }
    return found;
  }

  // Optional trap for injected evaluation that runs *after* the agent (page.evaluate, page.$ in
  // Puppeteer's main world): samples the caller stack of a few DOM query methods. It wraps
  // natives, so install it only after functionTampering ran, and only if you accept that risk.
  var trapHits = [];
  function installStackTrap() {
    try {
      var targets = [[global.Document && Document.prototype, "querySelector"],
        [global.Document && Document.prototype, "querySelectorAll"],
        [global.Element && Element.prototype, "querySelector"],
        [global.Element && Element.prototype, "querySelectorAll"],
        [global.Document && Document.prototype, "getElementById"]];
      for (var i = 0; i < targets.length; i++) {
        (function (obj, key) {
          if (!obj || typeof obj[key] !== "function") return;
          var orig = obj[key];
          obj[key] = function () {
            if (trapHits.length < 5) {
              try {
                var sm = stackMarkers(new Error("").stack);
                for (var j = 0; j < sm.length; j++) if (trapHits.indexOf(sm[j]) < 0) trapHits.push(sm[j]);
              } catch (e) { /* ignore */ }
            }
            return orig.apply(this, arguments);
          };
        })(targets[i][0], targets[i][1]);
      }
    } catch (e) { /* ignore */ }
  }
  function stackTrapHits() { return trapHits.slice(0, 5); }

  // ---------------------------------------------------------------------------------------------
  // 3. webdriverTampered
  // Blink (>= 89, the same era that shipped navigator.userAgentData) and Gecko define a native
  // getter `webdriver` on Navigator.prototype; it is false for people and true under WebDriver /
  // --enable-automation. Hiding it leaves traces: the property is gone, shadowed by an own
  // property on navigator, the getter is a JS function/Proxy, or a fresh iframe realm (which init
  // scripts may not reach) disagrees.
  function webdriverTampered() {
    var r = { value: "n/a", missing: false, ownProp: false, badGetter: "", iframe: "" };
    try {
      var nav = global.navigator;
      var v = nav.webdriver;
      r.value = v === true ? "true" : v === false ? "false" : String(v);
      var isBlink = "userAgentData" in nav || chromiumMajor(nav.userAgent) >= 89 && !!global.chrome;
      var isGecko = "mozInnerScreenX" in global || typeof global.InstallTrigger !== "undefined";
      var desc = global.Navigator && Object.getOwnPropertyDescriptor(Navigator.prototype, "webdriver");
      r.missing = (isBlink || isGecko) && !desc;
      r.ownProp = Object.prototype.hasOwnProperty.call(nav, "webdriver");
      var realm = null, ts = Function.prototype.toString;
      try { realm = freshRealm(); ts = realm.win.Function.prototype.toString; } catch (e) { realm = null; }
      try {
        if (desc) {
          if (!desc.get || "value" in desc) r.badGetter = "data";
          else r.badGetter = nativeReason(desc.get, "webdriver", ts) || "";
        }
        if (realm) {
          var iv = realm.win.navigator.webdriver;
          var ivs = iv === true ? "true" : iv === false ? "false" : String(iv);
          if (ivs !== r.value) r.iframe = ivs;
        }
      } finally { if (realm) realm.done(); }
    } catch (e) { /* ignore */ }
    return r;
  }

  // ---------------------------------------------------------------------------------------------
  // 4. contextMismatch
  // Header/JS spoofing usually patches the window only; a dedicated Worker is a separate global
  // with its own navigator (and OffscreenCanvas WebGL), so it reports the real values.
  // Two messages: navigator fields first (fast), then WebGL (slow on software GL), so a short
  // timeout still yields the navigator comparison.
  var WORKER_SRC = [
    "var n=self.navigator,o={};",
    "try{o.userAgent=n.userAgent}catch(e){}",
    "try{o.platform=n.platform}catch(e){}",
    "try{o.hardwareConcurrency=n.hardwareConcurrency}catch(e){}",
    "try{o.languages=(n.languages||[]).join(',')}catch(e){}",
    "try{o.webdriver=String(n.webdriver)}catch(e){}",
    "try{if(n.userAgentData){o.uadPlatform=n.userAgentData.platform;o.uadBrands=n.userAgentData.brands.map(function(b){return b.brand+'/'+b.version}).join(',')}}catch(e){}",
    "postMessage({k:'nav',o:o});",
    "var g={};",
    "try{var c=new OffscreenCanvas(1,1),gl=c.getContext('webgl');if(gl){var d=gl.getExtension('WEBGL_debug_renderer_info');",
    "g.glVendor=String(gl.getParameter(d?d.UNMASKED_VENDOR_WEBGL:gl.VENDOR));",
    "g.glRenderer=String(gl.getParameter(d?d.UNMASKED_RENDERER_WEBGL:gl.RENDERER))}}catch(e){}",
    "postMessage({k:'gl',o:g});"
  ].join("\n");

  function windowContext() {
    var n = global.navigator, o = {};
    try { o.userAgent = n.userAgent; } catch (e) { /* ignore */ }
    try { o.platform = n.platform; } catch (e) { /* ignore */ }
    try { o.hardwareConcurrency = n.hardwareConcurrency; } catch (e) { /* ignore */ }
    try { o.languages = (n.languages || []).join(","); } catch (e) { /* ignore */ }
    try {
      if (n.userAgentData) {
        o.uadPlatform = n.userAgentData.platform;
        o.uadBrands = n.userAgentData.brands.map(function (b) { return b.brand + "/" + b.version; }).join(",");
      }
    } catch (e) { /* ignore */ }
    try {
      var gl = document.createElement("canvas").getContext("webgl");
      if (gl) {
        var d = gl.getExtension("WEBGL_debug_renderer_info");
        o.glVendor = String(gl.getParameter(d ? d.UNMASKED_VENDOR_WEBGL : gl.VENDOR));
        o.glRenderer = String(gl.getParameter(d ? d.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
      }
    } catch (e) { /* ignore */ }
    return o;
  }

  function contextMismatch(ms) {
    return new Promise(function (resolve) {
      var t0 = Date.now(), w = null, url = null, got = {}, parts = 0, done = false;
      var win = windowContext();
      function finish(status) {
        if (done) return;
        done = true;
        try { if (w) w.terminate(); } catch (e) { /* ignore */ }
        try { if (url) URL.revokeObjectURL(url); } catch (e) { /* ignore */ }
        var diff = [], pairs = {};
        for (var k in got) {
          if (!Object.prototype.hasOwnProperty.call(got, k) || k === "webdriver") continue;
          if (got[k] !== undefined && win[k] !== undefined && String(got[k]) !== String(win[k])) {
            diff.push(k);
            pairs[k] = [String(win[k]).slice(0, 80), String(got[k]).slice(0, 80)]; // [window, worker]
          }
        }
        resolve({ diff: diff, pairs: pairs, status: status, ms: Date.now() - t0, workerWebdriver: got.webdriver });
      }
      try {
        if (!global.Worker || !global.Blob || !global.URL) return finish("unsupported");
        url = URL.createObjectURL(new Blob([WORKER_SRC], { type: "application/javascript" }));
        w = new Worker(url);
        w.onmessage = function (ev) {
          var o = (ev.data && ev.data.o) || {};
          for (var k in o) if (Object.prototype.hasOwnProperty.call(o, k)) got[k] = o[k];
          parts++;
          if (parts >= 2) finish("ok");
        };
        w.onerror = function () { finish("error"); };
        setTimeout(function () { finish(parts ? "partial" : "timeout"); }, ms || 150);
      } catch (e) {
        finish("error");
      }
    });
  }

  // ---------------------------------------------------------------------------------------------
  // 5. functionTampering
  // Built-in methods/getters have no own `prototype`, only `length` and `name` own keys, are not
  // constructors, and stringify as native code with their own name. JS replacements break one of
  // these; Proxy wrappers (what stealth kits use) keep all of them but (a) lose the name in V8's
  // toString and (b) defeat the prototype-cycle check: Object.setPrototypeOf(f, Object.create(f))
  // must throw "Cyclic __proto__ value" for a real function, but the engine cannot see through a
  // Proxy in the chain, so the call succeeds (we immediately restore the prototype).
  // toString is taken from a fresh iframe realm when possible, so a patched page toString can't lie.
  var FN_TARGETS = [
    ["Function.prototype.toString", function () { return Function.prototype; }, "toString", 0],
    ["Navigator.webdriver", function () { return Navigator.prototype; }, "webdriver", 1],
    ["Navigator.userAgent", function () { return Navigator.prototype; }, "userAgent", 1],
    ["Navigator.platform", function () { return Navigator.prototype; }, "platform", 1],
    ["Navigator.languages", function () { return Navigator.prototype; }, "languages", 1],
    ["Navigator.hardwareConcurrency", function () { return Navigator.prototype; }, "hardwareConcurrency", 1],
    ["Navigator.deviceMemory", function () { return Navigator.prototype; }, "deviceMemory", 1],
    ["Navigator.plugins", function () { return Navigator.prototype; }, "plugins", 1],
    ["Navigator.mimeTypes", function () { return Navigator.prototype; }, "mimeTypes", 1],
    ["Navigator.vendor", function () { return Navigator.prototype; }, "vendor", 1],
    ["Navigator.permissions", function () { return Navigator.prototype; }, "permissions", 1],
    ["Permissions.query", function () { return Permissions.prototype; }, "query", 0],
    ["HTMLCanvasElement.toDataURL", function () { return HTMLCanvasElement.prototype; }, "toDataURL", 0],
    ["HTMLCanvasElement.getContext", function () { return HTMLCanvasElement.prototype; }, "getContext", 0],
    ["CanvasRenderingContext2D.getImageData", function () { return CanvasRenderingContext2D.prototype; }, "getImageData", 0],
    ["WebGLRenderingContext.getParameter", function () { return WebGLRenderingContext.prototype; }, "getParameter", 0],
    ["WebGL2RenderingContext.getParameter", function () { return WebGL2RenderingContext.prototype; }, "getParameter", 0],
    ["HTMLMediaElement.canPlayType", function () { return HTMLMediaElement.prototype; }, "canPlayType", 0],
    ["Document.createElement", function () { return Document.prototype; }, "createElement", 0],
    ["HTMLIFrameElement.contentWindow", function () { return HTMLIFrameElement.prototype; }, "contentWindow", 1],
    ["Screen.width", function () { return Screen.prototype; }, "width", 1],
    ["Screen.height", function () { return Screen.prototype; }, "height", 1],
    ["Date.getTimezoneOffset", function () { return Date.prototype; }, "getTimezoneOffset", 0],
    ["Intl.DateTimeFormat.resolvedOptions", function () { return Intl.DateTimeFormat.prototype; }, "resolvedOptions", 0],
    ["Element.getBoundingClientRect", function () { return Element.prototype; }, "getBoundingClientRect", 0],
    ["MediaDevices.enumerateDevices", function () { return MediaDevices.prototype; }, "enumerateDevices", 0]
  ];

  function isConstructor(f) {
    try {
      if (typeof Reflect === "undefined" || !Reflect.construct) return false;
      Reflect.construct(function () {}, [], f); // only checks IsConstructor(f); f is not called
      return true;
    } catch (e) { return false; }
  }

  function proxyCycle(f) {
    var proto;
    try { proto = Object.getPrototypeOf(f); } catch (e) { return false; }
    try {
      Object.setPrototypeOf(f, Object.create(f));
    } catch (e) {
      return false; // real function: cycle detected
    }
    try { Object.setPrototypeOf(f, proto); } catch (e) { /* ignore */ }
    return true;
  }

  function functionTampering() {
    var out = [];
    var realm = null, ts = Function.prototype.toString;
    try { realm = freshRealm(); ts = realm.win.Function.prototype.toString; } catch (e) { realm = null; }
    try {
      for (var i = 0; i < FN_TARGETS.length && out.length < 20; i++) {
        var t = FN_TARGETS[i], f, why = [];
        try {
          var obj = t[1]();
          if (t[3]) {
            var d = Object.getOwnPropertyDescriptor(obj, t[2]);
            if (!d) continue; // absent in this engine (e.g. deviceMemory in Firefox)
            if (!d.get) { out.push(t[0] + ":data"); continue; }
            f = d.get;
          } else {
            f = obj[t[2]];
          }
          if (typeof f !== "function") continue;
        } catch (e) { continue; }
        try { if (Object.prototype.hasOwnProperty.call(f, "prototype")) why.push("proto"); } catch (e) { /* ignore */ }
        try {
          var keys = Object.getOwnPropertyNames(f);
          for (var k = 0; k < keys.length; k++) {
            if (keys[k] !== "length" && keys[k] !== "name" && keys[k] !== "prototype") { why.push("keys"); break; }
          }
        } catch (e) { /* ignore */ }
        if (isConstructor(f)) why.push("ctor");
        var nr = nativeReason(f, t[2], ts);
        if (nr) why.push(nr);
        if (proxyCycle(f)) why.push("proxy");
        if (why.length) out.push(t[0] + ":" + why.join("+"));
      }
      // Own properties shadowing prototype APIs: a person's navigator has none and document has
      // only `location` (stealth kits put e.g. document.createElement there).
      try {
        var own = [["navigator", global.navigator, []], ["document", document, ["location"]]];
        for (var o = 0; o < own.length; o++) {
          var on = Object.getOwnPropertyNames(own[o][1]);
          for (var p = 0; p < on.length && out.length < 20; p++) {
            if (own[o][2].indexOf(on[p]) < 0) out.push(own[o][0] + "." + on[p].slice(0, 40) + ":own");
          }
        }
      } catch (e) { /* ignore */ }
      // The page's toString printing itself differently from a fresh realm's toString.
      try {
        var a = Function.prototype.toString.call(Function.prototype.toString).replace(/\s+/g, "");
        if (realm && a !== ts.call(ts).replace(/\s+/g, "")) out.push("Function.prototype.toString:self");
      } catch (e) { /* ignore */ }
    } finally { if (realm) realm.done(); }
    return out;
  }

  // ---------------------------------------------------------------------------------------------
  // 6. clientHints
  // High-entropy client hints come from the browser itself, not from the UA string a bot borrowed:
  // all-empty values, or brands/major/platform disagreeing with navigator.userAgent, are tells.
  var CH_KEYS = ["platformVersion", "architecture", "model", "uaFullVersion", "fullVersionList", "bitness"];
  function clientHints(ms) {
    return new Promise(function (resolve) {
      var done = false;
      function finish(v) { if (!done) { done = true; resolve(v); } }
      try {
        var d = global.navigator.userAgentData;
        if (!d || typeof d.getHighEntropyValues !== "function") return finish(null);
        setTimeout(function () { finish({ status: "timeout" }); }, ms || 150);
        d.getHighEntropyValues(CH_KEYS).then(function (v) {
          var fvl = (v.fullVersionList || []).map(function (b) { return String(b.brand).slice(0, 32) + "/" + String(b.version).slice(0, 24); });
          var brands = (d.brands || []).map(function (b) { return b.brand + "/" + b.version; });
          // Low-entropy brands and high-entropy fullVersionList come from the same list in a real
          // browser: differing brand names mean one of them was overridden.
          var bn = (d.brands || []).map(function (b) { return b.brand; }).sort().join("|");
          var fn = (v.fullVersionList || []).map(function (b) { return b.brand; }).sort().join("|");
          var ua = global.navigator.userAgent, uaMajor = chromiumMajor(ua), brandMajor = 0;
          for (var i = 0; i < (d.brands || []).length; i++) {
            if (/^(Chromium|Google Chrome|Microsoft Edge)$/.test(d.brands[i].brand)) brandMajor = parseInt(d.brands[i].version, 10);
          }
          var uaPlat = /Windows/.test(ua) ? "Windows" : /Mac OS X/.test(ua) ? "macOS" : /Android/.test(ua) ? "Android" : /CrOS/.test(ua) ? "Chrome OS" : /Linux/.test(ua) ? "Linux" : "";
          finish({
            status: "ok",
            brands: brands,
            platform: d.platform,
            mobile: !!d.mobile,
            platformVersion: v.platformVersion,
            architecture: v.architecture,
            model: v.model,
            uaFullVersion: v.uaFullVersion,
            bitness: v.bitness,
            fullVersionList: fvl,
            allEmpty: !v.platformVersion && !v.architecture && !v.uaFullVersion && !v.bitness && !fvl.length,
            majorMismatch: !!(uaMajor && brandMajor && uaMajor !== brandMajor),
            brandsMismatch: !!(fn && bn !== fn),
            platformMismatch: !!(uaPlat && d.platform && uaPlat !== d.platform)
          });
        }, function () { finish({ status: "error" }); });
      } catch (e) {
        finish({ status: "error" });
      }
    });
  }

  // ---------------------------------------------------------------------------------------------
  // 7. syntheticInput
  // Events injected by script are isTrusted=false. Events injected via CDP Input.dispatchMouseEvent
  // are trusted but carry screenX==clientX && screenY==clientY, which a windowed browser can't
  // produce (the viewport is offset by the browser chrome). Touch is ignored. Install the
  // listeners as early as possible; read the summary when sending.
  var inputSeen = { n: 0, untrusted: 0, screenEqClient: 0, types: [], offsets: [] };
  function watchInput() {
    try {
      var types = ["pointermove", "pointerdown", "mousemove", "mousedown", "click"];
      var h = function (e) {
        try {
          if (inputSeen.n >= 20) return;
          if (e.pointerType && e.pointerType !== "mouse" && e.pointerType !== "pen") return;
          if (e.sourceCapabilities && e.sourceCapabilities.firesTouchEvents) return;
          inputSeen.n++;
          if (inputSeen.types.indexOf(e.type) < 0) inputSeen.types.push(e.type);
          if (e.isTrusted === false) inputSeen.untrusted++;
          if (e.isTrusted !== false && e.screenX === e.clientX && e.screenY === e.clientY) inputSeen.screenEqClient++;
          var off = (e.screenX - e.clientX) + "," + (e.screenY - e.clientY);
          if (inputSeen.offsets.length < 4 && inputSeen.offsets.indexOf(off) < 0) inputSeen.offsets.push(off);
        } catch (x) { /* ignore */ }
      };
      for (var i = 0; i < types.length; i++) global.addEventListener(types[i], h, { capture: true, passive: true });
    } catch (e) { /* ignore */ }
  }
  function syntheticInput() {
    var r = { n: inputSeen.n, untrusted: inputSeen.untrusted, screenEqClient: inputSeen.screenEqClient, chromeless: false, types: inputSeen.types.slice(0), offsets: inputSeen.offsets.slice(0) };
    try {
      // No browser chrome around the viewport (headless, kiosk, F11 fullscreen): equality is
      // legitimate there, so only the untrusted count is meaningful.
      r.chromeless = !!document.fullscreenElement ||
        (global.outerHeight - global.innerHeight <= 0 && global.outerWidth - global.innerWidth <= 0) ||
        (global.matchMedia && global.matchMedia("(display-mode: fullscreen)").matches);
    } catch (e) { /* ignore */ }
    return r;
  }

  // ---------------------------------------------------------------------------------------------
  // Lab runner: all probes, timed.
  function collectAll(ms) {
    var now = function () { return (global.performance && performance.now) ? performance.now() : Date.now(); };
    var r1 = function (x) { return Math.round(x * 10) / 10; };
    var t0 = now(), s = {}, per = {};
    function read(name, fn) { var t = now(); try { s[name] = fn(); } catch (e) { /* unavailable */ } per[name] = r1(now() - t); }
    read("cdpAutomation", cdpAutomation);
    read("automationFramework", automationFramework);
    read("webdriverTampered", webdriverTampered);
    read("functionTampering", functionTampering);
    var tSync = now() - t0;
    function timed(name, p) { var t = now(); return p.then(function (v) { per[name] = r1(now() - t); return v; }); }
    return Promise.all([timed("contextMismatch", contextMismatch(ms)), timed("clientHints", clientHints(ms)), cdpAutomationLate()]).then(function (a) {
      s.contextMismatch = a[0];
      s.clientHints = a[1];
      s.cdpAutomation.late = a[2];
      s.syntheticInput = syntheticInput();
      s.timing = { syncMs: r1(tSync), totalMs: r1(now() - t0), per: per };
      return s;
    });
  }

  global.VigilProbes = {
    cdpAutomation: cdpAutomation, automationFramework: automationFramework,
    webdriverTampered: webdriverTampered, contextMismatch: contextMismatch,
    functionTampering: functionTampering, clientHints: clientHints,
    watchInput: watchInput, syntheticInput: syntheticInput,
    installStackTrap: installStackTrap, stackTrapHits: stackTrapHits,
    collectAll: collectAll
  };
})(typeof window !== "undefined" ? window : this);
