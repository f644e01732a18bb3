#!/usr/bin/env bash
# `vigil evaluate` against the npm isbot package run by node, over the same JSON lines as a
# customer's access log holds them: an address and a user agent each. vigil looks every address
# up (Tor, VPN, relays, hosting ranges and networks, country) and answers each line with its
# reasons and both scores; isbot reads the user agent only and answers one boolean. Whole process
# each, same run: lines per second of each and their ratio (the best of REPEAT timings of each,
# interleaved, so that a moment of load on a shared machine counts against neither).
#
# The lines are a fixed mix drawn from make eval's corpora and the committed data (seeded, so
# every run reads the same file): people (browsers from consumer ISP addresses), bots from
# hosting networks, browsers from hosting and CDN ranges, Tor exits, VPN exits, privacy relays,
# crawlers from their published ranges and crawlers' names from home lines. vigil's answers are
# checked: one per line, and each kind of line flagged as it must be (the bench fails otherwise).
#
# Usage: benches/evaluate_vs_isbot.sh [LINES] [REPEAT]   (default 200000 lines, best of 5)
#        VIGIL=path/to/vigil benches/evaluate_vs_isbot.sh   (another build, e.g. the one before a change)
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-200000}
repeat=${2:-5}
[ -f .cache/eval/consumer-isp.tsv ] || python3 scripts/data.py --corpora >/dev/null
if [ -z "${VIGIL:-}" ]; then
  cargo build --release --locked --bin vigil >&2
  VIGIL=target/release/vigil
fi
work=.cache/bench-isbot
mkdir -p "$work"
if [ ! -f "$work/node_modules/isbot/package.json" ]; then
  tgz=$(ls .cache/data/isbot-*.tgz 2>/dev/null | head -1)
  [ -n "$tgz" ] || python3 scripts/data.py >/dev/null
  tgz=$(ls .cache/data/isbot-*.tgz | head -1)
  mkdir -p "$work/node_modules/isbot" && tar xzf "$tgz" -C "$work/node_modules/isbot" --strip-components=1
fi

# The same lines for both, and each line's kind beside them (input.kinds) for the checks; and the
# cleaned browsers corpus alone (browsers.jsonl), for the accuracy check at the end.
python3 - "$lines" "$work/input.jsonl" "$work/input.kinds" "$work/browsers.jsonl" <<'PY'
import ipaddress, json, random, sys
n, out, kinds_out, browsers_out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
rng = random.Random(20261128)
WORDS = ("http://", "https://", "+http", "bot", "crawl", "spider", "curl", "wget", "python",
         "java/", "headless", "phantomjs", "slimerjs", "msie", "trident/")
def browser(ua):
    low = ua.lower()
    return (low.startswith("mozilla/") or low.startswith("opera/")) and " (" in low \
        and not any(w in low for w in WORDS)
def read(path):
    return [l.strip() for l in open(path, encoding="utf-8", errors="replace") if l.strip()]
browsers = [u for u in read(".cache/eval/isbot-crate-browsers.txt") if browser(u)]
with open(browsers_out, "w") as f:
    f.writelines(json.dumps({"userAgent": u}) + "\n" for u in browsers)
bots = read(".cache/eval/isbot-crate-bots.txt") + read(".cache/eval/bots-crawler-user-agents.txt")
consumer = [l.split("\t")[0] for l in read(".cache/eval/consumer-isp.tsv")]
hosting_net = [l.split("\t")[0] for l in read(".cache/eval/hosting-networks.tsv")]
# Operator ranges (data/ip-ranges.tsv) by label, and which crawlers publish which (agents.tsv).
labels, ranges = {}, {}
for l in read("data/ip-ranges.tsv"):
    c = l.split("\t")
    if c[0] == "#L":
        labels[c[1]] = (c[2], c[3])
    elif not l.startswith("#"):
        ranges.setdefault(labels[c[2]], []).append((c[0], c[1]))
def by(pred):
    return [r for lab, rs in sorted(ranges.items()) if pred(*lab) for r in rs]
range_sets = {
    "tor": by(lambda k, p: k == "tor"),
    "vpn": by(lambda k, p: k == "vpn" and "Relay" not in p),
    "relay": by(lambda k, p: k == "vpn" and "Relay" in p),
    "hosting": by(lambda k, p: k in ("hosting", "cdn")),
}
crawlers = []  # (user agents naming the crawler, its published ranges)
for l in read("data/agents.tsv"):
    c = l.split("\t") + [""] * 6
    if l.startswith("#") or not c[3] or not c[4]:
        continue
    tokens = c[3].split(",")
    uas = sorted({u for u in bots if any(t in u.lower() for t in tokens)})
    rs = ranges.get(("bot", c[4]), [])
    if uas and rs:
        crawlers.append((uas, rs))
def inside(r):
    s, e = int(ipaddress.ip_address(r[0])), int(ipaddress.ip_address(r[1]))
    return str(ipaddress.ip_address(s + rng.randint(0, min(e - s, 1 << 16))))
def person():
    return rng.choice(browsers), rng.choice(consumer)
def bot_hosting():
    return rng.choice(bots), rng.choice(hosting_net)
def from_ranges(kind):
    return lambda: (rng.choice(browsers), inside(rng.choice(range_sets[kind])))
def crawler():
    uas, rs = rng.choice(crawlers)
    return rng.choice(uas), inside(rng.choice(rs))
def spoofed():
    uas, _ = rng.choice(crawlers)
    return rng.choice(uas), rng.choice(consumer)
