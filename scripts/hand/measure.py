#!/usr/bin/env python3
"""The figures behind `crate::hand` (docs/research/issue-58-acting-scraper.md): real people's
movements (SapiMouse, ../shared/human-mouse) and the humanizers' generators, each through the
agent's own code (kinematics.js), with the per-movement quantiles and how often each rule's
condition holds. Usage: scripts/hand/measure.py [SAPIMOUSE_DIR]  (node on PATH; ghost-cursor from
make test-browser's node modules)."""
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NAMES = ["duration ms", "distance px", "samples", "speed peaks", "flips /100 turns", "final 10% time %",
         "pauses >= 50 ms", "skipped frames", "x reversals", "y reversals", "straightness %",
         "last move to press ms", "peak/mean speed %", "hold ms"]


def kinematics(traces):
    out = subprocess.run(["node", str(HERE / "kinematics.js")], input=traces, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def machine(m):
    """`Movement::machine` (crates/detect/src/hand.rs), the same thresholds."""
    dur, dist, n, _peaks, _flips, final, pauses, skips, rx, ry, _straight, gap, ratio = m[:13]
    if not judged(m):
        return None
    if ratio < 150:
        return "flat speed"
    if pauses > 0:
        return None
    if _peaks >= 8:
        return "surging"
    if skips > 1:
        return None
    if gap >= 0 and final < 12:
        return "homing"
    if (ry + 1) / (rx + 1) > 4 or (rx + 1) / (ry + 1) > 4:
        return "one axis"
    if (rx + ry) / max(n - 2, 1) > 0.12:
        return "noise"
    return None


def judged(m):
    """`Movement::judged`: 40 px, four samples, a positive duration."""
    return m[1] >= 40 and m[2] >= 4 and m[0] > 0


def protocol_press(m):
    return len(m) > 13 and 0 <= m[11] < 60 and m[13] < 20


def by_source(rows, approach_only=True):
    out = {}
    for r in rows:
        key = r["id"].split("/")[0].split("#")[0]
        for m in (r["page"] or {}).get("kin", {}).get("m", []):
            if m[11] >= 0 or not approach_only:
                out.setdefault(key, []).append(m)
    return out


def q(xs, ps=(0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)):
    xs = sorted(xs)
    return [xs[min(int(len(xs) * p), len(xs) - 1)] for p in ps] if xs else []


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else str(ROOT.parent / "shared" / "human-mouse" / "sapimouse")
    people_traces = subprocess.run([sys.executable, str(HERE / "sapimouse.py"), root, "0.001"],
                                   capture_output=True, text=True, check=True).stdout
    people = by_source(kinematics(people_traces))
    env = {"NODE_PATH": str(ROOT / ".cache" / "browser-node" / "node_modules"), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    gen_traces = subprocess.run(["node", str(HERE / "generators.js"), "300"], capture_output=True, text=True,
                                check=True, env=env).stdout
    gens = by_source(kinematics(gen_traces))
    allp = [m for v in people.values() for m in v if judged(m)]
    presses = [m for v in people.values() for m in v]
    print(f"people: {len(people)} users' recordings, {len(allp)} approach movements of 40 px or more, "
          f"{len(presses)} presses after a movement; protocol presses among them: "
          f"{sum(1 for m in presses if protocol_press(m))}\n")
    print("| feature | people p1, p5, p10, p25, p50, p75, p90, p95, p99 |")
    print("|---|---|")
    for i, name in enumerate(NAMES):
        print(f"| {name} | {', '.join(str(v) for v in q([m[i] for m in allp if len(m) > i]))} |")
    print("\n| source | movements | machine() | its tells | protocol press |")
    print("|---|---|---|---|---|")
    for name, ms in [("people", allp)] + sorted((g, [m for m in v if judged(m)]) for g, v in gens.items()):
        tells = [machine(m) for m in ms]
        kinds = {}
        for t in tells:
            if t:
                kinds[t] = kinds.get(t, 0) + 1
        share = sum(1 for t in tells if t) / len(ms)
        pp = sum(1 for m in ms if protocol_press(m))
        print(f"| {name} | {len(ms)} | {share:.3f} | {kinds} | {pp} |")
    judged_people = {u: [m for m in v if judged(m)] for u, v in people.items()}
    worst = max((sum(1 for m in v if machine(m)) / len(v), u) for u, v in judged_people.items() if v)
    pairs = [(v[i], v[i + 1]) for v in judged_people.values() for i in range(0, len(v) - 1, 2)]
    both = sum(1 for a, b in pairs if machine(a) and machine(b))
    print(f"\nworst person: {worst[1]} {worst[0]:.3f} of movements; two in a row of one person: {both} of {len(pairs)} pairs ({both / len(pairs):.4f})")


if __name__ == "__main__":
    main()
