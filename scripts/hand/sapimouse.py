#!/usr/bin/env python3
"""SapiMouse recordings (../shared/human-mouse/sapimouse) as traces for scripts/hand/kinematics.js:
one JSON line per recording, or per page-sized slice of it (--slice SECONDS)."""
import csv
import json
import sys
from pathlib import Path

STATES = {"Move": "move", "Drag": "move", "Pressed": "down", "Released": "up"}


def traces(root, slice_s=0):
    for f in sorted(Path(root).glob("user*/session_*.csv")):
        with open(f) as fh:
            rows = list(csv.reader(fh))[1:]
        events = []
        for t, button, state, x, y in rows:
            if button == "Right" and state != "Drag":
                continue
            events.append([int(float(t)), STATES[state], int(float(x)), int(float(y))])
        user = f.parent.name
        if not slice_s:
            yield {"id": f"{user}/{f.stem}", "events": events}
            continue
        start, part, cur = events[0][0], 0, []
        for e in events:
            # A slice ends after a release once it is long enough: a page left by a click.
            cur.append(e)
            if e[1] == "up" and e[0] - start >= slice_s * 1000:
                yield {"id": f"{user}/{f.stem}#{part}", "events": cur}
                part, cur, start = part + 1, [], e[0]


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parents[3] / "shared" / "human-mouse" / "sapimouse")
    s = float(sys.argv[2]) if len(sys.argv) > 2 else 0
    for t in traces(root, s):
        print(json.dumps(t))
