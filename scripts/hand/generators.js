#!/usr/bin/env node
// Humanizers' paths as traces for scripts/hand/kinematics.js: each library's own path generator
// (or its published algorithm), played one point per display frame (16.7 ms) as the DevTools
// Protocol delivers them to a page, with the press timing each library uses.
// Usage: node generators.js [pages per generator] > traces.jsonl (NODE_PATH must hold ghost-cursor).
"use strict";
let seed = 7;
function rnd() { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff; }
function uni(a, b) { return a + (b - a) * rnd(); }
function gauss() { return Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd()); }
const FRAME = 1000 / 60;

// WindMouse (Benjamin J. Land's published algorithm): gravity towards the target, wind noise.
function windMouse(x0, y0, x1, y1) {
  const G = 9, W = 3, M = 15, D = 12, pts = [[x0, y0]];
  let vx = 0, vy = 0, wx = 0, wy = 0, x = x0, y = y0;
  for (let i = 0; i < 2000; i++) {
    const dist = Math.hypot(x1 - x, y1 - y);
    if (dist < 1) break;
    const w = Math.min(W, dist);
    if (dist >= D) { wx = wx / Math.sqrt(3) + (2 * rnd() - 1) * w / Math.sqrt(5); wy = wy / Math.sqrt(3) + (2 * rnd() - 1) * w / Math.sqrt(5); }
    else { wx /= Math.sqrt(3); wy /= Math.sqrt(3); }
    vx += wx + G * (x1 - x) / dist; vy += wy + G * (y1 - y) / dist;
    const v = Math.hypot(vx, vy), m = dist >= D ? M : Math.max(3, M / 2);
    if (v > m) { const r = m / 2 + rnd() * m / 2; vx = vx / v * r; vy = vy / v * r; }
    x += vx; y += vy;
    const p = [Math.round(x), Math.round(y)];
    const l = pts[pts.length - 1];
    if (p[0] !== l[0] || p[1] !== l[1]) pts.push(p);
  }
  pts.push([x1, y1]);
  return pts;
}

// pyclick / HumanCursor: a Bezier curve through random knots, distorted by Gaussian noise,
// eased, resampled to a fixed number of points.
function bezierHuman(x0, y0, x1, y1, n) {
  const knots = [[x0, y0]];
  for (let i = 0; i < 2; i++) knots.push([uni(Math.min(x0, x1) - 80, Math.max(x0, x1) + 80), uni(Math.min(y0, y1) - 80, Math.max(y0, y1) + 80)]);
  knots.push([x1, y1]);
  const out = [];
  for (let i = 0; i < n; i++) {
    let t = i / (n - 1);
    t = t * (2 - t); // easeOutQuad
    const a = knots.map((k) => k.slice());
    for (let r = a.length - 1; r > 0; r--) for (let j = 0; j < r; j++) a[j] = [a[j][0] + (a[j + 1][0] - a[j][0]) * t, a[j][1] + (a[j + 1][1] - a[j][1]) * t];
    const d = i > 0 && i < n - 1 ? gauss() : 0;
    out.push([Math.round(a[0][0]), Math.round(a[0][1] + d)]);
  }
  return out;
}

function ghost(x0, y0, x1, y1) {
  const { path } = require("ghost-cursor");
  return path({ x: x0, y: y0 }, { x: x1, y: y1 }).map((p) => [Math.round(p.x), Math.round(p.y)]);
}

const GENERATORS = {
  "ghost-cursor": { path: ghost, gap: () => uni(0, 2), hold: () => 2 },
  windmouse: { path: windMouse, gap: () => uni(40, 400), hold: () => uni(60, 180) },
  "bezier-distorted": { path: (a, b, c, d) => bezierHuman(a, b, c, d, 100), gap: () => uni(20, 200), hold: () => uni(60, 180) },
  "botasaurus-like": { path: (a, b, c, d) => bezierHuman(a, b, c, d, Math.round(20 + Math.hypot(c - a, d - b) / 10)), gap: () => uni(0, 5), hold: () => uni(170, 280) },
};

function pageTrace(name, g) {
  const ev = [];
  let t = uni(1500, 3000), x = Math.round(uni(100, 1200)), y = Math.round(uni(100, 700));
  const moves = 1 + Math.floor(rnd() * 2);
  for (let k = 0; k < moves; k++) {
    const last = k === moves - 1;
    const tx = last ? Math.round(uni(60, 200)) : Math.round(uni(100, 1200)), ty = last ? Math.round(uni(700, 740)) : Math.round(uni(100, 700));
    for (const [px, py] of g.path(x, y, tx, ty)) { ev.push([Math.round(t), "move", px, py]); t += FRAME; }
    x = tx; y = ty;
    t += last ? g.gap() : uni(500, 1500);
  }
  ev.push([Math.round(t), "down", x, y]);
  t += g.hold();
  ev.push([Math.round(t), "up", x, y]);
  return ev;
}

const pages = Number(process.argv[2] || 200);
for (const [name, g] of Object.entries(GENERATORS)) {
  for (let i = 0; i < pages; i++) process.stdout.write(JSON.stringify({ id: `${name}#${i}`, events: pageTrace(name, g) }) + "\n");
}
