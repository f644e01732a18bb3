#!/usr/bin/env node
// The agent's own kinematics over recorded input, outside a browser (docs/research/issue-58-acting-scraper.md).
// Loads agent/vigil.js into a bare context, plays each trace's events to its listeners and prints
// the page summary the agent would carry to the next page, one JSON line per trace.
// Input (stdin): JSON lines {"id": ..., "events": [[t_ms, type, x, y, extra?], ...]} where type is
// move, down, up, wheel (extra: [deltaY, wheelDeltaY]), keydown, keyup (extra: [key, code]).
"use strict";
const fs = require("fs");
const path = require("path");
const vm = require("vm");
const readline = require("readline");

const SOURCE = fs.readFileSync(path.join(__dirname, "..", "..", "agent", "vigil.js"), "utf8");

function page() {
  const listeners = {};
  const store = {};
  const win = {
    addEventListener: (type, fn) => { (listeners[type] = listeners[type] || []).push(fn); },
    outerWidth: 1280, outerHeight: 900, innerWidth: 1280, innerHeight: 757,
    sessionStorage: {
      getItem: (k) => (k in store ? store[k] : null),
      setItem: (k, v) => { store[k] = String(v); },
    },
    MouseEvent: function MouseEvent() {}, PointerEvent: function PointerEvent() {},
    setTimeout: () => 0, clearTimeout: () => {},
    Date, JSON, Math, Object, Array, String, Promise, Error, Function, Reflect,
    performance: { timeOrigin: 0, getEntriesByType: () => [] },
    fetch: () => new Promise(() => {}),
  };
  win.document = {
    visibilityState: "visible", hasFocus: () => true, referrer: "", currentScript: null,
    addEventListener: () => {}, querySelector: () => null,
    createElement: () => ({ getContext: () => null, style: {} }),
    documentElement: { getAttributeNames: () => [] },
  };
  win.location = { href: "https://shop.example/", hostname: "shop.example" };
  win.navigator = {};
  win.window = win;
  vm.createContext(win);
  vm.runInContext(SOURCE.replace(/typeof window !== "undefined" \? window : this/, "this"), win);
  return { win, listeners, store };
}

function dispatch(p, type, e) {
  const ev = Object.assign({}, e, { type });
  for (const fn of p.listeners[type] || []) fn(ev);
}

function play(trace) {
  const p = page();
  p.win.Vigil.collect({ publicKey: "pk", sessionId: "s" }).catch(() => {});
  for (const [t, type, x, y, extra] of trace.events) {
    const base = { isTrusted: true, timeStamp: t, clientX: x, clientY: y, screenX: x, screenY: y + 143, pointerType: "mouse" };
    if (type === "move") {
      dispatch(p, "pointermove", base);
      dispatch(p, "mousemove", base);
    } else if (type === "down") {
      dispatch(p, "pointerdown", Object.assign({ buttons: 1, pressure: 0.5 }, base));
      dispatch(p, "mousedown", base);
    } else if (type === "up") {
      dispatch(p, "pointerup", base);
      dispatch(p, "mouseup", base);
      dispatch(p, "click", Object.assign({ target: null }, base));
    } else if (type === "wheel") {
      dispatch(p, "wheel", { isTrusted: true, timeStamp: t, deltaY: extra[0], wheelDeltaY: extra[1] });
    } else if (type === "keydown" || type === "keyup") {
      dispatch(p, type, { isTrusted: true, timeStamp: t, key: extra[0], code: extra[1], getModifierState: () => false });
    }
  }
  dispatch(p, "pagehide", {});
  const saved = p.store["vigil.page"];
  return saved ? JSON.parse(saved).page : null;
}

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  if (!line.trim()) return;
  const trace = JSON.parse(line);
  process.stdout.write(JSON.stringify({ id: trace.id, page: play(trace) }) + "\n");
});