# An access log's share of each kind (people most, then bots and servers).
MIX = [("person", 60, person), ("bot_hosting", 14, bot_hosting),
       ("hosting", 8, from_ranges("hosting")), ("tor", 4, from_ranges("tor")),
       ("vpn", 5, from_ranges("vpn")), ("relay", 5, from_ranges("relay")),
       ("crawler", 3, crawler), ("spoofed", 1, spoofed)]
names = [k for k, w, _ in MIX for _ in range(w)]
make = {k: f for k, _, f in MIX}
with open(out, "w") as f, open(kinds_out, "w") as kf:
    for _ in range(n):
        kind = rng.choice(names)
        ua, ip = make[kind]()
        f.write(json.dumps({"ipAddress": ip, "userAgent": ua}) + "\n")
        kf.write(kind + "\n")
PY
cat > "$work/isbot.js" <<'JS'
const { isbot } = require("isbot");
const rl = require("readline").createInterface({ input: process.stdin });
const out = [];
rl.on("line", (l) => { out.push(JSON.stringify({ bot: isbot(JSON.parse(l).userAgent) })); if (out.length >= 4096) { process.stdout.write(out.join("\n") + "\n"); out.length = 0; } });
rl.on("close", () => { if (out.length) process.stdout.write(out.join("\n") + "\n"); });
JS

# vigil's answers on these lines, checked before anything is timed.
"$VIGIL" evaluate "$work/input.jsonl" > "$work/vigil.jsonl"
python3 - "$work/input.kinds" "$work/vigil.jsonl" <<'PY'
import json, sys
kinds = open(sys.argv[1]).read().split()
answers = [json.loads(l) for l in open(sys.argv[2])]
if len(answers) != len(kinds):
    sys.exit(f"FAILED: vigil answered {len(answers)} lines of {len(kinds)}")
# What each kind of line must show, and in what share of its lines at least (make eval's targets).
def codes(a):
    return {r["code"] for r in a.get("reasons", [])}
MUST = {
    "person": ("no score at 0.5 (browser, consumer ISP)", 0.995,
               lambda a: a["scoreBot"] < 0.5 and a["scoreProxyVpn"] < 0.5),
    "bot_hosting": ("scoreBot >= 0.5", 0.99, lambda a: a["scoreBot"] >= 0.5),
    "hosting": ("hosting_ip", 0.99, lambda a: "hosting_ip" in codes(a)),
    "tor": ("tor_exit, scoreProxyVpn >= 0.9", 1.0,
            lambda a: "tor_exit" in codes(a) and a["scoreProxyVpn"] >= 0.9),
    "vpn": ("vpn_range, scoreProxyVpn >= 0.9", 1.0,
            lambda a: "vpn_range" in codes(a) and a["scoreProxyVpn"] >= 0.9),
    "relay": ("relay", 1.0, lambda a: "relay" in codes(a)),
    "crawler": ("verified_bot", 1.0, lambda a: "verified_bot" in codes(a)),
    "spoofed": ("spoofed_bot", 1.0, lambda a: "spoofed_bot" in codes(a)),
}
failed = False
for kind, (what, share, ok) in MUST.items():
    got = [a for k, a in zip(kinds, answers) if k == kind]
    hit = sum(1 for a in got if "message" not in a and ok(a))
    good = bool(got) and hit >= share * len(got)
    failed |= not good
    print(f"  {kind:<12} {len(got):>7} lines, {what}: {hit} ({'ok' if good else 'FAILED'})")
if failed:
    sys.exit("FAILED: vigil's answers are not what these lines must get")
PY

# isbot's too: one answer per line.
answered=$(node "$work/isbot.js" < "$work/input.jsonl" | wc -l)
[ "$answered" -eq "$lines" ] || { echo "FAILED: isbot answered $answered lines of $lines" >&2; exit 1; }

# Other work on the machine slows both (each gets a share of the cores): the load is printed with
# the figures.
printf 'load average before timing: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
time_of() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc -l; }
v=""; n=""
for _ in $(seq "$repeat"); do
  t=$(time_of "$VIGIL" evaluate "$work/input.jsonl")
  [ -z "$v" ] || [ "$(echo "$t < $v" | bc -l)" = 1 ] && v=$t
  t=$(time_of sh -c "node '$work/isbot.js' < '$work/input.jsonl'")
  [ -z "$n" ] || [ "$(echo "$t < $n" | bc -l)" = 1 ] && n=$t
done
printf 'vigil evaluate: %8.0f lines/s (%s lines in %.3f s, best of %s)\n' "$(echo "$lines / $v" | bc -l)" "$lines" "$v" "$repeat"
printf 'node isbot:     %8.0f lines/s (%s lines in %.3f s, best of %s)\n' "$(echo "$lines / $n" | bc -l)" "$lines" "$n" "$repeat"
printf 'ratio vigil / isbot: %.2f\n' "$(echo "$n / $v" | bc -l)"

# Accuracy on the same run: browsers flagged (vigil scoreBot >= 0.5, isbot true) on the isbot
# crate's browsers.txt, cleaned as examples/eval.rs cleans it (entries a browser in use sends: no
# URL, no bot, crawler, headless or HTTP-library word, no Internet Explorer): browsers.jsonl,
# written with the input lines by the same rule.
total=$(wc -l < "$work/browsers.jsonl")
vf=$("$VIGIL" evaluate "$work/browsers.jsonl" | python3 -c 'import json,sys; print(sum(json.loads(l).get("scoreBot", 0) >= 0.5 for l in sys.stdin))')
nf=$(node "$work/isbot.js" < "$work/browsers.jsonl" | grep -c '"bot":true' || true)
printf 'browsers flagged: vigil %s of %s, isbot %s of %s (%s)\n' "$vf" "$total" "$nf" "$total" \
  "$([ "$vf" -le "$nf" ] && echo "no more often than isbot" || echo "MORE OFTEN than isbot")"
