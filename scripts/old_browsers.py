#!/usr/bin/env python3
"""User agents of every era (uap-core's test corpus): `vigil evaluate` against npm isbot on the
same lines, in one run (make eval).

    python3 scripts/old_browsers.py [VIGIL]

Prints how many of the corpus's user agents each flags as a bot (vigil: scoreBot >= 0.5), the ones
only vigil flags, and fails (exit 1) when vigil flags more than isbot or flags any modern browser
(Chrome, Edge or Firefox 100 and later, Safari 15 and later). The corpus holds bots too (uap-core
tests its spider patterns on them): both tools are meant to flag those, so the counts compare the
two on the same mix, and the list shows each difference.

Needs `python3 scripts/data.py --corpora` (.cache/eval/uap-core-user-agents.tsv, and isbot's
package under .cache/data) and node.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / ".cache" / "eval" / "uap-core-user-agents.tsv"
ISBOT = ROOT / ".cache" / "data" / "isbot-pkg" / "package"
MODERN = re.compile(r"Chrome/1\d\d\.|Edg/1\d\d\.|Firefox/1\d\d\.|Version/(1[5-9]|2\d)\.\d.* Safari/")
ISBOT_JS = """
const { isbot } = require(process.argv[1]);
const lines = require("fs").readFileSync(0, "utf8").split("\\n").filter(Boolean);
process.stdout.write(lines.map((l) => (isbot(JSON.parse(l).userAgent) ? "1" : "0")).join("\\n") + "\\n");
"""


def main():
    vigil = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target" / "release" / "vigil")
    if not CORPUS.exists() or not ISBOT.exists():
        subprocess.run([sys.executable, ROOT / "scripts" / "data.py", "--corpora"], check=True,
                       stdout=subprocess.DEVNULL)
    rows = [line.split("\t", 1) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]
    lines = "".join(json.dumps({"userAgent": ua}) + "\n" for _, ua in rows)
    out = subprocess.run([vigil, "evaluate"], input=lines, capture_output=True, text=True, check=True)
    answers = [json.loads(l) for l in out.stdout.splitlines()]
    node = subprocess.run(["node", "-e", ISBOT_JS, str(ISBOT / "index.js")], input=lines,
                          capture_output=True, text=True, check=True)
    isbot = [l == "1" for l in node.stdout.splitlines()]
    if len(answers) != len(rows) or len(isbot) != len(rows):
        sys.exit(f"answers do not match the corpus: {len(rows)} lines, vigil {len(answers)}, "
                 f"isbot {len(isbot)}")
    flagged = [a.get("scoreBot", 0) >= 0.5 for a in answers]
    only_vigil = [(fam, ua) for (fam, ua), v, i in zip(rows, flagged, isbot) if v and not i]
    only_isbot = sum(1 for v, i in zip(flagged, isbot) if i and not v)
    modern = [(fam, ua) for (fam, ua), v in zip(rows, flagged) if v and MODERN.search(ua)]
    print(f"uap-core, all eras: {len(rows)} user agents; flagged as bots: vigil {sum(flagged)}, "
          f"isbot {sum(isbot)}; only vigil {len(only_vigil)}, only isbot {only_isbot}")
    for fam, ua in only_vigil:
        print(f"  only vigil: {fam}: {ua}")
    for fam, ua in modern:
        print(f"  MODERN BROWSER FLAGGED: {fam}: {ua}")
    if sum(flagged) > sum(isbot) or modern:
        sys.exit("vigil flags more of the corpus than isbot, or a modern browser")


if __name__ == "__main__":
    main()
