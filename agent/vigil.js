/*! Vigil browser agent: collects the signals Vigil's detection engine reads and sends them for
 * one visitor session. Usage:
 *   <script src="https://API/v1/agent.js"></script>
 *   Vigil.collect({ publicKey: "pk_...", sessionId: "...", sessionToken: "..." })
 *     .then(function (receiptId) { ... });
 * sessionToken is minted by the site's backend (HMAC-SHA256 under the project's private key); a
 * project that requires tokens refuses visits without one.
 * Every signal is read in its own try: a browser quirk drops that signal, never the visit.
 * No dependencies; no cookies; nothing is stored in the browser. */
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

  // Globals that automation frameworks leave behind (Selenium, PhantomJS, Puppeteer helpers, ...).
  var AUTOMATION = ["_phantom", "callPhantom", "__nightmare", "_selenium", "callSelenium",
    "_Selenium_IDE_Recorder", "__webdriver_evaluate", "__selenium_evaluate", "__webdriver_script_fn",
    "__webdriver_script_func", "__driver_evaluate", "__fxdriver_evaluate", "__lastWatirAlert",
    "domAutomation", "domAutomationController", "__playwright__binding__", "__pwInitScripts",
    "cdc_adoQpoasnfa76pfcZLmcfl_Array", "cdc_adoQpoasnfa76pfcZLmcfl_Promise",
    "cdc_adoQpoasnfa76pfcZLmcfl_Symbol", "Buffer", "emit", "spawn", "webdriver"];

  function automationGlobals() {
    var found = [];
    for (var i = 0; i < AUTOMATION.length; i++) {
      var n = AUTOMATION[i];
      if (n === "webdriver") continue; // navigator.webdriver is its own signal
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

  function webgl(signals) {
    var canvas = document.createElement("canvas");
    var gl = canvas.getContext("webgl") || canvas.getContext("experimental-webgl");
    if (!gl) return;
    var info = gl.getExtension("WEBGL_debug_renderer_info");
    read(signals, "webglVendor", function () { return gl.getParameter(info ? info.UNMASKED_VENDOR_WEBGL : gl.VENDOR); });
    read(signals, "webglRenderer", function () { return gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER); });
  }

  // Addresses in the browser's own WebRTC candidates (a public one that differs from the
  // request's address means a proxy in between). Bounded in time; no server is contacted unless
  // the page passes STUN servers.
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

  function signals(options) {
    var s = {}, nav = global.navigator || {};
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
    read(s, "timeZone", function () { return Intl.DateTimeFormat().resolvedOptions().timeZone; });
    read(s, "timezoneOffset", function () { return new Date().getTimezoneOffset(); });
    read(s, "plugins", function () { return nav.plugins ? nav.plugins.length : undefined; });
    read(s, "outerWidth", function () { return global.outerWidth; });
    read(s, "outerHeight", function () { return global.outerHeight; });
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
    return webrtcIps(options.stun, options.webrtcTimeout || 300).then(function (ips) {
      if (ips) s.webrtcIps = ips;
      return s;
    }, function () { return s; });
  }

  /** Collects and sends this visit's signals; resolves to the visit's receipt id. */
  function collect(options) {
    options = options || {};
    return signals(options).then(function (s) {
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
      });
    }).then(function (res) {
      return res.json().then(function (j) {
        if (!res.ok) throw new Error("Vigil: " + res.status + " " + (j && j.message));
        return j.data.id;
      });
    });
  }

  global.Vigil = { collect: collect, signals: signals, version: "1" };
})(typeof window !== "undefined" ? window : this);
