#!/usr/bin/env bash
# `vigil evaluate` against the npm isbot package run by node over the same JSON lines (user agent
# only, whole process, same run): lines per second of each and their ratio. vigil does far more
# per line (every reason, both scores, a JSON answer); isbot answers one boolean.
#
# Usage: benches/evaluate_vs_isbot.sh [LINES]   (needs make eval's corpora in .cache/eval)
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-500000}
[ -f .cache/eval/isbot-crate-browsers.txt ] || python3 scripts/data.py --corpora >/dev/null
cargo build --release --locked --bin vigil >&2
work=.cache/bench-isbot
mkdir -p "$work"
if [ ! -f "$work/node_modules/isbot/package.json" ]; then
  tgz=$(ls .cache/data/isbot-*.tgz 2>/dev/null | head -1)
  [ -n "$tgz" ] || python3 scripts/data.py >/dev/null
  tgz=$(ls .cache/data/isbot-*.tgz | head -1)
  mkdir -p "$work/node_modules/isbot" && tar xzf "$tgz" -C "$work/node_modules/isbot" --strip-components=1
fi
# The same lines for both: browsers and bots, repeated up to LINES.
python3 - "$lines" "$work/input.jsonl" <<'PY'
import itertools, json, sys
n, out = int(sys.argv[1]), sys.argv[2]
uas = [l.strip() for f in (".cache/eval/isbot-crate-browsers.txt", ".cache/eval/isbot-crate-bots.txt")
       for l in open(f, encoding="utf-8", errors="replace") if l.strip()]
with open(out, "w") as f:
    for ua in itertools.islice(itertools.cycle(uas), n):
        f.write(json.dumps({"userAgent": ua}) + "\n")
PY
cat > "$work/isbot.js" <<'JS'
const { isbot } = require("isbot");
const rl = require("readline").createInterface({ input: process.stdin });
const out = [];
rl.on("line", (l) => { out.push(JSON.stringify({ bot: isbot(JSON.parse(l).userAgent) })); if (out.length >= 4096) { process.stdout.write(out.join("\n") + "\n"); out.length = 0; } });
rl.on("close", () => { if (out.length) process.stdout.write(out.join("\n") + "\n"); });
JS
time_of() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc -l; }
v=$(time_of target/release/vigil evaluate "$work/input.jsonl")
n=$(time_of sh -c "node '$work/isbot.js' < '$work/input.jsonl'")
printf 'vigil evaluate: %8.0f lines/s (%s lines in %.2f s)\n' "$(echo "$lines / $v" | bc -l)" "$lines" "$v"
printf 'node isbot:     %8.0f lines/s (%s lines in %.2f s)\n' "$(echo "$lines / $n" | bc -l)" "$lines" "$n"
printf 'ratio vigil / isbot: %.2f\n' "$(echo "$n / $v" | bc -l)"

# Accuracy on the same lines in the same run: browsers flagged (vigil scoreBot >= 0.5, isbot true)
# on the isbot crate's browsers.txt, cleaned as examples/eval.rs cleans it (entries a browser in
# use sends: no URL, no bot, crawler, headless or HTTP-library word, no Internet Explorer).
python3 - "$work/browsers.jsonl" <<'PY'
import json, sys
WORDS = ("http://", "https://", "+http", "bot", "crawl", "spider", "curl", "wget", "python",
         "java/", "headless", "phantomjs", "slimerjs", "msie", "trident/")
def browser(ua):
    low = ua.lower()
    return (low.startswith("mozilla/") or low.startswith("opera/")) and " (" in low \
        and not any(w in low for w in WORDS)
with open(sys.argv[1], "w") as f:
    for l in open(".cache/eval/isbot-crate-browsers.txt", encoding="utf-8", errors="replace"):
        if l.strip() and browser(l.strip()):
            f.write(json.dumps({"userAgent": l.strip()}) + "\n")
PY
total=$(wc -l < "$work/browsers.jsonl")
vf=$(target/release/vigil evaluate "$work/browsers.jsonl" | python3 -c 'import json,sys; print(sum(json.loads(l).get("scoreBot", 0) >= 0.5 for l in sys.stdin))')
nf=$(node "$work/isbot.js" < "$work/browsers.jsonl" | grep -c '"bot":true' || true)
printf 'browsers flagged: vigil %s of %s, isbot %s of %s (%s)\n' "$vf" "$total" "$nf" "$total" \
  "$([ "$vf" -le "$nf" ] && echo "no more often than isbot" || echo "MORE OFTEN than isbot")"
